# tidings_library(NAME SOURCES... DEPS ...) defines tidings::NAME from one folder.
function(tidings_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(tidings_${name} STATIC ${ARG_SOURCES})
  add_library(tidings::${name} ALIAS tidings_${name})
  target_include_directories(tidings_${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(tidings_${name} PUBLIC ${ARG_DEPS})
endfunction()
