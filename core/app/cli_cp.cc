#include <iostream>

#include "app/cli.h"

namespace lcc::cli {

// Placeholder until the command group lands.
void addCpCommands(CLI::App& app, Globals& g) {
  auto* cmd = app.add_subcommand("cp", "(not built yet)");
  cmd->allow_extras();
  cmd->callback([&g] {
    std::cerr << "lcc cp: not built yet\n";
    g.exit_code = 2;
  });
}

}  // namespace lcc::cli
