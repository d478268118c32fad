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
      .name = kPluginName,
      .version = "1.0.0",
      .provides = kProvidesQueueStore | kProvidesContentStore | kProvidesProviderStore,
      .options = kOptionSpecs,
      .option_count = kOptionCount,
      .make_queue_store = &makeQueue,
      .make_content_store = &makeContent,
      .make_provider_store = &makeProviders,
  };
  return &kDescriptor;
}

}  // namespace lcc::plugins::kyoto
