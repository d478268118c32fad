#include "proto/uns_qm_frames.h"

#include <algorithm>
#include <limits>

#include "common/md5.h"
#include "lcc/support/time_util.h"
#include "proto/xml_reader.h"

namespace lcc::proto {

namespace {

constexpr std::size_t kUrlBatchBytes = 256 * 1024;  // a batch frame ends past this (as the links' batches)
constexpr std::size_t kMinUrlBytes = 10;            // the smallest URL record: ten one-byte fields
constexpr std::size_t kMaxReasonBytes = 1024;       // of a refusal, as the XML reader keeps it

// A URL: op (0 update, 1 delete, 2 check), c, m, st, b (a flag, then the value: absent
// means "same as c"), f, mt (a flag, then zigzag seconds), sz (a flag, then the
// number), md5, tod. key.pid is the set's and is not written.
void putUrl(FrameWriter& w, const UrlNotice& n) {
  w.u64(static_cast<std::uint64_t>(n.op));
  w.str(n.key.url);
  w.str(n.key.mime);
  w.str(n.view_tag);
  w.boolean(n.browse.has_value());
  if (n.browse) w.str(*n.browse);
  w.str(n.fetch);
  w.boolean(n.mtime.has_value());
  if (n.mtime) w.i64(*n.mtime);
  w.boolean(n.size.has_value());
  if (n.size) w.u64(*n.size);
  w.str(n.md5);
  w.str(n.tod);
}

// A string field of a URL, refused where the XML form could not have carried it.
std::string readText(FieldReader& r) {
  std::string v = r.str();
  if (r.ok() && !xmlCanCarry(v)) r.bad("url: a value XML cannot carry (a control character or bad UTF-8)");
  return v;
}

UrlNotice readUrl(FieldReader& r, ProviderId pid) {
  UrlNotice n;
  n.key.pid = pid;
  const std::uint64_t op = r.u64();
  if (op > kUrlOpMax) r.bad("url: an op that does not exist");
  n.op = static_cast<UrlOp>(std::min<std::uint64_t>(op, kUrlOpMax));
  n.key.url = readText(r);
  n.key.mime = readText(r);
  if (r.ok() && n.key.url.empty()) r.bad("url without c");
  if (r.ok() && n.key.mime.empty()) r.bad("url without m");
  n.view_tag = readText(r);
  if (r.boolean()) n.browse = readText(r);
  n.fetch = readText(r);
  if (r.boolean()) {
    n.mtime = r.i64();
    if (r.ok() && (*n.mtime < kMinRfc3339Seconds || *n.mtime > kMaxRfc3339Seconds)) r.bad("url: bad mt");
  }
  if (r.boolean()) n.size = r.u64();
  n.md5 = r.str();
  if (r.ok() && !n.md5.empty() && !isMd5Hex(n.md5)) r.bad("url: bad md5");
  n.tod = readText(r);
  return n;
}

// The bytes a URL record takes at most beyond its strings (flags, numbers, lengths).
std::size_t urlRecordBytes(const UrlNotice& n) {
  return 64 + n.key.url.size() + n.key.mime.size() + n.view_tag.size() + (n.browse ? n.browse->size() : 0) +
         n.fetch.size() + n.md5.size() + n.tod.size();
}

// Cuts a byte stream into frames for `reader`, and records why it failed.
template <typename OnFrame>
bool feedFrames(FrameSplitter& frames, std::string_view bytes, std::string& why, OnFrame&& on_frame) {
  frames.feed(bytes, [&](std::uint8_t type, std::string_view payload) { return on_frame(type, payload); });
  if (frames.failed() && why.empty()) why = frames.why();
  return why.empty();
}

}  // namespace

// ---- writing ----

void appendSetBeginFrame(std::string& out, const UnsQmSetHeader& h) {
  FrameWriter w(out);
  w.begin(static_cast<std::uint8_t>(FrameType::kUnsSet));
  w.u64(h.id);
  w.u64(h.pid);
  w.u64(static_cast<std::uint64_t>(h.kind));
  w.boolean(h.streamed);
  w.u64(h.streamed ? 0 : h.count);
  w.end();
}

void appendUrlsFrames(std::string& out, const std::vector<UrlNotice>& urls) {
  const std::size_t max_batch = FrameLimits{}.max_batch;
  for (std::size_t at = 0; at < urls.size();) {
    std::size_t n = 0, bytes = 0;
    while (at + n < urls.size() && n < max_batch && bytes < kUrlBatchBytes) bytes += urlRecordBytes(urls[at + n++]);
    FrameWriter w(out);
    w.begin(static_cast<std::uint8_t>(FrameType::kUnsUrls));
    w.u64(n);
    for (std::size_t i = 0; i < n; ++i) putUrl(w, urls[at + i]);
    w.end();
    at += n;
  }
}

void appendSetEndFrame(std::string& out, std::uint64_t count) {
  FrameWriter w(out);
  w.begin(static_cast<std::uint8_t>(FrameType::kUnsSetEnd));
  w.u64(count);
  w.end();
}

void appendSetAbortFrame(std::string& out) { appendSignalFrame(out, FrameType::kUnsSetAbort); }

void appendAckFrame(std::string& out, const UnsQmAck& ack) {
  FrameWriter w(out);
  w.begin(static_cast<std::uint8_t>(FrameType::kQmAck));
  w.u64(ack.id);
  w.boolean(ack.ok);
  if (!ack.ok) {
    w.u64(static_cast<std::uint64_t>(ack.code == ErrorCode::kNone ? ErrorCode::kOffline : ack.code));
    w.str(std::string_view(ack.reason).substr(0, kMaxReasonBytes));
  }
  w.end();
}

void appendSignalFrame(std::string& out, FrameType type) {
  FrameWriter w(out);
  w.begin(static_cast<std::uint8_t>(type));
  w.end();
}

// ---- the UNS's stream ----

UnsFrameReader::UnsFrameReader(UnsStreamHandler& handler, const UnsQmLimits& limits)
    : h_(handler), limits_(limits), frames_(FrameLimits{1 << 20, limits.max_attribute_length, FrameLimits{}.max_batch}) {}

bool UnsFrameReader::feed(std::string_view bytes) {
  if (failed() || closed_) return false;
  feedFrames(frames_, bytes, why_, [&](std::uint8_t type, std::string_view payload) { return onFrame(type, payload); });
  return !failed() && !closed_;
}

bool UnsFrameReader::fail(std::string why) {
  if (why_.empty()) why_ = std::move(why);
  return false;
}

bool UnsFrameReader::onFrame(std::uint8_t type, std::string_view payload) {
  FieldReader r(payload, frames_.limits());
  bool ok = true;
  switch (static_cast<FrameType>(type)) {
    case FrameType::kPing: h_.onPing(); break;
    case FrameType::kPong: h_.onPong(); break;
    case FrameType::kEnd:
      if (in_set_) return fail("the stream closed inside a set");
      closed_ = true;
      h_.onClose();
      return false;
    case FrameType::kUnsSet: ok = setBegin(r); break;
    case FrameType::kUnsUrls: ok = urls(r); break;
    case FrameType::kUnsSetEnd: ok = setEnd(r); break;
    case FrameType::kUnsSetAbort:
      if (!in_set_ || !header_.streamed) return fail("an abort outside a streamed set");
      in_set_ = false;
      h_.onSetAbort();
      break;
    default: break;  // an unknown frame is skipped, as an unknown element
  }
  if (!r.ok()) return fail("frame of type " + std::to_string(type) + ": " + r.why());
  return ok;
}

bool UnsFrameReader::setBegin(FieldReader& r) {
  if (in_set_) return fail("a set begins inside a set");
  UnsQmSetHeader h;
  h.id = r.u64();
  const std::uint64_t pid = r.u64();
  const std::uint64_t kind = r.u64();
  h.streamed = r.boolean();
  h.count = r.u64();
  if (!r.ok()) return false;
  if (h.id == 0) return fail("set without a valid id");
  if (pid == 0 || pid > std::numeric_limits<ProviderId>::max()) return fail("set without a valid pid");
  h.pid = static_cast<ProviderId>(pid);
  if (kind > 1) return fail("set with a bad kind");
  if (h.streamed && h.count != 0) return fail("a streamed set with a count in its header");
  if (h.count > limits_.max_set_urls) return fail("set larger than the limit");
  h.kind = static_cast<SetKind>(kind);
  header_ = h;
  in_set_ = true;
  urls_seen_ = 0;
  h_.onSetBegin(header_);
  return true;
}

bool UnsFrameReader::urls(FieldReader& r) {
  if (!in_set_) return fail("urls outside a set");
  const std::size_t n = r.count(kMinUrlBytes);
  const std::uint64_t cap = header_.streamed ? limits_.max_set_urls : header_.count;
  for (std::size_t i = 0; i < n && r.ok(); ++i) {
    if (++urls_seen_ > cap) return fail(header_.streamed ? "set larger than the limit" : "set has more urls than its count");
    UrlNotice u = readUrl(r, header_.pid);
    if (r.ok()) h_.onSetUrl(std::move(u));
  }
  return r.ok();
}

bool UnsFrameReader::setEnd(FieldReader& r) {
  if (!in_set_) return fail("a set end outside a set");
  const std::uint64_t count = r.u64();
  if (!r.ok()) return false;
  if (count != urls_seen_) return fail("set end count differs from the urls sent");
  if (!header_.streamed && count != header_.count) return fail("set has fewer urls than its count");
  in_set_ = false;
  h_.onSetEnd();
  return true;
}

// ---- the QM's stream ----

QmFrameReader::QmFrameReader(QmStreamHandler& handler, const UnsQmLimits& limits)
    : h_(handler), frames_(FrameLimits{1 << 20, limits.max_attribute_length, FrameLimits{}.max_batch}) {}

bool QmFrameReader::feed(std::string_view bytes) {
  if (failed() || closed_) return false;
  feedFrames(frames_, bytes, why_, [&](std::uint8_t type, std::string_view payload) {
    switch (static_cast<FrameType>(type)) {
      case FrameType::kPing: h_.onPing(); return true;
      case FrameType::kPong: h_.onPong(); return true;
      case FrameType::kEnd: closed_ = true; h_.onClose(); return false;
      case FrameType::kQmAck: break;
      default: return true;
    }
    FieldReader r(payload, frames_.limits());
    UnsQmAck ack;
    ack.id = r.u64();
    ack.ok = r.boolean();
    if (!ack.ok) {
      const std::uint64_t code = r.u64();
      // A refusal always carries a code: 0 or an unknown one reads as 130, as in XML.
      ack.code = code != 0 && code <= 65535 && isKnownErrorCode(static_cast<unsigned>(code)) ? static_cast<ErrorCode>(code)
                                                                                             : ErrorCode::kOffline;
      ack.reason = r.str().substr(0, kMaxReasonBytes);
    }
    if (r.ok() && ack.id == 0) r.bad("ack without a valid id");
    if (!r.ok()) {
      why_ = "frame of type " + std::to_string(type) + ": " + r.why();
      return false;
    }
    h_.onAck(ack);
    return true;
  });
  return !failed() && !closed_;
}

}  // namespace lcc::proto
