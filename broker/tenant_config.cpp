#include "broker/tenant_config.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <memory>

#include "broker/yaml_reader.hpp"
#include "core/grant.hpp"

namespace tidings::broker {
namespace {

using YAML::Node;

constexpr std::size_t max_id_length = 64;
constexpr std::size_t max_kid_length = 256;
// Every key whose alg a token names may be tried on it: keep that bounded.
constexpr std::size_t max_keys_per_tenant = 16;
// RFC 7518 3.2: an HS256 key at least as long as the hash output.
constexpr std::size_t min_hmac_secret_bytes = 32;
constexpr std::size_t max_pem_bytes = 64 << 10;
constexpr std::size_t max_expression_bytes = 16 << 10;

std::string in_quotes(const std::string& s) {
  return "\"" + s + "\"";
}

bool valid_tenant_id(const std::string& id) {
  if (id.empty() || id.size() > max_id_length) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  });
}

bool visible_ascii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
}

// RFC 6901, non-empty: "/a/b~1c"; '~' only as "~0" or "~1".
bool valid_json_pointer(const std::string& p) {
  if (p.empty() || p.front() != '/') return false;
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] == '~' && (i + 1 == p.size() || (p[i + 1] != '0' && p[i + 1] != '1'))) return false;
  return true;
}

// "https://app.example" or "http://127.0.0.1:8080": what a browser sends in
// Origin (lower case, no path), so the front door can compare exactly.
bool valid_origin(const std::string& o) {
  std::string_view rest = o;
  if (rest.starts_with("https://"))
    rest.remove_prefix(8);
  else if (rest.starts_with("http://"))
    rest.remove_prefix(7);
  else
    return false;
  std::string_view host = rest, port;
  if (rest.starts_with('[')) {
    auto close = rest.find(']');
    if (close == std::string_view::npos || close == 1) return false;
    for (char c : rest.substr(1, close - 1))
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == ':' || c == '.')) return false;
    host = rest.substr(0, close + 1);
    rest.remove_prefix(close + 1);
    if (!rest.empty() && rest.front() != ':') return false;
    if (!rest.empty()) port = rest.substr(1);
  } else {
    auto colon = rest.find(':');
    host = rest.substr(0, colon);
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
    if (host.empty()) return false;
    for (char c : host)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) return false;
    if (colon != std::string_view::npos && port.empty()) return false;
  }
  if (!port.empty()) {
    unsigned v = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
    if (ec != std::errc() || end != port.data() + port.size() || v == 0 || v > 65535) return false;
  }
  return true;
}

struct bio_free {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct pkey_free {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

// Parses an SPKI PEM the way libjwt will (PEM_read_bio_PUBKEY), checks that
// the key suits the alg, and returns it re-encoded so the stored material is
// exactly the key that passed. Messages never quote the PEM.
std::optional<std::string> check_public_key(const std::string& pem, key_alg alg, std::string* normalized) {
  if (pem.size() > max_pem_bytes) return "is longer than 64 KiB";
  if (pem.find("PRIVATE KEY") != std::string::npos)
    return "holds a private key; configure only the public key";
  std::size_t blocks = 0;
  for (auto p = pem.find("-----BEGIN "); p != std::string::npos; p = pem.find("-----BEGIN ", p + 1)) ++blocks;
  if (blocks > 1) return "holds more than one PEM block; give each key its own entry";
  std::unique_ptr<BIO, bio_free> in(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!in) return "cannot be read (out of memory)";
  std::unique_ptr<EVP_PKEY, pkey_free> key(PEM_read_bio_PUBKEY(in.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!key) return "is not a PEM public key (-----BEGIN PUBLIC KEY-----)";
  int type = EVP_PKEY_get_base_id(key.get());
  if (alg == key_alg::rs256) {
    if (type != EVP_PKEY_RSA) return "is not an RSA key, which RS256 needs";
    int bits = EVP_PKEY_get_bits(key.get());
    if (bits < 2048) return "is a " + std::to_string(bits) + "-bit RSA key; RS256 needs at least 2048 bits";
  } else if (alg == key_alg::es256) {
    if (type != EVP_PKEY_EC) return "is not an EC key, which ES256 needs (P-256)";
    char group[80] = {};
    std::size_t len = 0;
    bool named = EVP_PKEY_get_group_name(key.get(), group, sizeof group, &len) == 1;
    ERR_clear_error();
    if (!named || std::string_view(group, len) != "prime256v1")
      return "is not a P-256 key, which ES256 needs";
  } else {
    return "is not used by HS256 (give a secret)";
  }
  std::unique_ptr<BIO, bio_free> out(BIO_new(BIO_s_mem()));
  if (!out || PEM_write_bio_PUBKEY(out.get(), key.get()) != 1) {
    ERR_clear_error();
    return "cannot be re-encoded";
  }
  char* data = nullptr;
  long size = BIO_get_mem_data(out.get(), &data);
  normalized->assign(data, static_cast<std::size_t>(size));
  return std::nullopt;
}

std::optional<std::string> read_small_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot open " + path;
  std::string data;
  char buf[4096];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    data.append(buf, static_cast<std::size_t>(in.gcount()));
    if (data.size() > max_pem_bytes) return path + " is longer than 64 KiB";
  }
  if (in.bad()) return "cannot read " + path;
  *out = std::move(data);
  return std::nullopt;
}

bool parse_key(yaml_reader& r, const Node& n, const std::string& path, verification_key* out) {
  if (!r.known_keys(n, path, {"kid", "alg", "secret", "public_key", "public_key_file"})) return false;
  if (n["kid"]) {
    if (!r.text(n["kid"], path + ".kid", &out->kid)) return false;
    if (out->kid.empty() || out->kid.size() > max_kid_length || !visible_ascii(out->kid))
      return r.fail(path + ".kid", "must be 1-256 visible ASCII characters");
  }
  if (!n["alg"]) return r.fail(path, "needs alg (HS256, RS256 or ES256)");
  std::string alg;
  if (!r.text(n["alg"], path + ".alg", &alg)) return false;
  if (alg == "HS256")
    out->alg = key_alg::hs256;
  else if (alg == "RS256")
    out->alg = key_alg::rs256;
  else if (alg == "ES256")
    out->alg = key_alg::es256;
  else
    return r.fail(path, "unknown alg " + in_quotes(alg));

  if (out->alg == key_alg::hs256) {
    if (n["public_key"] || n["public_key_file"])
      return r.fail(path, "HS256 takes a secret, not public_key or public_key_file");
    if (!n["secret"]) return r.fail(path, "needs secret (HS256)");
    if (!r.text(n["secret"], path + ".secret", &out->material)) return false;
    if (out->material.size() < min_hmac_secret_bytes)
      return r.fail(path + ".secret", "is shorter than 32 bytes (RFC 7518 3.2); use a longer random secret");
    return true;
  }
  auto name = std::string(key_alg_name(out->alg));
  if (n["secret"]) return r.fail(path, name + " takes public_key or public_key_file, not a secret");
  if (n["public_key"] && n["public_key_file"])
    return r.fail(path, "has both public_key and public_key_file; pick one");
  std::string pem, where;
  if (n["public_key"]) {
    where = path + ".public_key";
    if (!r.text(n["public_key"], where, &pem)) return false;
  } else if (n["public_key_file"]) {
    where = path + ".public_key_file";
    std::string file;
    if (!r.text(n["public_key_file"], where, &file)) return false;
    if (auto e = read_small_file(file, &pem)) return r.fail(where, *e);
  } else {
    return r.fail(path, "needs public_key (PEM) or public_key_file (" + name + ")");
  }
  if (auto e = check_public_key(pem, out->alg, &out->material)) return r.fail(where, *e);
  return true;
}

bool parse_limits(yaml_reader& r, const Node& n, const std::string& path, tenant_limits* out) {
  if (!r.known_keys(n, path,
                    {"sse_sessions", "sse_sessions_per_subject", "streams_per_session", "watches",
                     "publish_rate", "publish_burst", "max_body_bytes", "unknown_streams", "streams"}))
    return false;
  struct count_field {
    const char* name;
    std::size_t lo, hi;
    std::size_t* slot;
  };
  for (const auto& f : {
           count_field{"sse_sessions", 1, 1'000'000, &out->sse_sessions},
           count_field{"sse_sessions_per_subject", 1, 1'000'000, &out->sse_sessions_per_subject},
           count_field{"streams_per_session", 1, 128, &out->streams_per_session},
           count_field{"watches", 1, 100'000, &out->watches},
           count_field{"max_body_bytes", 64, 64 << 20, &out->max_body_bytes},
           count_field{"unknown_streams", 0, 10'000'000, &out->unknown_streams},
           count_field{"streams", 1, 100'000'000, &out->streams},
       })
    if (n[f.name] && !r.count(n[f.name], path + "." + f.name, f.lo, f.hi, f.slot)) return false;
  if (n["publish_rate"] && !r.number(n["publish_rate"], path + ".publish_rate", 0, 1e7,
                                     "above 0 and at most 10000000", &out->publish_rate))
    return false;
  if (n["publish_burst"] && !r.number(n["publish_burst"], path + ".publish_burst", 0, 1e8,
                                      "above 0 and at most 100000000", &out->publish_burst))
    return false;
  // A bucket smaller than one event would refuse every publish.
  if (out->publish_burst < 1) return r.fail(path + ".publish_burst", "must be at least 1 (one event)");
  return true;
}

bool parse_scope(yaml_reader& r, const Node& n, const std::string& path, notification_scope* out) {
  if (!r.known_keys(n, path, {"stream", "scope", "field", "expression"})) return false;
  if (!n["stream"]) return r.fail(path, "needs stream (a stream name, '*' allowed)");
  if (!r.text(n["stream"], path + ".stream", &out->stream)) return false;
  std::string why;
  auto g = core::parse_grant(out->stream, &why);
  if (!g) return r.fail(path + ".stream", why);
  if (!g->any_path) return r.fail(path + ".stream", "names streams only, not a path pattern");
  if (!n["scope"]) return r.fail(path, "needs scope (subject or expression)");
  std::string kind;
  if (!r.text(n["scope"], path + ".scope", &kind)) return false;
  if (kind == "subject") {
    out->kind = scope_kind::subject;
    if (n["expression"]) return r.fail(path + ".expression", "only for scope: expression");
    if (!n["field"]) return r.fail(path, "needs field (a JSON pointer such as /data/owner)");
    if (!r.text(n["field"], path + ".field", &out->field)) return false;
    if (!valid_json_pointer(out->field))
      return r.fail(path + ".field", "is not a JSON pointer into the event (such as /data/owner)");
  } else if (kind == "expression") {
    out->kind = scope_kind::expression;
    if (n["field"]) return r.fail(path + ".field", "only for scope: subject");
    if (!n["expression"]) return r.fail(path, "needs expression (Lua)");
    if (!r.text(n["expression"], path + ".expression", &out->expression)) return false;
    if (out->expression.find_first_not_of(" \t\r\n") == std::string::npos)
      return r.fail(path + ".expression", "must not be empty");
    if (out->expression.size() > max_expression_bytes)
      return r.fail(path + ".expression", "is longer than 16 KiB");
  } else {
    return r.fail(path + ".scope", "must be subject or expression, not " + in_quotes(kind));
  }
  return true;
}

bool parse_tenant(yaml_reader& r, const Node& n, const std::string& path, tenant_spec* out) {
  if (!r.known_keys(n, path, {"id", "keys", "limits", "allowed_origins", "notification_scopes", "operator"}))
    return false;
  if (!n["id"]) return r.fail(path, "needs id");
  if (!r.text(n["id"], path + ".id", &out->id)) return false;
  if (!valid_tenant_id(out->id)) return r.fail(path + ".id", "must be 1-64 of a-z 0-9 . _ -");

  if (!n["keys"]) return r.fail(path, "needs keys (at least one)");
  const auto& keys = n["keys"];
  if (!keys.IsSequence()) return r.fail(path + ".keys", "must be a list");
  if (keys.size() == 0) return r.fail(path + ".keys", "needs at least one key");
  if (keys.size() > max_keys_per_tenant) return r.fail(path + ".keys", "has more than 16 keys");
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto kpath = path + ".keys[" + std::to_string(i) + "]";
    verification_key k;
    if (!parse_key(r, keys[i], kpath, &k)) return false;
    if (!k.kid.empty())
      for (std::size_t j = 0; j < out->keys.size(); ++j)
        if (out->keys[j].kid == k.kid)
          return r.fail(kpath + ".kid",
                        in_quotes(k.kid) + " is already used by keys[" + std::to_string(j) + "]");
    out->keys.push_back(std::move(k));
  }

  if (n["limits"] && !parse_limits(r, n["limits"], path + ".limits", &out->limits)) return false;

  if (n["operator"]) {
    std::string flag;
    if (!r.text(n["operator"], path + ".operator", &flag)) return false;
    if (flag != "true" && flag != "false") return r.fail(path + ".operator", "must be true or false");
    out->node_operator = flag == "true";
  }

  if (n["allowed_origins"]) {
    if (!r.texts(n["allowed_origins"], path + ".allowed_origins", &out->allowed_origins)) return false;
    for (std::size_t i = 0; i < out->allowed_origins.size(); ++i)
      if (!valid_origin(out->allowed_origins[i]))
        return r.fail(path + ".allowed_origins[" + std::to_string(i) + "]",
                      in_quotes(out->allowed_origins[i]) +
                          " is not an origin (lower-case http(s)://host[:port], no path)");
  }

  if (n["notification_scopes"]) {
    const auto& scopes = n["notification_scopes"];
    if (!scopes.IsSequence()) return r.fail(path + ".notification_scopes", "must be a list");
    for (std::size_t i = 0; i < scopes.size(); ++i) {
      auto spath = path + ".notification_scopes[" + std::to_string(i) + "]";
      notification_scope s;
      if (!parse_scope(r, scopes[i], spath, &s)) return false;
      for (std::size_t j = 0; j < out->scopes.size(); ++j)
        if (out->scopes[j].stream == s.stream)
          return r.fail(
              spath + ".stream",
              in_quotes(s.stream) + " already has a scope (notification_scopes[" + std::to_string(j) + "])");
      out->scopes.push_back(std::move(s));
    }
  }
  return true;
}

}  // namespace

std::string_view key_alg_name(key_alg a) {
  switch (a) {
    case key_alg::hs256:
      return "HS256";
    case key_alg::rs256:
      return "RS256";
    case key_alg::es256:
      return "ES256";
  }
  return "unknown";
}

// A kid-less key is named by a fingerprint of its material, not its
// position, so adding a key in front of it does not rename it.
std::string key_id(const tenant_spec& tenant, std::size_t index) {
  if (index >= tenant.keys.size()) return tenant.id + "#";
  const auto& key = tenant.keys[index];
  if (!key.kid.empty()) return tenant.id + "#" + key.kid;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(key.material.data()), key.material.size(), digest);
  static constexpr char hex[] = "0123456789abcdef";
  std::string id = tenant.id + "#sha256:";
  for (int i = 0; i < 8; ++i) {
    id += hex[digest[i] >> 4];
    id += hex[digest[i] & 15];
  }
  return id;
}

// Whoever can sign another tenant's tokens must not be able to mint an
// operator's (ADR 0011): an operator tenant's keys are its own.
std::optional<std::string> operator_keys_apart(const std::vector<tenant_spec>& tenants) {
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    if (!tenants[i].node_operator) continue;
    for (std::size_t k = 0; k < tenants[i].keys.size(); ++k)
      for (std::size_t j = 0; j < tenants.size(); ++j) {
        if (tenants[j].node_operator) continue;
        for (const auto& other : tenants[j].keys)
          if (other.material == tenants[i].keys[k].material)
            return "tenants[" + std::to_string(i) + "].keys[" + std::to_string(k) +
                   "]: an operator tenant needs keys of its own; tenants[" + std::to_string(j) + "] (" +
                   tenants[j].id + ") has the same key";
      }
  }
  return std::nullopt;
}

std::optional<std::string> parse_tenants(const YAML::Node& node, std::vector<tenant_spec>* out) {
  yaml_reader r;
  std::vector<tenant_spec> tenants;
  try {
    if (!node.IsSequence()) return "tenants: must be a list of tenants";
    for (std::size_t i = 0; i < node.size(); ++i) {
      auto path = "tenants[" + std::to_string(i) + "]";
      tenant_spec t;
      if (!parse_tenant(r, node[i], path, &t)) return r.error();
      for (std::size_t j = 0; j < tenants.size(); ++j)
        if (tenants[j].id == t.id)
          return path + ".id: " + in_quotes(t.id) + " is already used by tenants[" + std::to_string(j) + "]";
      tenants.push_back(std::move(t));
    }
  } catch (const YAML::Exception& e) {
    return "tenants: " + std::string(e.what());
  }
  if (auto err = operator_keys_apart(tenants)) return err;
  *out = std::move(tenants);
  return std::nullopt;
}

namespace {

void put_field(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
}

}  // namespace

std::string security_description(const std::vector<tenant_spec>& tenants) {
  std::vector<std::string> rows;
  for (const auto& t : tenants) {
    std::vector<std::string> keys;
    for (const auto& k : t.keys) {
      std::string key;
      put_field(key, k.kid);
      put_field(key, std::to_string(static_cast<int>(k.alg)));
      put_field(key, k.material);
      keys.push_back(std::move(key));
    }
    std::sort(keys.begin(), keys.end());
    std::string row;
    put_field(row, t.id);
    put_field(row, t.node_operator ? "operator" : "tenant");
    for (const auto& k : keys) put_field(row, k);
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end());
  std::string out;
  for (const auto& r : rows) put_field(out, r);
  return out;
}

}  // namespace tidings::broker
