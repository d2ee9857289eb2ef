# MCP connector tests: the pure parts, and the connector against real MCP
# servers installed from npm by tests/mcp-servers/setup (pinned in its lock
# file); the tests fail with a hint when they are not installed.
list(APPEND TIDINGS_SOURCE_TESTS mcp/mcp_protocol_test.cpp mcp/mcp_stdio_test.cpp mcp/mcp_http_test.cpp
     mcp/mcp_listing_test.cpp)
# Where the servers are comes from tests/support/build_paths.
list(APPEND TIDINGS_SOURCE_TEST_DEPS tidings::test_support)
