#include "proto/frame_codec.h"

namespace lcc::proto {

void FrameWriter::begin(std::uint8_t type) {
  start_ = out_.size();
  out_.push_back(static_cast<char>(kFrameMagic));
  out_.push_back(static_cast<char>(type));
  out_.append(4, '\0');
}

void FrameWriter::end() {
  const std::size_t len = out_.size() - start_ - kFrameHeaderBytes;
  for (int i = 0; i < 4; ++i) out_[start_ + 2 + i] = static_cast<char>((len >> (8 * i)) & 0xFF);
}

void FrameWriter::u64(std::uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void FrameWriter::str(std::string_view s) {
  u64(s.size());
  out_.append(s);
}

void FieldReader::bad(std::string why) {
  if (!ok_) return;
  ok_ = false;
  why_ = std::move(why);
  rest_ = {};
}

std::uint64_t FieldReader::u64() {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (rest_.empty()) {
      bad("a number runs past the end of the frame");
      return 0;
    }
    const auto b = static_cast<unsigned char>(rest_.front());
    rest_.remove_prefix(1);
    if (shift == 63 && (b & 0x7E) != 0) break;  // the 10th byte holds one bit
    v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) return v;
  }
  bad("a number longer than 64 bits");
  return 0;
}

std::int64_t FieldReader::i64() {
  const std::uint64_t z = u64();
  return static_cast<std::int64_t>(z >> 1) ^ -static_cast<std::int64_t>(z & 1);
}

std::string FieldReader::str() {
  const std::uint64_t n = u64();
  if (!ok_) return {};
  if (n > limits_.max_value_length) {
    bad("a value of " + std::to_string(n) + " bytes (the limit is " + std::to_string(limits_.max_value_length) + ")");
    return {};
  }
  if (n > rest_.size()) {
    bad("a value runs past the end of the frame");
    return {};
  }
  std::string out(rest_.substr(0, n));
  rest_.remove_prefix(n);
  return out;
}

bool FieldReader::boolean() {
  const std::uint64_t v = u64();
  if (v > 1) bad("a flag that is neither 0 nor 1");
  return v == 1;
}

std::size_t FieldReader::count(std::size_t min_bytes) {
  const std::uint64_t n = u64();
  if (!ok_) return 0;
  if (n > limits_.max_batch) {
    bad("a batch of " + std::to_string(n) + " records (the limit is " + std::to_string(limits_.max_batch) + ")");
    return 0;
  }
  if (min_bytes > 0 && n > rest_.size() / min_bytes) {
    bad("a count of " + std::to_string(n) + " records that the frame cannot hold");
    return 0;
  }
  return static_cast<std::size_t>(n);
}

bool FrameSplitter::checkHeader(std::string_view header, std::size_t* len) {
  if (static_cast<unsigned char>(header[0]) != kFrameMagic) {
    why_ = "not a frame of version 1 (first byte 0x" +
           std::string(1, "0123456789abcdef"[(static_cast<unsigned char>(header[0]) >> 4) & 0xF]) +
           std::string(1, "0123456789abcdef"[static_cast<unsigned char>(header[0]) & 0xF]) + ")";
    return false;
  }
  std::size_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<std::size_t>(static_cast<unsigned char>(header[2 + i])) << (8 * i);
  if (n > limits_.max_frame_bytes) {
    why_ = "a frame of " + std::to_string(n) + " bytes (the limit is " + std::to_string(limits_.max_frame_bytes) + ")";
    return false;
  }
  *len = n;
  return true;
}

bool FrameSplitter::checkPartial() {
  if (buf_.empty()) return true;
  std::string header = buf_.substr(0, kFrameHeaderBytes);
  header.resize(kFrameHeaderBytes, '\0');  // the length's missing bytes read as 0: never over the limit
  std::size_t len = 0;
  return checkHeader(header, &len);
}

}  // namespace lcc::proto
