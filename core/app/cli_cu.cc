#include <iostream>

#include "app/cli.h"

namespace lcc::cli {

// Placeholder until the command group lands.
void addCuCommands(CLI::App& app, Globals& g) {
  auto* cmd = app.add_subcommand("cu", "(not built yet)");
  cmd->allow_extras();
  cmd->callback([&g] {
    std::cerr << "lcc cu: not built yet\n";
    g.exit_code = 2;
  });
}

}  // namespace lcc::cli
