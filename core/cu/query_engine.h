// query_engine.h — the CU query engine: a query over the LCC DB (ContentStore), handed
// to an exporter record by record with the content read from this machine's files or,
// for records of other machines, over HTTP from theirs (remote_content.h).
//
// A query runs in two passes (README.md has the full semantics):
//  1. prepare(): validation, then a counting pass up to the store's maxSeq() taken at
//     the start, which fixes ExportHeader.count and last_seq before a byte is sent.
//  2. PreparedExport::stream(): the records of the counting pass, to the exporter.
// last_seq is the store's maxSeq() at prepare() unless the limit cut the answer; then
// it is the seq of the last record in the answer. Passing it back as `since seq`
// never misses and never repeats a change: every record in the answer has
// since < seq <= last_seq, and a record changed later gets a new seq > last_seq.
// THREADS: QueryEngine is thread-safe (queries run at once on worker threads); a
// PreparedExport is used by one thread. Both block on the store and on the sink: run
// them off the io threads.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/content_locator.h"
#include "common/metrics.h"
#include "cu/remote_content.h"
#include "lcc/content_store.h"
#include "lcc/env.h"
#include "lcc/exporter.h"
#include "proto/cu_query.h"
#include "s3/s3_options.h"

namespace lcc::cu {

// Members with a config key carry no default: fromConfig() (cu_options.cc) reads the
// schema's. Tests start from EngineOptions::fromConfig(Config::defaults(), dir, id).
struct EngineOptions {
  std::string machine_id;                  // node.machine_id: this machine's files are read directly
  std::string content_dir;                 // botm.content_dir or <data_dir>/content
  std::string temp_dir;                    // cu.temp_dir or <data_dir>/tmp: handed to exporters (ExportHeader.temp_dir)
  std::uint64_t default_limit = 0;         // cu.default_limit (0: no limit)
  std::vector<std::string> url_order_formats;  // cu.url_order_formats
  std::uint64_t url_order_scan_factor = 0;     // cu.url_order_scan_factor
  RemoteOptions remote;                    // cu.remote_connect_timeout, cu.remote_read_timeout, cu.remote_pipeline
  // No config key: where other machines' content is read (null: nowhere; such records
  // are missing="other-machine"). Static cu.content_urls win over discovered entries.
  const ContentLocator* locator = nullptr;
  // s3.*: when enabled, content of every machine is read from the object store (the
  // object key of (machine, file)), not from files (issue 31 §1). Set by the cu role.
  s3::S3Options s3;

  // `data_dir` (absolute) holds content/ and tmp/ when their keys are empty.
  static EngineOptions fromConfig(const Config& config, const std::string& data_dir, const std::string& machine_id);
};

// Why a record's content is not given (the exporters spell it in `missing=`).
enum class ContentMissing : std::uint8_t {
  kNone,
  kOtherMachine,  // another machine, and nobody said where its content is read
  kUnreadable,    // missing file, unsafe name, other size, remote 404/unreachable/timeout
};

// Where a record's content is: the one decision of "local or remote" (QueryEngine::locate).
struct ContentLocation {
  enum class Kind : std::uint8_t { kLocal, kRemote, kObject, kMissing } kind = Kind::kMissing;
  std::string where;  // kLocal: the file's path; kRemote: the machine's content URL; kObject: the object key
  ContentMissing why = ContentMissing::kNone;  // kMissing: the reason (kNone for a tombstone)
};

// Counters in /metrics (and /status): lcc_cu_*.
struct EngineStats {
  explicit EngineStats(Metrics& m);
  Counter& queries;          // answers started
  Counter& rejected;         // query_rejected answers
  Counter& records;          // records handed to exporters
  Counter& content_bytes;    // content bytes read
  Counter& content_missing;  // stored records whose content could not be given
  Counter& failed;           // answers that ended early (client gone, store error)
  Counter& peers_unreachable;  // sources left out of a merged answer (cu.peers)
  Gauge& running;            // answers streaming now
};

class QueryEngine;

class PreparedExport {
 public:
  PreparedExport(QueryEngine& engine, Exporter& exporter, proto::CuQuery query, ContentFilter filter,
                 ExportHeader header, ChangeSeq after, std::vector<ProviderId> url_order_pids);
  ~PreparedExport();

  const ExportHeader& header() const { return header_; }
  Exporter& exporter() const { return exporter_; }
  // True when records come in URL order (providers ascending) rather than seq order.
  bool urlOrder() const { return !url_order_pids_.empty(); }
  // Runs the streaming pass into `sink`. At most header().count records; fewer when
  // records were replaced or erased since prepare() (they come back, with a new seq,
  // in the next answer). A failed sink write ends it with that error.
  Status stream(ByteSink& sink);
  std::uint64_t recordsSent() const { return sent_; }
  // The since seq the answer starts after (the query's, or this store's part of its cursor).
  ChangeSeq since() const { return after_; }

 private:
  // Records go through a small window so that the requests for other machines' content
  // go out ahead of the records that need them (RemoteContentReader::prefetch).
  // offer() takes the next record, emits the oldest once the window is full; drain()
  // emits the rest.
  Status offer(ExportStream& out, const ContentRecord& r);
  Status drain(ExportStream& out);
  Status emit(ExportStream& out, const ContentRecord& r);
  std::uint64_t taken() const { return sent_ + window_.size(); }

  QueryEngine& engine_;
  Exporter& exporter_;
  std::unique_ptr<RemoteContentReader> remote_;  // made at the first record of another machine
  const proto::CuQuery query_;
  const ContentFilter filter_;
  const ExportHeader header_;
  const ChangeSeq after_;
  const std::vector<ProviderId> url_order_pids_;
  std::uint64_t sent_ = 0;
  std::deque<ContentRecord> window_;  // offered, not yet emitted, in order
  std::size_t window_asked_ = 0;      // the first window_asked_ of them were prefetched
};

class QueryEngine {
 public:
  // `metrics` may be null (the engine then keeps its own).
  QueryEngine(ContentStore& store, std::vector<Exporter*> exporters, Env& env, EngineOptions options,
              Metrics* metrics = nullptr);

  // A bad query (unknown format, bad values) is InvalidArgument with a message for
  // <reason code="100">; `since seq` below the purge horizon with `deleted` is
  // NotFound ("changes before seq N were purged; take a full export", code 150); a
  // store failure is another code (answer 140). refusalFor() maps them.
  // A `since` cursor (proto/cu_cursor.h) is read as this store's part of it.
  Result<std::unique_ptr<PreparedExport>> prepare(const proto::CuQuery& query);
  // prepare() and stream() in one.
  Status run(const proto::CuQuery& query, ByteSink& sink);

  Exporter* exporterFor(std::string_view format) const;
  std::vector<std::string> formats() const;
  const EngineOptions& options() const { return options_; }
  EngineStats& stats() { return stats_; }
  ContentStore& store() { return store_; }
  // The LCC DB's identity (lcc.store_id, common/content_meta.h); nullopt until the QM wrote it.
  Result<std::optional<std::string>> storeId();
  // The record the store holds under change sequence `seq` (a stored record or a
  // removal); NotFound when no record has that seq any more (replaced or removed since:
  // it has a newer one). With the record's `encoded_key` (encodeUrlKey) it is one point
  // read (get); without, the first step of scanSince() (a store may read a chunk of
  // its seq index for it).
  Result<ContentRecord> recordAt(ChangeSeq seq, std::string_view encoded_key = {});

  // The content of a stored record, or null (another machine whose URL is unknown, a
  // missing or unsafe file name, a file or answer whose size is not the record's,
  // another machine unreachable). Its size() is the record's size and read() returns
  // exactly that many bytes.
  std::unique_ptr<ContentSource> openContent(const ContentRecord& r);
  // The same, reading other machines' content through `*remote` (one per export, so
  // connections are kept from record to record; made at the first record of another
  // machine whose URL is known); `why` says why there is no content.
  std::unique_ptr<ContentSource> openContent(const ContentRecord& r, std::unique_ptr<RemoteContentReader>* remote,
                                             ContentMissing* why);
  // Where the content of `r` is: a file of this machine, another machine's content URL
  // (cu.content_urls, botm.content_url), or missing with the reason (a tombstone, an
  // unsafe file name, another machine nobody said where to read). Reads nothing.
  ContentLocation locate(const ContentRecord& r) const;
  // The export's reader of other machines' content (made at first use).
  RemoteContentReader& remoteReader(std::unique_ptr<RemoteContentReader>* remote);

 private:
  // `asked` with a since cursor turned into this store's since seq.
  Result<proto::CuQuery> withOwnPart(const proto::CuQuery& asked);
  // NotFound when the query asks for removals since a seq whose tombstones may be purged.
  Status checkPurgeHorizon(const proto::CuQuery& q);

  ContentStore& store_;
  const std::vector<Exporter*> exporters_;
  Env& env_;
  const EngineOptions options_;
  std::unique_ptr<Metrics> own_metrics_;
  EngineStats stats_;
};

// How a failed prepare() is answered: the <reason code> and the HTTP status of /cu/query.
struct QueryRefusal {
  ErrorCode code = ErrorCode::kInternal;
  int http_status = 500;
};
QueryRefusal refusalFor(const Status& prepare_error);

// Content file names are relative to the content folder: no leading '/', no empty,
// `.` or `..` component, no NUL.
bool safeContentName(std::string_view filename);

}  // namespace lcc::cu
