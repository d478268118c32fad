#include "cu/merged_export.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "cu/query_engine.h"
#include "http/url_codec.h"

namespace lcc::cu {
namespace {

constexpr std::size_t kMaxKeyInPath = 8 * 1024;      // the request line stays under http.max_header

std::string joined(const std::vector<std::string>& parts) {
  std::string all;
  for (const auto& u : parts) all += (all.empty() ? "" : "; ") + u;
  return all;
}

}  // namespace

std::string recordContentFile(const std::string& source, const ContentRecord& r) {
  std::string file = source + "/" + std::to_string(r.seq);
  std::string key = http::percentEncode(encodeUrlKey(r.key));
  if (key.size() <= kMaxKeyInPath) file += "/" + key;
  return file;
}

MergedExport::MergedExport(MergedResult result, Exporter& exporter, bool content_asked, QueryEngine* local,
                           MergedExportOptions options)
    : result_(std::move(result)),
      exporter_(exporter),
      local_(local),
      options_(std::move(options)),
      reader_(options_.remote, options_.content_bytes) {
  header_.count = result_.answer.records.size();
  header_.with_content = content_asked || exporter_.alwaysContent();
  header_.temp_dir = options_.temp_dir;
  header_.cursor = result_.token;
  header_.unreachable = joined(result_.answer.unreachable);
  for (const auto& [id, where] : result_.answer.sources) {
    if (where != kThisNode) peer_urls_[id] = where;
  }
}

MergedExport::~MergedExport() = default;

const std::string* MergedExport::peerUrlOf(const std::string& source) const {
  auto it = peer_urls_.find(source);
  return it == peer_urls_.end() ? nullptr : &it->second;
}

void MergedExport::missing(const ContentRecord& r, const std::string& why) {
  spdlog::warn("cu: merged answer: content of {} (source {}, seq {}): {}; content omitted", r.key.url, r.source, r.seq,
               why);
  if (options_.content_missing) options_.content_missing->inc();
}

void MergedExport::prefetch(std::size_t i) {
  const auto& recs = result_.answer.records;
  const std::size_t depth = std::max<std::size_t>(options_.remote.remote_pipeline, 1);
  const std::size_t until = std::min(recs.size(), i + depth);
  for (; prefetched_ < until; ++prefetched_) {
    const ContentRecord& r = recs[prefetched_].record;
    const std::string* url = peerUrlOf(recs[prefetched_].source);
    if (url && wantsContent(r)) reader_.prefetch(*url + "/cu", recordContentFile(recs[prefetched_].source, r));
  }
}

std::unique_ptr<ContentSource> MergedExport::openPeer(const ContentRecord& r, const std::string& url) {
  auto src = reader_.open(url + "/cu", recordContentFile(r.source, r), r.size, "", r.md5);
  if (src.isOk()) return std::move(src).value();
  // A peer taken as down was warned about once (RemoteContentReader).
  if (!reader_.isDown(url + "/cu") || src.status().code() != StatusCode::kIOError) missing(r, src.status().message());
  else if (options_.content_missing) options_.content_missing->inc();
  return nullptr;
}

std::unique_ptr<ContentSource> MergedExport::openLocal(const ContentRecord& r, ContentRecord* shown) {
  auto full = local_->recordAt(r.seq, encodeUrlKey(r.key));
  if (!full.isOk()) {
    missing(r, full.status().message());
    return nullptr;
  }
  if (full->deleted || full->size != r.size || full->md5 != r.md5) {
    missing(r, "the record changed since the answer was listed");
    return nullptr;
  }
  ContentMissing why = ContentMissing::kNone;
  auto src = local_->openContent(*full, &local_remote_, &why);  // warns and counts itself
  if (!src && why == ContentMissing::kOtherMachine) shown->machine = full->machine;  // spelled other-machine
  return src;
}

std::unique_ptr<ContentSource> MergedExport::open(std::size_t i, ContentRecord* shown) {
  const MergedRecord& m = result_.answer.records[i];
  *shown = m.record;
  shown->source = m.source;
  shown->machine = options_.machine_id;  // no content: spelled unreadable (lcc/exporter.h has no reason)
  if (!wantsContent(m.record)) return nullptr;
  prefetch(i);
  if (const std::string* url = peerUrlOf(m.source)) return openPeer(*shown, *url);
  if (local_ != nullptr) return openLocal(*shown, shown);
  missing(*shown, "no LCC answered for its source");
  return nullptr;
}

Status MergedExport::stream(ByteSink& sink) {
  LCC_ASSIGN_OR_RETURN(auto out, exporter_.begin(sink, header_));
  for (std::size_t i = 0; i < result_.answer.records.size(); ++i) {
    ContentRecord shown;
    std::unique_ptr<ContentSource> content = open(i, &shown);
    LCC_RETURN_IF_ERROR(out->add(shown, content.get()));
  }
  return out->finish();
}

}  // namespace lcc::cu
