#include "sources/mcp/stdio_transport.hpp"

#include <boost/asio/post.hpp>

#include "logging/log.hpp"

namespace tidings::sources::mcp {

using nlohmann::json;

stdio_transport::~stdio_transport() {
  close();
}

void stdio_transport::open(handlers h, std::function<void(std::string error)> done) {
  handlers_ = std::move(h);
  child_ = std::make_shared<child_process>(ioc_);
  child_options opts;
  opts.argv = cfg_.command;
  opts.env = cfg_.env;
  opts.cwd = cfg_.cwd;
  opts.max_line_bytes = cfg_.max_message_bytes;
  std::weak_ptr<stdio_transport> weak = weak_from_this();
  std::string name = cfg_.name;
  child_handlers ch;
  ch.stdout_line = [weak, name](const std::string& line) {
    auto self = weak.lock();
    if (!self) return;
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      logging::warn("mcp.message.malformed",
                    {{"server", name}, {"bytes", static_cast<std::uint64_t>(line.size())}});
      return;
    }
    if (self->handlers_.message) self->handlers_.message(std::move(j));
  };
  ch.stderr_line = [name](std::string line) {
    // The stdio binding: stderr is logging, not necessarily an error.
    logging::info("mcp.server.stderr", {{"server", name}, {"line", line}});
  };
  ch.oversized = [name](std::size_t bytes) {
    logging::warn("mcp.message.too_large", {{"server", name}, {"bytes", static_cast<std::uint64_t>(bytes)}});
  };
  ch.exited = [weak](std::string reason) {
    auto self = weak.lock();
    if (!self) return;
    auto closed = self->handlers_.closed;
    self->handlers_ = {};
    if (closed) closed(std::move(reason));
  };
  std::string err = child_->start(opts, std::move(ch));
  if (!err.empty()) child_.reset();
  logging::info(err.empty() ? "mcp.server.started" : "mcp.server.start_failed",
                {{"server", cfg_.name},
                 {"pid", static_cast<std::int64_t>(child_ ? child_->pid() : -1)},
                 {"error", err}});
  boost::asio::post(ioc_, [weak, done = std::move(done), err]() {
    if (weak.lock()) done(err);
  });
}

void stdio_transport::send_request(const json& message, const request_info&) {
  if (child_) child_->write_line(message.dump());
}

void stdio_transport::send_notification(const json& message) {
  if (child_) child_->write_line(message.dump());
}

void stdio_transport::cancel_request(const json& id, const std::string& reason) {
  send_notification(make_notification("notifications/cancelled", {{"requestId", id}, {"reason", reason}}));
}

void stdio_transport::set_protocol(era, const std::string&) {}

void stdio_transport::close() {
  handlers_ = {};
  if (!child_) return;
  pid_t pid = child_->pid();
  child_->stop();
  if (pid > 0)
    logging::info(
        "mcp.server.stopped",
        {{"server", cfg_.name}, {"pid", static_cast<std::int64_t>(pid)}, {"status", child_->exit_status()}});
  child_.reset();
}

}  // namespace tidings::sources::mcp
