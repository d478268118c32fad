// queue_manager_rebuild.cc — start-up: the intake journal replayed past the applied
// position (whole sets and streamed ones), the in-memory tables loaded from the QPSDB, and the QPSDB rebuilt from the
// QDB's `next` chains when their counts disagree.
#include "qm/queue_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>

namespace lcc::qm {

// Replays the sets whose last record (whole set or kEnd) comes after applied_end_, in
// journal order; a streamed set's parts are read back when its kEnd is reached. A
// streamed set without its kEnd was cut off (by the crash, or by its link): ignored.
Status QueueManager::replayJournal(std::string& crash_why) {
  if (!deps_.journal) return Status::ok();
  if (options_.ack_after_store) return skipJournal();
  auto because = [&](const std::string& why) { crash_why += (crash_why.empty() ? "" : "; ") + why; };
  std::uint64_t replayed = 0;
  std::map<JournalPos, IntakeHeader> begun;  // kBegin seen, kEnd not yet
  auto seen = [&](const IntakeHeader& h) {
    if (!h.uns.empty()) uns_seen_[h.uns] = std::max(uns_seen_[h.uns], h.id);
  };
  auto info = deps_.journal->replay(applied_pos_, [&](JournalPos pos, std::string_view payload) -> Status {
    auto bad = [&](const Status& s) {
      because("journal record " + std::to_string(pos) + ": " + s.message());
      return Status::ok();
    };
    switch (intakeRecordType(payload).value_or(IntakeRecord{0})) {
      case IntakeRecord::kWhole: {
        auto set = decodeIntakeSet(payload);
        if (!set.isOk()) return bad(set.status());
        seen(IntakeHeader{set->uns, set->id, set->pid, set->kind});
        if (pos <= applied_end_) return Status::ok();  // applied before the restart
        ++replayed;
        return applySet(*set, pos);
      }
      case IntakeRecord::kBegin: {
        auto h = decodeIntakeBegin(payload);
        if (!h.isOk()) return bad(h.status());
        begun[pos] = std::move(h).value();
        unapplied_begins_.insert(pos);
        return Status::ok();
      }
      case IntakeRecord::kPart:
        return Status::ok();
      case IntakeRecord::kEnd: {
        auto e = decodeIntakeEnd(payload);
        if (!e.isOk()) return bad(e.status());
        auto it = begun.find(e->begin);
        if (it == begun.end()) return bad(Status::corruption("set end without its beginning"));
        IntakeHeader h = std::move(it->second);
        begun.erase(it);
        seen(h);
        if (pos <= applied_end_) {
          unapplied_begins_.erase(e->begin);
          return Status::ok();
        }
        ++replayed;
        return applyStreamed(h, e->begin, pos);
      }
    }
    return bad(Status::corruption("not an intake record"));
  });
  // Sets begun and never ended were cut off: nothing of them is applied, and they no
  // longer hold the replay position back.
  for (const auto& [begin, h] : begun) unapplied_begins_.erase(begin);
  if (!begun.empty()) spdlog::info("qm: {} sets cut off before their end were dropped from the journal", begun.size());
  if (!info.isOk()) {
    if (!failed_.isOk()) return failed_;
    because("journal replay: " + info.status().message());
  } else if (info->corruption) {
    because("journal corruption: " + info->detail);
  }
  if (replayed > 0) spdlog::info("qm: replayed {} sets from the intake journal", replayed);
  next_pset_ = std::max<PSetId>(next_pset_, deps_.journal->lastPosition() + 1);
  return Status::ok();
}

Status QueueManager::loadTables() {
  std::unique_lock<std::mutex> lk(queued_mu_);
  queued_.clear();
  queued_total_ = 0;
  std::uint64_t sum = 0;
  std::vector<PSetRecord> ready;
  LCC_RETURN_IF_ERROR(deps_.queue->scanPSets(std::nullopt, [&](const PSetRecord& p) {
    queued_[p.pid] += p.count;
    sum += p.count;
    if (p.slot == kSlotNow) ready.push_back(p);
    return true;
  }));
  LCC_ASSIGN_OR_RETURN(std::uint64_t rows, deps_.queue->entryCount());
  if (rows != sum) {
    lk.unlock();
    spdlog::warn("qm: QPSDB lists hold {} rows but the QDB has {}; rebuilding the QPSDB", sum, rows);
    return rebuildPSets();
  }
  queued_total_ = sum;
  for (const auto& p : ready) {
    ProviderInfo info = providerInfo(p.pid);
    sched_.setProvider(p.pid, info.priority, info.bandwidth);
    sched_.addReadySet(p.pid, p.pset);
  }
  return Status::ok();
}

namespace {

using ListKey = std::pair<PSetId, TimeSlot>;

// Rebuilds the QPSDB lists from the QDB rows alone: a list is a `next` chain, its head
// a row no other row points to. Broken chains (a `next` to a row that is gone, a
// cycle) are cut, and two chains with the same (pset, slot) are joined; the fixes go
// into `batch`.
class ListRebuilder {
 public:
  ListRebuilder(QueueBatch& batch, std::function<std::int32_t(ProviderId)> priority_of)
      : batch_(batch), priority_of_(std::move(priority_of)) {}

  void addRow(const QueueEntry& e) {
    rows_.emplace(encodeUrlKey(e.notice.key), e);
    if (!e.next.empty()) pointed_.insert(e.next);
  }

  void build() {
    std::vector<std::string> heads;
    for (const auto& [key, e] : rows_) {
      if (!pointed_.count(key)) heads.push_back(key);
    }
    std::sort(heads.begin(), heads.end(), [&](const std::string& a, const std::string& b) {
      const auto& x = rows_.at(a);
      const auto& y = rows_.at(b);
      return std::tie(x.pset, x.slot, x.queued, a) < std::tie(y.pset, y.slot, y.queued, b);
    });
    for (const auto& h : heads) place(h);
    // Rows only reachable through a cycle: each becomes its own list.
    for (const auto& [key, e] : rows_) {
      if (!placed_.count(key)) place(key);
    }
  }

  const std::map<ListKey, PSetRecord>& lists() const { return lists_; }
  std::size_t rowCount() const { return rows_.size(); }

 private:
  // Follows the chain from `head`; returns its length and sets `last` to its tail.
  std::uint64_t walk(const std::string& head, std::string& last) {
    std::string cur = head;
    std::uint64_t n = 0;
    while (!cur.empty() && rows_.count(cur) && placed_.insert(cur).second) {
      last = cur;
      ++n;
      const QueueEntry& e = rows_.at(cur);
      if (!e.next.empty() && !rows_.count(e.next)) {
        QueueEntry fixed = e;  // points at a row that is gone: end the chain here
        fixed.next.clear();
        batch_.putEntry(fixed);
        break;
      }
      cur = e.next;
    }
    if (!cur.empty() && rows_.count(cur) && placed_.count(cur) && cur != last) {
      QueueEntry fixed = rows_.at(last);  // a cycle: cut it
      fixed.next.clear();
      batch_.putEntry(fixed);
    }
    return n;
  }

  void place(const std::string& head) {
    const QueueEntry& h = rows_.at(head);
    const ListKey id{h.pset, h.slot};
    std::string last;
    const std::uint64_t n = walk(head, last);
    auto it = lists_.find(id);
    if (it == lists_.end()) {
      PSetRecord p;
      p.pset = id.first;
      p.slot = id.second;
      p.pid = h.notice.key.pid;
      p.priority = priority_of_(p.pid);
      p.first = head;
      p.last = last;
      p.count = n;
      lists_.emplace(id, p);
    } else {
      // Two chains with the same (pset, slot): join them.
      QueueEntry tail = rows_.at(it->second.last);
      tail.next = head;
      rows_[it->second.last].next = head;
      batch_.putEntry(tail);
      it->second.last = last;
      it->second.count += n;
    }
  }

  QueueBatch& batch_;
  std::function<std::int32_t(ProviderId)> priority_of_;
  std::unordered_map<std::string, QueueEntry> rows_;
  std::unordered_set<std::string> pointed_;
  std::unordered_set<std::string> placed_;
  std::map<ListKey, PSetRecord> lists_;
};

}  // namespace

Status QueueManager::rebuildPSets() {
  reads_ahead_.clear();  // the lists change under dispatch
  QueueBatch b;
  ListRebuilder rebuilder(b, [this](ProviderId pid) { return providerInfo(pid).priority; });
  LCC_RETURN_IF_ERROR(deps_.queue->scanEntries([&](const QueueEntry& e) {
    rebuilder.addRow(e);
    return true;
  }));
  std::vector<ListKey> old;
  LCC_RETURN_IF_ERROR(deps_.queue->scanPSets(std::nullopt, [&](const PSetRecord& p) {
    old.emplace_back(p.pset, p.slot);
    return true;
  }));
  for (auto [ps, sl] : old) b.removePSet(ps, sl);
  rebuilder.build();
  const auto& lists = rebuilder.lists();
  for (const auto& [id, p] : lists) b.putPSet(p);
  LCC_RETURN_IF_ERROR(deps_.queue->apply(b).withContext("queue store"));
  spdlog::info("qm: rebuilt the QPSDB: {} lists over {} rows", lists.size(), rebuilder.rowCount());
  std::vector<PSetRecord> records;
  records.reserve(lists.size());
  for (const auto& [id, p] : lists) records.push_back(p);
  reloadTables(records);
  return Status::ok();
}

void QueueManager::reloadTables(const std::vector<PSetRecord>& lists) {
  for (const auto& p : lists) {
    if (p.slot == kSlotNow) sched_.removeReadySet(p.pid, p.pset);
  }
  std::vector<ProviderId> known;
  {
    std::lock_guard<std::mutex> lk(queued_mu_);
    for (const auto& [pid, n] : queued_) known.push_back(pid);
  }
  for (ProviderId pid : known) {
    for (PSetId ps : sched_.readySets(pid)) sched_.removeReadySet(pid, ps);
  }
  std::lock_guard<std::mutex> lk(queued_mu_);
  queued_.clear();
  queued_total_ = 0;
  for (const auto& p : lists) {
    queued_[p.pid] += p.count;
    queued_total_ += p.count;
    if (p.slot == kSlotNow) {
      ProviderInfo info = providerInfo(p.pid);
      sched_.setProvider(p.pid, info.priority, info.bandwidth);
      sched_.addReadySet(p.pid, p.pset);
    }
  }
}

// qm.ack_after_store: a set is acked only once it is in the stores, so nothing acked
// lives only in this host's journal and nothing is replayed from it: a set there that
// is not in the stores was never acked, and its UNS sends it again. The journal's
// positions (the pset ids) go on past what the shared store holds, which another QM
// (a takeover) may have written since this journal was last used.
Status QueueManager::skipJournal() {
  const JournalPos last = deps_.journal->lastPosition();
  const JournalPos next = std::max<JournalPos>({next_pset_, applied_end_ + 1, last + 1});
  if (last > applied_end_) {
    spdlog::info("qm: qm.ack_after_store: the intake journal's records past {} are not replayed (never acked)",
                 applied_end_);
  }
  LCC_RETURN_IF_ERROR(deps_.journal->skipTo(next).withContext("intake journal"));
  next_pset_ = next;
  applied_pos_ = applied_end_ = next - 1;
  return Status::ok();
}

}  // namespace lcc::qm
