#pragma once

// The `tenants:` section of the node's YAML config: who may sign tokens for
// each tenant, the tenant's limits, the browser origins it may use, and how
// its notifications are scoped to subscribers. Strings may use ${env.NAME}
// (secrets belong in the environment, not the file). Everything is checked
// at parse time, keys included, so a bad section stops the node (or a
// reload) with a message naming the setting, e.g.
// `tenants[1].keys[0]: unknown alg "HS999"`; a message never quotes a secret
// or a key.
//
//   tenants:
//     - id: acme                        # 1-64 of a-z 0-9 . _ -
//       keys:
//         - kid: k1                     # optional; unique within the tenant
//           alg: HS256
//           secret: ${env.ACME_SECRET}  # at least 32 bytes (RFC 7518 3.2)
//         - alg: RS256                  # RSA >= 2048 bits; or ES256 (P-256 only)
//           public_key: |               # SPKI PEM, or public_key_file: PATH
//             -----BEGIN PUBLIC KEY-----...
//       limits: {sse_sessions: 1000, sse_sessions_per_subject: 100, streams_per_session: 64,
//                watches: 5, publish_rate: 1000, publish_burst: 2000, max_body_bytes: 1048576,
//                unknown_streams: 1000, streams: 100000}
//       allowed_origins: [https://app.example]
//       notification_scopes:
//         - {stream: inbox, scope: subject, field: /data/owner}
//         - {stream: "fin-*", scope: expression, expression: 'has(subscriber.groups, "finance")'}
//       operator: true                  # its admins run the node (ADR 0011); default false

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace YAML {
class Node;
}

namespace tidings::broker {

// The algorithm is fixed by the key, never taken from a token: a token's
// `alg` only selects among the keys configured for it (no alg confusion).
enum class key_alg { hs256, rs256, es256 };
std::string_view key_alg_name(key_alg a);  // "HS256", "RS256", "ES256"

struct verification_key {
  std::string kid;  // may be empty
  key_alg alg = key_alg::hs256;
  // HS256: the secret bytes. RS256/ES256: the public key as an SPKI PEM,
  // re-encoded from the parsed key, so it is exactly the key that was checked.
  std::string material;
};

struct tenant_limits {
  std::size_t sse_sessions = 1000;
  std::size_t sse_sessions_per_subject = 100;
  std::size_t streams_per_session = 64;
  std::size_t watches = 5;
  double publish_rate = 1000;  // events/s
  double publish_burst = 2000;
  std::size_t max_body_bytes = 1 << 20;
  // Streams that do not exist yet which this tenant's sessions wait on
  // (each holds a hub until created or left; the node caps all tenants).
  std::size_t unknown_streams = 1000;
  // Streams the tenant may have on a node; a publish that would create one
  // more gets 429.
  std::size_t streams = 100000;
};

enum class scope_kind { subject, expression };

struct notification_scope {
  std::string stream;  // glob with *, like a grant's stream part
  scope_kind kind = scope_kind::subject;
  std::string field;       // subject: a JSON pointer into the event object, e.g. "/data/owner"
  std::string expression;  // expression: Lua, compiled elsewhere (filters/)
};

struct tenant_spec {
  std::string id;
  std::vector<verification_key> keys;  // at least one
  tenant_limits limits;
  std::vector<std::string> allowed_origins;
  std::vector<notification_scope> scopes;
  // An admin token of this tenant is a node operator: the admin views show
  // every tenant, and it may drain and reload the node (ADR 0011).
  bool node_operator = false;
};

// Fills *out from the `tenants:` node (a list); on an error *out is left
// unchanged and the message names the field path.
std::optional<std::string> parse_tenants(const YAML::Node& node, std::vector<tenant_spec>* out);

// The stable name of tenant.keys[index] that verify_token reports:
// "<tenant>#<kid>", or "<tenant>#<index>" for a key without a kid.
std::string key_id(const tenant_spec& tenant, std::size_t index);

// What a cluster's members must agree on to serve each other's tenants
// (ADR 0024): each tenant's id, whether it is a node operator, and its
// keys (kid, algorithm, material), in an order-independent encoding. It
// holds key material: it is only ever shown through a keyed hash.
std::string security_description(const std::vector<tenant_spec>& tenants);

}  // namespace tidings::broker
