# The MCP connector (issue 4): stdio and Streamable HTTP, 2026-07-28 and legacy.
list(APPEND TIDINGS_SOURCES_FILES
  mcp/json_rpc.cpp
  mcp/mcp_protocol.cpp
  mcp/child_process.cpp
  mcp/stdio_transport.cpp
  mcp/http_transport.cpp
  mcp/mcp_session.cpp
  mcp/mcp_upstream.cpp
  mcp/mcp_connector.cpp)
