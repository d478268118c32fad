// check_env.h — what `lccd --check` tests beyond the configuration itself: that each
// listen address the roles use can be bound now, and that node.data_dir can be written
// (as the user running --check). A port held by the lccd that holds the same data folder
// (the one a restart would replace) is a note, not a problem.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/config/config.h"

namespace lcc {

// (role, key) of every listen address; role "" is every node's (listen.http, listen.https).
const std::vector<std::pair<std::string, std::string>>& listenKeys();

// Adds a problem (`FILE: key: why`) for each listen address of `roles` that cannot be
// bound and for a data folder that cannot be written; adds notes ("data_dir: in use ...")
// for what is fine now but would stop a second lccd.
void checkEnvironment(const Config& cfg, const std::set<std::string>& roles, std::vector<ConfigProblem>* problems,
                      std::vector<std::string>* notes);

// Adds a problem for s3.* keys the robots, the BOT-M or the CU of `roles` could not use
// (an endpoint without keys, a secret file missing, empty or readable by others).
void checkObjectStore(const Config& cfg, const std::set<std::string>& roles, std::vector<ConfigProblem>* problems);

}  // namespace lcc
