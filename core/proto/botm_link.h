// botm_link.h — the url source <-> BOT-M protocol (docs/internal-protocols.md §2).
//
// WHO: the QM and a parent BOT-M are "sources": they write with the encodeSource*()
// functions and read with BotmLinkDecoder(kReadBotm). A BOT-M writes with the
// encodeBotm*() functions and reads with BotmLinkDecoder(kReadSource).
// Pure codec: no sockets, no threads. One decoder per connection.
//
// Framing: each side opens one root element (<lcc:botm ...>, <lcc:source ...>) and
// then sends one child element per message; closing the root ends the stream.
// Names are namespace-resolved (any prefix works); unknown elements and attributes
// are ignored. A message with a missing or malformed required attribute (id,
// machine, capacity...) is a protocol error (kMalformed): the decoder stops and the
// connection should be closed and logged.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lcc/error_codes.h"
#include "lcc/types.h"
#include "net/local_link.h"
#include "proto/frame_codec.h"
#include "proto/xml_reader.h"

namespace lcc::proto {

// ---- messages -----------------------------------------------------------------
// Opening of the BOT-M's stream: <lcc:botm machine=".." capacity=".." content="..">.
struct LinkBotmHello {
  std::string machine;
  std::uint64_t capacity = 0;
  // Where `machine`'s content files are read: GET <content_url>/content/<file>.
  // Empty: not advertised (attribute absent; older BOT-Ms never send it).
  std::string content_url;
  // The compact frames this side reads and writes (frames="1"; 0: XML only, the
  // attribute absent). The BOT-M offers, the source answers (link_frames.h).
  std::uint32_t frames = 0;
  friend bool operator==(const LinkBotmHello&, const LinkBotmHello&) = default;
};

// Opening of the source's stream: <lcc:source name="..">.
struct LinkSourceHello {
  std::string name;
  std::uint32_t frames = 0;  // frames="1": the answer to the BOT-M's offer; frames follow
  friend bool operator==(const LinkSourceHello&, const LinkSourceHello&) = default;
};

// source -> BOT-M: fetch a URL. The message is an lcc::FetchRequest (lcc/types.h) with
// the source's id: <fetch id url mime since maxsize md5 redirects scope>, i.e. url,
// expected_mime, if_modified_since (an RFC 3339 time on the wire), max_size,
// expected_md5, redirects and redirect_prefixes. path and max_response_head are not
// carried (a BOT-M decodes them empty and 0).
// Which redirects a fetch may follow (config fetch.redirects, decided by the QM) and,
// for "prefix", the provider's prefixes. On the wire: redirects="host|none" (absent:
// prefix) and scope="PREFIX PREFIX..." (space-separated, at most kMaxScopeBytes; the
// prefixes past that, and any holding a space, are left out, so fewer redirects are
// followed, never more).
inline constexpr std::size_t kMaxScopeBytes = 4000;

// BOT-M -> source: the outcome of one fetch is an lcc::FetchResult (lcc/types.h) with
// the source's id. ok and not unchanged: machine and filename say where the file lives.
// A failure read without a code (or with code 0) is read as kInternal.

// source -> BOT-M: unlink `file` on `machine` and free its name.
struct LinkDelete {
  std::uint64_t id = 0;
  std::string machine;
  std::string file;
  friend bool operator==(const LinkDelete&, const LinkDelete&) = default;
};

// BOT-M -> source: answer to a delete. reason: "unknown-machine" (keep the delete
// until <machines> lists it) or a short text.
struct LinkDeleted {
  std::uint64_t id = 0;
  bool ok = false;
  std::string reason;
  friend bool operator==(const LinkDeleted&, const LinkDeleted&) = default;
};

inline constexpr std::string_view kReasonUnknownMachine = "unknown-machine";

// Reconciling content files with the LCC DB (orphan sweep, issue 15): the source asks
// <sweep id>, each leaf BOT-M answers one <file> per content file that no fetch in
// flight uses, then <swept> with the count; a parent BOT-M passes the <sweep> to its
// children and their answers up. The source deletes (through <delete>) the files that
// no LCC DB record and no pending delete names.
struct LinkSweep {
  std::uint64_t id = 0;
  friend bool operator==(const LinkSweep&, const LinkSweep&) = default;
};
struct LinkFile {
  std::uint64_t sweep = 0;
  std::string machine;
  std::string name;  // as in <delete file>
  std::uint64_t size = 0;
  friend bool operator==(const LinkFile&, const LinkFile&) = default;
};
struct LinkSwept {
  std::uint64_t sweep = 0;
  std::string machine;
  std::uint64_t files = 0;  // <file>s sent for this sweep and machine
  friend bool operator==(const LinkSwept&, const LinkSwept&) = default;
};

struct LinkCapacity {
  std::uint64_t slots = 0;
  friend bool operator==(const LinkCapacity&, const LinkCapacity&) = default;
};

struct LinkMachines {
  std::vector<std::string> ids;  // machine ids reachable through the connection
  // machine id -> content URL, for the machines whose BOT-M advertised one
  // (attribute content="m1=http://h:1 m2=http://h:2"; absent when empty).
  std::map<std::string, std::string> content_urls;
  friend bool operator==(const LinkMachines&, const LinkMachines&) = default;
};

// <ping/>: a keep-alive, answered <pong/>. From a source to a BOT-M, and from a BOT-M to
// its robots and children, <ping lease="MS"/> also renews the fetch lease (issue 27 §3,
// FetchRequest::lease) of every fetch the sender handed the receiver and that is not
// answered yet: to MS from when it arrives. 0 (the attribute absent): a plain ping.
struct LinkPing {
  Millis lease{0};
  friend bool operator==(const LinkPing&, const LinkPing&) = default;
};
// The longest lease a link carries (a larger one is read as this: a day).
inline constexpr Millis kMaxLinkLease{24LL * 3600 * 1000};
// A lease in milliseconds read from the wire, clamped to kMaxLinkLease.
Millis linkLease(std::uint64_t ms);
struct LinkPong {
  friend bool operator==(const LinkPong&, const LinkPong&) = default;
};
// The peer closed its root element: the stream is over.
struct LinkEnd {
  friend bool operator==(const LinkEnd&, const LinkEnd&) = default;
};

// What a BOT-M reads (sent by a source).
using SourceMessage = std::variant<LinkSourceHello, FetchRequest, LinkDelete, LinkPing, LinkPong, LinkEnd, LinkSweep>;
// What a source reads (sent by a BOT-M).
using BotmMessage = std::variant<LinkBotmHello, FetchResult, LinkDeleted, LinkCapacity, LinkMachines, LinkPing, LinkPong,
                                 LinkEnd, LinkFile, LinkSwept>;

// ---- the in-process form (net/local_link.h) -------------------------------------
// When both ends run in one lccd the messages are handed over as they are, without
// the codec. asOnWire() gives one the shape the decoder at the other end would read
// from the wire (what the link does not carry left out, retry_after in whole seconds,
// the scope cut as kMaxScopeBytes says), so both forms carry the same facts
// (tests/proto: asOnWire(m) equals decode(encode(m))).
void asOnWire(SourceMessage& m);
void asOnWire(BotmMessage& m);
// The two ends of an in-process link: the source's (QM, parent BOT-M) and the BOT-M's.
using LocalSourceEnd = net::LocalEnd<SourceMessage, BotmMessage>;
using LocalBotmEnd = net::LocalEnd<BotmMessage, SourceMessage>;
// The bytes of one message on the network form.
std::string encodeMessage(const SourceMessage& m);
std::string encodeMessage(const BotmMessage& m);

// ---- encoders (each returns one complete piece of the stream) ----------------
// BOT-M side.
std::string encodeBotmOpen(const LinkBotmHello& hello);
std::string encodeResult(const FetchResult& r);
std::string encodeDeleted(const LinkDeleted& d);
std::string encodeCapacity(const LinkCapacity& c);
std::string encodeMachines(const LinkMachines& m);
std::string encodeFile(const LinkFile& f);
std::string encodeSwept(const LinkSwept& s);
std::string encodeBotmClose();  // "</lcc:botm>"
// Source side.
std::string encodeSourceOpen(const LinkSourceHello& hello);
std::string encodeFetch(const FetchRequest& f);
std::string encodeDelete(const LinkDelete& d);
std::string encodeSweep(const LinkSweep& s);
std::string encodeSourceClose();  // "</lcc:source>"
// Either side.
std::string encodeLinkPing(const LinkPing& p = {});
std::string encodeLinkPong();

// ---- decoders -----------------------------------------------------------------
// Limits for a long-lived stream: no element-count cap, small depth.
XmlLimits linkLimits(std::size_t max_value_length = 8192);

namespace detail {
// How many of f.redirect_prefixes the wire's scope= covers (kMaxScopeBytes).
std::size_t scopeOnWire(const FetchRequest& f);
// One element of a stream: the root's opening, or one message (a child of the root).
struct RawElement {
  std::string name;  // local name
  std::vector<std::pair<std::string, std::string>> attrs;  // un-namespaced attributes
  std::string text;  // character data directly inside (messages only)
  const std::string* attr(std::string_view n) const;
};

// A kStream XmlReader that yields the root (which must be {ns, root}) and each child
// as a RawElement. Elements below the children are ignored.
class StreamDecoder : public XmlHandler {
 public:
  // frames: a child <frames v="1"/> switches the stream to frames (link_frames.h);
  // false: it is refused (malformed).
  StreamDecoder(XmlLimits limits, std::string_view ns, std::string_view root, bool frames = true);
  ~StreamDecoder() override;
  // fn(is_root, element) per element; returns false on a protocol error.
  // on_end() when the root closes; on_rest(bytes) with every byte after the switch.
  template <typename OnElement, typename OnEnd, typename OnRest>
  bool feed(std::string_view bytes, OnElement&& on_element, OnEnd&& on_end, OnRest&& on_rest) {
    if (failed() || ended_) return !failed();
    if (reader_.handedOff()) {
      on_rest(bytes);
      return !failed();
    }
    ready_.clear();
    const std::size_t used = reader_.feed(bytes);
    for (auto& [is_root, el] : ready_) {
      if (failed()) break;
      on_element(is_root, el);
    }
    ready_.clear();
    if (!failed() && reader_.documentComplete() && !ended_) {
      ended_ = true;
      on_end();
    }
    if (!failed() && reader_.handedOff()) on_rest(bytes.substr(std::min(used, bytes.size())));
    return !failed();
  }
  void fail(ErrorCode code, std::string message) { reader_.fail(code, std::move(message)); }
  bool failed() const { return reader_.failed(); }
  ErrorCode error() const { return reader_.error(); }
  const std::string& errorMessage() const { return reader_.errorMessage(); }
  bool ended() const { return ended_; }

  void onStart(int depth, const XmlName& name, const XmlAttrs& attrs) override;
  void onEnd(int depth, const XmlName& name) override;
  void onText(int depth, std::string_view text) override;

 private:
  XmlReader reader_;
  std::string ns_, root_;
  bool frames_;
  bool ended_ = false;
  RawElement current_;
  std::vector<std::pair<bool, RawElement>> ready_;
};

// Typed attribute access that fails the decoder with a clear message (kMalformed).
struct AttrParser {
  StreamDecoder& dec;
  const RawElement& el;
  bool ok = true;

  void bad(std::string_view attr, std::string_view why);
  std::uint64_t reqU64(std::string_view name);
  std::uint64_t optU64(std::string_view name, std::uint64_t fallback = 0);
  std::optional<std::int64_t> optI64(std::string_view name);
  std::optional<std::int64_t> optTime(std::string_view name);  // RFC 3339 or epoch seconds
  std::string str(std::string_view name);
  std::string reqStr(std::string_view name);
  std::string etag(std::string_view name);  // absent: ""; present and not isValidEtag(): bad()
  bool yes(std::string_view name);   // "yes", "true", "1"
  ErrorCode code(std::string_view name);  // absent or unknown: kInternal
};
// <result>, the same element in the robot protocol and the BOT-M link: a FetchResult
// on the wire. `with_file`: machine and file are written and read (the link); the
// robot protocol has neither. retry_after is whole seconds on the wire (truncated),
// read back clamped to what Millis holds; a failure read without a code is kInternal.
// etag (FetchResult::etag) is written on a success (stored or unchanged) when not empty.
void appendResult(std::string& out, const FetchResult& r, bool with_file);
FetchResult decodeResult(AttrParser& p, const RawElement& el, bool with_file);

// <fetch>, the same element in the robot protocol and the BOT-M link: a FetchRequest
// on the wire. kLink writes and reads md5 and no file; kRobot file (FetchRequest::path,
// required) and no md5. since is an RFC 3339 time on the wire (read: RFC 3339 or epoch
// seconds); redirects and scope as kMaxScopeBytes says, an unknown policy reads as none.
// etag (FetchRequest::if_none_match) is written on both wires when not empty.
enum class FetchWire : std::uint8_t { kLink, kRobot };
void appendFetch(std::string& out, const FetchRequest& f, FetchWire wire);
FetchRequest decodeFetch(AttrParser& p, FetchWire wire);
// The record as decode(append(...)) on that wire gives it back (the in-process form).
FetchRequest fetchAsOnWire(FetchRequest f, FetchWire wire);
FetchResult resultAsOnWire(FetchResult r, bool with_file);

// <ping/> and <pong/>, which every link stream carries: appended to `out`, true when
// `el` was one of them.
template <typename Message>
bool readKeepAlive(const RawElement& el, std::vector<Message>* out) {
  if (el.name == "ping") {
    LinkPing p;
    if (const std::string* v = el.attr("lease")) p.lease = linkLease(std::strtoull(v->c_str(), nullptr, 10));
    out->push_back(p);
  } else if (el.name == "pong") {
    out->push_back(LinkPong{});
  } else {
    return false;
  }
  return true;
}
}  // namespace detail

// What every reader of a link stream shares: the stream's state and its error. Each
// reader below adds feed(), which turns the elements (or, after the peer's switch, the
// frames: link_frames.h) into its side's messages.
class LinkStreamReader {
 public:
  LinkStreamReader(XmlLimits limits, std::string_view ns, std::string_view root, bool frames)
      : dec_(limits, ns, root, frames), frames_(FrameLimits{kMaxLinkFrameBytes, limits.max_value_length, 4096}) {}
  LinkStreamReader(const LinkStreamReader&) = delete;
  LinkStreamReader& operator=(const LinkStreamReader&) = delete;

  bool failed() const { return dec_.failed() || !frame_error_.empty(); }
  ErrorCode error() const { return dec_.failed() ? dec_.error() : failed() ? ErrorCode::kMalformed : ErrorCode::kNone; }
  const std::string& errorMessage() const { return dec_.failed() ? dec_.errorMessage() : frame_error_; }
  bool ended() const { return dec_.ended() || frames_ended_; }  // the root element was closed
  bool framed() const { return framed_; }  // the peer switched to frames

  // The longest frame a link reads (a batch of fetches or results is cut below it).
  static constexpr std::size_t kMaxLinkFrameBytes = 1 << 20;

 protected:
  // XML through on_element(is_root, el); after the switch, frames through
  // on_frame(type, FieldReader&) (false: malformed), ping, pong and End themselves.
  template <typename End, typename Message, typename OnElement, typename OnFrame>
  bool feedStream(std::string_view bytes, std::vector<Message>* out, OnElement&& on_element, OnFrame&& on_frame) {
    if (failed() || ended()) return !failed();
    dec_.feed(bytes, on_element, [&] { out->push_back(End{}); },
              [&](std::string_view rest) { feedFrames<End>(rest, out, on_frame); });
    return !failed();
  }

  detail::StreamDecoder dec_;

 private:
  template <typename End, typename Message, typename OnFrame>
  void feedFrames(std::string_view rest, std::vector<Message>* out, OnFrame& on_frame) {
    framed_ = true;
    frames_.feed(rest, [&](std::uint8_t type, std::string_view payload) {
      switch (static_cast<FrameType>(type)) {
        case FrameType::kEnd: frames_ended_ = true; out->push_back(End{}); return false;
        case FrameType::kPing: out->push_back(readPing(payload)); return true;
        case FrameType::kPong: out->push_back(LinkPong{}); return true;
        default: break;
      }
      FieldReader r(payload, frames_.limits());
      if (on_frame(static_cast<FrameType>(type), r) && r.ok()) return true;
      frame_error_ = "frame of type " + std::to_string(type) + ": " + (r.why().empty() ? "malformed" : r.why());
      return false;
    });
    if (frames_.failed() && frame_error_.empty()) frame_error_ = frames_.why();
  }

  // A ping frame: empty, or the lease in milliseconds (a varint).
  LinkPing readPing(std::string_view payload) const;

  FrameSplitter frames_;
  std::string frame_error_;
  bool framed_ = false;
  bool frames_ended_ = false;
};

// Reads what a source sends (used by a BOT-M).
class SourceStreamDecoder : public LinkStreamReader {
 public:
  // frames: the peer may switch to frames (this side offers or answers them).
  explicit SourceStreamDecoder(XmlLimits limits = linkLimits(), bool frames = true);
  // Parses bytes and appends every complete message to `out`. Returns false on a
  // protocol error (see error()); nothing more is parsed afterwards. Bytes after the
  // end of the stream are ignored.
  bool feed(std::string_view bytes, std::vector<SourceMessage>* out);
};

// Reads what a BOT-M sends (used by the QM and by a parent BOT-M).
class BotmStreamDecoder : public LinkStreamReader {
 public:
  explicit BotmStreamDecoder(XmlLimits limits = linkLimits(), bool frames = true);
  bool feed(std::string_view bytes, std::vector<BotmMessage>* out);
};

}  // namespace lcc::proto
