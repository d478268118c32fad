#include "kv_engine.h"

#include <kchashdb.h>
#include <kcplantdb.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>

#include "record_codec.h"

namespace lcc::plugins::kyoto {
namespace {

namespace kc = kyotocabinet;

constexpr std::size_t kScanChunk = 256;

const char* kMetaMagic = "lcc-store-meta 1";

std::string encodeBatch(const KvEngine::Batch& batch) {
  Writer w;
  w.u8(1);  // redo record format
  w.varint(batch.size());
  for (const auto& op : batch) {
    w.u8(static_cast<std::uint8_t>(op.table | (op.value ? 0x80 : 0)));
    w.str(op.key);
    if (op.value) w.str(*op.value);
  }
  return w.take();
}

std::optional<KvEngine::Batch> decodeBatch(std::string_view bytes, std::size_t table_count) {
  Reader r(bytes);
  if (r.u8() != 1) return std::nullopt;
  std::uint64_t n = r.varint();
  if (!r.ok() || n > bytes.size()) return std::nullopt;
  KvEngine::Batch batch;
  batch.reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    KvEngine::Op op;
    std::uint8_t t = r.u8();
    op.table = t & 0x7f;
    if (op.table >= table_count) return std::nullopt;
    op.key = r.str();
    if (t & 0x80) op.value = r.str();
    if (!r.ok()) return std::nullopt;
    batch.push_back(std::move(op));
  }
  if (!r.done()) return std::nullopt;
  return batch;
}

struct Meta {
  std::string plugin;
  int format = 0;
  std::string store;
  bool clean = false;
  bool lost = false;  // an open found possibly lost synced rows and had not finished
  std::string boot;
};

std::optional<Meta> parseMeta(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kMetaMagic) return std::nullopt;
  Meta m;
  while (std::getline(in, line)) {
    auto sp = line.find(' ');
    std::string k = line.substr(0, sp);
    std::string v = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (k == "plugin") m.plugin = v;
    else if (k == "format") m.format = std::atoi(v.c_str());
    else if (k == "store") m.store = v;
    else if (k == "clean") m.clean = v == "1";
    else if (k == "boot") m.boot = v;
    else if (k == "lost") m.lost = v == "1";
  }
  return m;
}

std::string readBootId(Env* env) {
  auto b = env->readFile("/proc/sys/kernel/random/boot_id");
  if (!b.isOk()) return "unknown";
  std::string s = b.value();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "unknown" : s;
}

}  // namespace

Result<std::unique_ptr<KvEngine>> KvEngine::open(const HostContext& host, const std::string& name,
                                                  std::vector<TableSpec> tables, const EngineOptions& options) {
  std::unique_ptr<KvEngine> e(new KvEngine());
  Status s = e->openImpl(host, name, std::move(tables), options);
  if (!s.isOk()) return s.withContext(std::string(kPluginName) + " " + name + " store");
  return e;
}

KvEngine::~KvEngine() {
  // Without close() the store stays marked unclean; Kyoto's destructor closes the files.
  for (auto& t : tables_) t.db.reset();
}

Status KvEngine::openImpl(const HostContext& host, const std::string& name, std::vector<TableSpec> tables,
                          const EngineOptions& options) {
  env_ = host.env;
  clock_ = host.clock;
  logger_ = host.logger;
  name_ = name;
  options_ = options;
  if (env_ == nullptr) return Status::invalidArgument("no Env in the host context");
  dir_ = options.dir;
  if (dir_.empty() || dir_.front() != '/') {
    if (host.data_dir.empty()) return Status::invalidArgument("node.data_dir is empty");
    dir_ = dir_.empty() ? host.data_dir : host.data_dir + "/" + dir_;
  }
  LCC_RETURN_IF_ERROR(env_->createDirs(dir_));
  meta_path_ = dir_ + "/" + name + ".meta";
  boot_id_ = readBootId(env_);
  info_ = StoreOpenInfo{};
  info_.engine = "kyoto";
  info_.persistent = true;

  // --- who wrote what is here? ---
  std::optional<Meta> meta;
  if (env_->exists(meta_path_)) {
    LCC_ASSIGN_OR_RETURN(std::string text, env_->readFile(meta_path_));
    meta = parseMeta(text);
    if (!meta) return Status::invalidArgument(meta_path_ + ": not an LCC store meta file; refusing to open");
    if (meta->plugin != kPluginName) {
      return Status::invalidArgument(meta_path_ + ": this " + name + " store was written by plugin '" + meta->plugin +
                                     "'; " + kPluginName + " refuses to open it (configure that plugin, or move " +
                                     dir_ + " away)");
    }
    if (meta->format != kFormatVersion) {
      return Status::invalidArgument(meta_path_ + ": store format " + std::to_string(meta->format) + ", this " +
                                     kPluginName + " reads format " + std::to_string(kFormatVersion) + " only");
    }
    if (meta->store != name) {
      return Status::invalidArgument(meta_path_ + ": holds a '" + meta->store + "' store, expected '" + name + "'");
    }
  } else {
    for (const auto& t : tables) {
      if (env_->exists(dir_ + "/" + t.file)) {
        return Status::invalidArgument(dir_ + "/" + t.file + " exists but " + meta_path_ +
                                       " does not: not made by " + kPluginName + ", or damaged; refusing to open");
      }
    }
    for (const char* foreign : {".sqlite", ".db"}) {
      std::string p = dir_ + "/" + name + foreign;
      if (env_->exists(p)) {
        return Status::invalidArgument(p + ": this folder holds a " + name + " store of another plugin; " +
                                       kPluginName + " refuses to start an empty one beside it");
      }
    }
    info_.created = true;
  }
  info_.clean_shutdown = !meta || meta->clean;
  // Mark the store open before touching any file: a crash from here on, even during
  // this open or the very first one, is seen as an unclean shutdown by the next open.
  // Until this open completes, keep the previous boot id and the "lost" mark, so a
  // crash during the repair cannot hide what the next open must report.
  const bool pending_lost = meta && meta->lost;
  const std::string keep_boot = meta && !meta->clean ? meta->boot : boot_id_;
  LCC_RETURN_IF_ERROR(writeMeta(false, keep_boot, pending_lost));

  // --- Kyoto files (Kyoto repairs a file that was not closed while opening it) ---
  auto openTable = [&](const TableSpec& spec, const std::string& path, std::uint32_t mode) {
    return openKyoto(spec.ordered, path, mode, options, options.buckets);
  };
  const std::uint32_t mode = kc::BasicDB::OWRITER | kc::BasicDB::OCREATE | kc::BasicDB::OTRYLOCK;
  for (auto& spec : tables) {
    Table t;
    t.spec = spec;
    t.path = dir_ + "/" + spec.file;
    if (env_->exists(t.path) && env_->exists(t.path + ".new")) {
      LCC_RETURN_IF_ERROR(env_->removeFile(t.path + ".new"));  // a rebuild a crash interrupted (REHASH)
    }
    if (!env_->exists(t.path)) {
      // A new file is made whole beside its name and renamed into place: a crash while
      // Kyoto writes its header then leaves no file, never one that cannot be opened.
      const std::string fresh = t.path + ".new";
      if (env_->exists(fresh)) LCC_RETURN_IF_ERROR(env_->removeFile(fresh));
      {
        LCC_ASSIGN_OR_RETURN(auto db, openTable(spec, fresh, mode | kc::BasicDB::OTRUNCATE));
        if (!db->close()) return Status::ioError(kcError(*db, fresh, "close"));
      }
      LCC_RETURN_IF_ERROR(fsyncPath(fresh));
      LCC_RETURN_IF_ERROR(env_->rename(fresh, t.path));
      LCC_RETURN_IF_ERROR(env_->syncDir(dir_));
    }
    LCC_ASSIGN_OR_RETURN(t.db, openTable(spec, t.path, mode));
    if (spec.ordered) t.compacted_size = compactedSizeAtOpen(*t.db);
    else t.buckets = bucketsOf(*t.db);
    tables_.push_back(std::move(t));
  }

  // --- redo: re-apply every synced batch since the last checkpoint ---
  LCC_ASSIGN_OR_RETURN(redo_, Journal::open(env_, dir_ + "/" + name + ".redo"));
  std::uint64_t redone = 0;
  std::string undecodable;
  auto replayed = redo_->replay(0, [&](JournalPos pos, std::string_view rec) -> Status {
    auto batch = decodeBatch(rec, tables_.size());
    if (!batch) {
      // Checksum-valid but unreadable: stop here, as at a damaged record.
      undecodable = "redo record " + std::to_string(pos) + " does not decode";
      return Status::aborted(undecodable);
    }
    ++redone;
    return applyToKyoto(*batch);
  });
  JournalReplayInfo rinfo;
  if (replayed.isOk()) {
    rinfo = replayed.value();
  } else if (!undecodable.empty()) {
    rinfo.corruption = true;
    rinfo.detail = undecodable;
  } else {
    return replayed.status();
  }
  info_.may_have_lost_synced = pending_lost;
  if (rinfo.corruption) {
    info_.may_have_lost_synced = true;
    if (logger_) logger_->error(dir_ + ": redo journal damaged, synced batches after it are lost: " + rinfo.detail);
  }
  if (!info_.clean_shutdown) {
    // After a process crash the page cache held every Kyoto write, and the redo
    // records restore whatever the interrupted flush left half done. After an OS
    // crash or power loss Kyoto's rebuild may have dropped rows written before the
    // last checkpoint: report that (the QM raises cache-crash).
    if (!meta || meta->boot != boot_id_ || boot_id_ == "unknown") info_.may_have_lost_synced = true;
    if (logger_) {
      logger_->warn(dir_ + "/" + name + ": not closed cleanly; redid " + std::to_string(redone) +
                    " synced batches" + (info_.may_have_lost_synced ? "; the machine restarted since, so synced rows may be lost" : ""));
    }
  }
  if (info_.may_have_lost_synced && !pending_lost) {
    LCC_RETURN_IF_ERROR(writeMeta(false, keep_boot, true));  // the checkpoint trims the evidence
  }
  if (redone > 0 || !info_.clean_shutdown) {
    std::lock_guard<std::mutex> lock(write_mu_);
    LCC_RETURN_IF_ERROR(checkpointLocked());
  }
  for (auto& t : tables_) {
    if (!t.spec.ordered && !t.filter.enabled()) LCC_RETURN_IF_ERROR(buildFilter(t));
  }
  // Open complete: what was found is reported through openInfo() from here on.
  LCC_RETURN_IF_ERROR(writeMeta(false, boot_id_, false));
  return Status::ok();
}

Status KvEngine::writeMeta(bool clean, const std::string& boot, bool lost) {
  std::string text = std::string(kMetaMagic) + "\nplugin " + kPluginName + "\nformat " + std::to_string(kFormatVersion) +
                     "\nstore " + name_ + "\nclean " + (clean ? "1" : "0") + "\nboot " + boot + "\nlost " +
                     (lost ? "1" : "0") + "\n";
  return env_->writeFileAtomic(meta_path_, text);
}

Status KvEngine::fail(Status s) {
  failed_ = s.withContext(std::string(kPluginName) + " " + name_ + " store failed (sticky)");
  if (logger_) logger_->error(failed_.message());
  return failed_;
}

Status KvEngine::writable() const {
  if (closed_) return Status::aborted(std::string(kPluginName) + " " + name_ + " store is closed");
  return failed_;
}

Status KvEngine::applyToKyoto(const Batch& batch) {
  for (const auto& op : batch) {
    Table& t = tables_[op.table];
    if (op.value) {
      if (!t.db->set(op.key, *op.value)) return Status::ioError(kcError(*t.db, t.path, "set"));
    } else if (!t.db->remove(op.key) && t.db->error().code() != kc::BasicDB::Error::NOREC) {
      return Status::ioError(kcError(*t.db, t.path, "remove"));
    }
  }
  return Status::ok();
}

Status KvEngine::apply(Batch batch) {
  std::lock_guard<std::mutex> lock(write_mu_);
  LCC_RETURN_IF_ERROR(writable());
  if (batch.empty()) return Status::ok();
  for (const auto& op : batch) {
    if (op.table >= tables_.size()) return Status::internal("batch names table " + std::to_string(op.table));
  }
  auto pos = redo_->append(encodeBatch(batch));
  if (!pos.isOk()) return fail(pos.status());  // nothing changed, but the interface makes it sticky
  {
    std::unique_lock<std::shared_mutex> wl(mu_);
    for (auto& op : batch) {
      overlay_bytes_ += op.key.size() + (op.value ? op.value->size() : 0) + 64;
      if (op.value) tables_[op.table].filter.add(op.key);
      auto& slot = tables_[op.table].overlay[std::move(op.key)];
      slot = std::move(op.value);
    }
  }
  if (overlay_bytes_ >= options_.max_unsynced) {
    // Hold at most max_unsynced bytes in memory: make them durable now.
    // Busy (no descriptor to open a redo segment): the batch is in the overlay and its
    // record waits in the journal; it is written with the next commit (issue 25).
    auto c = redo_->commit();
    if (!c.isOk() && c.status().isBusy()) return Status::ok();
    if (!c.isOk()) return fail(c.status());
    std::unique_lock<std::shared_mutex> wl(mu_);
    LCC_RETURN_IF_ERROR(flushOverlayLocked());
  }
  return Status::ok();
}

Status KvEngine::flushOverlayLocked() {
  for (std::uint8_t i = 0; i < tables_.size(); ++i) {
    Table& t = tables_[i];
    for (auto& [key, value] : t.overlay) {
      if (value) {
        if (!t.db->set(key, *value)) return fail(Status::ioError(kcError(*t.db, t.path, "set")));
      } else if (!t.db->remove(key) && t.db->error().code() != kc::BasicDB::Error::NOREC) {
        return fail(Status::ioError(kcError(*t.db, t.path, "remove")));
      }
    }
    t.overlay.clear();
  }
  overlay_bytes_ = 0;
  return Status::ok();
}

bool KvEngine::needsCompaction(const Table& t) const {
  if (!t.spec.ordered || options_.compact_growth == 0) return false;
  const std::int64_t growth = std::max<std::int64_t>(t.compacted_size, static_cast<std::int64_t>(options_.compact_growth));
  return t.db->size() > t.compacted_size + growth;
}

// Kyoto's defrag slides every record after the first hole down over the holes and cuts
// the file at the end. It runs inside one Kyoto transaction (its write-ahead log holds
// the bytes it overwrites; not synced, like every Kyoto write between checkpoints): a
// crash while records are half moved rolls the file back at the next open, instead of
// leaving Kyoto's repair to salvage a region of half-moved pages. The checkpoint that
// runs it syncs the result before the redo journal is trimmed.
Status KvEngine::compactLocked(Table& t) {
  const std::int64_t before = t.db->size();
  const MonoTime start = clock_ ? clock_->monoNow() : MonoTime{};
  if (!t.db->begin_transaction(false)) return fail(Status::ioError(kcError(*t.db, t.path, "begin_transaction")));
  const bool moved = static_cast<kc::TreeDB&>(*t.db).defrag(0);  // ordered tables are TreeDBs
  const std::string defrag_error = moved ? std::string() : kcError(*t.db, t.path, "defrag");
  if (!t.db->end_transaction(moved)) return fail(Status::ioError(kcError(*t.db, t.path, "end_transaction")));
  if (!moved) return fail(Status::ioError(defrag_error));
  t.compacted_size = t.db->size();
  if (logger_) {
    const auto ms = clock_ ? std::chrono::duration_cast<std::chrono::milliseconds>(clock_->monoNow() - start).count() : 0;
    logger_->info(t.path + ": compacted " + std::to_string(before) + " -> " + std::to_string(t.compacted_size) +
                  " bytes in " + std::to_string(ms) + " ms");
  }
  return Status::ok();
}

bool KvEngine::needsRehash(const Table& t) const {
  if (t.spec.ordered || options_.rehash_load <= 0 || t.buckets <= 0 || t.rehash_off) return false;
  return t.db->count() > options_.rehash_load * t.buckets;
}

// Rebuilds a hash file with twice as many buckets as rows (REHASH in kv_engine.h). The
// file is whole until the rename, the new one after it; the redo journal is trimmed
// only after, by the checkpoint. A failure before the rename keeps the old file and
// turns rebuilding off for this table until the next open.
Status KvEngine::rehashLocked(Table& t) {
  std::unique_lock<std::shared_mutex> wl(mu_);  // readers wait: the file changes under them
  const MonoTime start = clock_ ? clock_->monoNow() : MonoTime{};
  const std::int64_t rows = t.db->count();
  const std::int64_t buckets = std::min<std::int64_t>(4000000000ll, std::max<std::int64_t>(2 * rows, 2 * t.buckets));
  const std::string fresh = t.path + ".new";
  std::string error;
  KeyFilter filter;  // the rebuilt file's keys, sized for its buckets
  filter.reset(static_cast<std::uint64_t>(options_.key_filter) * static_cast<std::uint64_t>(buckets));
  for (const auto& [key, value] : t.overlay) {
    if (value) filter.add(key);
  }
  {
    auto made = openKyoto(false, fresh, kc::BasicDB::OWRITER | kc::BasicDB::OCREATE | kc::BasicDB::OTRUNCATE, options_,
                          buckets);
    if (!made.isOk()) {
      error = made.status().message();
    } else {
      auto& nd = *made.value();
      std::unique_ptr<kc::BasicDB::Cursor> cur(t.db->cursor());
      std::string k, v;
      if (cur->jump()) {
        while (error.empty() && cur->get(&k, &v, true)) {
          if (!nd.set(k, v)) error = kcError(nd, fresh, "set");
          filter.add(k);
        }
      }
      if (error.empty() && t.db->error().code() != kc::BasicDB::Error::NOREC &&
          t.db->error().code() != kc::BasicDB::Error::SUCCESS) {
        error = kcError(*t.db, t.path, "cursor");
      }
      if (!nd.close() && error.empty()) error = kcError(nd, fresh, "close");
    }
  }
  Status s = error.empty() ? fsyncPath(fresh) : Status::ioError(error);
  if (s.isOk()) s = env_->rename(fresh, t.path);
  if (!s.isOk()) {
    t.rehash_off = true;
    (void)env_->removeFile(fresh);
    if (logger_) logger_->warn(t.path + ": rebuilding with " + std::to_string(buckets) + " buckets failed, kept as is: " + s.message());
    return Status::ok();
  }
  // From here the new file holds every row; the old one is closed through its open descriptor.
  if (Status d = env_->syncDir(dir_); !d.isOk()) return fail(d);
  auto reopened = openKyoto(false, t.path, kc::BasicDB::OWRITER | kc::BasicDB::OTRYLOCK, options_, buckets);
  if (!reopened.isOk()) {
    closed_ = true;  // no table to read any more: reads report the failure, never touch a closed file
    return fail(reopened.status());
  }
  (void)t.db->close();
  t.db = std::move(reopened).value();
  t.buckets = bucketsOf(*t.db);
  t.filter = std::move(filter);
  if (logger_) {
    const auto ms = clock_ ? std::chrono::duration_cast<std::chrono::milliseconds>(clock_->monoNow() - start).count() : 0;
    logger_->info(t.path + ": rebuilt with " + std::to_string(t.buckets) + " buckets for " + std::to_string(rows) +
                  " rows in " + std::to_string(ms) + " ms");
  }
  return Status::ok();
}

Status KvEngine::checkpointLocked(bool rebuild) {
  for (auto& t : tables_) {
    if (needsCompaction(t)) LCC_RETURN_IF_ERROR(compactLocked(t));
    if (rebuild && needsRehash(t)) LCC_RETURN_IF_ERROR(rehashLocked(t));
    if (!t.db->synchronize(true)) return fail(Status::ioError(kcError(*t.db, t.path, "synchronize")));
  }
  Status s = redo_->trimUpTo(redo_->durablePosition());
  if (!s.isOk() && !s.isBusy()) return fail(s);  // Busy: the tables are synced; trimmed next time
  return Status::ok();
}

Status KvEngine::sync() {
  std::lock_guard<std::mutex> lock(write_mu_);
  LCC_RETURN_IF_ERROR(writable());
  auto c = redo_->commit();
  if (!c.isOk() && c.status().isBusy()) return c.status();  // not durable yet; the caller tries again
  if (!c.isOk()) return fail(c.status());
  {
    std::unique_lock<std::shared_mutex> wl(mu_);
    LCC_RETURN_IF_ERROR(flushOverlayLocked());
  }
  bool due = redo_->sizeBytes() >= options_.checkpoint_size;
  for (const auto& t : tables_) due = due || needsCompaction(t) || needsRehash(t);
  if (due) LCC_RETURN_IF_ERROR(checkpointLocked());
  return Status::ok();
}

Status KvEngine::close() {
  std::lock_guard<std::mutex> lock(write_mu_);
  if (closed_) return failed_;  // a second close() changes nothing
  Status result = failed_;
  if (result.isOk()) {
    auto c = redo_->commit();
    if (!c.isOk()) result = fail(c.status());
  }
  if (result.isOk()) {
    std::unique_lock<std::shared_mutex> wl(mu_);
    result = flushOverlayLocked();
  }
  if (result.isOk()) result = checkpointLocked(false);  // a rebuild waits for the next open's checkpoint
  std::unique_lock<std::shared_mutex> wl(mu_);  // no reader may be inside a file being closed
  for (auto& t : tables_) {
    if (!t.db->close() && result.isOk()) result = fail(Status::ioError(kcError(*t.db, t.path, "close")));
    if (result.isOk()) {
      Status s = fsyncPath(t.path);
      if (!s.isOk()) result = fail(s);
    }
  }
  if (result.isOk()) {
    Status s = writeMeta(true, boot_id_, false);
    if (!s.isOk()) result = fail(s);
  }
  closed_ = true;
  return result;
}

Result<bool> KvEngine::contains(std::uint8_t table, std::string_view key) {
  std::shared_lock<std::shared_mutex> rl(mu_);
  if (closed_) return writable();
  Table& t = tables_.at(table);
  if (auto it = t.overlay.find(key); it != t.overlay.end()) return it->second.has_value();
  if (filterSaysAbsent(t, key)) return false;
  const std::string k(key);
  if (t.db->check(k) >= 0) return true;
  if (t.db->error().code() == kc::BasicDB::Error::NOREC) return false;
  return Status::ioError(kcError(*t.db, t.path, "check"));
}

bool KvEngine::filterSaysAbsent(const Table& t, std::string_view key) const { return !t.filter.mayContain(key); }

Status KvEngine::buildFilter(Table& t) {
  t.filter.reset(static_cast<std::uint64_t>(options_.key_filter) * static_cast<std::uint64_t>(std::max<std::int64_t>(t.buckets, 0)));
  if (!t.filter.enabled()) return Status::ok();
  std::unique_ptr<kc::BasicDB::Cursor> cur(t.db->cursor());
  std::string k;
  if (cur->jump()) {
    while (cur->get_key(&k, true)) t.filter.add(k);
  }
  const auto code = t.db->error().code();
  if (code != kc::BasicDB::Error::NOREC && code != kc::BasicDB::Error::SUCCESS) {
    t.filter.reset(0);
    return Status::ioError(kcError(*t.db, t.path, "cursor"));
  }
  for (const auto& [key, value] : t.overlay) {
    if (value) t.filter.add(key);
  }
  return Status::ok();
}

Result<std::uint64_t> KvEngine::rowCount(std::uint8_t table) {
  std::shared_lock<std::shared_mutex> rl(mu_);
  if (closed_) return writable();
  Table& t = tables_.at(table);
  std::int64_t rows = t.db->count();
  if (rows < 0) return Status::ioError(kcError(*t.db, t.path, "count"));
  for (const auto& [key, value] : t.overlay) {
    bool in_file = false;
    if (!filterSaysAbsent(t, key)) {
      in_file = t.db->check(key) >= 0;
      if (!in_file && t.db->error().code() != kc::BasicDB::Error::NOREC) {
        return Status::ioError(kcError(*t.db, t.path, "check"));
      }
    }
    rows += (value ? 1 : 0) - (in_file ? 1 : 0);
  }
  return static_cast<std::uint64_t>(std::max<std::int64_t>(rows, 0));
}

Result<std::optional<std::string>> KvEngine::get(std::uint8_t table, std::string_view key) {
  std::shared_lock<std::shared_mutex> rl(mu_);
  if (closed_) return writable();
  Table& t = tables_.at(table);
  if (auto it = t.overlay.find(key); it != t.overlay.end()) return it->second;
  if (filterSaysAbsent(t, key)) return std::optional<std::string>();
  std::string value;
  if (t.db->get(std::string(key), &value)) return std::optional<std::string>(std::move(value));
  if (t.db->error().code() == kc::BasicDB::Error::NOREC) return std::optional<std::string>();
  return Status::ioError(kcError(*t.db, t.path, "get"));
}

Status KvEngine::scanRange(std::uint8_t table, const std::string& from, const std::string& to, const RowFn& fn) {
  std::vector<std::pair<std::string, std::string>> chunk;
  std::string resume = from;
  bool inclusive = true;
  for (;;) {
    chunk.clear();
    bool exhausted = false;
    {
      std::shared_lock<std::shared_mutex> rl(mu_);
      if (closed_) return writable();
      Table& t = tables_.at(table);
      std::unique_ptr<kc::BasicDB::Cursor> cur(t.db->cursor());
      std::string kkey, kval;
      bool kc_valid = cur->jump(resume) && cur->get(&kkey, &kval, false);
      if (kc_valid && !inclusive && kkey == resume) kc_valid = cur->get(&kkey, &kval, true) && cur->get(&kkey, &kval, false);
      if (kc_valid && !to.empty() && kkey >= to) kc_valid = false;
      auto ov = inclusive ? t.overlay.lower_bound(resume) : t.overlay.upper_bound(resume);
      auto ov_valid = [&] { return ov != t.overlay.end() && (to.empty() || ov->first < to); };
      while (chunk.size() < kScanChunk) {
        bool o = ov_valid();
        if (!kc_valid && !o) {
          exhausted = true;
          break;
        }
        if (o && (!kc_valid || ov->first <= kkey)) {
          if (kc_valid && ov->first == kkey) {
            kc_valid = cur->step() && cur->get(&kkey, &kval, false) && (to.empty() || kkey < to);
          }
          if (ov->second) chunk.emplace_back(ov->first, *ov->second);  // a removed row is skipped
          ++ov;
        } else {
          chunk.emplace_back(kkey, kval);
          kc_valid = cur->step() && cur->get(&kkey, &kval, false) && (to.empty() || kkey < to);
        }
      }
    }
    for (const auto& [k, v] : chunk) {
      if (!fn(k, v)) return Status::ok();
    }
    if (exhausted) return Status::ok();
    if (!chunk.empty()) {
      resume = chunk.back().first;
      inclusive = false;
    }
  }
}

Status KvEngine::scanAll(std::uint8_t table, const RowFn& fn) {
  if (tables_.at(table).spec.ordered) return scanRange(table, "", "", fn);
  std::unique_ptr<kc::BasicDB::Cursor> cur;
  {
    std::shared_lock<std::shared_mutex> rl(mu_);
    if (closed_) return writable();
    cur.reset(tables_[table].db->cursor());
    if (!cur->jump()) cur.reset();
  }
  std::vector<std::pair<std::string, std::string>> chunk;
  while (cur) {
    chunk.clear();
    {
      std::shared_lock<std::shared_mutex> rl(mu_);
      Table& t = tables_[table];
      std::string k, v;
      while (chunk.size() < kScanChunk) {
        if (!cur->get(&k, &v, true)) {
          cur.reset();
          break;
        }
        if (t.overlay.find(k) != t.overlay.end()) continue;  // the overlay's version comes below
        chunk.emplace_back(std::move(k), std::move(v));
      }
    }
    for (const auto& [k, v] : chunk) {
      if (!fn(k, v)) return Status::ok();
    }
  }
  chunk.clear();
  {
    std::shared_lock<std::shared_mutex> rl(mu_);
    for (const auto& [k, v] : tables_[table].overlay) {
      if (v) chunk.emplace_back(k, *v);
    }
  }
  for (const auto& [k, v] : chunk) {
    if (!fn(k, v)) return Status::ok();
  }
  return Status::ok();
}

std::uint64_t KvEngine::redoBytes() const { return redo_ ? redo_->sizeBytes() : 0; }

}  // namespace lcc::plugins::kyoto
