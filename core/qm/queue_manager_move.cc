// queue_manager_move.cc — a provider's URLs read out for a front end's slot move
// (core/front/slot_move.h): what the QM holds of one provider, on the engine strand.
// The other side, the URLs taken in at the target, is an intake set (submit()).
#include <iterator>
#include <map>

#include "common/content_meta.h"
#include "common/invariant.h"
#include "qm/move_copy.h"
#include "qm/queue_manager.h"

namespace lcc::qm {
namespace {

// A stored record as the notice a CP would send for it.
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

Result<QueueManager::ProviderExport> QueueManager::exportProvider(ProviderId pid, std::size_t limit,
                                                                  const std::string& after, bool count_copies) {
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
  if (limit == 0 && !count_copies) return out;
  std::map<std::string, std::optional<UrlNotice>> rows;
  LCC_RETURN_IF_ERROR(exportQueued(pid, rows));
  for (const auto& [key, n] : rows) out.copies += n && parseCopyFetch(n->fetch) ? 1 : 0;
  if (limit == 0) return out;
  auto id = readStoreId(*deps_.content);
  if (!id.isOk()) return id.status().withContext("content store");
  if (id.value()) out.store_id = *id.value();
  // The page: the smallest limit + 1 keys after `after`, stored records first (those a
  // queued row overrides left out: it decides), then the queued rows (a delete: gone).
  std::map<std::string, ExportedUrl> page;
  auto keep = [&](std::string key, ExportedUrl u) {
    page.emplace(std::move(key), std::move(u));
    if (page.size() > limit + 1) page.erase(std::prev(page.end()));
  };
  Status s = deps_.content->scanProvider(pid, [&](const ContentRecord& r) {
    if (r.deleted) return true;
    std::string key = encodeUrlKey(r.key);
    if (key > after && rows.count(key) == 0) keep(std::move(key), ExportedUrl{noticeOf(r), r.seq, r.md5, r.size});
    return true;
  });
  if (!s.isOk()) return s.withContext("content store");
  for (auto& [key, n] : rows) {
    if (n && key > after) keep(key, ExportedUrl{*n, 0, {}, 0});
  }
  out.truncated = page.size() > limit;
  for (auto& [key, u] : page) {
    if (out.urls.size() >= limit) break;
    out.urls.push_back(std::move(u));
    if (out.truncated) out.next = key;
  }
  return out;
}

Status QueueManager::exportQueued(ProviderId pid, std::map<std::string, std::optional<UrlNotice>>& rows) {
  std::vector<PSetRecord> lists;
  Status s = deps_.queue->scanPSets(std::nullopt, [&](const PSetRecord& p) {
    if (p.pid == pid) lists.push_back(p);
    return true;
  });
  if (!s.isOk()) return s.withContext("queue store");
  for (const auto& p : lists) {
    std::string cur = p.first;
    for (std::uint64_t steps = 0; !cur.empty(); ++steps) {
      if (!LCC_INVARIANT(steps <= p.count, "qm: a QPSDB list holds no more rows than its count")) break;
      auto row = deps_.queue->getEntry(cur);
      if (!row.isOk()) return row.status().withContext("queue store");
      if (!row.value()) break;
      if (row.value()->op == QueueOp::kFetch) {
        rows[cur] = row.value()->notice;
      } else {
        rows[cur] = std::nullopt;  // a delete waits: the URL goes
      }
      cur = row.value()->next;
    }
  }
  return Status::ok();
}

}  // namespace lcc::qm
