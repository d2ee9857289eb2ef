#pragma once

// The file source's connector, "files": serves `file://{+path}` for paths
// under the configured roots (file_config.hpp), watched by file_upstream.

#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>

#include "sources/file/file_config.hpp"
#include "sources/file/file_path.hpp"
#include "sources/file/inotify_hub.hpp"
#include "sources/upstream.hpp"

namespace tidings::sources::file {

class file_connector final : public connector {
 public:
  file_connector(boost::asio::io_context& io, file_config config);
  ~file_connector() override;

  file_connector(const file_connector&) = delete;
  file_connector& operator=(const file_connector&) = delete;

  const std::string& name() const override { return name_; }
  // Resolves the roots; fails when one is missing or not a directory.
  void start(std::function<void(std::string error)> done) override;
  std::vector<resource_info> resources() const override;
  // The URI of the real path, so every spelling of one file shares a source.
  std::string canonical(std::string_view uri) const override;
  std::unique_ptr<upstream> open(const std::string& uri, std::string* error) override;
  void read(const std::string& uri, std::function<void(read_outcome)> done) override;
  void stop() override;

 private:
  // The resolved roots, resolving them now if start() has not (or failed).
  std::shared_ptr<const file_scope> scope(std::string* error) const;
  // The node's one inotify instance, made with the first upstream (again
  // at the next one if the kernel refused it).
  std::shared_ptr<inotify_hub> hub(std::string* error);

  boost::asio::io_context& io_;
  file_config config_;
  std::string name_ = "files";
  mutable std::shared_ptr<const file_scope> scope_;
  std::shared_ptr<inotify_hub> hub_;
  // False after stop(): posted callbacks then do not run.
  std::shared_ptr<bool> running_ = std::make_shared<bool>(true);
};

}  // namespace tidings::sources::file
