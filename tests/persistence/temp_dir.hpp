#pragma once

// A fresh directory under the system temp dir, removed with everything in it
// when the test ends.

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <system_error>

#include <unistd.h>

namespace tidings::persistence::testing {

class temp_dir {
 public:
  temp_dir() {
    static std::atomic<unsigned> counter{0};
    auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    path_ =
        std::filesystem::temp_directory_path() / ("tidings-persistence-" + std::to_string(::getpid()) + "-" +
                                                  std::to_string(stamp) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  std::string str() const { return path_.string(); }
  // A database directory inside the temp dir, so open() has to create it.
  std::string db() const { return (path_ / "db").string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace tidings::persistence::testing
