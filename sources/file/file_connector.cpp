#include "sources/file/file_connector.hpp"

#include <utility>

#include <boost/asio/post.hpp>

#include "core/resource_routing.hpp"
#include "sources/file/file_read.hpp"
#include "sources/file/file_upstream.hpp"

namespace tidings::sources::file {

file_connector::file_connector(boost::asio::io_context& io, file_config config)
    : io_(io), config_(std::move(config)) {}

file_connector::~file_connector() {
  stop();
}

std::shared_ptr<const file_scope> file_connector::scope(std::string* error) const {
  if (scope_) return scope_;
  std::string why;
  auto made = make_file_scope(config_, &why);
  if (!made) {
    *error = name_ + ": " + why;
    return nullptr;
  }
  scope_ = std::make_shared<const file_scope>(std::move(*made));
  return scope_;
}

void file_connector::start(std::function<void(std::string error)> done) {
  std::string error;
  scope_.reset();  // a retried start sees roots created since
  scope(&error);
  boost::asio::post(io_, [running = running_, done = std::move(done), error = std::move(error)] {
    if (*running) done(error);
  });
}

std::vector<resource_info> file_connector::resources() const {
  std::string roots;
  for (const auto& r : config_.roots) roots += (roots.empty() ? "" : ", ") + r;
  std::string example_root = config_.roots.empty() ? std::string("/srv/data") : config_.roots.front();
  if (example_root.size() > 1 && example_root.back() == '/') example_root.pop_back();
  resource_info info;
  info.uri = "file://{+path}";
  info.template_ = true;
  info.name = "file";
  info.description =
      "A file or directory under " + (roots.empty() ? std::string("no configured root") : roots) +
      ", pushed by inotify. A file reads as its content (JSON when it parses as JSON, a vanished file as "
      "null); a directory as a JSON array by name of {name, size, mtime_ms, sha256, type}; with "
      "?recursive=true every entry beneath it, named by its relative path. Atomic replace by rename is "
      "seen.\nExample: watch uri=" +
      file_uri(example_root + "/config.json");
  info.example = core::description_example(info.description);
  info.mime_type = "application/json";
  info.server = name_;
  info.subscribable = true;
  return {std::move(info)};
}

std::string file_connector::canonical(std::string_view uri) const {
  std::string error;
  auto s = scope(&error);
  if (!s) return std::string(uri);
  auto target = resolve_file_uri(uri, *s, &error);
  // A URI that does not resolve stays as it is; open() reports why.
  return target ? target->uri : std::string(uri);
}

std::shared_ptr<inotify_hub> file_connector::hub(std::string* error) {
  // A failed instance hears nothing more: the next upstream gets a new one.
  if (!hub_ || hub_->failed()) hub_ = inotify_hub::open(io_, error);
  return hub_;
}

std::unique_ptr<upstream> file_connector::open(const std::string& uri, std::string* error) {
  auto s = scope(error);
  if (!s) return nullptr;
  auto target = resolve_file_uri(uri, *s, error);
  if (!target) return nullptr;
  // A refused instance fails the subscription (which the source retries),
  // not the open.
  std::string hub_error;
  auto h = hub(&hub_error);
  return std::make_unique<file_upstream>(io_, std::move(*target), std::move(s), std::move(h),
                                         std::move(hub_error));
}

void file_connector::read(const std::string& uri, std::function<void(read_outcome)> done) {
  std::string error;
  auto s = scope(&error);
  std::optional<file_target> target;
  if (s) target = resolve_file_uri(uri, *s, &error);
  boost::asio::post(io_, [running = running_, s = std::move(s), target = std::move(target),
                          error = std::move(error), done = std::move(done)] {
    if (!*running) return;
    if (!target) return done(read_outcome::failed(error));
    done(read_file_target(*target, *s, false));
  });
}

void file_connector::stop() {
  *running_ = false;
}

}  // namespace tidings::sources::file
