// daemon.h — lccd: loads the config and plugins, opens the stores the configured
// roles need, starts the roles and the HTTP port, and stops them cleanly.
#pragma once

#include <string>
#include <vector>

namespace lcc {

struct DaemonArgs {
  std::string config_file;
  std::vector<std::string> overrides;  // --set key.path=value
  bool check = false;                  // --check: validate, print the plan, exit 0 or 2
  bool config_only = false;            // --config-only: --check without the ports and data folder
  bool print_defaults = false;
  bool print_config = false;           // --print-config: every key's effective value, exit 0
};

// lccd's exit code when another lccd holds node.data_dir (docs/commands.md).
constexpr int kExitDataDirInUse = 3;

// Runs lccd; returns the process exit code (0 ok, 1 runtime failure, 2 bad config,
// 3 the data folder is in use by another lccd). 4 (qm::kExitFenced) is not returned:
// a fenced QM exits the process at once (core/qm/qm_service.cc).
int runDaemon(const DaemonArgs& args);

}  // namespace lcc
