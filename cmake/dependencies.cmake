# Every third-party dependency comes from Debian 12's packages (scripts/bootstrap).
# A fuzz build compiles core alone, which needs only nlohmann_json.
if(TIDINGS_FUZZ)
  find_package(nlohmann_json REQUIRED)
  return()
endif()
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(Protobuf 3.21 REQUIRED)
find_package(RocksDB CONFIG REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(OpenSSL REQUIRED)   # libcrypto: SHA-256 in sources/, key checks in broker/
find_package(PostgreSQL REQUIRED)  # libpq: the LISTEN/NOTIFY source
# No version file ships, so no version may be asked for; its config also
# wants civetweb and CURL (the pull and push parts we do not use).
find_package(prometheus-cpp CONFIG REQUIRED)
# Lua built as C++: a Lua error unwinds C++ frames with an exception instead
# of a longjmp that would skip their destructors.
find_package(PkgConfig REQUIRED)
pkg_check_modules(LUA REQUIRED IMPORTED_TARGET lua5.4-c++)
# libjwt 1.10 (C, OpenSSL backend): JWS signature checks for broker/jwt_verifier.
pkg_check_modules(LIBJWT REQUIRED IMPORTED_TARGET libjwt)
# nats_topic (Debian's libnats-dev: the NATS C client).
pkg_check_modules(NATS REQUIRED IMPORTED_TARGET libnats)

# CAF 0.17 ships no CMake package: define imported targets by hand.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
find_library(CAF_IO_LIBRARY caf_io REQUIRED)
find_library(CAF_OPENSSL_LIBRARY caf_openssl REQUIRED)
add_library(CAF::core SHARED IMPORTED)
set_target_properties(CAF::core PROPERTIES
  IMPORTED_LOCATION ${CAF_CORE_LIBRARY}
  INTERFACE_SYSTEM_INCLUDE_DIRECTORIES ${CAF_INCLUDE_DIR}
  INTERFACE_LINK_LIBRARIES Threads::Threads)
add_library(CAF::io SHARED IMPORTED)
set_target_properties(CAF::io PROPERTIES
  IMPORTED_LOCATION ${CAF_IO_LIBRARY}
  INTERFACE_LINK_LIBRARIES CAF::core)
add_library(CAF::openssl SHARED IMPORTED)
set_target_properties(CAF::openssl PROPERTIES
  IMPORTED_LOCATION ${CAF_OPENSSL_LIBRARY}
  INTERFACE_LINK_LIBRARIES "CAF::io;OpenSSL::SSL")

if(TIDINGS_TESTS)
  find_package(Catch2 REQUIRED)
  find_package(benchmark)
endif()
