#include "sources/file/file_path.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <sys/stat.h>

#include "core/uri_template.hpp"

namespace tidings::sources::file {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    char y = b[i] >= 'A' && b[i] <= 'Z' ? static_cast<char>(b[i] - 'A' + 'a') : b[i];
    if (x != y) return false;
  }
  return true;
}

std::string join(const std::string& base, const std::vector<std::string_view>& names) {
  std::string out = base;
  for (auto n : names) {
    if (out.empty() || out.back() != '/') out.push_back('/');
    out.append(n);
  }
  return out;
}

}  // namespace

std::optional<std::string> real_path(const std::string& path) {
  char* p = ::realpath(path.c_str(), nullptr);
  if (!p) return std::nullopt;
  std::string out(p);
  std::free(p);
  return out;
}

std::optional<file_scope> make_file_scope(const file_config& config, std::string* error) {
  if (config.roots.empty()) {
    *error = "no file roots configured";
    return std::nullopt;
  }
  file_scope scope;
  scope.config = config;
  for (const auto& root : config.roots) {
    if (root.empty() || root.front() != '/') {
      *error = "file root \"" + root + "\" is not an absolute path";
      return std::nullopt;
    }
    auto real = real_path(root);
    struct stat st {};
    if (!real || ::stat(real->c_str(), &st) != 0) {
      *error = "file root " + root + ": " + std::strerror(errno);
      return std::nullopt;
    }
    if (!S_ISDIR(st.st_mode)) {
      *error = "file root " + root + ": not a directory";
      return std::nullopt;
    }
    scope.real_roots.push_back(std::move(*real));
  }
  return scope;
}

bool under_roots(std::string_view real_path, const std::vector<std::string>& real_roots) {
  for (const auto& root : real_roots) {
    if (real_path == root) return true;
    if (root == "/") return !real_path.empty() && real_path.front() == '/';
    if (real_path.size() > root.size() && real_path.starts_with(root) && real_path[root.size()] == '/')
      return true;
  }
  return false;
}

std::string file_uri(std::string_view path) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out = "file://";
  for (char c : path) {
    auto u = static_cast<unsigned char>(c);
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                std::string_view("-._~/!$&'()*+,;=:@").find(c) != std::string_view::npos;
    if (keep) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(hex[u >> 4]);
      out.push_back(hex[u & 15]);
    }
  }
  return out;
}

std::optional<file_target> resolve_file_uri(std::string_view uri, const file_scope& scope,
                                            std::string* error) {
  auto fail = [&](std::string why) -> std::optional<file_target> {
    *error = std::string(uri) + ": " + std::move(why);
    return std::nullopt;
  };
  constexpr std::string_view scheme = "file://";
  if (uri.size() < scheme.size() || !iequals(uri.substr(0, scheme.size()), scheme))
    return fail("not a file:// URI (expected file:///absolute/path)");
  std::string_view rest = uri.substr(scheme.size());
  auto slash = rest.find('/');
  std::string_view host = rest.substr(0, slash);
  if (!host.empty() && !iequals(host, "localhost"))
    return fail("a file URI names no host (expected file:///absolute/path)");
  if (slash == std::string_view::npos) return fail("no path (expected file:///absolute/path)");
  std::string_view encoded = rest.substr(slash);
  if (encoded.find('#') != std::string_view::npos)
    return fail("file URIs take no fragment (write '#' as %23)");
  bool recursive = false;
  if (auto q = encoded.find('?'); q != std::string_view::npos) {
    auto query = encoded.substr(q + 1);
    if (query != "recursive=true" && query != "recursive=false")
      return fail(
          "the one query a file URI takes is recursive=true or recursive=false (write '?' in a name as %3F)");
    recursive = query == "recursive=true";
    encoded = encoded.substr(0, q);
  }
  auto decoded = core::percent_decode(encoded);
  if (!decoded) return fail("malformed percent-encoding");
  if (decoded->find('\0') != std::string::npos) return fail("the path holds a NUL byte");
  if (decoded->size() >= PATH_MAX) return fail("path too long");

  std::vector<std::string_view> names;
  std::string_view p = *decoded;
  for (std::size_t i = 0; i < p.size();) {
    auto next = p.find('/', i);
    if (next == std::string_view::npos) next = p.size();
    if (next > i) names.push_back(p.substr(i, next - i));
    i = next + 1;
  }
  // The longest prefix that exists, resolved by the kernel (symlinks and '..'
  // included); the rest is missing, so resolving it by hand is safe as long
  // as it holds no '.' or '..' (the kernel would not resolve those either).
  for (std::size_t k = names.size() + 1; k-- > 0;) {
    std::vector<std::string_view> head(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(k));
    auto real = real_path(join("/", head));
    if (!real) {
      if (errno == ENOENT) continue;
      return fail(std::strerror(errno));
    }
    std::vector<std::string_view> missing(names.begin() + static_cast<std::ptrdiff_t>(k), names.end());
    for (auto n : missing)
      if (n == "." || n == "..") return fail(std::strerror(ENOENT));
    file_target t;
    t.path = join(*real, missing);
    if (!under_roots(t.path, scope.real_roots))
      return fail("outside the allowed file roots (after resolving symlinks and '..')");
    t.recursive = recursive;
    t.uri = file_uri(t.path) + (recursive ? "?recursive=true" : "");
    return t;
  }
  return fail(std::strerror(ENOENT));
}

}  // namespace tidings::sources::file
