#include "storage_postgres.h"

#include <libpq-fe.h>

#include <string>

#include "pg_content_store.h"
#include "pg_provider_store.h"
#include "pg_queue_store.h"
#include "store_options.h"

namespace lcc::plugins::postgres {
namespace {

Status init(const HostContext& host) {
  // Connections are used by one thread at a time each; libpq must be thread-safe.
  if (PQisthreadsafe() == 0) return Status::notSupported("storage-postgres: libpq was built without threads");
  if (host.logger != nullptr) host.logger->debug("storage-postgres: libpq " + std::to_string(PQlibVersion()));
  return Status::ok();
}

Status writerOnly(const StoreOptions& opts, const char* store) {
  if (!opts.read_only) return Status::ok();
  return Status::invalidArgument(std::string("storage-postgres: options.read_only: the ") + store +
                                 " store writes; only the content store may be opened read_only");
}

Status queueOnly(const StoreOptions& opts, const char* store) {
  if (opts.qm_lease_ms == 0) return Status::ok();
  return Status::invalidArgument(std::string("storage-postgres: options.qm_lease: set it on the queue store; the ") +
                                 store + " store of the same conninfo and schema checks the QM's lease by itself");
}

Result<QueueStore*> makeQueue(const HostContext& host, const OptionsView& options) {
  LCC_PLUGIN_GUARD({
    LCC_ASSIGN_OR_RETURN(StoreOptions opts, parseOptions(options));
    opts.probe = host.check_only;
    LCC_RETURN_IF_ERROR(writerOnly(opts, "queue"));
    return PgQueueStore::open(host, opts);
  })
}

Result<ContentStore*> makeContent(const HostContext& host, const OptionsView& options) {
  LCC_PLUGIN_GUARD({
    LCC_ASSIGN_OR_RETURN(StoreOptions opts, parseOptions(options));
    opts.probe = host.check_only;
    LCC_RETURN_IF_ERROR(queueOnly(opts, "content"));
    return PgContentStore::open(host, opts);
  })
}

Result<ProviderStore*> makeProviders(const HostContext& host, const OptionsView& options) {
  LCC_PLUGIN_GUARD({
    LCC_ASSIGN_OR_RETURN(StoreOptions opts, parseOptions(options));
    opts.probe = host.check_only;
    LCC_RETURN_IF_ERROR(writerOnly(opts, "provider"));
    LCC_RETURN_IF_ERROR(queueOnly(opts, "provider"));
    return PgProviderStore::open(host, opts);
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

}  // namespace lcc::plugins::postgres
