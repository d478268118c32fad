// lcc/host.h — what the host hands a plugin: its clock, file Env, logger and where
// its data lives. Everything a plugin needs from lccd arrives through this struct,
// so plugins link nothing from the daemon (-Wl,--no-undefined).
// LIFETIME: the pointed-to objects outlive every object the plugin makes.
#pragma once

#include <string>

#include "lcc/clock.h"
#include "lcc/env.h"
#include "lcc/logger.h"

namespace lcc {

struct HostContext {
  Clock* clock = nullptr;
  Env* env = nullptr;
  Logger* logger = nullptr;
  std::string data_dir;    // node.data_dir, absolute
  std::string machine_id;  // node.machine_id
  // The host is `lccd --check`: validate the options and reach what they name, but
  // change nothing a running lccd shares (data_dir is then a scratch folder; a store
  // on a server opens as a reader: no schema made, no clean-shutdown flag touched).
  bool check_only = false;
};

}  // namespace lcc
