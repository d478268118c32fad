#include "proto/cu_cursor.h"

#include <algorithm>

#include "lcc/support/cu_xml_format.h"
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

// base64url without padding: the support library's base64 with two letters swapped.
std::string base64Url(std::string_view bytes) {
  std::string out;
  Base64Encoder enc;
  enc.update(bytes.data(), bytes.size(), out);
  enc.finish(out);
  while (!out.empty() && out.back() == '=') out.pop_back();
  std::replace(out.begin(), out.end(), '+', '-');
  std::replace(out.begin(), out.end(), '/', '_');
  return out;
}

// Strict: only what base64Url() writes for some bytes is accepted (one token per byte
// string), checked by writing the decoded bytes again.
bool unBase64Url(std::string_view text, std::string* out) {
  if (text.find_first_not_of(kBase64Url) != std::string_view::npos) return false;
  std::string std_text(text);
  std::replace(std_text.begin(), std_text.end(), '-', '+');
  std::replace(std_text.begin(), std_text.end(), '_', '/');
  std_text.append((4 - std_text.size() % 4) % 4, '=');
  Base64Decoder dec;
  if (!dec.update(std_text, *out) || !dec.finish()) return false;
  return base64Url(*out) == text;
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
