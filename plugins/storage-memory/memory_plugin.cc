#include "memory_plugin.h"

#include "memory_content_store.h"
#include "memory_provider_store.h"
#include "memory_queue_store.h"

namespace lcc::plugins::memory {
namespace {

Result<QueueStore*> makeQueue(const HostContext&, const OptionsView&) {
  LCC_PLUGIN_GUARD(return static_cast<QueueStore*>(new MemoryQueueStore());)
}
Result<ContentStore*> makeContent(const HostContext&, const OptionsView&) {
  LCC_PLUGIN_GUARD(return static_cast<ContentStore*>(new MemoryContentStore());)
}
Result<ProviderStore*> makeProviders(const HostContext&, const OptionsView&) {
  LCC_PLUGIN_GUARD(return static_cast<ProviderStore*>(new MemoryProviderStore());)
}

}  // namespace

const PluginDescriptor* describe() {
  static const PluginDescriptor kDescriptor = {
      LCC_PLUGIN_VERSION_FIELDS,
      .name = "storage-memory",
      .version = "1.0",
      .provides = kProvidesQueueStore | kProvidesContentStore | kProvidesProviderStore,
      .make_queue_store = &makeQueue,
      .make_content_store = &makeContent,
      .make_provider_store = &makeProviders,
  };
  return &kDescriptor;
}

}  // namespace lcc::plugins::memory
