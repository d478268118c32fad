// url_codec.h — percent-encoding for the HTTP port: request paths, query strings and
// urlencoded forms (server side) and the same encoding for clients (lcc).
// Pure functions, no state.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace lcc::http {

// Decodes %XX escapes (and '+' as a space when `plus_is_space`); nullopt on a
// malformed escape.
std::optional<std::string> percentDecode(std::string_view in, bool plus_is_space);
// Parses "a=1&b=x+y&c" into `out` (appends); false on a malformed escape.
bool parseQuery(std::string_view in, std::multimap<std::string, std::string>* out);
// Encodes everything but unreserved characters (RFC 3986) and the characters in
// `also_keep` (e.g. "/" for a path).
std::string percentEncode(std::string_view in, std::string_view also_keep = {});
// True for an absolute http:// or https:// URL with a host and no spaces or control
// characters, at most `max_length` long; otherwise false and `why` says what is wrong.
bool isHttpUrl(std::string_view url, std::string* why, std::size_t max_length = 2048);
// `s` without leading and trailing spaces, tabs, CR and LF.
std::string trimSpace(std::string_view s);
// A decimal number within [0, max] (digits only, no sign); nullopt otherwise.
std::optional<std::uint64_t> parseUnsigned(std::string_view s, std::uint64_t max);
// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string htmlEscape(std::string_view in);

}  // namespace lcc::http
