// codec_util.h — the small helpers every XML codec of core/proto shares: writing an
// attribute, reading a plain decimal. One home, so the codecs agree on what a number
// and an escaped value are.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace lcc::proto {

// A plain decimal (digits only, no sign or spaces) that fits in 64 bits.
bool parseDecimal(std::string_view s, std::uint64_t& out);
template <typename T>
bool parseDecimalAs(std::string_view s, T& out) {
  std::uint64_t v = 0;
  if (!parseDecimal(s, v) || v > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return false;
  out = static_cast<T>(v);
  return true;
}
// A decimal with an optional '-' that fits in a signed 64-bit integer.
bool parseSignedDecimal(std::string_view s, std::int64_t& out);

// Appends ` name="value"` with the value escaped.
void appendAttr(std::string& out, std::string_view name, std::string_view value);

}  // namespace lcc::proto
