#include "kyoto_stores.h"

#include <map>

#include "record_codec.h"

namespace lcc::plugins::kyoto {
namespace {

// Smallest string greater than every string starting with `prefix` ("" = no bound).
std::string prefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    auto& c = prefix.back();
    if (static_cast<unsigned char>(c) != 0xff) {
      c = static_cast<char>(static_cast<unsigned char>(c) + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return prefix;
}

std::string slotBytes(TimeSlot s) { return be32(static_cast<std::uint32_t>(s) ^ 0x80000000u); }

std::optional<std::uint64_t> readCounter(const std::optional<std::string>& v) {
  if (!v) return 0;
  if (v->size() != 8) return std::nullopt;
  return readBe64(*v);
}

Status corruptRow(const std::string& what) { return Status::corruption(std::string(kPluginName) + ": " + what); }

// ---------------------------------------------------------------------------
// Queue store keys (queue.kct)
constexpr std::uint8_t kQRows = 0;
constexpr std::uint8_t kQIndex = 1;
std::string qPSetKey(PSetId p, TimeSlot s) { return "P" + be64(p) + slotBytes(s); }
std::string qSlotKey(TimeSlot s, PSetId p) { return "S" + slotBytes(s) + be64(p); }
std::string qDeleteKey(const std::string& machine, const std::string& file) {
  std::string k = "D" + machine;
  k.push_back('\0');
  return k + file;
}
const std::string kCountKey = "N";

// ---------------------------------------------------------------------------
// Content store keys (content.kct)
std::string cRowKey(std::string_view key) { return "R" + std::string(key); }
std::string cSeqKey(ChangeSeq s) { return "S" + be64(s); }
const std::string kMaxSeqKey = "Q";

// What a put needs of the row it replaces: its seq (to drop from the seq order) and
// whether the URL is stored, with since when (created_seq is kept while it stays).
struct HeldRow {
  ChangeSeq seq = 0;
  bool live = false;
  ChangeSeq created = 0;
};

// ---------------------------------------------------------------------------
// Provider store keys (providers.kct)
std::string pRowKey(ProviderId id) { return "R" + be32(id); }
const std::string kLastIdKey = "I";

}  // namespace

// ===========================================================================
Result<QueueStore*> KyotoQueueStore::open(const HostContext& host, const EngineOptions& options) {
  LCC_ASSIGN_OR_RETURN(auto engine, KvEngine::open(host, "queue", {{"queue.kch", false}, {"queue.kct", true}}, options));
  LCC_ASSIGN_OR_RETURN(auto legacy, engine->get(kQIndex, kCountKey));
  auto* s = new KyotoQueueStore();
  s->engine_ = std::move(engine);
  s->legacy_count_ = legacy.has_value();
  return static_cast<QueueStore*>(s);
}

Status KyotoQueueStore::apply(const QueueBatch& batch) {
  if (!failed_.isOk()) return failed_;
  LCC_RETURN_IF_ERROR(engine_->writable());
  for (const auto& op : batch.ops()) {
    if (const auto* r = std::get_if<QueueBatch::RemoveEntry>(&op); r && !decodeUrlKey(r->key)) {
      failed_ = Status::invalidArgument(std::string(kPluginName) +
                                        ": queue batch removes a key that is not an encoded UrlKey (store failed)");
      return failed_;
    }
  }
  // The row count is the hash file's own (KvEngine::rowCount): no lookup per row here.
  KvEngine::Batch kv;
  kv.reserve(batch.size() + 1);
  if (legacy_count_) kv.push_back({kQIndex, kCountKey, std::nullopt});  // written before the engine counted
  for (const auto& op : batch.ops()) {
    if (const auto* o = std::get_if<QueueBatch::PutEntry>(&op)) {
      kv.push_back({kQRows, encodeUrlKey(o->entry.notice.key), encodeQueueEntry(o->entry)});
    } else if (const auto* o = std::get_if<QueueBatch::RemoveEntry>(&op)) {
      kv.push_back({kQRows, o->key, std::nullopt});
    } else if (const auto* o = std::get_if<QueueBatch::PutPSet>(&op)) {
      kv.push_back({kQIndex, qPSetKey(o->pset.pset, o->pset.slot), encodePSet(o->pset)});
      kv.push_back({kQIndex, qSlotKey(o->pset.slot, o->pset.pset), std::string()});
    } else if (const auto* o = std::get_if<QueueBatch::RemovePSet>(&op)) {
      kv.push_back({kQIndex, qPSetKey(o->pset, o->slot), std::nullopt});
      kv.push_back({kQIndex, qSlotKey(o->slot, o->pset), std::nullopt});
    } else if (const auto* o = std::get_if<QueueBatch::PutDelete>(&op)) {
      kv.push_back({kQIndex, qDeleteKey(o->request.machine, o->request.filename), encodeDelete(o->request)});
    } else if (const auto* o = std::get_if<QueueBatch::RemoveDelete>(&op)) {
      kv.push_back({kQIndex, qDeleteKey(o->machine, o->filename), std::nullopt});
    } else if (const auto* o = std::get_if<QueueBatch::PutMeta>(&op)) {
      kv.push_back({kQIndex, "M" + o->key, o->value});
    }
  }
  LCC_RETURN_IF_ERROR(engine_->apply(std::move(kv)));
  legacy_count_ = false;
  return Status::ok();
}

Result<std::optional<QueueEntry>> KyotoQueueStore::getEntry(std::string_view key) {
  LCC_ASSIGN_OR_RETURN(auto v, engine_->get(kQRows, key));
  if (!v) return std::optional<QueueEntry>();
  auto e = decodeQueueEntry(key, *v);
  if (!e) return corruptRow("queue row does not decode");
  return std::optional<QueueEntry>(std::move(*e));
}

Status KyotoQueueStore::scanEntries(const std::function<bool(const QueueEntry&)>& fn) {
  return engine_->scanAll(kQRows, [&](std::string_view k, std::string_view v) {
    auto e = decodeQueueEntry(k, v);
    if (!e) return true;  // a damaged row is skipped (getEntry reports it)
    return fn(*e);
  });
}

Result<std::uint64_t> KyotoQueueStore::entryCount() { return engine_->rowCount(kQRows); }

Result<std::optional<PSetRecord>> KyotoQueueStore::getPSet(PSetId pset, TimeSlot slot) {
  LCC_ASSIGN_OR_RETURN(auto v, engine_->get(kQIndex, qPSetKey(pset, slot)));
  if (!v) return std::optional<PSetRecord>();
  auto p = decodePSet(*v);
  if (!p) return corruptRow("QPSDB row does not decode");
  return std::optional<PSetRecord>(std::move(*p));
}

Status KyotoQueueStore::scanPSets(std::optional<TimeSlot> slot, const std::function<bool(const PSetRecord&)>& fn) {
  if (!slot) {
    return engine_->scanRange(kQIndex, "P", "Q", [&](std::string_view, std::string_view v) {
      auto p = decodePSet(v);
      return p ? fn(*p) : true;
    });
  }
  const std::string prefix = "S" + slotBytes(*slot);
  Status inner;
  Status s = engine_->scanRange(kQIndex, prefix, prefixEnd(prefix), [&](std::string_view k, std::string_view) {
    if (k.size() != 13) return true;
    auto row = getPSet(readBe64(k.substr(5)), *slot);
    if (!row.isOk()) {
      inner = row.status();
      return false;
    }
    return row.value() ? fn(*row.value()) : true;
  });
  return s.isOk() ? inner : s;
}

Status KyotoQueueStore::scanDeletes(std::optional<std::string> machine,
                                    const std::function<bool(const DeleteRequest&)>& fn) {
  std::string from = "D", to = "E";
  if (machine) {
    from = "D" + *machine;
    from.push_back('\0');
    to = prefixEnd(from);
  }
  return engine_->scanRange(kQIndex, from, to, [&](std::string_view, std::string_view v) {
    auto d = decodeDelete(v);
    return d ? fn(*d) : true;
  });
}

Result<std::optional<std::string>> KyotoQueueStore::getMeta(std::string_view key) {
  return engine_->get(kQIndex, "M" + std::string(key));
}

// ===========================================================================
Result<ContentStore*> KyotoContentStore::open(const HostContext& host, const EngineOptions& options) {
  LCC_ASSIGN_OR_RETURN(auto engine, KvEngine::open(host, "content", {{"content.kct", true}}, options));
  auto* s = new KyotoContentStore();
  s->engine_ = std::move(engine);
  return static_cast<ContentStore*>(s);
}

Status KyotoContentStore::apply(const ContentBatch& batch) {
  std::lock_guard<std::mutex> lock(write_mu_);
  if (!failed_.isOk()) return failed_;
  LCC_RETURN_IF_ERROR(engine_->writable());
  LCC_ASSIGN_OR_RETURN(auto max_raw, engine_->get(0, kMaxSeqKey));
  LCC_ASSIGN_OR_RETURN(auto count_raw, engine_->get(0, kCountKey));
  auto max_seq = readCounter(max_raw);
  auto count = readCounter(count_raw);
  if (!max_seq || !count) return corruptRow("content counters are damaged");
  // Check the whole batch first: a refused batch changes nothing.
  ChangeSeq seq = *max_seq;
  for (const auto& op : batch.ops()) {
    if (const auto* p = std::get_if<ContentBatch::Put>(&op)) {
      if (p->record.seq <= seq) {
        // Allowed only as an in-place refresh of the record holding that seq.
        LCC_ASSIGN_OR_RETURN(auto held, engine_->get(0, cSeqKey(p->record.seq)));
        if (held && *held == encodeUrlKey(p->record.key)) continue;
        failed_ = Status::invalidArgument(std::string(kPluginName) + ": content put with seq " +
                                          std::to_string(p->record.seq) + ", expected more than " +
                                          std::to_string(seq) + " (store failed)");
        return failed_;
      }
      seq = p->record.seq;
    } else if (const auto* e = std::get_if<ContentBatch::Erase>(&op); e && !decodeUrlKey(e->key)) {
      failed_ = Status::invalidArgument(std::string(kPluginName) +
                                        ": content erase of a key that is not an encoded UrlKey (store failed)");
      return failed_;
    }
  }
  std::map<std::string, std::optional<HeldRow>, std::less<>> local;  // rows touched by this batch
  auto current = [&](const std::string& key) -> Result<std::optional<HeldRow>> {
    if (auto it = local.find(key); it != local.end()) return it->second;
    LCC_ASSIGN_OR_RETURN(auto v, engine_->get(0, cRowKey(key)));
    if (!v) return std::optional<HeldRow>();
    auto held = decodeContent(key, *v);
    if (!held) return corruptRow("content row does not decode");
    return std::optional<HeldRow>(HeldRow{held->seq, !held->deleted, held->created_seq});
  };
  std::uint64_t rows = *count;
  KvEngine::Batch kv;
  for (const auto& op : batch.ops()) {
    if (const auto* p = std::get_if<ContentBatch::Put>(&op)) {
      std::string key = encodeUrlKey(p->record.key);
      LCC_ASSIGN_OR_RETURN(auto old, current(key));
      if (old) {
        kv.push_back({0, cSeqKey(old->seq), std::nullopt});
      } else {
        ++rows;
      }
      ContentRecord r = p->record;
      r.created_seq = old && old->live ? old->created : r.seq;
      kv.push_back({0, cRowKey(key), encodeContent(r)});
      kv.push_back({0, cSeqKey(r.seq), key});
      local[key] = HeldRow{r.seq, !r.deleted, r.created_seq};
    } else if (const auto* e = std::get_if<ContentBatch::Erase>(&op)) {
      LCC_ASSIGN_OR_RETURN(auto old, current(e->key));
      if (old) {
        kv.push_back({0, cSeqKey(old->seq), std::nullopt});
        kv.push_back({0, cRowKey(e->key), std::nullopt});
        --rows;
      }
      local[e->key] = std::nullopt;
    } else if (const auto* m = std::get_if<ContentBatch::PutMeta>(&op)) {
      kv.push_back({0, "M" + m->key, m->value});
    }
  }
  if (seq != *max_seq) kv.push_back({0, kMaxSeqKey, be64(seq)});
  if (rows != *count) kv.push_back({0, kCountKey, be64(rows)});
  return engine_->apply(std::move(kv));
}

Result<std::optional<ContentRecord>> KyotoContentStore::get(std::string_view encoded_key) {
  LCC_ASSIGN_OR_RETURN(auto v, engine_->get(0, cRowKey(encoded_key)));
  if (!v) return std::optional<ContentRecord>();
  auto r = decodeContent(encoded_key, *v);
  if (!r) return corruptRow("content row does not decode");
  return std::optional<ContentRecord>(std::move(*r));
}

Status KyotoContentStore::scanProvider(ProviderId pid, const std::function<bool(const ContentRecord&)>& fn) {
  const std::string prefix = "R" + be32(pid);
  return engine_->scanRange(0, prefix, prefixEnd(prefix), [&](std::string_view k, std::string_view v) {
    auto r = decodeContent(k.substr(1), v);
    return r ? fn(*r) : true;
  });
}

Status KyotoContentStore::scanSince(ChangeSeq after, const ContentFilter& filter,
                                    const std::function<bool(const ContentRecord&)>& fn) {
  if (after == UINT64_MAX) return Status::ok();
  Status inner;
  Status s = engine_->scanRange(0, cSeqKey(after + 1), "T", [&](std::string_view k, std::string_view key) {
    if (k.size() != 9) return true;
    const ChangeSeq seq = readBe64(k.substr(1));
    auto row = get(key);
    if (!row.isOk()) {
      inner = row.status();
      return false;
    }
    // The row may have been replaced since the index entry was read: skip it then
    // (its new seq comes later in this scan).
    if (!row.value() || row.value()->seq != seq) return true;
    if (!filter.matches(*row.value())) return true;
    return fn(*row.value());
  });
  return s.isOk() ? inner : s;
}

Result<ChangeSeq> KyotoContentStore::maxSeq() {
  LCC_ASSIGN_OR_RETURN(auto v, engine_->get(0, kMaxSeqKey));
  auto c = readCounter(v);
  if (!c) return corruptRow("content max seq is damaged");
  return *c;
}

Result<std::uint64_t> KyotoContentStore::count() {
  LCC_ASSIGN_OR_RETURN(auto v, engine_->get(0, kCountKey));
  auto c = readCounter(v);
  if (!c) return corruptRow("content counter is damaged");
  return *c;
}

Result<std::optional<std::string>> KyotoContentStore::getMeta(std::string_view key) {
  return engine_->get(0, "M" + std::string(key));
}

// ===========================================================================
Result<ProviderStore*> KyotoProviderStore::open(const HostContext& host, const EngineOptions& options) {
  LCC_ASSIGN_OR_RETURN(auto engine, KvEngine::open(host, "providers", {{"providers.kct", true}}, options));
  auto* s = new KyotoProviderStore();
  s->engine_ = std::move(engine);
  return static_cast<ProviderStore*>(s);
}

Status KyotoProviderStore::write(KvEngine::Batch batch, bool durable) {
  LCC_RETURN_IF_ERROR(engine_->apply(std::move(batch)));
  if (durable) return engine_->sync();
  return Status::ok();
}

Result<ProviderId> KyotoProviderStore::create(const ProviderRecord& record) {
  std::lock_guard<std::mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(engine_->writable());
  LCC_ASSIGN_OR_RETURN(auto last_raw, engine_->get(0, kLastIdKey));
  std::uint32_t last = 0;
  if (last_raw) {
    if (last_raw->size() != 4) return corruptRow("provider id counter is damaged");
    last = readBe32(*last_raw);
  }
  if (last == UINT32_MAX) return Status::ioError(std::string(kPluginName) + ": provider ids exhausted");
  ProviderRecord r = record;
  r.id = last + 1;
  LCC_RETURN_IF_ERROR(write({{0, pRowKey(r.id), encodeProvider(r)}, {0, kLastIdKey, be32(r.id)}}, true));
  return r.id;
}

Result<std::optional<ProviderRecord>> KyotoProviderStore::get(ProviderId id) {
  LCC_ASSIGN_OR_RETURN(auto v, engine_->get(0, pRowKey(id)));
  if (!v) return std::optional<ProviderRecord>();
  auto r = decodeProvider(*v);
  if (!r) return corruptRow("provider row " + std::to_string(id) + " does not decode");
  return std::optional<ProviderRecord>(std::move(*r));
}

Status KyotoProviderStore::put(const ProviderRecord& record, const WriteOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(engine_->writable());
  LCC_ASSIGN_OR_RETURN(auto v, engine_->get(0, pRowKey(record.id)));
  if (!v) return Status::notFound("provider " + std::to_string(record.id) + " does not exist");
  return write({{0, pRowKey(record.id), encodeProvider(record)}}, options.durable);
}

Status KyotoProviderStore::modify(ProviderId id, const std::function<Status(ProviderRecord&)>& fn,
                                  const WriteOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(engine_->writable());
  LCC_ASSIGN_OR_RETURN(auto cur, get(id));
  if (!cur) return Status::notFound("provider " + std::to_string(id) + " does not exist");
  ProviderRecord r = std::move(*cur);
  LCC_RETURN_IF_ERROR(fn(r));
  r.id = id;
  return write({{0, pRowKey(id), encodeProvider(r)}}, options.durable);
}

Status KyotoProviderStore::remove(ProviderId id) {
  std::lock_guard<std::mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(engine_->writable());
  LCC_ASSIGN_OR_RETURN(auto v, engine_->get(0, pRowKey(id)));
  if (!v) return Status::notFound("provider " + std::to_string(id) + " does not exist");
  return write({{0, pRowKey(id), std::nullopt}}, true);
}

Status KyotoProviderStore::scan(const std::function<bool(const ProviderRecord&)>& fn) {
  return engine_->scanRange(0, "R", "S", [&](std::string_view, std::string_view v) {
    auto r = decodeProvider(v);
    return r ? fn(*r) : true;
  });
}

Status KyotoProviderStore::sync() {
  std::lock_guard<std::mutex> lock(mu_);
  return engine_->sync();
}

Status KyotoProviderStore::close() {
  std::lock_guard<std::mutex> lock(mu_);
  return engine_->close();
}

}  // namespace lcc::plugins::kyoto
