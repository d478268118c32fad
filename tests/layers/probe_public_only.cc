// Compiled with exactly what a plugin gets (lcc_plugin_sdk): the public API and the
// support library. tests/layers/build_probes.cmake builds it before the probe that
// must fail, so that failure can only come from its include line.
#include "lcc/plugin.h"
#include "lcc/support/cu_xml_format.h"
#include "lcc/support/journal.h"
#include "lcc/support/time_util.h"

namespace lcc::layers_probe {

std::string probeStamp() { return formatRfc3339(std::int64_t{0}); }

}  // namespace lcc::layers_probe
