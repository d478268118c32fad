// record_codec.h — the two list columns of the providers table (prefixes, errors)
// as compact, length-prefixed bytes. Any bytes round-trip (no text encoding rules).
//
// Format: a version byte (1), a varint count, then per item its fields in order:
// strings as varint length + bytes, integers as zig-zag varints, optionals as a
// presence byte (0/1) then the value.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lcc/types.h"

namespace lcc::plugins::sqlite {

std::string encodeStringList(const std::vector<std::string>& items);
std::optional<std::vector<std::string>> decodeStringList(std::string_view bytes);

std::string encodeErrorList(const std::vector<FetchErrorEntry>& errors);
std::optional<std::vector<FetchErrorEntry>> decodeErrorList(std::string_view bytes);

}  // namespace lcc::plugins::sqlite
