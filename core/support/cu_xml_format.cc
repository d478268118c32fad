#include "lcc/support/cu_xml_format.h"

#include "lcc/support/time_util.h"

namespace lcc::proto {
namespace {

constexpr std::string_view kNs = "http://www.lococa.org/1.0";
constexpr char kHex[] = "0123456789ABCDEF";

// Length of the valid UTF-8 sequence at s[i] holding a character XML 1.0 allows,
// or 0 when there is none. ASCII is handled by the callers.
std::size_t validXmlSequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  std::size_t len;
  std::uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  // Overlong forms, surrogates, beyond U+10FFFF, U+FFFE/U+FFFF.
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
  if (cp == 0xFFFE || cp == 0xFFFF) return 0;
  return len;
}

// Appends s escaped; `bad` is called for each byte that cannot go through.
template <typename Bad>
void appendEscaped(std::string& out, std::string_view s, Bad bad) {
  std::size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        case '\t': out += "&#9;"; break;
        case '\n': out += "&#10;"; break;
        case '\r': out += "&#13;"; break;
        default:
          if (c < 0x20 || c == 0x7F) {
            bad(out, c);
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    std::size_t len = validXmlSequence(s, i);
    if (len == 0) {
      bad(out, c);
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
}

void appendAttr(std::string& out, std::string_view name, std::string_view value) {
  out.push_back(' ');
  out += name;
  out += "=\"";
  appendXmlText(out, value);
  out.push_back('"');
}

void appendUrlAttr(std::string& out, std::string_view name, std::string_view value) {
  out.push_back(' ');
  out += name;
  out += "=\"";
  appendXmlUrl(out, value);
  out.push_back('"');
}

constexpr signed char kBase64Value(char c) {
  return (c >= 'A' && c <= 'Z')   ? static_cast<signed char>(c - 'A')
         : (c >= 'a' && c <= 'z') ? static_cast<signed char>(c - 'a' + 26)
         : (c >= '0' && c <= '9') ? static_cast<signed char>(c - '0' + 52)
         : c == '+'               ? 62
         : c == '/'               ? 63
                                  : -1;
}

constexpr char kBase64Chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

void appendXmlText(std::string& out, std::string_view s) {
  appendEscaped(out, s, [](std::string& o, unsigned char) { o += "\xEF\xBF\xBD"; });
}

void appendXmlUrl(std::string& out, std::string_view url) {
  appendEscaped(out, url, [](std::string& o, unsigned char c) {
    o.push_back('%');
    o.push_back(kHex[c >> 4]);
    o.push_back(kHex[c & 15]);
  });
}

namespace {

std::string startTag(std::uint64_t count, std::string_view last_seq, std::string_view unreachable) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<lococa:result xmlns:lococa=\"";
  out += kNs;
  out += "\" count=\"" + std::to_string(count) + "\"";
  appendAttr(out, "last_seq", last_seq);
  if (!unreachable.empty()) appendAttr(out, "unreachable", unreachable);
  out += ">\n";
  return out;
}

}  // namespace

std::string resultStartTag(std::uint64_t count, ChangeSeq last_seq) {
  return startTag(count, std::to_string(last_seq), "");
}

std::string resultStartTag(std::uint64_t count, const ExportHeader& header) {
  return startTag(count, lastSeqText(header), header.unreachable);
}

void appendUrlOpen(std::string& out, const ContentRecord& r) {
  out += "<url seq=\"" + std::to_string(r.seq) + "\" pid=\"" + std::to_string(r.key.pid) + "\"";
  appendUrlAttr(out, "c", r.key.url);
  appendAttr(out, "m", r.key.mime);
  if (!r.deleted) {
    appendUrlAttr(out, "b", r.browse ? *r.browse : r.key.url);
    appendUrlAttr(out, "f", r.fetch.empty() ? r.key.url : r.fetch);
    if (!r.view_tag.empty()) appendAttr(out, "st", r.view_tag);
    if (r.mtime) appendAttr(out, "mt", formatRfc3339(*r.mtime));
    out += " sz=\"" + std::to_string(r.size) + "\"";
    if (!r.md5.empty()) appendAttr(out, "md5", r.md5);
  } else {
    out += " deleted=\"yes\"";
  }
  appendAttr(out, "stored", formatRfc3339(r.stored));
  if (!r.source.empty()) appendAttr(out, "source", r.source);
}

void Base64Encoder::update(const char* data, std::size_t n, std::string& out) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  out.reserve(out.size() + (n + carry_len_) / 3 * 4 + 4);
  std::size_t i = 0;
  // Complete the carried group first.
  while (carry_len_ > 0 && carry_len_ < 3 && i < n) {
    if (carry_len_ == 2) {
      const unsigned v = (carry_[0] << 16) | (carry_[1] << 8) | p[i++];
      out.push_back(kBase64Chars[(v >> 18) & 63]);
      out.push_back(kBase64Chars[(v >> 12) & 63]);
      out.push_back(kBase64Chars[(v >> 6) & 63]);
      out.push_back(kBase64Chars[v & 63]);
      carry_len_ = 0;
    } else {
      carry_[carry_len_++] = p[i++];
    }
  }
  for (; i + 3 <= n; i += 3) {
    const unsigned v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
    char q[4] = {kBase64Chars[(v >> 18) & 63], kBase64Chars[(v >> 12) & 63], kBase64Chars[(v >> 6) & 63],
                 kBase64Chars[v & 63]};
    out.append(q, 4);
  }
  while (i < n) carry_[carry_len_++] = p[i++];
}

void Base64Encoder::finish(std::string& out) {
  if (carry_len_ == 1) {
    const unsigned v = carry_[0] << 16;
    out.push_back(kBase64Chars[(v >> 18) & 63]);
    out.push_back(kBase64Chars[(v >> 12) & 63]);
    out += "==";
  } else if (carry_len_ == 2) {
    const unsigned v = (carry_[0] << 16) | (carry_[1] << 8);
    out.push_back(kBase64Chars[(v >> 18) & 63]);
    out.push_back(kBase64Chars[(v >> 12) & 63]);
    out.push_back(kBase64Chars[(v >> 6) & 63]);
    out.push_back('=');
  }
  carry_len_ = 0;
}

bool Base64Decoder::update(std::string_view in, std::string& out) {
  for (char c : in) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      // Padding may only complete a group of 2 or 3 characters.
      if (quad_ < 2) return false;
      padded_ = true;
      if (++quad_ == 4) quad_ = 0, acc_ = 0, bits_ = 0;
      continue;
    }
    if (padded_) return false;
    const signed char v = kBase64Value(c);
    if (v < 0) return false;
    acc_ = (acc_ << 6) | static_cast<std::uint32_t>(v);
    bits_ += 6;
    if (bits_ >= 8) {
      bits_ -= 8;
      out.push_back(static_cast<char>((acc_ >> bits_) & 0xFF));
    }
    if (++quad_ == 4) quad_ = 0, acc_ = 0, bits_ = 0;
  }
  return true;
}

bool Base64Decoder::finish() { return quad_ == 0; }

}  // namespace lcc::proto
