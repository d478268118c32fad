#include "storage_kyoto.h"

#include "kyoto_stores.h"

namespace lcc::plugins::kyoto {
namespace {

Result<QueueStore*> makeQueue(const HostContext& host, const OptionsView& options) {
  LCC_PLUGIN_GUARD(return KyotoQueueStore::open(host, engineOptions(options));)
}
Result<ContentStore*> makeContent(const HostContext& host, const OptionsView& options) {
  LCC_PLUGIN_GUARD(return KyotoContentStore::open(host, engineOptions(options));)
}
Result<ProviderStore*> makeProviders(const HostContext& host, const OptionsView& options) {
  LCC_PLUGIN_GUARD(return KyotoProviderStore::open(host, engineOptions(options));)
}

}  // namespace

const PluginDescriptor* describe() {
  static const PluginDescriptor kDescriptor = {
      LCC_PLUGIN_VERSION_FIELDS,
      kPluginName,
      "1.0.0",
      kProvidesQueueStore | kProvidesContentStore | kProvidesProviderStore,
      kOptionSpecs,
      kOptionCount,
      nullptr,
      &makeQueue,
      &makeContent,
      &makeProviders,
      nullptr,
      nullptr,
  };
  return &kDescriptor;
}

}  // namespace lcc::plugins::kyoto
