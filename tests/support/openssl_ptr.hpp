#pragma once

// Owning pointers to the OpenSSL objects the test helpers make (keys,
// certificates, memory BIOs), each freed by OpenSSL's own function.

#include <memory>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

namespace tidings::testing {

template <auto Free>
struct openssl_free {
  template <class T>
  void operator()(T* p) const {
    Free(p);
  }
};

using pkey_ptr = std::unique_ptr<EVP_PKEY, openssl_free<EVP_PKEY_free>>;
using x509_ptr = std::unique_ptr<X509, openssl_free<X509_free>>;
using bio_ptr = std::unique_ptr<BIO, openssl_free<BIO_free>>;

}  // namespace tidings::testing
