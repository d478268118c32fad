// cli.h — the `lcc` command (docs/commands.md): each command group lives in its own
// cli_<group>.cc and registers itself on the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "http/admin_client.h"
#include "lcc/status.h"
#include "net/tls.h"

namespace lcc::cli {

// --tls, --ca, --cert, --key of the client commands (cli_tls.cc).
struct TlsArgs {
  bool tls = false;
  std::string ca, cert, key;
};

struct Globals {
  std::string config_file = "etc/lcc.yaml";  // --config: where to find the HTTP port and data_dir
  std::string http;                          // --http HOST:PORT: overrides the config
  TlsArgs tls;                               // --tls --ca --cert --key: the admin API over HTTPS
  int exit_code = 0;                         // set by the command that ran
};
void addTlsOptions(CLI::App* command, TlsArgs& args);
// The client context of those options: the server is checked against --ca (default:
// the system's CAs); --cert and --key are shown to a server that asks for a certificate.
Result<net::TlsContextPtr> tlsContext(const TlsArgs& args);
// The admin API's endpoint of the global options (--http; --tls: HTTPS, listen.https by default).
Result<http::AdminEndpoint> adminEndpoint(const Globals& g);
// http::runAdminCommand on that endpoint; sets g.exit_code (2 when the TLS options are bad).
void runAdmin(Globals& g, const std::string& method, const std::string& path, const std::string& form,
              const std::function<int(const http::ClientResponse&)>& on_ok);
// An admin answer's JSON body; an empty object when it is not JSON.
nlohmann::json jsonBody(const http::ClientResponse& r);

void addProviderCommands(CLI::App& app, Globals& g);  // cli_provider.cc
void addStatusCommand(CLI::App& app, Globals& g);     // cli_status.cc
void addCpCommands(CLI::App& app, Globals& g);        // cli_cp.cc
void addCpSitemapCommand(CLI::App& cp, Globals& g);   // cli_sitemap.cc, under `lcc cp`
void addCpSyncCommand(CLI::App& cp, Globals& g);      // cli_cp_sync.cc, under `lcc cp`
void addCuCommands(CLI::App& app, Globals& g);        // cli_cu.cc
void addBotmCommands(CLI::App& app, Globals& g);      // cli_botm.cc
void addFrontCommands(CLI::App& app, Globals& g);     // cli_front.cc

}  // namespace lcc::cli
