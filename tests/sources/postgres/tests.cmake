# PostgreSQL LISTEN/NOTIFY connector tests (issue 4), against a real server
# started by tests/support/postgres_server. Paths relative to tests/sources.
list(APPEND TIDINGS_SOURCE_TESTS
  postgres/postgres_events_test.cpp
  postgres/postgres_upstream_test.cpp)
list(APPEND TIDINGS_SOURCE_TEST_DEPS tidings::test_support PostgreSQL::PostgreSQL)
