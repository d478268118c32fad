#include <iostream>

#include "app/cli.h"

namespace lcc::cli {

// Placeholder until the command group lands.
void addStatusCommand(CLI::App& app, Globals& g) {
  auto* cmd = app.add_subcommand("status", "(not built yet)");
  cmd->allow_extras();
  cmd->callback([&g] {
    std::cerr << "lcc status: not built yet\n";
    g.exit_code = 2;
  });
}

}  // namespace lcc::cli
