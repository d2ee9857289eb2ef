#pragma once

// Tokens and keys for tests: real tokens minted with libjwt's encoder (the
// same library the node verifies with), crafted ones for the bad cases, and
// fresh RSA / P-256 key pairs. Every helper throws std::runtime_error when
// libjwt or OpenSSL fails.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "broker/tenant_config.hpp"

namespace tidings::testing {

// A signed compact JWS: header {"alg","typ":"JWT"[,"kid"]} and the payload.
// key_material: the HS256 secret, or the PRIVATE key PEM for RS256/ES256.
std::string mint(broker::key_alg alg, const std::string& key_material, const nlohmann::json& payload,
                 const std::string& kid = "");

// "b64url(header).b64url(payload).signature_b64url", signed by nobody: for
// alg none, wrong signatures and other crafted tokens.
std::string mint_unsigned(const nlohmann::json& header, const nlohmann::json& payload,
                          std::string_view signature_b64url = "");

// Unpadded base64url (RFC 7515 2) of any bytes.
std::string base64url(std::string_view bytes);

struct key_pair {
  std::string private_pem;  // PKCS#8 "PRIVATE KEY"
  std::string public_pem;   // SPKI "PUBLIC KEY"
};

key_pair generate_rsa(int bits = 2048);
key_pair generate_p256();
// Any named curve OpenSSL knows ("P-384", "secp256k1"): for wrong-curve tests.
key_pair generate_ec(const std::string& curve);

}  // namespace tidings::testing
