#include "proto/uns_qm.h"
#include "proto/codec_util.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "common/md5.h"
#include "proto/cp_uns.h"
#include "proto/uns_qm_frames.h"
#include "lcc/support/time_util.h"

namespace lcc::proto {

namespace {

bool isInternalChild(const XmlName& n) { return n.ns.empty() || n.ns == kInternalNs; }


// Parses one <url> element's attributes into a notice. Returns an error text or "".
std::string urlFromAttrs(const XmlAttrs& a, ProviderId pid, UrlNotice& n) {
  n = UrlNotice{};
  n.key.pid = pid;
  const auto* c = a.get("c");
  const auto* m = a.get("m");
  if (!c || c->empty()) return "url without c";
  if (!m || m->empty()) return "url without m";
  n.key.url.assign(*c);
  n.key.mime.assign(*m);
  if (const auto* op = a.get("op")) {
    if (*op == "delete") {
      n.op = UrlOp::kDelete;
    } else if (*op == "check") {
      n.op = UrlOp::kCheck;  // IndexNow, sitemap polls: the fetch settles it
    } else if (*op != "update") {
      return "bad op";
    }
  }
  if (const auto* st = a.get("st")) n.view_tag.assign(*st);
  if (const auto* b = a.get("b")) n.browse = std::string(*b);
  if (const auto* f = a.get("f")) n.fetch.assign(*f);
  if (const auto* mt = a.get("mt")) {
    auto t = parseTime(*mt);
    if (!t) return "bad mt";
    n.mtime = *t;
  }
  if (const auto* sz = a.get("sz")) {
    std::uint64_t v = 0;
    if (!parseDecimalAs(*sz, v)) return "bad sz";
    n.size = v;
  }
  if (const auto* md5 = a.get("md5")) {
    if (!md5->empty() && !isMd5Hex(*md5)) return "bad md5";
    n.md5.assign(*md5);
  }
  if (const auto* tod = a.get("tod")) n.tod.assign(*tod);
  return {};
}

XmlLimits readerLimits(const UnsQmLimits& l) {
  XmlLimits x;
  x.max_value_length = l.max_attribute_length;
  x.max_depth = 4;
  x.max_elements = std::numeric_limits<std::uint64_t>::max();
  x.max_attributes = 64;
  return x;
}

// Collects one <set> at `set_depth` (2 inside a stream, 1 as a lone document).
// With a `sink`, the header and each URL go to it as they are read (nothing is kept).
struct SetCollector {
  UnsQmLimits limits;
  UnsStreamHandler* sink = nullptr;
  bool in_set = false;
  UnsQmSet set;
  std::uint64_t urls_seen = 0;
  // A streamed set (no count in its header) ends with <end count=…/> or <abort/>.
  bool ended = false, aborted = false;

  // Returns "" or an error; `done` is set at the end of the set.
  std::string start(int depth, int set_depth, const XmlName& name, const XmlAttrs& a) {
    if (depth == set_depth) {
      in_set = true;
      set = UnsQmSet{};
      urls_seen = 0;
      ended = aborted = false;
      const auto* id = a.get("id");
      const auto* pid = a.get("pid");
      if (!id || !parseDecimalAs(*id, set.header.id) || set.header.id == 0) return "set without a valid id";
      if (!pid || !parseDecimalAs(*pid, set.header.pid) || set.header.pid == 0) return "set without a valid pid";
      std::string_view kind = a.getOr("kind", "partial");
      if (kind == "full") {
        set.header.kind = SetKind::kFull;
      } else if (kind == "partial") {
        set.header.kind = SetKind::kPartial;
      } else {
        return "set with a bad kind";
      }
      const auto* count = a.get("count");
      set.header.streamed = count == nullptr;
      if (count && !parseDecimalAs(*count, set.header.count)) return "set without a valid count";
      if (set.header.count > limits.max_set_urls) return "set larger than the limit";
      if (sink) {
        sink->onSetBegin(set.header);
      } else {
        set.urls.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(set.header.count, 1u << 16)));
      }
      return {};
    }
    if (depth == set_depth + 1 && isInternalChild(name) && set.header.streamed) {
      if (ended || aborted) return "a streamed set goes on after its end or abort";
      if (name.local == "end") return streamEnd(a);
      if (name.local == "abort") {
        aborted = true;
        if (sink) sink->onSetAbort();
        return {};
      }
    }
    if (depth == set_depth + 1 && isInternalChild(name) && name.local == "url") {
      const std::uint64_t cap = set.header.streamed ? limits.max_set_urls : set.header.count;
      if (++urls_seen > cap) return set.header.streamed ? "set larger than the limit" : "set has more urls than its count";
      UrlNotice n;
      std::string err = urlFromAttrs(a, set.header.pid, n);
      if (!err.empty()) return err;
      if (sink) {
        sink->onSetUrl(std::move(n));
      } else {
        set.urls.push_back(std::move(n));
      }
    }
    return {};
  }
  std::string streamEnd(const XmlAttrs& a) {
    const auto* count = a.get("count");
    if (!count || !parseDecimalAs(*count, set.header.count)) return "set end without a valid count";
    if (urls_seen != set.header.count) return "set end count differs from the urls sent";
    ended = true;
    return {};
  }
  // "" and `delivered` true when the set is complete (not aborted).
  std::string end(bool& delivered) {
    in_set = false;
    delivered = !aborted;
    if (set.header.streamed && !ended && !aborted) return "streamed set closed without end or abort";
    if (urls_seen != set.header.count && !aborted) return "set has fewer urls than its count";
    return {};
  }
};

}  // namespace

// ---------------------------------------------------------------------------
// Encoding

std::string encodeUnsOpen(std::string_view uns_name, std::uint32_t frames) {
  std::string out = "<lcc:uns xmlns:lcc=\"";
  out += kInternalNs;
  out += "\"";
  appendAttr(out, "name", uns_name);
  if (frames != 0) out += " frames=\"" + std::to_string(frames) + "\"";
  out += ">";
  return out;
}
std::string encodeUnsClose() { return "</lcc:uns>"; }
std::string encodeQmOpen(std::uint32_t frames) {
  std::string out = "<lcc:qm xmlns:lcc=\"";
  out += kInternalNs;
  out += "\"";
  if (frames != 0) out += " frames=\"" + std::to_string(frames) + "\"";
  out += ">";
  return out;
}
std::string encodeQmClose() { return "</lcc:qm>"; }

void appendSetBegin(std::string& out, const UnsQmSetHeader& h) {
  out += "<set id=\"";
  out += std::to_string(h.id);
  out += "\" pid=\"";
  out += std::to_string(h.pid);
  out += "\" kind=\"";
  out += h.kind == SetKind::kFull ? "full" : "partial";
  if (!h.streamed) {
    out += "\" count=\"";
    out += std::to_string(h.count);
  }
  out += "\">";
}

void appendUrl(std::string& out, const UrlNotice& n) {
  out += "<url";
  appendAttr(out, "c", n.key.url);
  appendAttr(out, "m", n.key.mime);
  if (n.op == UrlOp::kDelete) out += " op=\"delete\"";
  if (n.op == UrlOp::kCheck) out += " op=\"check\"";
  if (!n.view_tag.empty()) appendAttr(out, "st", n.view_tag);
  if (n.browse) appendAttr(out, "b", *n.browse);
  if (!n.fetch.empty()) appendAttr(out, "f", n.fetch);
  // A time and a number need no escaping: written in place, without a temporary string.
  if (n.mtime) {
    out += " mt=\"";
    appendRfc3339(out, *n.mtime);
    out.push_back('"');
  }
  if (n.size) {
    char digits[24];
    auto end = std::to_chars(digits, digits + sizeof digits, *n.size).ptr;
    out += " sz=\"";
    out.append(digits, end);
    out.push_back('"');
  }
  if (!n.md5.empty()) appendAttr(out, "md5", n.md5);
  if (!n.tod.empty()) appendAttr(out, "tod", n.tod);
  out += "/>";
}

void appendSetEnd(std::string& out) { out += "</set>"; }
void appendStreamedSetEnd(std::string& out, std::uint64_t count) {
  out += "<end count=\"";
  out += std::to_string(count);
  out += "\"/></set>";
}
void appendStreamedSetAbort(std::string& out) { out += "<abort/></set>"; }

std::string encodeSet(const UnsQmSet& set) {
  std::string out;
  out.reserve(64 + set.urls.size() * 160);
  UnsQmSetHeader h = set.header;
  h.count = set.urls.size();
  appendSetBegin(out, h);
  for (const auto& u : set.urls) appendUrl(out, u);
  appendSetEnd(out);
  return out;
}

std::string encodeAck(const UnsQmAck& ack) {
  std::string out = "<ack id=\"" + std::to_string(ack.id) + "\"";
  if (ack.ok) {
    out += " status=\"ok\"/>";
    return out;
  }
  out += " status=\"rejected\" code=\"";
  out += std::to_string(static_cast<unsigned>(ack.code == ErrorCode::kNone ? ErrorCode::kOffline : ack.code));
  out += "\">";
  appendXmlEscaped(out, ack.reason);
  out += "</ack>";
  return out;
}

std::string encodePing() { return "<ping/>"; }
std::string encodePong() { return "<pong/>"; }

std::uint64_t peekSetId(std::string_view x) {
  constexpr std::string_view kHead = "<set id=\"";
  if (x.substr(0, kHead.size()) != kHead) return 0;
  x.remove_prefix(kHead.size());
  auto q = x.find('"');
  if (q == std::string_view::npos) return 0;
  std::uint64_t id = 0;
  if (!parseDecimalAs(x.substr(0, q), id)) return 0;
  return id;
}

Result<UnsQmSet> decodeSet(std::string_view set_xml, const UnsQmLimits& limits) {
  struct H : XmlHandler {
    SetCollector col;
    std::string err;
    bool done = false;
    XmlReader* reader = nullptr;
    void onStart(int depth, const XmlName& name, const XmlAttrs& a) override {
      if (!err.empty()) return;
      if (depth == 1 && !(isInternalChild(name) && name.local == "set")) {
        err = "not a set element";
      } else {
        err = col.start(depth, 1, name, a);
      }
      if (!err.empty()) reader->fail(ErrorCode::kMalformed, err);
    }
    void onEnd(int depth, const XmlName&) override {
      if (depth == 1 && err.empty()) {
        bool delivered = false;
        err = col.end(delivered);
        if (err.empty() && !delivered) err = "an aborted set";
        if (!err.empty()) {
          reader->fail(ErrorCode::kMalformed, err);
        } else {
          done = true;
        }
      }
    }
  } h;
  h.col.limits = limits;
  XmlLimits xl = readerLimits(limits);
  xl.max_depth = 2;
  XmlReader reader(h, xl, XmlFraming::kDocuments);
  h.reader = &reader;
  reader.feed(set_xml);
  if (reader.failed()) return Status::invalidArgument("bad set record: " + reader.errorMessage());
  if (!h.done) return Status::invalidArgument("bad set record: truncated");
  return std::move(h.col.set);
}

// ---------------------------------------------------------------------------
// Stream decoders

namespace {

// Shared machinery: a kStream XmlReader whose root must be `root_local` in the
// internal namespace; children are dispatched by the derived handler. A child
// <frames v="1"/> (when `frames` is allowed) hands the bytes after it to the derived
// decoder's frame reader (uns_qm_frames.h).
class StreamBase : public XmlHandler {
 public:
  StreamBase(std::string_view root, UnsQmLimits limits, bool frames)
      : root_(root), limits_(limits), reader_(*this, readerLimits(limits), XmlFraming::kStream), frames_(frames) {}

  bool feed(const char* data, std::size_t n) {
    if (closed() || failed()) return false;
    if (switched_) return feedFrames(std::string_view(data, n)) && !closed();
    const std::size_t used = reader_.feed(data, n);
    if (reader_.failed()) return false;
    if (reader_.handedOff()) {
      switched_ = true;
      return feedFrames(std::string_view(data + used, n - std::min(used, n))) && !closed();
    }
    return !closed_;
  }
  bool failed() const { return reader_.failed() || !frameError().empty(); }
  bool closed() const { return closed_ || framesClosed(); }
  ErrorCode error() const { return reader_.failed() ? reader_.error() : failed() ? ErrorCode::kMalformed : ErrorCode::kNone; }
  const std::string& errorMessage() const { return reader_.failed() ? reader_.errorMessage() : frameError(); }

 protected:
  void fail(std::string msg) { reader_.fail(ErrorCode::kMalformed, std::move(msg)); }
  virtual void rootOpened(const XmlAttrs& a) = 0;
  virtual void child(int depth, const XmlName& name, const XmlAttrs& a) = 0;
  virtual void childEnd(int depth, const XmlName& name) = 0;
  virtual void rootClosed() = 0;
  // After the switch: the frames (false once they failed or closed the stream).
  virtual bool feedFrames(std::string_view bytes) = 0;
  virtual const std::string& frameError() const = 0;
  virtual bool framesClosed() const = 0;

  static std::uint32_t framesOffered(const XmlAttrs& a) {
    std::uint32_t v = 0;
    const auto* f = a.get("frames");
    return f && parseDecimalAs(*f, v) ? v : 0;
  }

  void onStart(int depth, const XmlName& name, const XmlAttrs& a) override {
    if (depth == 1) {
      if (name.ns != kInternalNs || name.local != root_) {
        return fail("expected the " + std::string(root_) + " stream opening in namespace " + std::string(kInternalNs));
      }
      return rootOpened(a);
    }
    if (depth == 2 && isInternalChild(name) && name.local == "frames") {
      if (!frames_) return fail("<frames/> on a link that did not offer them");
      if (a.getOr("v", "") != std::to_string(kFramesVersion)) {
        return fail("<frames/> of a version other than " + std::to_string(kFramesVersion));
      }
      return;
    }
    child(depth, name, a);
  }
  void onEnd(int depth, const XmlName& name) override {
    if (depth == 1) {
      closed_ = true;
      rootClosed();
      return;
    }
    if (depth == 2 && isInternalChild(name) && name.local == "frames") return reader_.handOff();
    childEnd(depth, name);
  }

  std::string_view root_;
  UnsQmLimits limits_;
  XmlReader reader_;
  bool frames_;
  bool switched_ = false;
  bool closed_ = false;
};

}  // namespace

struct UnsStreamDecoder::Impl final : StreamBase {
  UnsStreamHandler& h;
  SetCollector col;
  UnsFrameReader frames;
  Impl(UnsStreamHandler& handler, UnsQmLimits l, bool allow_frames)
      : StreamBase("uns", l, allow_frames), h(handler), frames(handler, l) {
    col.limits = l;
    col.sink = &h;
  }

  void rootOpened(const XmlAttrs& a) override { h.onUnsOpen(a.getOr("name", ""), framesOffered(a)); }
  bool feedFrames(std::string_view bytes) override { return frames.feed(bytes); }
  const std::string& frameError() const override { return frames.why(); }
  bool framesClosed() const override { return frames.closed(); }
  void child(int depth, const XmlName& name, const XmlAttrs& a) override {
    if (depth == 2) {
      if (!isInternalChild(name)) return;
      if (name.local == "set") {
        if (auto e = col.start(depth, 2, name, a); !e.empty()) fail(e);
      } else if (name.local == "ping") {
        h.onPing();
      } else if (name.local == "pong") {
        h.onPong();
      }
      return;
    }
    if (col.in_set) {
      if (auto e = col.start(depth, 2, name, a); !e.empty()) fail(e);
    }
  }
  void childEnd(int depth, const XmlName& name) override {
    if (depth == 2 && col.in_set && isInternalChild(name) && name.local == "set") {
      bool delivered = false;
      if (auto e = col.end(delivered); !e.empty()) return fail(e);
      if (delivered) h.onSetEnd();
    }
  }
  void rootClosed() override { h.onClose(); }
};

void UnsStreamHandler::onSetBegin(const UnsQmSetHeader& header) {
  collecting_ = UnsQmSet{};
  collecting_.header = header;
}
void UnsStreamHandler::onSetUrl(UrlNotice&& url) { collecting_.urls.push_back(std::move(url)); }
void UnsStreamHandler::onSetAbort() { collecting_ = UnsQmSet{}; }
void UnsStreamHandler::onSetEnd() {
  collecting_.header.count = collecting_.urls.size();  // a streamed set's header had none
  UnsQmSet set = std::move(collecting_);
  collecting_ = UnsQmSet{};
  onSet(std::move(set));
}

UnsStreamDecoder::UnsStreamDecoder(UnsStreamHandler& handler, UnsQmLimits limits, bool frames)
    : impl_(std::make_unique<Impl>(handler, limits, frames)) {}
UnsStreamDecoder::~UnsStreamDecoder() = default;
bool UnsStreamDecoder::feed(const char* data, std::size_t n) { return impl_->feed(data, n); }
bool UnsStreamDecoder::failed() const { return impl_->failed(); }
bool UnsStreamDecoder::closed() const { return impl_->closed(); }
ErrorCode UnsStreamDecoder::error() const { return impl_->error(); }
const std::string& UnsStreamDecoder::errorMessage() const { return impl_->errorMessage(); }

struct QmStreamDecoder::Impl final : StreamBase {
  QmStreamHandler& h;
  bool in_ack = false;
  UnsQmAck ack;
  QmFrameReader frames;
  Impl(QmStreamHandler& handler, UnsQmLimits l, bool allow_frames)
      : StreamBase("qm", l, allow_frames), h(handler), frames(handler, l) {}

  void rootOpened(const XmlAttrs& a) override { h.onQmOpen(framesOffered(a)); }
  bool feedFrames(std::string_view bytes) override { return frames.feed(bytes); }
  const std::string& frameError() const override { return frames.why(); }
  bool framesClosed() const override { return frames.closed(); }
  void child(int depth, const XmlName& name, const XmlAttrs& a) override {
    if (depth != 2 || !isInternalChild(name)) return;
    if (name.local == "ack") {
      ack = UnsQmAck{};
      const auto* id = a.get("id");
      if (!id || !parseDecimalAs(*id, ack.id) || ack.id == 0) return fail("ack without a valid id");
      std::string_view status = a.getOr("status", "");
      if (status == "ok") {
        ack.ok = true;
      } else if (status == "rejected") {
        ack.ok = false;
        unsigned code = static_cast<unsigned>(ErrorCode::kOffline);
        if (const auto* c = a.get("code")) {
          // A refusal always carries a code: 0 (no error) reads as 130, as encodeAck writes it.
          if (!parseDecimalAs(*c, code) || !isKnownErrorCode(code) || code == static_cast<unsigned>(ErrorCode::kNone)) {
            code = static_cast<unsigned>(ErrorCode::kOffline);
          }
        }
        ack.code = static_cast<ErrorCode>(code);
      } else {
        return fail("ack with a bad status");
      }
      in_ack = true;
    } else if (name.local == "ping") {
      h.onPing();
    } else if (name.local == "pong") {
      h.onPong();
    }
  }
  void onText(int depth, std::string_view text) override {
    // The reason of a rejection, at most 1 KiB; an ok ack has none (text in it is
    // ignored: decoded and encoded again it came back without it, found by uns_qm_fuzz).
    if (in_ack && !ack.ok && depth == 2) ack.reason.append(text.substr(0, 1024 - std::min<std::size_t>(ack.reason.size(), 1024)));
  }
  void childEnd(int depth, const XmlName& name) override {
    if (depth == 2 && in_ack && isInternalChild(name) && name.local == "ack") {
      in_ack = false;
      h.onAck(ack);
    }
  }
  void rootClosed() override { h.onClose(); }
};

QmStreamDecoder::QmStreamDecoder(QmStreamHandler& handler, UnsQmLimits limits, bool frames)
    : impl_(std::make_unique<Impl>(handler, limits, frames)) {}
QmStreamDecoder::~QmStreamDecoder() = default;
bool QmStreamDecoder::feed(const char* data, std::size_t n) { return impl_->feed(data, n); }
bool QmStreamDecoder::failed() const { return impl_->failed(); }
bool QmStreamDecoder::closed() const { return impl_->closed(); }
ErrorCode QmStreamDecoder::error() const { return impl_->error(); }
const std::string& QmStreamDecoder::errorMessage() const { return impl_->errorMessage(); }

}  // namespace lcc::proto
