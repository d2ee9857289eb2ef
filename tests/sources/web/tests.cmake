# Webhook signatures (issue 24): pure checks with a fake clock.
list(APPEND TIDINGS_SOURCE_TESTS web/webhook_signature_test.cpp web/resource_template_test.cpp)
