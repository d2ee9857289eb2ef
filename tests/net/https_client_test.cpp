// The HTTP client over TLS (issue 24) against a TLS server of the test's
// own, with certificates made for each case: what verifies, what does not
// and the words each failure is reported with.

#include <cstdio>
#include <optional>
#include <string>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "net/http_client.hpp"
#include "net/tls_context.hpp"
#include "tests/net/run_loop.hpp"
#include "tests/support/openssl_ptr.hpp"
#include "tests/support/tidingsd_process.hpp"
#include "tests/support/tls_loopback_server.hpp"

namespace tidings::net {
namespace {

using testing::leaf_spec;
using testing::pem_files;
using testing::tls_loopback_server;
using testing::tls_socket;

// One CA and its certificates for the whole run: made once, read by every case.
struct pki {
  testing::temp_dir dir;
  testing::test_ca ca{dir.path().string(), "upstream"};
  testing::test_ca other_ca{dir.path().string(), "other"};
  pem_files localhost = ca.issue("localhost", {"localhost", {"DNS:localhost", "IP:127.0.0.1"}});
  pem_files expired =
      ca.issue("expired", {"localhost", {"DNS:localhost"}, -std::chrono::hours(48), -std::chrono::hours(24)});
  pem_files elsewhere = ca.issue("elsewhere", {"elsewhere.test", {"DNS:elsewhere.test"}});
  pem_files by_other_ca = other_ca.issue("by-other", {"localhost", {"DNS:localhost"}});
  pem_files client = ca.issue("client", {"tidings-node-1",
                                         {},
                                         -std::chrono::hours(1),
                                         std::chrono::hours(24),
                                         tidings::testing::usage::client});
};

const pki& certs() {
  static const pki shared;
  return shared;
}

std::string ok_response(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

void answer(tls_socket& s, const std::string& body) {
  testing::read_http_request(s);
  testing::write_all(s, ok_response(body));
}

std::shared_ptr<tls_context> context_for(const tls_settings& settings) {
  std::string error;
  auto ctx = make_tls_client_context(settings, &error);
  INFO(error);
  REQUIRE(ctx != nullptr);
  return ctx;
}

http_result fetch(const std::string& url, std::shared_ptr<tls_context> tls) {
  boost::asio::io_context ioc;
  std::optional<http_result> result;
  http_request req;
  req.url = url;
  req.tls = std::move(tls);
  http_fetch(ioc, req, [&](http_result r) { result = std::move(r); });
  REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
  return *result;
}

}  // namespace

TEST_CASE("https: a request to a server the CA file vouches for, by name and by address", "[https]") {
  std::string request;
  tls_loopback_server server(certs().localhost, [&](tls_socket& s) {
    request = testing::read_http_request(s);
    testing::write_all(s, ok_response("over tls"));
  });
  const auto ctx = context_for({certs().ca.files().cert, "", "", false});
  const auto by_name = fetch(server.url("localhost", "/a?b=1"), ctx);
  REQUIRE(by_name.error.empty());
  CHECK(by_name.response.status == 200);
  CHECK(by_name.response.body == "over tls");
  CHECK(request.rfind("GET /a?b=1 HTTP/1.1\r\n", 0) == 0);
  CHECK(request.find("Host: localhost:" + std::to_string(server.port()) + "\r\n") != std::string::npos);
  const auto by_address = fetch(server.url("127.0.0.1", "/"), ctx);
  REQUIRE(by_address.error.empty());
  const auto seen = server.handshakes();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].server_name == "localhost");  // SNI for a name
  CHECK(seen[1].server_name.empty());         // never for an address
}

TEST_CASE("https: a streamed response arrives in pieces through TLS", "[https]") {
  testing::gate more;
  tls_loopback_server server(certs().localhost, [&](tls_socket& s) {
    testing::read_http_request(s);
    testing::write_all(s, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + testing::chunk("one,"));
    more.wait();
    testing::write_all(s, testing::chunk("two") + "0\r\n\r\n");
  });
  boost::asio::io_context ioc;
  std::string data;
  std::optional<std::string> ended;
  http_request req;
  req.url = server.url("localhost", "/watch");
  req.tls = context_for({certs().ca.files().cert, "", "", false});
  http_stream_handlers handlers;
  handlers.data = [&](std::string_view d) { data += d; };
  handlers.end = [&](std::string e) { ended = std::move(e); };
  auto call = http_open_stream(ioc, req, handlers);
  REQUIRE(run_until(ioc, [&] { return data == "one,"; }));
  more.open();
  REQUIRE(run_until(ioc, [&] { return ended.has_value(); }));
  CHECK(*ended == "");
  CHECK(data == "one,two");
}

TEST_CASE("https: failures name the upstream and the reason", "[https]") {
  const auto trusting = context_for({certs().ca.files().cert, "", "", false});
  auto failure = [&](const pem_files& served, const std::string& host, std::shared_ptr<tls_context> ctx) {
    tls_loopback_server server(served, [](tls_socket& s) { answer(s, "never"); });
    const auto r = fetch(server.url(host, "/"), std::move(ctx));
    CHECK(r.response.status == 0);
    const std::string prefix =
        "TLS handshake with " + host + ":" + std::to_string(server.port()) + " failed: ";
    CHECK(r.error.rfind(prefix, 0) == 0);
    return r.error.substr(std::min(prefix.size(), r.error.size()));
  };
  SECTION("a CA the client does not trust") {
    CHECK(failure(certs().by_other_ca, "localhost", trusting).rfind("unknown CA (", 0) == 0);
    // The system store does not know the test CA either.
    CHECK(failure(certs().localhost, "localhost", nullptr).rfind("unknown CA (", 0) == 0);
  }
  SECTION("an expired certificate") {
    CHECK(failure(certs().expired, "localhost", trusting) == "certificate expired (certificate has expired)");
  }
  SECTION("a certificate for another name, or without the address") {
    CHECK(failure(certs().elsewhere, "localhost", trusting).rfind("name mismatch (", 0) == 0);
    CHECK(failure(certs().elsewhere, "127.0.0.1", trusting).rfind("name mismatch (", 0) == 0);
    CHECK(
        failure(certs().by_other_ca, "127.0.0.1", context_for({certs().other_ca.files().cert, "", "", false}))
            .rfind("name mismatch (", 0) == 0);
  }
  SECTION("a server that wants a client certificate") {
    // Under TLS 1.3 the client's handshake completes first and the server's
    // alert arrives with the response: reported as the handshake's failure.
    tls_loopback_server server(
        certs().localhost, [](tls_socket& s) { answer(s, "never"); }, certs().ca.files().cert);
    const auto r = fetch(server.url("localhost", "/"), trusting);
    CHECK(r.error.find("failed: handshake refused (") != std::string::npos);
  }
  SECTION("a server that does not speak TLS") {
    testing::loopback_server plain([](testing::tcp_socket& s) {
      testing::write_all(s, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    const auto r = fetch("https://127.0.0.1:" + std::to_string(plain.port()) + "/", trusting);
    CHECK(r.error.find("failed: handshake refused (") != std::string::npos);
  }
}

TEST_CASE("https: insecure_skip_verify accepts any certificate, and only when asked", "[https]") {
  tls_loopback_server server(certs().by_other_ca, [](tls_socket& s) { answer(s, "unverified"); });
  const auto r = fetch(server.url("127.0.0.1", "/"), context_for({"", "", "", true}));
  REQUIRE(r.error.empty());
  CHECK(r.response.body == "unverified");
}

TEST_CASE("https: mutual TLS presents the client certificate", "[https]") {
  tls_loopback_server server(
      certs().localhost, [](tls_socket& s) { answer(s, "hello node"); }, certs().ca.files().cert);
  const auto r = fetch(server.url("localhost", "/"),
                       context_for({certs().ca.files().cert, certs().client.cert, certs().client.key}));
  REQUIRE(r.error.empty());
  CHECK(r.response.body == "hello node");
  REQUIRE(server.handshakes().size() == 1);
  CHECK(server.handshakes()[0].client_cn == "tidings-node-1");
}

TEST_CASE("make_tls_client_context names the setting and the file it cannot use", "[https]") {
  std::string error;
  const auto dir = certs().dir.path().string();
  CHECK(make_tls_client_context({dir + "/absent.pem", "", "", false}, &error) == nullptr);
  CHECK(error == "ca_file " + dir + "/absent.pem: cannot be read");
  // A key is not a certificate.
  CHECK(make_tls_client_context({certs().localhost.key, "", "", false}, &error) == nullptr);
  CHECK(error.rfind("ca_file " + certs().localhost.key + ": no PEM certificate in it", 0) == 0);
  CHECK(make_tls_client_context({"", certs().client.cert, "", false}, &error) == nullptr);
  CHECK(error == "client_cert and client_key go together (mutual TLS needs both)");
  CHECK(make_tls_client_context({"", certs().client.cert, certs().localhost.key, false}, &error) == nullptr);
  CHECK(error.rfind("client_key " + certs().localhost.key + ": not the PEM key of client_cert", 0) == 0);
  CHECK(make_tls_client_context({"", certs().client.cert, certs().client.key, false}, &error) != nullptr);
  // A key under a passphrase: refused, instead of a prompt on the terminal.
  const auto locked = dir + "/locked.key";
  {
    FILE* in = std::fopen(certs().client.key.c_str(), "r");
    REQUIRE(in);
    testing::pkey_ptr key(PEM_read_PrivateKey(in, nullptr, nullptr, nullptr));
    std::fclose(in);
    REQUIRE(key);
    FILE* out = std::fopen(locked.c_str(), "w");
    REQUIRE(out);
    char passphrase[] = "secret";
    CHECK(PEM_write_PrivateKey(out, key.get(), EVP_aes_128_cbc(), nullptr, 0, nullptr, passphrase) == 1);
    std::fclose(out);
  }
  CHECK(make_tls_client_context({"", certs().client.cert, locked, false}, &error) == nullptr);
  CHECK(error == "client_key " + locked + ": an encrypted key (give it without a passphrase)");
  CHECK(make_tls_client_context({certs().ca.files().cert, "", "", true}, &error) == nullptr);
  CHECK(error == "insecure_skip_verify checks nothing, so ca_file would be ignored: keep one of them");
}

}  // namespace tidings::net
