// lcc/content_store.h — the LCC DB: one record per stored URL, with a change sequence
// and tombstones (design document §6, §9; docs/protocol.md §3).
//
// WHO CALLS IT: the QM writes (it is the only writer, design document §6); the CU, the UNS
// (quota figures) and the admin API read, concurrently with the writer.
// THREADS: apply()/sync()/close() from one writer thread at a time; the read methods
// are thread-safe and may run concurrently with the writer. A scan sees a consistent
// state per record; it need not be a snapshot of the whole store.
// DURABILITY: as QueueStore — apply() atomic, sync() durable, close() clean.
// PRECONDITIONS:
//  REQUIRES: the seq of a record put is greater than any seq put before (the QM
//            assigns them from maxSeq()+1). A put replaces the record of that key
//            (and its old seq disappears from the sequence order).
//            Exception: a put whose seq equals the seq the stored record of that key
//            already has replaces it in place — its place in the sequence order and
//            maxSeq() do not change. The QM uses it to refresh fields a content user
//            does not see (`refreshed`, `declared_*`), so an unchanged URL is not
//            reported as changed.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lcc/status.h"
#include "lcc/store_common.h"
#include "lcc/types.h"

namespace lcc {

class ContentBatch {
 public:
  struct Put { ContentRecord record; };      // insert or replace (tombstones too)
  struct Erase { std::string key; };         // forget a record entirely (tombstone purge)
  struct PutMeta { std::string key; std::string value; };
  using Op = std::variant<Put, Erase, PutMeta>;

  void put(ContentRecord r) { ops_.push_back(Put{std::move(r)}); }
  void erase(std::string encoded_key) { ops_.push_back(Erase{std::move(encoded_key)}); }
  void putMeta(std::string key, std::string value) { ops_.push_back(PutMeta{std::move(key), std::move(value)}); }

  const std::vector<Op>& ops() const { return ops_; }
  bool empty() const { return ops_.empty(); }
  std::size_t size() const { return ops_.size(); }
  void clear() { ops_.clear(); }

 private:
  std::vector<Op> ops_;
};

// A filter for sequence scans (docs/protocol.md §3). Kinds are AND-ed, values within a
// kind OR-ed; an empty list means "any".
struct ContentFilter {
  std::vector<ProviderId> providers;
  std::vector<std::string> mime_patterns;  // "text/html", "text/*", "*/*"
  std::vector<std::string> url_prefixes;
  std::optional<WallTime> stored_since;    // stored >= this
  bool include_deleted = false;

  // "*" and "*/*" match anything, "text/*" any "text/<subtype>", else equality.
  static bool mimeMatches(std::string_view pattern, std::string_view mime);
  bool matches(const ContentRecord& r) const;
};

class ContentStore {
 public:
  virtual ~ContentStore() = default;
  ContentStore() = default;
  ContentStore(const ContentStore&) = delete;
  ContentStore& operator=(const ContentStore&) = delete;

  virtual const StoreOpenInfo& openInfo() const = 0;

  virtual Status apply(const ContentBatch& batch) = 0;
  virtual Status sync() = 0;
  virtual Status close() = 0;

  virtual Result<std::optional<ContentRecord>> get(std::string_view encoded_key) = 0;
  // The records of several keys, in the order of `keys` (nullopt when absent). One
  // round trip on storage-postgres; get() each by default.
  virtual Result<std::vector<std::optional<ContentRecord>>> getMany(const std::vector<std::string>& keys) {
    std::vector<std::optional<ContentRecord>> out;
    out.reserve(keys.size());
    for (const auto& k : keys) {
      LCC_ASSIGN_OR_RETURN(auto r, get(k));
      out.push_back(std::move(r));
    }
    return out;
  }
  // Every record (tombstones included) of provider `pid`, in key order.
  virtual Status scanProvider(ProviderId pid, const std::function<bool(const ContentRecord&)>& fn) = 0;
  // Records with seq > `after` that match `filter`, in ascending seq order, until `fn`
  // returns false. A store may use indexes for the filter; it must call matches().
  virtual Status scanSince(ChangeSeq after, const ContentFilter& filter,
                           const std::function<bool(const ContentRecord&)>& fn) = 0;
  // The highest seq ever put (0 for an empty store); never goes backwards, even
  // when the record holding it was erased.
  virtual Result<ChangeSeq> maxSeq() = 0;
  // Number of records (tombstones included).
  virtual Result<std::uint64_t> count() = 0;

  virtual Result<std::optional<std::string>> getMeta(std::string_view key) = 0;
};

}  // namespace lcc
