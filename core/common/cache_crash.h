// cache_crash.h — raising the cache-crash flag (docs/architecture.md rule 3) in the PIDB:
// every provider is asked for a full set with reason cache-crash, because sets it was
// told were accepted may be lost (a store that lost synced writes, a corrupt QM journal
// or UNS spool, a failed store write). Shared by the QM and the UNS.
#pragma once

#include <cstddef>

#include "lcc/provider_store.h"

namespace lcc {

struct CacheCrashRaised {
  std::size_t providers = 0;  // records changed (those already asking for cache-crash are left)
  Status first_error;         // the first failed read or write; the others are still tried
};

// Sets fullset_wanted=true, fullset_reason=cache-crash on every provider record (a
// reason already set is replaced: cache-crash asks for more). Thread-safe as the store is.
CacheCrashRaised raiseCacheCrashFlags(ProviderStore& providers);

}  // namespace lcc
