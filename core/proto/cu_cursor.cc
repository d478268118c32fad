#include "proto/cu_cursor.h"

#include <algorithm>
#include <array>

#include "lcc/support/journal.h"

namespace lcc::proto {
namespace {

constexpr std::string_view kBase64Url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void putVarint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Reads a varint at *at; false when it runs past the end or past 64 bits, or is not
// the shortest form (so that one cursor has one token).
bool getVarint(std::string_view in, std::size_t* at, std::uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*at >= in.size()) return false;
    const auto b = static_cast<unsigned char>(in[(*at)++]);
    if (shift == 63 && b > 1) return false;
    *v |= std::uint64_t(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return b != 0 || shift == 0;
  }
  return false;
}

std::string base64Url(std::string_view bytes) {
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kBase64Url[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(kBase64Url[(acc << (6 - bits)) & 63]);
  return out;
}

// Strict: only the alphabet, no padding, and the unused low bits of the last
// character zero (one token per byte string).
bool unBase64Url(std::string_view text, std::string* out) {
  std::array<int, 256> value{};
  value.fill(-1);
  for (std::size_t i = 0; i < kBase64Url.size(); ++i) value[static_cast<unsigned char>(kBase64Url[i])] = int(i);
  if (text.size() % 4 == 1) return false;
  std::uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : text) {
    if (value[c] < 0) return false;
    acc = (acc << 6) | std::uint32_t(value[c]);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return (acc & ((1u << bits) - 1)) == 0;
}

Status bad(const std::string& why) { return Status::invalidArgument("the cursor token " + why); }

}  // namespace

bool validCuSourceId(std::string_view id) {
  if (id.empty() || id.size() > kCuSourceIdMaxLength) return false;
  return std::all_of(id.begin(), id.end(), [](char c) { return kCuSourceIdChars.find(c) != std::string_view::npos; });
}

ChangeSeq CuCursor::seqOf(std::string_view source) const {
  auto it = std::lower_bound(parts_.begin(), parts_.end(), source,
                             [](const Part& p, std::string_view s) { return p.source < s; });
  return it != parts_.end() && it->source == source ? it->seq : 0;
}

Status CuCursor::set(std::string_view source, ChangeSeq seq) {
  if (!validCuSourceId(source)) return Status::invalidArgument("not a source id: " + std::string(source));
  auto it = std::lower_bound(parts_.begin(), parts_.end(), source,
                             [](const Part& p, std::string_view s) { return p.source < s; });
  if (it != parts_.end() && it->source == source) {
    it->seq = seq;
    return Status::ok();
  }
  if (parts_.size() >= kCuCursorMaxSources) {
    return Status::invalidArgument("a cursor holds at most " + std::to_string(kCuCursorMaxSources) + " sources");
  }
  parts_.insert(it, Part{std::string(source), seq});
  return Status::ok();
}

bool looksLikeCuCursor(std::string_view text) { return text.substr(0, 1) == "c"; }

std::string encodeCuCursor(const CuCursor& cursor) {
  std::string bytes;
  putVarint(bytes, cursor.parts().size());
  for (const auto& p : cursor.parts()) {
    putVarint(bytes, p.source.size());
    bytes += p.source;
    putVarint(bytes, p.seq);
  }
  const std::uint32_t crc = crc32cExtend(0, bytes.data(), bytes.size());
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  return std::string(kCuCursorPrefix) + base64Url(bytes);
}

Result<CuCursor> decodeCuCursor(std::string_view token) {
  if (token.size() > kCuCursorMaxLength) return bad("is longer than " + std::to_string(kCuCursorMaxLength) + " characters");
  if (token.substr(0, kCuCursorPrefix.size()) != kCuCursorPrefix) {
    return bad("must start with " + std::string(kCuCursorPrefix) + " (a cursor of another version, or not a cursor)");
  }
  std::string bytes;
  if (!unBase64Url(token.substr(kCuCursorPrefix.size()), &bytes) || bytes.size() < 5) {
    return bad("is mangled: not base64url (copy last_seq or X-LCC-Last-Seq whole)");
  }
  const std::size_t body = bytes.size() - 4;
  std::uint32_t crc = 0;
  for (int i = 0; i < 4; ++i) crc |= std::uint32_t(static_cast<unsigned char>(bytes[body + i])) << (8 * i);
  if (crc != crc32cExtend(0, bytes.data(), body)) return bad("is mangled: its checksum does not match");
  const std::string_view in(bytes.data(), body);
  std::size_t at = 0;
  std::uint64_t n = 0;
  if (!getVarint(in, &at, &n) || n > kCuCursorMaxSources) return bad("holds a bad number of sources");
  CuCursor out;
  std::string previous;
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint64_t len = 0, seq = 0;
    if (!getVarint(in, &at, &len) || len > kCuSourceIdMaxLength || in.size() - at < len) return bad("is truncated");
    std::string source(in.substr(at, len));
    at += len;
    if (!getVarint(in, &at, &seq)) return bad("is truncated");
    if (!validCuSourceId(source)) return bad("names a bad source id");
    if (i > 0 && source <= previous) return bad("lists its sources out of order");
    LCC_RETURN_IF_ERROR(out.set(source, seq));
    previous = std::move(source);
  }
  if (at != in.size()) return bad("has bytes after its last source");
  return out;
}

}  // namespace lcc::proto
