// stub_plugin.h — fetch-stub: a deterministic Fetcher for tests (no network).
#pragma once

#include "lcc/plugin.h"

namespace lcc::plugins::stub {

const PluginDescriptor* describe();

}  // namespace lcc::plugins::stub
