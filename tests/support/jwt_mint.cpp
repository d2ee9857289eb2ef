#include "tests/support/jwt_mint.hpp"

#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <climits>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "tests/support/openssl_ptr.hpp"

namespace tidings::testing {
namespace {

struct jwt_deleter {
  void operator()(jwt_t* j) const { jwt_free(j); }
};

[[noreturn]] void fail(const std::string& what) {
  ERR_clear_error();
  throw std::runtime_error("jwt_mint: " + what);
}

jwt_alg_t libjwt_alg(broker::key_alg a) {
  switch (a) {
    case broker::key_alg::hs256:
      return JWT_ALG_HS256;
    case broker::key_alg::rs256:
      return JWT_ALG_RS256;
    case broker::key_alg::es256:
      return JWT_ALG_ES256;
  }
  return JWT_ALG_INVAL;
}

std::string bio_text(BIO* b) {
  char* data = nullptr;
  long size = BIO_get_mem_data(b, &data);
  return std::string(data, static_cast<std::size_t>(size));
}

key_pair pem_pair(EVP_PKEY* key) {
  bio_ptr priv(BIO_new(BIO_s_mem())), pub(BIO_new(BIO_s_mem()));
  if (!priv || !pub) fail("BIO_new");
  if (PEM_write_bio_PrivateKey(priv.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
    fail("PEM_write_bio_PrivateKey");
  if (PEM_write_bio_PUBKEY(pub.get(), key) != 1) fail("PEM_write_bio_PUBKEY");
  return {bio_text(priv.get()), bio_text(pub.get())};
}

}  // namespace

std::string mint(broker::key_alg alg, const std::string& key_material, const nlohmann::json& payload,
                 const std::string& kid) {
  jwt_t* raw = nullptr;
  if (jwt_new(&raw) != 0) fail("jwt_new");
  std::unique_ptr<jwt_t, jwt_deleter> jwt(raw);
  if (jwt_add_grants_json(jwt.get(), payload.dump().c_str()) != 0)
    fail("jwt_add_grants_json (payload not an object?)");
  if (!kid.empty() && jwt_add_header(jwt.get(), "kid", kid.c_str()) != 0) fail("jwt_add_header kid");
  if (key_material.empty() || key_material.size() > static_cast<std::size_t>(INT_MAX)) fail("empty key");
  if (jwt_set_alg(jwt.get(), libjwt_alg(alg), reinterpret_cast<const unsigned char*>(key_material.data()),
                  static_cast<int>(key_material.size())) != 0)
    fail("jwt_set_alg");
  char* text = jwt_encode_str(jwt.get());
  if (!text) fail("jwt_encode_str (wrong key for the alg?)");
  std::string out(text);
  std::free(text);
  ERR_clear_error();
  return out;
}

std::string base64url(std::string_view bytes) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(alphabet[(acc >> bits) & 0x3f]);
    }
    acc &= (1u << bits) - 1;
  }
  if (bits > 0) out.push_back(alphabet[(acc << (6 - bits)) & 0x3f]);
  return out;
}

std::string mint_unsigned(const nlohmann::json& header, const nlohmann::json& payload,
                          std::string_view signature_b64url) {
  return base64url(header.dump()) + "." + base64url(payload.dump()) + "." + std::string(signature_b64url);
}

key_pair generate_rsa(int bits) {
  pkey_ptr key(EVP_RSA_gen(static_cast<unsigned>(bits)));
  if (!key) fail("EVP_RSA_gen");
  return pem_pair(key.get());
}

key_pair generate_ec(const std::string& curve) {
  pkey_ptr key(EVP_EC_gen(curve.c_str()));
  if (!key) fail("EVP_EC_gen " + curve);
  return pem_pair(key.get());
}

key_pair generate_p256() {
  return generate_ec("P-256");
}

}  // namespace tidings::testing
