#include "support/test_pki.h"

#include <cstdlib>
#include <fstream>

namespace lcc::testing {

bool TestPki::run(const std::string& command) const {
  const std::string full = "cd '" + dir_.path() + "' && " + command + " >openssl.log 2>&1";
  return std::system(full.c_str()) == 0;
}

TestPki::TestPki() { ok_ = otherCa("ca"); }

bool TestPki::otherCa(const std::string& name) {
  return run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj '/CN=LCC test " +
             name + "' -keyout " + name + ".key -out " + name + ".pem");
}

bool TestPki::issue(const std::string& name, const std::string& san, int days) {
  {
    std::ofstream ext(dir_.file(name + ".ext"));
    ext << "subjectAltName=" << san << "\nbasicConstraints=CA:FALSE\n";
  }
  // An expired certificate: `openssl ca` takes explicit dates (January 2020 only).
  if (days < 0) {
    std::ofstream(dir_.file("index.txt")).close();
    std::ofstream(dir_.file("serial.txt")) << "01\n";
    std::ofstream(dir_.file("ca.cnf")) << "[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\nnew_certs_dir=.\n"
                                          "serial=serial.txt\ndefault_md=sha256\npolicy=p\n[p]\ncommonName=supplied\n";
    return run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj '/CN=" + name + "' -keyout " +
               name + ".key -out " + name + ".csr") &&
           run("openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in " + name + ".csr -out " + name +
               ".pem -startdate 20200101000000Z -enddate 20200201000000Z -extfile " + name + ".ext -notext");
  }
  return run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj '/CN=" + name + "' -keyout " +
             name + ".key -out " + name + ".csr") &&
         run("openssl x509 -req -in " + name + ".csr -CA ca.pem -CAkey ca.key -CAcreateserial -days " +
             std::to_string(days) + " -extfile " + name + ".ext -out " + name + ".pem");
}

}  // namespace lcc::testing
