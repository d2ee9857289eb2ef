# Webhook and poll resources (issue 4).
list(APPEND TIDINGS_SOURCES_FILES
  web/web_config.cpp
  web/resource_template.cpp
  web/backend_read.cpp
  web/webhook_upstream.cpp
  web/poll_upstream.cpp
  web/sql_poll_upstream.cpp
  web/nats_upstream.cpp
  web/web_connector.cpp
  web/webhook_signature.cpp)
list(APPEND TIDINGS_SOURCES_DEPS PkgConfig::NATS)
