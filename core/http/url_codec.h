// url_codec.h — percent-encoding for the HTTP port: request paths, query strings and
// urlencoded forms (server side) and the same encoding for clients (lcc).
// Pure functions, no state.
#pragma once

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
// Encodes everything but unreserved characters (RFC 3986) for a query value.
std::string percentEncode(std::string_view in);
// True for an absolute http:// or https:// URL with a host and no spaces or control
// characters, at most `max_length` long; otherwise false and `why` says what is wrong.
bool isHttpUrl(std::string_view url, std::string* why, std::size_t max_length = 2048);
// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string htmlEscape(std::string_view in);

}  // namespace lcc::http
