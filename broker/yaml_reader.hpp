#pragma once

// Reading checked settings out of a YAML config section: every error names
// the setting's path ("upstreams.mcp.memory.command",
// "tenants[0].keys[1].secret"), strings take ${env.NAME}, and the first
// error wins so the message is about the real cause.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/upstream_config.hpp"  // interpolate_env

namespace tidings::broker {

class yaml_reader {
 public:
  // `prefix` goes before every path ("upstreams"); empty for none.
  explicit yaml_reader(std::string prefix = {}) : prefix_(std::move(prefix)) {}

  const std::optional<std::string>& error() const { return error_; }

  bool fail(const std::string& path, const std::string& message) {
    if (!error_) error_ = (prefix_.empty() ? std::string() : prefix_ + ".") + path + ": " + message;
    return false;
  }

  bool text(const YAML::Node& n, const std::string& path, std::string* out) {
    if (!n.IsScalar()) return fail(path, "must be a single value");
    std::string value;
    if (auto e = interpolate_env(n.as<std::string>(), &value)) return fail(path, *e);
    *out = std::move(value);
    return true;
  }

  bool texts(const YAML::Node& n, const std::string& path, std::vector<std::string>* out) {
    if (!n.IsSequence()) return fail(path, "must be a list");
    out->clear();
    for (std::size_t i = 0; i < n.size(); ++i) {
      std::string s;
      if (!text(n[i], path + "[" + std::to_string(i) + "]", &s)) return false;
      out->push_back(std::move(s));
    }
    return true;
  }

  template <class Map>
  bool string_map(const YAML::Node& n, const std::string& path, Map* out) {
    if (!n.IsMap()) return fail(path, "must be a mapping");
    for (const auto& kv : n) {
      auto key = kv.first.as<std::string>();
      std::string value;
      std::string where = path;
      where.append(".").append(key);
      if (!text(kv.second, where, &value)) return false;
      out->insert(out->end(), {key, value});
    }
    return true;
  }

  bool millis(const YAML::Node& n, const std::string& path, std::chrono::milliseconds* out) {
    std::string text;
    if (!this->text(n, path, &text)) return false;
    char* end = nullptr;
    auto v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v < 1 || v > 86'400'000)
      return fail(path, "must be milliseconds from 1 to 86400000");
    *out = std::chrono::milliseconds(v);
    return true;
  }

  bool count(const YAML::Node& n, const std::string& path, std::size_t lo, std::size_t hi, std::size_t* out) {
    std::string s;
    if (!text(n, path, &s)) return false;
    unsigned long long v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi)
      return fail(path, "must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
    *out = static_cast<std::size_t>(v);
    return true;
  }

  bool flag(const YAML::Node& n, const std::string& path, bool* out) {
    std::string s;
    if (!text(n, path, &s)) return false;
    if (s != "true" && s != "false") return fail(path, "must be true or false");
    *out = s == "true";
    return true;
  }

  // A finite number in (lo, hi]: rates and bursts.
  bool number(const YAML::Node& n, const std::string& path, double lo, double hi, const std::string& range,
              double* out) {
    std::string s;
    if (!text(n, path, &s)) return false;
    double v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) || v <= lo ||
        v > hi)
      return fail(path, "must be a number " + range);
    *out = v;
    return true;
  }

  // Every key of a mapping must be known: a typo must not pass silently.
  bool known_keys(const YAML::Node& n, const std::string& path,
                  std::initializer_list<std::string_view> keys) {
    if (!n.IsMap()) return fail(path, "must be a mapping");
    for (const auto& kv : n) {
      auto key = kv.first.as<std::string>();
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        std::string where = path;
        where.append(".").append(key);
        return fail(where, "unknown setting");
      }
    }
    return true;
  }

 private:
  std::string prefix_;
  std::optional<std::string> error_;
};

}  // namespace tidings::broker
