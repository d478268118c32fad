#include "common/cache_crash.h"

#include <vector>

namespace lcc {

CacheCrashRaised raiseCacheCrashFlags(ProviderStore& providers) {
  CacheCrashRaised out;
  std::vector<ProviderId> ids;
  // Collect first: the store is not written from inside its own scan.
  Status s = providers.scan([&](const ProviderRecord& r) {
    if (!(r.fullset_wanted && r.fullset_reason == FullSetReason::kCacheCrash)) ids.push_back(r.id);
    return true;
  });
  if (!s.isOk()) out.first_error = s.withContext("reading the providers");
  for (ProviderId id : ids) {
    s = providers.modify(id, [](ProviderRecord& r) {
      r.fullset_wanted = true;
      r.fullset_reason = FullSetReason::kCacheCrash;
      return Status::ok();
    });
    if (s.isOk()) {
      ++out.providers;
    } else if (!s.isNotFound() && out.first_error.isOk()) {
      out.first_error = s.withContext("provider " + std::to_string(id));
    }
  }
  return out;
}

}  // namespace lcc
