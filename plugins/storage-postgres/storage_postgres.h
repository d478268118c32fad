// storage_postgres.h — the plugin descriptor of storage-postgres (README.md).
#pragma once

#include "lcc/plugin.h"

namespace lcc::plugins::postgres {

const PluginDescriptor* describe();

}  // namespace lcc::plugins::postgres
