list(APPEND TIDINGS_SOURCE_TESTS file/file_source_test.cpp)
