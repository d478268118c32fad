// lcc — the administrator's, provider's and content user's command (docs/commands.md).
#include <iostream>

#include "app/cli.h"
#include "app/version_text.h"

int main(int argc, char** argv) {
  lcc::cli::Globals g;
  CLI::App app{"lcc — talk to a Local Content Cache"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] { return lcc::versionText("lcc"); },
                       "print the version, git commit, plugin ABI and libraries, exit 0");
  app.add_option("--config", g.config_file, "lccd configuration, to find the HTTP port and admin token");
  app.add_option("--http", g.http, "the daemon's HTTP port, HOST:PORT (overrides --config; with --tls its HTTPS port)");
  // --tls --ca --cert --key: the admin commands (provider, status, botm) over HTTPS,
  // to listen.https of --config or to --http; the same options as `lcc cp send`.
  lcc::cli::addTlsOptions(&app, g.tls);
  lcc::cli::addProviderCommands(app, g);
  lcc::cli::addStatusCommand(app, g);
  lcc::cli::addCpCommands(app, g);
  lcc::cli::addCuCommands(app, g);
  lcc::cli::addBotmCommands(app, g);
  lcc::cli::addFrontCommands(app, g);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return g.exit_code;
}
