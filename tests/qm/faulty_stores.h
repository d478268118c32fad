// faulty_stores.h — QueueStore and ContentStore wrappers that forward to a real store
// and inject faults: a read or a write that fails after N more successful ones, and a
// store that says it may have lost synced writes (rule 3). They count the reads they
// forward, so a test can see that an engine stops reading once a store failed.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lcc/content_store.h"
#include "lcc/queue_store.h"

namespace lcc::qm::testing {

// The fault plan one wrapper follows. -1: not armed; n >= 0: n more calls succeed,
// then every call of that kind fails with an IOError until disarmed. setBusy(true):
// every call answers Busy until setBusy(false) (a lost connection, a failover).
// landBusy(n): the next n applies are written, then answer Busy (the connection lost
// during COMMIT: the caller cannot tell that it landed). setFenced(true): every write
// is refused as fenced (another QM took the lease over).
class FaultPlan {
 public:
  void failReadsAfter(int n) { reads_left_ = n; }
  void failWritesAfter(int n) { writes_left_ = n; }
  void setBusy(bool on) { busy_ = on; }
  // Every write refused as storage-postgres refuses a QM whose lease was taken over.
  void setFenced(bool on) { fenced_ = on; }
  void landBusy(int n) { land_busy_ = n; }
  bool landsBusy() {
    if (land_busy_ <= 0) return false;
    --land_busy_;
    ++injected_;
    return true;
  }
  void clear() {
    reads_left_ = writes_left_ = -1;
    busy_ = false;
  }
  std::uint64_t reads() const { return reads_; }
  std::uint64_t writes() const { return writes_; }
  std::uint64_t injected() const { return injected_; }

  Status read() {
    ++reads_;
    return take(reads_left_, "injected read error");
  }
  Status write() {
    ++writes_;
    if (fenced_) {
      ++injected_;
      return Status::aborted("injected: fenced: QM epoch 1 was taken over by qm2 pid 7 (epoch 2); this process "
                             "writes nothing more");
    }
    return take(writes_left_, "injected write error");
  }

 private:
  Status take(int& left, const char* what) {
    if (busy_) {
      ++injected_;
      return Status::busy("injected: the connection was lost; try again later");
    }
    if (left < 0) return Status::ok();
    if (left > 0) {
      --left;
      return Status::ok();
    }
    ++injected_;
    return Status::ioError(what);
  }
  int reads_left_ = -1, writes_left_ = -1;
  bool busy_ = false;
  bool fenced_ = false;
  int land_busy_ = 0;
  std::uint64_t reads_ = 0, writes_ = 0, injected_ = 0;
};

// Written, but answered as a commit whose connection was lost.
inline Status landed(Status written) {
  return written.isOk() ? Status::busy("injected: the connection was lost during COMMIT; try again later") : written;
}

// `f()` unless the fault plan injected an error (then that error).
template <typename F>
Status unlessInjected(Status injected, F&& f) {
  return injected.isOk() ? f() : injected;
}

class FaultyQueueStore final : public QueueStore {
 public:
  explicit FaultyQueueStore(QueueStore& base, bool lossy = false) : base_(base), info_(base.openInfo()) {
    if (lossy) {
      info_.may_have_lost_synced = true;
      info_.clean_shutdown = false;
    }
  }
  FaultPlan plan;
  // Says it is a store a network away (StoreOpenInfo::remote): the QM reads ahead.
  void setRemote(bool on) { info_.remote = on; }
  // A persistent error on some QPSDB rows only (the rest of the store reads fine).
  std::function<bool(PSetId, TimeSlot)> fail_pset;
  // Sees every batch before it is applied (what the QM hands the store).
  std::function<void(const QueueBatch&)> on_apply;

  const StoreOpenInfo& openInfo() const override { return info_; }
  Status apply(const QueueBatch& b) override {
    if (on_apply) on_apply(b);
    if (plan.landsBusy()) return landed(base_.apply(b));
    return unlessInjected(plan.write(), [&] { return base_.apply(b); });
  }
  Status sync() override { return unlessInjected(plan.write(), [&] { return base_.sync(); }); }
  Status close() override { return base_.close(); }
  Result<std::optional<QueueEntry>> getEntry(std::string_view k) override {
    LCC_RETURN_IF_ERROR(plan.read());
    return base_.getEntry(k);
  }
  // A batch read is one read (one round trip on a store a network away).
  Result<std::vector<std::optional<QueueEntry>>> getEntries(const std::vector<std::string>& keys) override {
    LCC_RETURN_IF_ERROR(plan.read());
    return base_.getEntries(keys);
  }
  Result<std::vector<std::optional<PSetRecord>>> getPSets(const std::vector<std::pair<PSetId, TimeSlot>>& lists) override {
    LCC_RETURN_IF_ERROR(plan.read());
    for (const auto& [p, s] : lists) {
      if (fail_pset && fail_pset(p, s)) return Status::ioError("injected read error of one list");
    }
    return base_.getPSets(lists);
  }
  Status scanEntries(const std::function<bool(const QueueEntry&)>& fn) override {
    return unlessInjected(plan.read(), [&] { return base_.scanEntries(fn); });
  }
  Result<std::uint64_t> entryCount() override {
    LCC_RETURN_IF_ERROR(plan.read());
    return base_.entryCount();
  }
  Result<std::optional<PSetRecord>> getPSet(PSetId p, TimeSlot s) override {
    LCC_RETURN_IF_ERROR(plan.read());
    if (fail_pset && fail_pset(p, s)) return Status::ioError("injected read error of one list");
    return base_.getPSet(p, s);
  }
  Status scanPSets(std::optional<TimeSlot> s, const std::function<bool(const PSetRecord&)>& fn) override {
    return unlessInjected(plan.read(), [&] { return base_.scanPSets(s, fn); });
  }
  Status scanDeletes(std::optional<std::string> m, const std::function<bool(const DeleteRequest&)>& fn) override {
    return unlessInjected(plan.read(), [&] { return base_.scanDeletes(std::move(m), fn); });
  }
  Result<std::optional<std::string>> getMeta(std::string_view k) override {
    LCC_RETURN_IF_ERROR(plan.read());
    return base_.getMeta(k);
  }

 private:
  QueueStore& base_;
  StoreOpenInfo info_;
};

class FaultyContentStore final : public ContentStore {
 public:
  explicit FaultyContentStore(ContentStore& base) : base_(base) {}
  FaultPlan plan;

  const StoreOpenInfo& openInfo() const override { return base_.openInfo(); }
  Status apply(const ContentBatch& b) override {
    if (plan.landsBusy()) return landed(base_.apply(b));
    return unlessInjected(plan.write(), [&] { return base_.apply(b); });
  }
  Status sync() override { return unlessInjected(plan.write(), [&] { return base_.sync(); }); }
  Status close() override { return base_.close(); }
  Result<std::optional<ContentRecord>> get(std::string_view k) override {
    LCC_RETURN_IF_ERROR(plan.read());
    return base_.get(k);
  }
  Result<std::vector<std::optional<ContentRecord>>> getMany(const std::vector<std::string>& keys) override {
    LCC_RETURN_IF_ERROR(plan.read());
    return base_.getMany(keys);
  }
  Status scanProvider(ProviderId pid, const std::function<bool(const ContentRecord&)>& fn) override {
    return unlessInjected(plan.read(), [&] { return base_.scanProvider(pid, fn); });
  }
  Status scanSince(ChangeSeq after, const ContentFilter& f, const std::function<bool(const ContentRecord&)>& fn) override {
    return unlessInjected(plan.read(), [&] { return base_.scanSince(after, f, fn); });
  }
  Result<ChangeSeq> maxSeq() override {
    LCC_RETURN_IF_ERROR(plan.read());
    return base_.maxSeq();
  }
  Result<std::uint64_t> count() override {
    LCC_RETURN_IF_ERROR(plan.read());
    return base_.count();
  }
  Result<std::optional<std::string>> getMeta(std::string_view k) override {
    LCC_RETURN_IF_ERROR(plan.read());
    return base_.getMeta(k);
  }

 private:
  ContentStore& base_;
};

}  // namespace lcc::qm::testing
