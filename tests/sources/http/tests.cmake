# The HTTP client against scripted loopback peers.
list(APPEND TIDINGS_SOURCE_TESTS
  http/loopback_server.cpp
  http/http_client_test.cpp)
