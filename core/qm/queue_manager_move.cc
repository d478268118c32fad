// queue_manager_move.cc — a provider's URLs read out for a front end's slot move
// (core/front/slot_move.h): what the QM holds of one provider, on the engine strand.
// The other side, the URLs taken in at the target, is an intake set (submit()).
#include <map>

#include "common/invariant.h"
#include "qm/queue_manager.h"

namespace lcc::qm {
namespace {

// A stored record as the notice a CP would send for it: the target fetches it.
UrlNotice noticeOf(const ContentRecord& r) {
  UrlNotice n;
  n.key = r.key;
  n.op = UrlOp::kUpdate;
  n.view_tag = r.view_tag;
  n.browse = r.browse;
  n.fetch = r.fetch;
  n.mtime = r.declared_mtime;
  n.size = r.declared_size;
  n.md5 = r.declared_md5;
  return n;
}

}  // namespace

Result<QueueManager::ProviderExport> QueueManager::exportProvider(ProviderId pid, std::size_t limit) {
  ProviderExport out;
  out.held = sched_.hasProvider(pid) && sched_.isHeld(pid);
  out.in_flight = sched_.inFlight(pid);
  for (const auto& l : lost_held_) out.in_flight += l.pid == pid ? 1 : 0;
  for (const auto& h : held_results_) out.in_flight += h.f.pid == pid ? 1 : 0;
  {
    std::lock_guard<std::mutex> lk(queued_mu_);
    auto it = unapplied_urls_.find(pid);
    out.unapplied = it == unapplied_urls_.end() ? 0 : it->second;
  }
  for (const auto& [stream, p] : open_sets_) out.unapplied += p.set.pid == pid ? 1 : 0;
  for (const auto& p : pending_) out.unapplied += p.set.pid == pid ? 1 : 0;
  if (limit == 0) return out;
  // Stored records first, then the queued rows over them (a later notice wins; a
  // queued delete takes the URL out).
  std::map<std::string, UrlNotice> urls;
  Status s = deps_.content->scanProvider(pid, [&](const ContentRecord& r) {
    if (!r.deleted) urls[encodeUrlKey(r.key)] = noticeOf(r);
    return urls.size() <= limit;
  });
  if (!s.isOk()) return s.withContext("content store");
  LCC_RETURN_IF_ERROR(exportQueued(pid, limit, urls));
  out.truncated = urls.size() > limit;
  for (auto& [key, n] : urls) {
    if (out.urls.size() >= limit) break;
    out.urls.push_back(std::move(n));
  }
  return out;
}

Status QueueManager::exportQueued(ProviderId pid, std::size_t limit, std::map<std::string, UrlNotice>& urls) {
  std::vector<PSetRecord> lists;
  Status s = deps_.queue->scanPSets(std::nullopt, [&](const PSetRecord& p) {
    if (p.pid == pid) lists.push_back(p);
    return true;
  });
  if (!s.isOk()) return s.withContext("queue store");
  for (const auto& p : lists) {
    std::string cur = p.first;
    for (std::uint64_t steps = 0; !cur.empty() && urls.size() <= limit; ++steps) {
      if (!LCC_INVARIANT(steps <= p.count, "qm: a QPSDB list holds no more rows than its count")) break;
      auto row = deps_.queue->getEntry(cur);
      if (!row.isOk()) return row.status().withContext("queue store");
      if (!row.value()) break;
      if (row.value()->op == QueueOp::kFetch) {
        urls[cur] = row.value()->notice;
      } else {
        urls.erase(cur);  // a delete waits: the URL goes
      }
      cur = row.value()->next;
    }
  }
  return Status::ok();
}

}  // namespace lcc::qm
