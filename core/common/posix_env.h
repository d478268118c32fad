// posix_env.h — the production Env over POSIX calls.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "lcc/env.h"

namespace lcc {

// The process-wide POSIX Env. Never destroyed.
Env* posixEnv();

// Env attributes are Linux extended attributes named "user.lcc.<name>" (xattr(7)).
// For code that holds a raw descriptor (the BOT-M's content route): the attribute
// `name` of the open file `fd`, as Env::getAttribute answers it for a path.
Result<std::optional<std::string>> readFdAttribute(int fd, const std::string& name);

}  // namespace lcc
