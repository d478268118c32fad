// posix_env.h — the production Env over POSIX calls.
#pragma once

#include "lcc/env.h"

namespace lcc {

// The process-wide POSIX Env. Never destroyed.
Env* posixEnv();

}  // namespace lcc
