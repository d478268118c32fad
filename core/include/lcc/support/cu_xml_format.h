// cu_xml_format.h — the XML answer of docs/protocol.md §3, piece by piece, and base64.
//
// WHO: the cu-xml and cu-tar plugins (the answer and MANIFEST.xml), the C API (base64
// decoding), the CU. Pure functions on strings; part of the support library
// (core/support, lcc_support), which each plugin links statically.
// Output is always well-formed XML 1.0 whatever the record holds: text that is not
// valid UTF-8 or holds characters XML cannot carry is repaired (URLs: percent-encoded;
// other text: U+FFFD), never passed through.
// THREADS: pure functions; encoder/decoder objects are used by one thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lcc/exporter.h"
#include "lcc/types.h"

namespace lcc::proto {

// Escapes `s` for an attribute value or element text. Invalid UTF-8 and characters
// not allowed in XML 1.0 become U+FFFD.
void appendXmlText(std::string& out, std::string_view s);
// Same for a URL: offending bytes become %XX (the URL means the same).
void appendXmlUrl(std::string& out, std::string_view url);

// "<?xml ...?>\n<lococa:result xmlns:lococa=... count="N" last_seq="S">\n"
std::string resultStartTag(std::uint64_t count, ChangeSeq last_seq);
// The same for an export: last_seq is lastSeqText(header) (a merged answer's cursor
// token), and a merged answer's `unreachable` sources are an attribute when there are any.
std::string resultStartTag(std::uint64_t count, const ExportHeader& header);
inline constexpr std::string_view kResultEndTag = "</lococa:result>\n";

// Appends `<url seq=.. pid=.. c=.. m=..` and the record's other attributes (b, f, st,
// mt, sz, md5, stored, deleted, and source in a merged answer), without closing the tag.
void appendUrlOpen(std::string& out, const ContentRecord& r);

// Streaming base64 (RFC 4648, no line breaks).
class Base64Encoder {
 public:
  void update(const char* data, std::size_t n, std::string& out);
  void finish(std::string& out);  // pads the last group

 private:
  unsigned char carry_[2] = {0, 0};
  std::size_t carry_len_ = 0;
};

// Streaming base64 decoding; whitespace is skipped. Returns false on a character
// that is not base64 or data after padding.
class Base64Decoder {
 public:
  bool update(std::string_view in, std::string& out);
  bool finish();  // false when the input ended inside a group

 private:
  std::uint32_t acc_ = 0;
  int bits_ = 0;
  int quad_ = 0;  // characters of the current group seen
  bool padded_ = false;
};

}  // namespace lcc::proto
