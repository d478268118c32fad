// record_codec.h — compact binary encodings of the store rows (QDB, QPSDB, FSMDB,
// LCC DB, PIDB) and of the redo batches. Every value starts with a format byte, so a
// later version can read old rows. Decoders return nullopt on any malformed input
// (truncated, trailing bytes, unknown format): never a crash.
//
// Primitives: unsigned varints (LEB128), zig-zag varints for signed values, strings
// as varint length + bytes, optionals as a presence byte then the value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lcc/types.h"

namespace lcc::plugins::kyoto {

class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void svarint(std::int64_t v) { varint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63)); }
  void str(std::string_view s) {
    varint(s.size());
    out_.append(s.data(), s.size());
  }
  void optStr(const std::optional<std::string>& s) {
    u8(s ? 1 : 0);
    if (s) str(*s);
  }
  void optS64(const std::optional<std::int64_t>& v) {
    u8(v ? 1 : 0);
    if (v) svarint(*v);
  }
  void optU64(const std::optional<std::uint64_t>& v) {
    u8(v ? 1 : 0);
    if (v) varint(*v);
  }
  void time(WallTime t) { svarint(toUnixMillis(t)); }
  std::string& out() { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  bool done() const { return ok_ && pos_ == in_.size(); }
  std::uint8_t u8() {
    if (pos_ >= in_.size()) return fail<std::uint8_t>();
    return static_cast<std::uint8_t>(in_[pos_++]);
  }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= in_.size()) return fail<std::uint64_t>();
      auto b = static_cast<std::uint8_t>(in_[pos_++]);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return fail<std::uint64_t>();
  }
  std::int64_t svarint() {
    std::uint64_t u = varint();
    return static_cast<std::int64_t>((u >> 1) ^ (~(u & 1) + 1));
  }
  std::string_view strView() {
    std::uint64_t n = varint();
    if (!ok_ || n > in_.size() - pos_) return fail<std::string_view>();
    std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::string str() { return std::string(strView()); }
  std::optional<std::string> optStr() {
    std::uint8_t p = u8();
    if (p > 1) return fail<std::optional<std::string>>();
    if (p == 0) return std::nullopt;
    return str();
  }
  std::optional<std::int64_t> optS64() {
    std::uint8_t p = u8();
    if (p > 1) return fail<std::optional<std::int64_t>>();
    if (p == 0) return std::nullopt;
    return svarint();
  }
  std::optional<std::uint64_t> optU64() {
    std::uint8_t p = u8();
    if (p > 1) return fail<std::optional<std::uint64_t>>();
    if (p == 0) return std::nullopt;
    return varint();
  }
  WallTime time() { return fromUnixMillis(svarint()); }

 private:
  template <typename T>
  T fail() {
    ok_ = false;
    pos_ = in_.size();
    return T{};
  }
  std::string_view in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

std::string encodeQueueEntry(const QueueEntry& e);
std::optional<QueueEntry> decodeQueueEntry(std::string_view key, std::string_view bytes);

std::string encodePSet(const PSetRecord& p);
std::optional<PSetRecord> decodePSet(std::string_view bytes);

std::string encodeDelete(const DeleteRequest& d);
std::optional<DeleteRequest> decodeDelete(std::string_view bytes);

std::string encodeContent(const ContentRecord& r);
std::optional<ContentRecord> decodeContent(std::string_view key, std::string_view bytes);

std::string encodeProvider(const ProviderRecord& r);
std::optional<ProviderRecord> decodeProvider(std::string_view bytes);

// Fixed-width big-endian integers, for keys whose byte order must be numeric order.
std::string be32(std::uint32_t v);
std::string be64(std::uint64_t v);
std::uint64_t readBe64(std::string_view s);  // s.size() >= 8
std::uint32_t readBe32(std::string_view s);  // s.size() >= 4

}  // namespace lcc::plugins::kyoto
