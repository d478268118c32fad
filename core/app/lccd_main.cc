// lccd — the LCC daemon (docs/commands.md).
#include <CLI/CLI.hpp>
#include <iostream>

#include "app/daemon.h"
#include "app/version_text.h"

int main(int argc, char** argv) {
  lcc::DaemonArgs args;
  CLI::App app{"lccd — the Local Content Cache daemon"};
  app.set_version_flag("--version", [] { return lcc::versionText("lccd"); },
                       "print the version, git commit, plugin ABI and libraries, exit 0");
  app.add_option("-c,--config", args.config_file, "configuration file (etc/lcc.yaml)");
  app.add_flag("--check", args.check,
               "validate the config and every plugin it names, test that each listen address can be bound and "
               "node.data_dir written (as the user running --check), print the plan, exit 0 or 2");
  app.add_flag("--config-only", args.config_only,
               "with --check: only the config and its plugins, not the ports and node.data_dir (a config for "
               "another machine)");
  app.add_option("--set", args.overrides, "override a key: --set node.data_dir=/srv/lcc")->take_all();
  app.add_flag("--print-defaults", args.print_defaults, "print every core key with its default and meaning");
  app.add_flag("--print-config", args.print_config,
               "print every core key with its value after FILE and --set (checked as --check does), exit 0 or 2");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (args.config_file.empty() && !args.print_defaults) {
    std::cerr << "lccd: -c FILE is required (try -c etc/lcc.yaml)\n";
    return 2;
  }
  return lcc::runDaemon(args);
}
