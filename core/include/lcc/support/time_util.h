// time_util.h — RFC 3339 times on the wire (docs/protocol.md §0, "Times").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lcc/types.h"

namespace lcc {

// The times an RFC 3339 string can name: 0000-01-01T00:00:00Z to 9999-12-31T23:59:59Z.
inline constexpr std::int64_t kMinRfc3339Seconds = -62167219200;
inline constexpr std::int64_t kMaxRfc3339Seconds = 253402300799;

// "2024-05-01T12:00:00Z" for seconds since the epoch (a four-digit year; times outside
// the range above are clamped to it).
std::string formatRfc3339(std::int64_t unix_seconds);
// The same 20 characters appended to `out` (no allocation beyond out's growth).
void appendRfc3339(std::string& out, std::int64_t unix_seconds);
std::string formatRfc3339(WallTime t);  // truncated to seconds

// Accepts RFC 3339 ("2024-05-01T12:00:00Z", "...+02:00", fractional seconds) or an
// integer of seconds since the epoch. Returns seconds since the epoch; nullopt outside
// kMinRfc3339Seconds..kMaxRfc3339Seconds, so every time it returns formats back.
std::optional<std::int64_t> parseTime(std::string_view text);

// W3C Datetime (the profile of ISO 8601 that sitemaps use for lastmod): "2024",
// "2024-05", "2024-05-01", "2024-05-01T12:00+02:00", "2024-05-01T12:00:00Z",
// "2024-05-01T12:00:00.5-03:00". A date alone is its first second, UTC.
std::optional<std::int64_t> parseW3cDatetime(std::string_view text);
// Parses "250ms", "30s", "5m", "2h", "1d", "1w" or bare milliseconds.
std::optional<std::int64_t> parseDurationMs(std::string_view text);
// Parses "512", "64KiB", "50MiB", "2GiB", "1TiB", "10KB", "5MB", "1GB"; bytes.
std::optional<std::int64_t> parseSizeBytes(std::string_view text);

}  // namespace lcc
