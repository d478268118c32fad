// GET /cu/content/<store id>/<seq>: the content of the record this store holds under
// that seq, for a node that merges this LCC's answers with others' (merged_export.h).
#include <spdlog/spdlog.h>

#include <charconv>

#include "common/response_head.h"
#include "cu/cu_http.h"
#include "lcc/support/cu_xml_format.h"

namespace lcc::cu {
namespace {

constexpr std::string_view kPrefix = "/cu/content/";
constexpr std::size_t kReadChunk = 64 * 1024;

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
  // Content-Length is true and the connection stays reusable.
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
  std::string_view rest = std::string_view(req.path).substr(std::min(req.path.size(), kPrefix.size()));
  const std::size_t slash = rest.find('/');
  ChangeSeq seq = 0;
  const std::string_view seq_text = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
  auto [end, ec] = std::from_chars(seq_text.data(), seq_text.data() + seq_text.size(), seq);
  if (seq_text.empty() || ec != std::errc() || end != seq_text.data() + seq_text.size()) {
    return http::Response::text(404, "not a record: /cu/content/<store id>/<seq>\n");
  }
  const std::string source(rest.substr(0, slash));
  auto id = engine.storeId();
  if (!id.isOk()) return http::Response::text(500, id.status().message() + "\n");
  if (!*id || **id != source) return http::Response::text(404, "not this LCC's store\n");
  auto rec = engine.recordAt(seq);
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
