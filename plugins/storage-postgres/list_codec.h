// list_codec.h — the two list columns of the providers table (prefixes, errors) as
// bytes. Format: the tag byte 'P' (prefixes) or 'E' (errors), then the items. Every
// string is a 4-byte big-endian length and its bytes; every integer 8 bytes
// big-endian; an optional is a byte 0/1 then its value. Any bytes round-trip; a
// decode of anything else (short, trailing bytes, a wrong tag) is nullopt.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lcc/types.h"

namespace lcc::plugins::postgres {

std::string encodePrefixes(const std::vector<std::string>& prefixes);
std::optional<std::vector<std::string>> decodePrefixes(std::string_view bytes);

std::string encodeErrors(const std::vector<FetchErrorEntry>& errors);
std::optional<std::vector<FetchErrorEntry>> decodeErrors(std::string_view bytes);

}  // namespace lcc::plugins::postgres
