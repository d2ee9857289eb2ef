# The asynchronous HTTP/1.1 client every HTTP-speaking connector uses.
list(APPEND TIDINGS_SOURCES_FILES
  http/http_client.cpp)
