# The HTTP client against scripted loopback peers (tests/support).
list(APPEND TIDINGS_SOURCE_TESTS http/http_client_test.cpp)
list(APPEND TIDINGS_SOURCE_TEST_DEPS tidings::test_support)
