#include "storage_sqlite.h"

#include <sqlite3.h>

#include <string>

#include "sqlite_content_store.h"
#include "sqlite_provider_store.h"
#include "sqlite_queue_store.h"
#include "store_options.h"

namespace lcc::plugins::sqlite {
namespace {

Status init(const HostContext& host) {
  // Connections are opened SQLITE_OPEN_NOMUTEX and each is used by one thread at a
  // time; the library itself must be built thread-safe.
  if (sqlite3_threadsafe() == 0) return Status::notSupported("storage-sqlite: libsqlite3 was built without threads");
  if (sqlite3_libversion_number() < 3037000) {
    return Status::notSupported(std::string("storage-sqlite: needs SQLite >= 3.37 (STRICT tables), found ") +
                                sqlite3_libversion());
  }
  if (host.logger != nullptr) host.logger->debug(std::string("storage-sqlite: SQLite ") + sqlite3_libversion());
  return Status::ok();
}

Result<QueueStore*> makeQueue(const HostContext& host, const OptionsView& options) {
  LCC_PLUGIN_GUARD({
    LCC_ASSIGN_OR_RETURN(StoreOptions opts, parseOptions(options));
    return SqliteQueueStore::open(host, opts);
  })
}

Result<ContentStore*> makeContent(const HostContext& host, const OptionsView& options) {
  LCC_PLUGIN_GUARD({
    LCC_ASSIGN_OR_RETURN(StoreOptions opts, parseOptions(options));
    return SqliteContentStore::open(host, opts);
  })
}

Result<ProviderStore*> makeProviders(const HostContext& host, const OptionsView& options) {
  LCC_PLUGIN_GUARD({
    LCC_ASSIGN_OR_RETURN(StoreOptions opts, parseOptions(options));
    return SqliteProviderStore::open(host, opts);
  })
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
      .init = &init,
      .make_queue_store = &makeQueue,
      .make_content_store = &makeContent,
      .make_provider_store = &makeProviders,
  };
  return &kDescriptor;
}

}  // namespace lcc::plugins::sqlite
