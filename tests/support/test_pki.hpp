#pragma once

// Certificates for the TLS tests, made with OpenSSL in the test itself: a
// CA, and leaf certificates it signs for chosen names and validity (an
// expired one, one for another name, one for a client). Written as PEM
// files into a directory of the test's own, where the code under test
// reads them as it would an operator's.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace tidings::testing {

struct pem_files {
  std::string cert;  // path of the PEM certificate
  std::string key;   // path of the PEM private key
};

// What a leaf certificate may be used for (extendedKeyUsage).
enum class usage { server, client, server_and_client };

struct leaf_spec {
  std::string common_name;
  // subjectAltName entries, "DNS:localhost" or "IP:127.0.0.1".
  std::vector<std::string> alt_names;
  // Valid from now + not_before to now + not_after.
  std::chrono::seconds not_before{-3600};
  std::chrono::seconds not_after{std::chrono::hours(24)};
  testing::usage usage = testing::usage::server;  // extendedKeyUsage
};

class test_ca {
 public:
  // A self-signed CA; its files go to dir/<stem>-ca.pem and dir/<stem>-ca.key.
  test_ca(std::string dir, std::string stem);
  ~test_ca();
  test_ca(const test_ca&) = delete;
  test_ca& operator=(const test_ca&) = delete;

  const pem_files& files() const { return files_; }
  // A certificate signed by this CA, as dir/<stem>.pem and dir/<stem>.key.
  pem_files issue(const std::string& stem, const leaf_spec& spec);

 private:
  struct keys;
  std::string dir_;
  std::unique_ptr<keys> keys_;
  pem_files files_;
  long serial_ = 1;
};

}  // namespace tidings::testing
