// memory_plugin.h — storage-memory: QueueStore, ContentStore and ProviderStore kept in
// process memory. The reference implementation of the three store contracts.
#pragma once

#include "lcc/plugin.h"

namespace lcc::plugins::memory {

const PluginDescriptor* describe();

}  // namespace lcc::plugins::memory
