# MCP connector tests: the pure parts, and the connector against real MCP
# servers installed from npm by tests/mcp-servers/setup (pinned in its lock
# file); the tests fail with a hint when they are not installed.
list(APPEND TIDINGS_SOURCE_TESTS mcp/mcp_protocol_test.cpp mcp/mcp_stdio_test.cpp mcp/mcp_http_test.cpp)
# This file is included before source_tests is defined: defer the definition
# that tells the tests where the servers are.
set(TIDINGS_MCP_SERVERS_DEFINITION "TIDINGS_MCP_SERVERS_DIR=\"${PROJECT_SOURCE_DIR}/tests/mcp-servers\"")
cmake_language(DEFER CALL target_compile_definitions source_tests PRIVATE ${TIDINGS_MCP_SERVERS_DEFINITION})
