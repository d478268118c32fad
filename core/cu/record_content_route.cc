// GET /cu/content/<store id>/<seq>[/<key>]: the content of the record this store holds
// under that seq, for a node that merges this LCC's answers with others'
// (merged_export.h). <key> is the record's encodeUrlKey(), percent-encoded: a point read.
#include <spdlog/spdlog.h>

#include <charconv>
#include <optional>

#include "common/response_head.h"
#include "cu/cu_http.h"
#include "http/url_codec.h"
#include "lcc/support/cu_xml_format.h"

namespace lcc::cu {
namespace {

constexpr std::string_view kPrefix = "/cu/content/";
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::uint64_t kWholeBodyMax = 64 * 1024;  // larger records are streamed

// The open content and what reads it (another machine's content keeps its connection).
struct HeldContent {
  std::unique_ptr<RemoteContentReader> remote;
  std::unique_ptr<ContentSource> source;
};

std::string headHeader(ContentSource& src, const std::string& md5) {
  const std::string head = src.responseHead();
  if (head.empty()) return {};
  const std::string stored = encodeResponseHead(md5, head);
  if (stored.size() > kMaxHeadHeaderFile) return {};
  std::string out;
  proto::Base64Encoder enc;
  enc.update(stored.data(), stored.size(), out);
  enc.finish(out);
  return out;
}

http::Response stream(const ContentRecord& rec, const std::string& source, std::shared_ptr<HeldContent> held) {
  http::Response r;
  r.status = 200;
  r.content_type = "application/octet-stream";
  r.headers.emplace_back("X-LCC-Source", source);
  r.headers.emplace_back("X-LCC-Size", std::to_string(rec.size));
  r.headers.emplace_back("X-LCC-MD5", rec.md5);
  r.headers.emplace_back("Cache-Control", "no-store");
  if (std::string head = headHeader(*held->source, rec.md5); !head.empty()) {
    r.headers.emplace_back(std::string(kResponseHeadHeader), std::move(head));
  }
  // Exactly the record's size (the source zero-fills what it cannot read, warned), so
  // Content-Length is true and the connection stays reusable. A small record goes as
  // one whole body: no hop to the stream thread (most web pages; as GET /content/).
  if (rec.size <= kWholeBodyMax) {
    r.body.resize(static_cast<std::size_t>(rec.size));
    std::size_t off = 0;
    while (off < r.body.size()) {
      auto n = held->source->read(r.body.data() + off, r.body.size() - off);
      if (!n.isOk() || *n == 0) return http::Response::text(503, "content could not be read; try again\n");
      off += *n;
    }
    return r;
  }
  r.stream_length = rec.size;
  r.stream = [held](ByteSink& sink) -> Status {
    std::string buf(kReadChunk, '\0');
    for (;;) {
      LCC_ASSIGN_OR_RETURN(std::size_t n, held->source->read(buf.data(), buf.size()));
      if (n == 0) return Status::ok();
      LCC_RETURN_IF_ERROR(sink.write(std::string_view(buf.data(), n)));
    }
  };
  return r;
}

}  // namespace

http::Response handleRecordContent(QueryEngine& engine, const http::Request& req) {
  // <store id>/<seq>[/<encoded key, percent-encoded>]
  std::string_view rest = std::string_view(req.path).substr(std::min(req.path.size(), kPrefix.size()));
  const std::size_t slash = rest.find('/');
  const std::string source(rest.substr(0, slash));
  std::string_view seq_text = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
  std::optional<std::string> key = std::string();
  if (const std::size_t k = seq_text.find('/'); k != std::string_view::npos) {
    key = http::percentDecode(seq_text.substr(k + 1), false);
    seq_text = seq_text.substr(0, k);
  }
  ChangeSeq seq = 0;
  auto [end, ec] = std::from_chars(seq_text.data(), seq_text.data() + seq_text.size(), seq);
  if (seq_text.empty() || ec != std::errc() || end != seq_text.data() + seq_text.size() || !key) {
    return http::Response::text(404, "not a record: /cu/content/<store id>/<seq>[/<key>]\n");
  }
  auto id = engine.storeId();
  if (!id.isOk()) return http::Response::text(500, id.status().message() + "\n");
  if (!*id || **id != source) return http::Response::text(404, "not this LCC's store\n");
  auto rec = engine.recordAt(seq, *key);
  if (!rec.isOk()) {
    if (rec.status().isNotFound()) return http::Response::text(404, rec.status().message() + "\n");
    spdlog::error("cu: {} from {}: {}", req.path, req.remote_ip, rec.status().toString());
    return http::Response::text(500, rec.status().message() + "\n");
  }
  if (rec->deleted) return http::Response::text(404, "a removal has no content\n");
  auto held = std::make_shared<HeldContent>();
  ContentMissing why = ContentMissing::kNone;
  held->source = engine.openContent(*rec, &held->remote, &why);  // warns and counts itself
  if (!held->source) {
    return http::Response::text(404, why == ContentMissing::kOtherMachine ? "content on another machine, not known\n"
                                                                           : "content unreadable\n");
  }
  return stream(*rec, source, std::move(held));
}

}  // namespace lcc::cu
