// storage_kyoto.h — the storage-kyoto plugin descriptor.
#pragma once

#include "lcc/plugin.h"

namespace lcc::plugins::kyoto {

const PluginDescriptor* describe();

}  // namespace lcc::plugins::kyoto
