// storage_sqlite.h — the plugin descriptor of storage-sqlite (README.md).
#pragma once

#include "lcc/plugin.h"

namespace lcc::plugins::sqlite {

const PluginDescriptor* describe();

}  // namespace lcc::plugins::sqlite
