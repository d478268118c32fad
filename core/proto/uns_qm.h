// uns_qm.h — the UNS → QM codec, both directions (docs/internal-protocols.md §1).
//
// Pure functions and stream decoders: no sockets, no threads of their own.
//   UNS writes: encodeUnsOpen(), then sets (encodeSet / appendSet*), pings; reads the
//               QM's stream with QmStreamDecoder (acks, pings, pongs).
//   QM writes:  encodeQmOpen(), then acks (encodeAck), pings/pongs; reads the UNS's
//               stream with UnsStreamDecoder (the opening with the UNS name, sets).
// Stream framing: each side opens one root element (<lcc:uns>, <lcc:qm>) and then
// sends one child element per message; closing the root ends the stream. Children
// are accepted un-namespaced or in the internal namespace; unknown children and
// attributes are ignored. A stream that breaks the framing or sends an impossible
// set (missing c/m, bad op/mt/sz, count mismatch) fails with kMalformed; the peer is
// disconnected. The QM's decoder hands a set over URL by URL (UnsStreamHandler), so
// taking a set needs memory for one URL, not for the set. A decoder never aborts on input.
// THREADS: one decoder per connection, used by one thread (strand) at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lcc/error_codes.h"
#include "lcc/status.h"
#include "lcc/types.h"
#include "proto/xml_reader.h"

namespace lcc::proto {

// <set id=… pid=… kind=… count=…>
struct UnsQmSetHeader {
  std::uint64_t id = 0;  // the UNS's set number, strictly increasing per UNS name
  ProviderId pid = 0;
  SetKind kind = SetKind::kPartial;
  std::uint64_t count = 0;  // number of <url> children
  // Streamed (issue 13): the header carries no count; the set ends with
  // <end count=…/> (then `count` holds it at onSetEnd) or <abort/> (onSetAbort, no end).
  bool streamed = false;

  friend bool operator==(const UnsQmSetHeader&, const UnsQmSetHeader&) = default;
};

struct UnsQmSet {
  UnsQmSetHeader header;
  std::vector<UrlNotice> urls;  // key.pid == header.pid; every URL absolute

  friend bool operator==(const UnsQmSet&, const UnsQmSet&) = default;
};

// <ack id=… status="ok"/> or <ack id=… status="rejected" code="130">reason</ack>
struct UnsQmAck {
  std::uint64_t id = 0;
  bool ok = true;
  ErrorCode code = ErrorCode::kNone;  // when !ok (130 normally)
  std::string reason;                 // when !ok

  friend bool operator==(const UnsQmAck&, const UnsQmAck&) = default;
};

// Reader limits for the internal streams: attribute values up to
// `max_attribute_length` (uns.max_attribute_length), depth 4, no element cap on the
// stream as a whole (it is permanent); a set is capped by `max_set_urls`.
struct UnsQmLimits {
  std::size_t max_attribute_length = 8192;
  std::uint64_t max_set_urls = 1'000'000;
};

// ---------------------------------------------------------------------------
// Encoding. Every function returns (or appends) complete, escaped XML text.

// UNS opening: <lcc:uns xmlns:lcc="…/internal" name="m1/uns">; frames="1" offers the
// compact frames (uns_qm_frames.h) when `frames` is not 0.
std::string encodeUnsOpen(std::string_view uns_name, std::uint32_t frames = 0);
std::string encodeUnsClose();  // </lcc:uns>
// QM opening: <lcc:qm xmlns:lcc="…/internal">; frames="1": the answer to the offer, and
// the QM writes frames after its <frames v="1"/>.
std::string encodeQmOpen(std::uint32_t frames = 0);
std::string encodeQmClose();  // </lcc:qm>

// A whole set element, "<set …>" + one "<url …/>" per notice + "</set>".
std::string encodeSet(const UnsQmSet& set);
// The same in pieces, for a UNS that encodes URLs as it validates them. The caller
// guarantees header.count equals the number of appendUrl() calls in between.
void appendSetBegin(std::string& out, const UnsQmSetHeader& header);
void appendUrl(std::string& out, const UrlNotice& notice);  // key.pid is not written
void appendSetEnd(std::string& out);
// The end of a streamed set (header.streamed: no count up front): "<end count=…/></set>",
// or "<abort/></set>" for a set its CP did not finish (the QM drops it, no ack).
void appendStreamedSetEnd(std::string& out, std::uint64_t count);
void appendStreamedSetAbort(std::string& out);

std::string encodeAck(const UnsQmAck& ack);
std::string encodePing();  // <ping/>
std::string encodePong();  // <pong/>

// The id of an encoded set element (text from encodeSet/appendSetBegin), without a
// full parse; 0 when `set_xml` does not start with a set element carrying an id.
std::uint64_t peekSetId(std::string_view set_xml);

// Decodes one complete set element (as encodeSet writes it; the UNS spool and a QM
// intake journal may store sets in this form). kInvalidArgument when it is not one.
Result<UnsQmSet> decodeSet(std::string_view set_xml, const UnsQmLimits& limits = {});

// ---------------------------------------------------------------------------
// QM side: what the QM reads from a UNS.
class UnsStreamHandler {
 public:
  virtual ~UnsStreamHandler() = default;
  // name="…" and frames="…" (0 when absent or not a number) of the opening.
  virtual void onUnsOpen(std::string_view uns_name, std::uint32_t frames) = 0;
  // A set as it is read: its header at <set>, each URL in order, its end at </set>
  // (after the count was checked). A stream that fails in between gets no
  // onSetEnd(). The defaults collect the whole set and hand it to onSet(); a handler
  // that takes sets of any size overrides these three instead.
  virtual void onSetBegin(const UnsQmSetHeader& header);
  virtual void onSetUrl(UrlNotice&& url);
  virtual void onSetEnd();
  // A streamed set's <abort/>: nothing of it is taken, no onSetEnd() follows.
  virtual void onSetAbort();
  virtual void onSet(UnsQmSet&& /*set*/) {}  // after its </set>, with the defaults above
  virtual void onPing() {}
  virtual void onPong() {}
  virtual void onClose() {}  // </lcc:uns>: the UNS ended the stream

 private:
  UnsQmSet collecting_;  // the defaults' set
};

// After a child <frames v="1"/> (when constructed with `frames`; without, it is refused
// as malformed) the stream goes on as compact frames (uns_qm_frames.h): the handler
// sees the same calls.
class UnsStreamDecoder {
 public:
  explicit UnsStreamDecoder(UnsStreamHandler& handler, UnsQmLimits limits = {}, bool frames = false);
  ~UnsStreamDecoder();
  UnsStreamDecoder(const UnsStreamDecoder&) = delete;
  UnsStreamDecoder& operator=(const UnsStreamDecoder&) = delete;

  // Parses bytes, calling the handler. Returns false once the stream failed or closed
  // (then the caller drops the connection; bytes after the close are ignored).
  bool feed(const char* data, std::size_t n);
  bool feed(std::string_view s) { return feed(s.data(), s.size()); }

  bool failed() const;
  bool closed() const;
  ErrorCode error() const;  // kMalformed or kLimitExceeded when failed
  const std::string& errorMessage() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------
// UNS side: what the UNS reads from its QM.
class QmStreamHandler {
 public:
  virtual ~QmStreamHandler() = default;
  virtual void onQmOpen(std::uint32_t frames) = 0;  // frames="…" of the opening (0: XML only)
  virtual void onAck(const UnsQmAck& ack) = 0;
  virtual void onPing() {}
  virtual void onPong() {}
  virtual void onClose() {}  // </lcc:qm>
};

class QmStreamDecoder {
 public:
  explicit QmStreamDecoder(QmStreamHandler& handler, UnsQmLimits limits = {}, bool frames = false);
  ~QmStreamDecoder();
  QmStreamDecoder(const QmStreamDecoder&) = delete;
  QmStreamDecoder& operator=(const QmStreamDecoder&) = delete;

  bool feed(const char* data, std::size_t n);
  bool feed(std::string_view s) { return feed(s.data(), s.size()); }

  bool failed() const;
  bool closed() const;
  ErrorCode error() const;
  const std::string& errorMessage() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lcc::proto
