// frame_codec.h — the compact binary framing of the links between hosts (issue 28;
// docs/internal-protocols.md §4: the layout, the types, the negotiation).
//
// A frame: one byte kFrameMagic (the version: 0xC1 is version 1), one byte of type,
// the payload's length as 4 bytes little-endian, then the payload: fields in a fixed
// order per type, each an unsigned LEB128 varint (at most 10 bytes) or a string (a
// varint length, then the bytes). Every length and count is checked against the
// limits before anything is allocated; a hostile frame is refused with a message,
// never crashed on. Pure code: no sockets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lcc::proto {

inline constexpr unsigned char kFrameMagic = 0xC1;  // a frame of version 1
inline constexpr std::uint32_t kFramesVersion = 1;  // frames="1" in a hello, <frames v="1"/>
inline constexpr std::size_t kFrameHeaderBytes = 6;

// The frame types of the links (the second byte of a frame; link_frames.h). An unknown type is skipped (as an
// unknown XML element is ignored).
enum class FrameType : std::uint8_t {
  kPing = 0x01,
  kPong = 0x02,
  kEnd = 0x03,  // the close of the stream (</lcc:...>)
  kFetches = 0x10,  // a batch of <fetch>
  kResults = 0x11,  // a batch of <result>
  kDelete = 0x12,
  kDeleted = 0x13,
  kCapacity = 0x14,
  kMachines = 0x15,
  kSweep = 0x16,
  kFile = 0x17,
  kSwept = 0x18,
  // The UNS → QM link (uns_qm_frames.h).
  kUnsSet = 0x20,       // <set> (its header)
  kUnsUrls = 0x21,      // a batch of the open set's <url>
  kUnsSetEnd = 0x22,    // </set>, or a streamed set's <end count/></set>
  kUnsSetAbort = 0x23,  // a streamed set's <abort/></set>
  kQmAck = 0x24,        // <ack>
};

struct FrameLimits {
  std::size_t max_frame_bytes = 1 << 20;  // one payload
  std::size_t max_value_length = 8192;    // one string field (the XML form's attribute limit)
  std::size_t max_batch = 4096;           // records in one batch frame
};

// Builds frames into `out`: begin(type), the fields, end() (which writes the length).
class FrameWriter {
 public:
  explicit FrameWriter(std::string& out) : out_(out) {}
  void begin(std::uint8_t type);
  void end();
  void u64(std::uint64_t v);
  void i64(std::int64_t v) { u64((static_cast<std::uint64_t>(v) << 1) ^ (v < 0 ? ~std::uint64_t{0} : 0)); }  // zigzag
  void str(std::string_view s);
  void boolean(bool b) { out_.push_back(b ? '\1' : '\0'); }

 private:
  std::string& out_;
  std::size_t start_ = 0;
};

// Reads the fields of one payload. The first failure sticks: later reads give 0 or ""
// and ok() stays false; why() says what was wrong.
class FieldReader {
 public:
  FieldReader(std::string_view payload, const FrameLimits& limits) : rest_(payload), limits_(limits) {}
  std::uint64_t u64();
  std::int64_t i64();  // a zigzag varint
  std::string str();
  bool boolean();
  // A count of records that follow, each at least `min_bytes` long: refused when over
  // the batch limit or more than the bytes left could hold.
  std::size_t count(std::size_t min_bytes);
  // Marks the payload bad (the first reason wins).
  void bad(std::string why);
  bool ok() const { return ok_; }
  bool atEnd() const { return rest_.empty(); }
  const std::string& why() const { return why_; }

 private:
  std::string_view rest_;
  const FrameLimits& limits_;
  bool ok_ = true;
  std::string why_;
};

// Cuts a byte stream into frames. feed() calls on_frame(type, payload) per complete
// frame and keeps the bytes of an unfinished one, at most one frame's worth. False when
// a header is bad (why()) or on_frame returned false (the stream ends there: the caller
// knows why); nothing more is read after either.
class FrameSplitter {
 public:
  explicit FrameSplitter(FrameLimits limits) : limits_(limits) {}
  template <typename OnFrame>
  bool feed(std::string_view bytes, OnFrame&& on_frame) {
    if (failed() || stopped_) return false;
    std::size_t used = 0;
    if (buf_.empty()) {
      if (!feedWhole(bytes, on_frame, &used)) return false;
      buf_.assign(bytes.substr(used));
    } else {
      buf_.append(bytes);  // amortised: a frame that trickles in is not copied again per piece
      if (!feedWhole(buf_, on_frame, &used)) return false;
      buf_.erase(0, used);
    }
    return checkPartial();
  }
  bool failed() const { return !why_.empty(); }
  const std::string& why() const { return why_; }
  const FrameLimits& limits() const { return limits_; }
  std::size_t heldBytes() const { return buf_.size(); }

 private:
  // A frame's header: false when it is not one of ours or is too long (why_ is set).
  bool checkHeader(std::string_view header, std::size_t* len);
  // The start of a frame held back: refused as soon as its header is known to be bad.
  bool checkPartial();
  template <typename OnFrame>
  bool feedWhole(std::string_view bytes, OnFrame& on_frame, std::size_t* used) {
    std::size_t at = 0;
    while (bytes.size() - at >= kFrameHeaderBytes) {
      std::size_t len = 0;
      if (!checkHeader(bytes.substr(at, kFrameHeaderBytes), &len)) return false;
      if (bytes.size() - at - kFrameHeaderBytes < len) break;
      const auto type = static_cast<std::uint8_t>(bytes[at + 1]);
      if (!on_frame(type, bytes.substr(at + kFrameHeaderBytes, len))) {
        stopped_ = true;
        return false;
      }
      at += kFrameHeaderBytes + len;
    }
    *used = at;
    return true;
  }

  FrameLimits limits_;
  std::string buf_;
  std::string why_;
  bool stopped_ = false;  // on_frame returned false
};

}  // namespace lcc::proto
