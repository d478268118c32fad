// cli_tls.cc — the TLS options `lcc cp send` and `lcc cu query` share, and the global
// ones of the admin commands (`lcc --tls --ca FILE provider list`, `lcc --tls status`).
#include <iostream>

#include "app/cli.h"

namespace lcc::cli {

void addTlsOptions(CLI::App* command, TlsArgs& args) {
  auto* tls = command->add_flag("--tls", args.tls, "connect with TLS (the server's TLS port)");
  command->add_option("--ca", args.ca, "PEM CA file the server's certificate is checked against (default: the system's)")
      ->needs(tls);
  auto* cert = command->add_option("--cert", args.cert, "PEM client certificate, for a server that asks for one")
                   ->needs(tls);
  auto* key = command->add_option("--key", args.key, "PEM private key of --cert")->needs(tls);
  cert->needs(key);
  key->needs(cert);
}

Result<net::TlsContextPtr> tlsContext(const TlsArgs& args) {
  net::TlsClientOptions o;
  o.ca_file = args.ca;
  o.cert_file = args.cert;
  o.key_file = args.key;
  auto made = net::makeClientContext(o);
  if (!made.isOk()) {
    // "ca_file: /x: why" -> "--ca /x: why"
    std::string m = made.status().message();
    for (const auto& [field, option] : {std::pair<std::string, std::string>{"ca_file: ", "--ca "},
                                        {"cert_file: ", "--cert "}, {"key_file: ", "--key "}}) {
      if (m.rfind(field, 0) == 0) m = option + m.substr(field.size());
    }
    return Status::invalidArgument(m);
  }
  return made;
}

Result<http::AdminEndpoint> adminEndpoint(const Globals& g) {
  http::AdminEndpoint e;
  e.http = g.http;
  if (!g.tls.tls) return e;
  auto made = tlsContext(g.tls);
  if (!made.isOk()) return made.status();
  e.tls = made.value();
  return e;
}

nlohmann::json jsonBody(const http::ClientResponse& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

void runAdmin(Globals& g, const std::string& method, const std::string& path, const std::string& form,
              const std::function<int(const http::ClientResponse&)>& on_ok) {
  auto endpoint = adminEndpoint(g);
  if (!endpoint.isOk()) {
    std::cerr << "lcc: " << endpoint.status().message() << "\n";
    g.exit_code = 2;
    return;
  }
  g.exit_code = http::runAdminCommand(g.config_file, endpoint.value(), method, path, form, on_ok, std::cerr);
}

}  // namespace lcc::cli
