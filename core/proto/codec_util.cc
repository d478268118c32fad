#include "proto/codec_util.h"

#include <charconv>

#include "proto/xml_reader.h"

namespace lcc::proto {

bool parseDecimal(std::string_view s, std::uint64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parseSignedDecimal(std::string_view s, std::int64_t& out) {
  if (s.empty() || s.size() > 21) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

void appendAttr(std::string& out, std::string_view name, std::string_view value) {
  out.push_back(' ');
  out.append(name);
  out.append("=\"");
  appendXmlEscaped(out, value);
  out.push_back('"');
}

}  // namespace lcc::proto
