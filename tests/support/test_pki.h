// test_pki.h — a CA and certificates made in the test with the `openssl` command, in
// a private temporary folder (tests of TLS: tests/net/tls_test.cc).
#pragma once

#include <string>

#include "support/temp_dir.h"

namespace lcc::testing {

class TestPki {
 public:
  // Makes the CA (ca.pem, ca.key). ok() says whether openssl did it.
  TestPki();
  bool ok() const { return ok_; }
  // <name>.pem and <name>.key signed by the CA, valid for `dns` (DNS names and IP
  // addresses, comma-separated as "DNS:localhost,IP:127.0.0.1"); `days` < 0 makes it
  // expired already. Returns false when openssl failed.
  bool issue(const std::string& name, const std::string& san, int days = 30);
  // A second, unrelated CA (<name>.pem, <name>.key): certificates it does not sign.
  bool otherCa(const std::string& name);
  std::string cert(const std::string& name) const { return dir_.file(name + ".pem"); }
  std::string key(const std::string& name) const { return dir_.file(name + ".key"); }
  std::string ca() const { return cert("ca"); }
  const TempDir& dir() const { return dir_; }

 private:
  bool run(const std::string& command) const;
  TempDir dir_;
  bool ok_ = false;
};

}  // namespace lcc::testing
