# The file source (issue 4): inotify on files and directories under roots.
list(APPEND TIDINGS_SOURCES_FILES
  file/file_path.cpp
  file/file_read.cpp
  file/file_upstream.cpp
  file/inotify_hub.cpp
  file/file_connector.cpp)
