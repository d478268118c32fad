// Compiled with exactly what a plugin gets (lcc_plugin_sdk); includes a core
// internal, so it must not compile (tests/layers/build_probes.cmake).
#include "common/posix_env.h"

namespace lcc::layers_probe {

Env* probeEnv() { return posixEnv(); }

}  // namespace lcc::layers_probe
