#include "cu/query_engine.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <set>

#include "common/response_head.h"
#include "common/content_meta.h"
#include "cu/exact_size_source.h"
#include "cu/object_content.h"
#include "proto/cu_cursor.h"

namespace lcc::cu {
namespace {

// Reads a content file as exactly `size` bytes (ExactSizeSource: if the file shrinks
// while it is read, a robot rewrote it in place, the rest is zero-filled).
class FileContentSource final : public ExactSizeSource {
 public:
  FileContentSource(std::unique_ptr<ReadableFile> file, std::uint64_t size, std::string path, Counter& bytes,
                    Env& env, std::string md5)
      : ExactSizeSource(size, path, bytes), file_(std::move(file)), path_(std::move(path)), env_(env),
        md5_(std::move(md5)) {}

  // The head the robot kept (common/response_head.h), if it belongs to these bytes: the
  // content file's attribute, else the side file.
  std::string responseHead() override {
    auto attribute = env_.getAttribute(path_, kResponseHeadAttribute);
    if (!attribute.isOk() && !attribute.status().isNotFound()) {
      spdlog::warn("cu: reading the head of {}: {}; trying the side file", path_, attribute.status().toString());
    }
    if (attribute.isOk() && attribute->has_value()) {
      std::string head = decodeResponseHead(**attribute, md5_);
      if (!head.empty()) return head;
    }
    return sideFileHead();
  }

 protected:
  Result<std::size_t> readAt(std::uint64_t offset, char* buf, std::size_t n) override {
    return file_->read(offset, n, buf);
  }

 private:
  std::string sideFileHead() {
    const std::string path = responseHeadPath(path_);
    auto f = env_.openReadable(path);
    if (!f.isOk()) return {};  // none kept: fetched before heads were, or over the bound
    auto size = (*f)->size();
    if (!size.isOk() || *size > kMaxResponseHeadFile) return {};
    std::string bytes(static_cast<std::size_t>(*size), '\0');
    auto n = (*f)->read(0, bytes.size(), bytes.data());
    if (!n.isOk()) {
      spdlog::warn("cu: reading {}: {}; exported without its response head", path, n.status().toString());
      return {};
    }
    bytes.resize(*n);
    return decodeResponseHead(bytes, md5_);
  }

  std::unique_ptr<ReadableFile> file_;
  const std::string path_;
  Env& env_;
  const std::string md5_;
};

constexpr std::size_t kScanChunk = 256;

}  // namespace

bool safeContentName(std::string_view name) {
  if (name.empty() || name.front() == '/' || name.find('\0') != std::string_view::npos) return false;
  std::size_t start = 0;
  for (;;) {
    auto slash = name.find('/', start);
    std::string_view part = name.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

EngineStats::EngineStats(Metrics& m)
    : queries(m.counter("lcc_cu_queries_total", "CU answers started")),
      rejected(m.counter("lcc_cu_queries_rejected_total", "CU queries answered with query_rejected")),
      records(m.counter("lcc_cu_records_total", "records handed to CU exporters")),
      content_bytes(m.counter("lcc_cu_content_bytes_total", "content bytes read for CU answers")),
      content_missing(m.counter("lcc_cu_content_missing_total", "stored records whose content a CU answer lacks")),
      failed(m.counter("lcc_cu_exports_failed_total", "CU answers that ended early")),
      peers_unreachable(
          m.counter("lcc_cu_peers_unreachable_total", "sources left out of a merged answer (down, refused, broken)")),
      running(m.gauge("lcc_cu_exports_running", "CU answers streaming now")) {}

QueryEngine::QueryEngine(ContentStore& store, std::vector<Exporter*> exporters, Env& env, EngineOptions options,
                         Metrics* metrics)
    : store_(store),
      exporters_(std::move(exporters)),
      env_(env),
      options_(std::move(options)),
      own_metrics_(metrics ? nullptr : std::make_unique<Metrics>()),
      stats_(metrics ? *metrics : *own_metrics_) {}

Exporter* QueryEngine::exporterFor(std::string_view format) const {
  for (Exporter* e : exporters_) {
    if (e->format() == format) return e;
  }
  return nullptr;
}

std::vector<std::string> QueryEngine::formats() const {
  std::vector<std::string> out;
  for (Exporter* e : exporters_) out.emplace_back(e->format());
  return out;
}

std::unique_ptr<ContentSource> QueryEngine::openContent(const ContentRecord& r) {
  std::unique_ptr<RemoteContentReader> remote;
  ContentMissing why = ContentMissing::kNone;
  return openContent(r, &remote, &why);
}

ContentLocation QueryEngine::locate(const ContentRecord& r) const {
  using Kind = ContentLocation::Kind;
  if (r.deleted) return {Kind::kMissing, "", ContentMissing::kNone};
  std::optional<std::string> url;
  if (r.machine != options_.machine_id && !options_.s3.enabled()) {
    // Another machine's BOT-M holds it: read from that machine's HTTP port
    // (GET <url>/content/<file>) when someone said where that is.
    url = options_.locator ? options_.locator->urlOf(r.machine) : std::nullopt;
    if (!url) return {Kind::kMissing, "", ContentMissing::kOtherMachine};
  }
  if (!safeContentName(r.filename)) return {Kind::kMissing, "", ContentMissing::kUnreadable};
  if (options_.s3.enabled()) return {Kind::kObject, options_.s3.objectKey(r.machine, r.filename)};
  if (url) return {Kind::kRemote, std::move(*url)};
  return {Kind::kLocal, options_.content_dir + "/" + r.filename};
}

std::unique_ptr<ContentSource> QueryEngine::openContent(const ContentRecord& r,
                                                        std::unique_ptr<RemoteContentReader>* remote,
                                                        ContentMissing* why) {
  *why = ContentMissing::kNone;
  auto missing = [&](ContentMissing reason) -> std::unique_ptr<ContentSource> {
    stats_.content_missing.inc();
    *why = reason;
    return nullptr;
  };
  const ContentLocation at = locate(r);
  switch (at.kind) {
    case ContentLocation::Kind::kMissing:
      if (at.why == ContentMissing::kNone) return nullptr;  // a tombstone has no content
      if (at.why == ContentMissing::kUnreadable) {
        spdlog::warn("cu: record {} has an unsafe content file name '{}'; content omitted", r.key.url, r.filename);
      }
      return missing(at.why);
    case ContentLocation::Kind::kRemote: {
      RemoteContentReader& reader = remoteReader(remote);
      if (reader.isDown(at.where)) return missing(ContentMissing::kUnreadable);  // warned once already
      auto src = reader.open(at.where, r.filename, r.size, r.machine, r.md5);
      if (!src.isOk()) {
        if (!reader.isDown(at.where) || src.status().code() != StatusCode::kIOError) {
          spdlog::warn("cu: content of {} on machine {}: {}; content omitted", r.key.url, r.machine,
                       src.status().message());
        }
        return missing(ContentMissing::kUnreadable);
      }
      return std::move(src).value();
    }
    case ContentLocation::Kind::kObject: {
      auto src = openObjectContent(options_.s3, at.where, r, stats_.content_bytes);
      if (!src.isOk()) {
        spdlog::warn("cu: content of {}: {}; content omitted", r.key.url, src.status().message());
        return missing(ContentMissing::kUnreadable);
      }
      return std::move(src).value();
    }
    case ContentLocation::Kind::kLocal:
      break;
  }
  const std::string& path = at.where;
  auto file = env_.openReadable(path);
  if (!file.isOk()) {
    spdlog::warn("cu: content of {}: {}; content omitted", r.key.url, file.status().toString());
    return missing(ContentMissing::kUnreadable);
  }
  auto size = (*file)->size();
  if (!size.isOk() || *size != r.size) {
    // The file was replaced (a newer fetch, or the name was reused) since the record
    // was read: its bytes are not this record's.
    spdlog::warn("cu: content file {} has {} bytes, its record {} says {}; content omitted", path,
                 size.isOk() ? std::to_string(*size) : size.status().toString(), r.key.url, r.size);
    return missing(ContentMissing::kUnreadable);
  }
  return std::make_unique<FileContentSource>(std::move(file).value(), r.size, path, stats_.content_bytes, env_, r.md5);
}

RemoteContentReader& QueryEngine::remoteReader(std::unique_ptr<RemoteContentReader>* remote) {
  if (!*remote) *remote = std::make_unique<RemoteContentReader>(options_.remote, &stats_.content_bytes);
  return **remote;
}

Result<std::optional<std::string>> QueryEngine::storeId() { return readStoreId(store_); }

Result<ContentRecord> QueryEngine::recordAt(ChangeSeq seq, std::string_view encoded_key) {
  if (seq == 0) return Status::notFound("no record has seq 0");
  const auto gone = [seq] { return Status::notFound("no record has seq " + std::to_string(seq) + " now"); };
  if (!encoded_key.empty()) {
    auto got = store_.get(encoded_key);
    if (!got.isOk()) return got.status().withContext("reading the LCC DB");
    if (!*got || (*got)->seq != seq) return gone();
    return std::move(**got);
  }
  ContentFilter any;
  any.include_deleted = true;
  std::optional<ContentRecord> first;
  Status s = store_.scanSince(seq - 1, any, [&](const ContentRecord& r) {
    first = r;
    return false;
  });
  if (!s.isOk()) return s.withContext("reading the LCC DB");
  if (!first || first->seq != seq) return gone();
  return std::move(*first);
}

Result<proto::CuQuery> QueryEngine::withOwnPart(const proto::CuQuery& asked) {
  if (!asked.since_cursor) return asked;
  auto cursor = proto::decodeCuCursor(*asked.since_cursor);
  if (!cursor.isOk()) return cursor.status();  // validated before: not reached
  LCC_ASSIGN_OR_RETURN(auto id, storeId());
  proto::CuQuery q = asked;
  q.since_cursor.reset();
  q.since_seq = id ? cursor->seqOf(*id) : 0;
  return q;
}

Result<std::unique_ptr<PreparedExport>> QueryEngine::prepare(const proto::CuQuery& asked) {
  if (auto e = proto::validateCuQuery(asked)) {
    stats_.rejected.inc();
    return Status::invalidArgument(e->message);
  }
  LCC_ASSIGN_OR_RETURN(const proto::CuQuery q, withOwnPart(asked));
  Exporter* exporter = exporterFor(q.format);
  if (exporter == nullptr) {
    stats_.rejected.inc();
    std::string known;
    for (const auto& f : formats()) known += (known.empty() ? "" : ", ") + f;
    return Status::invalidArgument("unknown format '" + q.format + "' (known: " + known + ")");
  }
  ContentFilter filter;
  filter.providers = q.providers;
  filter.mime_patterns = q.mimes;
  filter.url_prefixes = q.prefixes;
  filter.include_deleted = q.deleted;
  if (q.since_time) filter.stored_since = fromUnixMillis(*q.since_time * 1000);
  const ChangeSeq after = q.since_seq.value_or(0);
  LCC_RETURN_IF_ERROR(checkPurgeHorizon(q));

  auto max_seq = store_.maxSeq();
  if (!max_seq.isOk()) return max_seq.status().withContext("reading the LCC DB");
  const ChangeSeq top = *max_seq;
  std::optional<std::uint64_t> limit = q.limit;
  if (!limit && options_.default_limit > 0) limit = options_.default_limit;

  // Counting pass: matching records with after < seq <= top.
  std::uint64_t count = 0;
  ChangeSeq cut_seq = 0;
  bool truncated = false;
  std::set<ProviderId> pids;
  Status s = store_.scanSince(after, filter, [&](const ContentRecord& r) {
    if (r.seq > top) return false;
    if (limit && count == *limit) {
      truncated = true;  // one more match exists within this answer's range
      return false;
    }
    ++count;
    cut_seq = r.seq;
    pids.insert(r.key.pid);
    return true;
  });
  if (!s.isOk()) return s.withContext("reading the LCC DB");
  // Again after the counting pass: ageing may have purged tombstones of this range meanwhile.
  LCC_RETURN_IF_ERROR(checkPurgeHorizon(q));

  ExportHeader header;
  header.count = count;
  header.last_seq = truncated ? (count == 0 ? after : cut_seq) : top;
  header.with_content = q.content || exporter->alwaysContent();
  header.temp_dir = options_.temp_dir;

  // URL order (better compression) when the format asks for it and scanning whole
  // providers costs at most `factor` times the answer.
  std::vector<ProviderId> url_pids;
  const auto& fmts = options_.url_order_formats;
  if (count > 0 && options_.url_order_scan_factor > 0 &&
      std::find(fmts.begin(), fmts.end(), q.format) != fmts.end()) {
    auto total = store_.count();
    if (total.isOk() && *total <= options_.url_order_scan_factor * count) url_pids.assign(pids.begin(), pids.end());
  }
  return std::make_unique<PreparedExport>(*this, *exporter, q, std::move(filter), header, after, std::move(url_pids));
}

Status QueryEngine::checkPurgeHorizon(const proto::CuQuery& q) {
  // Only a query that asks for removals can miss them; a full export (no since, or 0)
  // holds every live record and needs none.
  if (!q.deleted || !q.since_seq || *q.since_seq == 0) return Status::ok();
  LCC_ASSIGN_OR_RETURN(auto horizon, readPurgedSeq(store_));
  if (!horizon) return Status::ok();
  const ChangeSeq purged = *horizon;
  if (*q.since_seq >= purged) return Status::ok();
  stats_.rejected.inc();
  return Status::notFound("changes before seq " + std::to_string(purged + 1) + " were purged; take a full export");
}

QueryRefusal refusalFor(const Status& s) {
  if (s.code() == StatusCode::kInvalidArgument) return {ErrorCode::kMalformed, 400};
  if (s.isNotFound()) return {ErrorCode::kChangesPurged, 410};
  return {ErrorCode::kInternal, 500};
}

Status QueryEngine::run(const proto::CuQuery& query, ByteSink& sink) {
  LCC_ASSIGN_OR_RETURN(auto prepared, prepare(query));
  return prepared->stream(sink);
}

PreparedExport::PreparedExport(QueryEngine& engine, Exporter& exporter, proto::CuQuery query, ContentFilter filter,
                               ExportHeader header, ChangeSeq after, std::vector<ProviderId> url_order_pids)
    : engine_(engine),
      exporter_(exporter),
      query_(std::move(query)),
      filter_(std::move(filter)),
      header_(std::move(header)),
      after_(after),
      url_order_pids_(std::move(url_order_pids)) {}

PreparedExport::~PreparedExport() = default;

Status PreparedExport::offer(ExportStream& out, const ContentRecord& r) {
  const std::size_t depth = engine_.options().remote.remote_pipeline;
  if (!header_.with_content || depth <= 1) return emit(out, r);  // nothing to ask ahead for
  // Records of this machine go straight out until one of another machine comes (then
  // everything after it keeps its place in the window).
  const auto remote = ContentLocation::Kind::kRemote;
  if (window_.empty() && engine_.locate(r).kind != remote) return emit(out, r);
  window_.push_back(r);
  // Ask for the content of every record in the window not asked for yet, in order.
  for (; window_asked_ < window_.size(); ++window_asked_) {
    const ContentRecord& w = window_[window_asked_];
    if (const ContentLocation at = engine_.locate(w); at.kind == remote) {
      RemoteContentReader& reader = engine_.remoteReader(&remote_);
      if (!reader.isDown(at.where)) reader.prefetch(at.where, w.filename);
    }
  }
  if (window_.size() < depth) return Status::ok();
  ContentRecord front = std::move(window_.front());
  window_.pop_front();
  --window_asked_;
  return emit(out, front);
}

Status PreparedExport::drain(ExportStream& out) {
  while (!window_.empty()) {
    ContentRecord front = std::move(window_.front());
    window_.pop_front();
    window_asked_ = window_asked_ > 0 ? window_asked_ - 1 : 0;
    LCC_RETURN_IF_ERROR(emit(out, front));
  }
  return Status::ok();
}

Status PreparedExport::emit(ExportStream& out, const ContentRecord& r) {
  std::unique_ptr<ContentSource> content;
  ContentMissing why = ContentMissing::kNone;
  const EngineOptions& opts = engine_.options();
  if (header_.with_content && !r.deleted) content = engine_.openContent(r, &remote_, &why);
  if (why == ContentMissing::kUnreadable && r.machine != opts.machine_id) {
    // The exporters spell missing="other-machine" for a record of another machine and
    // "unreadable" for one of this machine (lcc/exporter.h carries no reason): this
    // one was located but could not be read, so it is shown as this machine's.
    ContentRecord shown = r;
    shown.machine = opts.machine_id;
    LCC_RETURN_IF_ERROR(out.add(shown, nullptr));
  } else {
    LCC_RETURN_IF_ERROR(out.add(r, content.get()));
  }
  ++sent_;
  engine_.stats().records.inc();
  return Status::ok();
}

Status PreparedExport::stream(ByteSink& sink) {
  EngineStats& stats = engine_.stats();
  stats.queries.inc();
  stats.running.add(1);
  struct Running {
    Gauge& g;
    ~Running() { g.add(-1); }
  } running{stats.running};

  auto begun = exporter_.begin(sink, header_);
  if (!begun.isOk()) {
    stats.failed.inc();
    return begun.status();
  }
  ExportStream& out = **begun;
  const ChangeSeq last = header_.last_seq;
  const std::uint64_t count = header_.count;
  Status failure;  // the first error, from the exporter (sink) or the store

  if (!url_order_pids_.empty()) {
    for (ProviderId pid : url_order_pids_) {
      Status s = engine_.store().scanProvider(pid, [&](const ContentRecord& r) {
        if (taken() >= count) return false;
        if (r.seq <= after_ || r.seq > last || !filter_.matches(r)) return true;
        failure = offer(out, r);
        return failure.isOk();
      });
      if (failure.isOk() && !s.isOk()) failure = s.withContext("reading the LCC DB");
      if (!failure.isOk() || taken() >= count) break;
    }
  } else {
    // Seq order, in chunks: no exporter (and so no client) runs inside a store scan.
    ChangeSeq from = after_;
    std::vector<ContentRecord> chunk;
    bool more = count > 0;
    while (more && failure.isOk()) {
      chunk.clear();
      bool reached_end = true;
      Status s = engine_.store().scanSince(from, filter_, [&](const ContentRecord& r) {
        if (r.seq > last) return false;
        chunk.push_back(r);
        if (chunk.size() >= kScanChunk) {
          reached_end = false;
          return false;
        }
        return true;
      });
      if (!s.isOk()) {
        failure = s.withContext("reading the LCC DB");
        break;
      }
      for (const auto& r : chunk) {
        if (taken() >= count) break;
        failure = offer(out, r);
        if (!failure.isOk()) break;
        from = r.seq;
      }
      more = !reached_end && taken() < count;
    }
  }
  if (failure.isOk()) failure = drain(out);
  if (failure.isOk()) failure = out.finish();
  if (!failure.isOk()) stats.failed.inc();
  return failure;
}

}  // namespace lcc::cu
