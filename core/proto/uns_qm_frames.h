// uns_qm_frames.h — the UNS → QM link (uns_qm.h) as compact frames between hosts
// (issue 28; frame_codec.h; docs/internal-protocols.md §1 and §4).
//
// WHO: the UNS's QM link over TCP (uns/qm_link.cc) writes sets with the append*Frame
// functions once the QM took its offer; the QM's intake (qm/intake_server.cc) writes
// acks. The stream decoders of uns_qm.h switch to the readers below after the peer's
// <frames v="1"/>, so a handler sees the same calls for either form.
// A frame carries what the XML element carries, no more: decode(encode(set)) is the set
// (tests/proto_cp/uns_qm_frames_test.cc), and the reader refuses what the XML reader
// refuses (a url without c or m, an op that does not exist, an md5 that is not one, a
// count that differs from the URLs sent, a set past max_set_urls).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proto/frame_codec.h"
#include "proto/uns_qm.h"

namespace lcc::proto {

// ---- writing: each call appends whole frames ----
// <set>: id, pid, kind, streamed, count (0 when streamed).
void appendSetBeginFrame(std::string& out, const UnsQmSetHeader& header);
// The next URLs of the open set, in batch frames (a new one past 4096 URLs or 256 KiB).
void appendUrlsFrames(std::string& out, const std::vector<UrlNotice>& urls);
// The set's end (</set>, or a streamed set's <end count/></set>): the URLs it held.
void appendSetEndFrame(std::string& out, std::uint64_t count);
// A streamed set's <abort/></set>.
void appendSetAbortFrame(std::string& out);
void appendAckFrame(std::string& out, const UnsQmAck& ack);
// <ping/>, <pong/>, the close of the stream: a frame with no payload.
void appendSignalFrame(std::string& out, FrameType type);

// ---- reading: the bytes after the peer's switch ----
// What a UNS sends, as UnsStreamHandler calls (the set rules of the XML form).
class UnsFrameReader {
 public:
  UnsFrameReader(UnsStreamHandler& handler, const UnsQmLimits& limits);
  // False once the stream failed (why()) or closed.
  bool feed(std::string_view bytes);
  bool failed() const { return !why_.empty(); }
  bool closed() const { return closed_; }
  const std::string& why() const { return why_; }

 private:
  bool onFrame(std::uint8_t type, std::string_view payload);
  bool fail(std::string why);
  bool setBegin(FieldReader& r);
  bool urls(FieldReader& r);
  bool setEnd(FieldReader& r);

  UnsStreamHandler& h_;
  UnsQmLimits limits_;
  FrameSplitter frames_;
  bool in_set_ = false;
  UnsQmSetHeader header_;
  std::uint64_t urls_seen_ = 0;
  bool closed_ = false;
  std::string why_;
};

// What a QM sends (acks, ping, pong, the close), as QmStreamHandler calls.
class QmFrameReader {
 public:
  QmFrameReader(QmStreamHandler& handler, const UnsQmLimits& limits);
  bool feed(std::string_view bytes);
  bool failed() const { return !why_.empty(); }
  bool closed() const { return closed_; }
  const std::string& why() const { return why_; }

 private:
  QmStreamHandler& h_;
  FrameSplitter frames_;
  bool closed_ = false;
  std::string why_;
};

}  // namespace lcc::proto
