# PostgreSQL LISTEN/NOTIFY connector (issue 4). Paths relative to sources/.
list(APPEND TIDINGS_SOURCES_FILES
  postgres/postgres_connection.cpp
  postgres/postgres_connector.cpp
  postgres/postgres_events.cpp
  postgres/postgres_upstream.cpp
  postgres/postgres_uri.cpp)
list(APPEND TIDINGS_SOURCES_DEPS PostgreSQL::PostgreSQL)
