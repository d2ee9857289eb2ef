# The kube connector against tests/support/fake_kube_server.
list(APPEND TIDINGS_SOURCE_TESTS
  kube/kube_uri_test.cpp
  kube/kube_upstream_test.cpp)
list(APPEND TIDINGS_SOURCE_TEST_DEPS tidings::test_support)
