// url/url_norm.h — the one normal form of an http(s) URL in the LCC (docs/security.md).
//
// WHO CALLS IT: the UNS (c, f, b of a set and the provider's prefixes), the admin API
// and the RS (prefixes before they are stored), fetch-curl (the URL it fetches and every
// redirect target). Pure functions, no state, thread-safe.
//
// The normal form (RFC 3986 §6.2.2–6.2.3, WHATWG URL where browsers and curl agree):
//  - scheme http or https, lower case, followed by "//"; no userinfo;
//  - host lower case, IDNs as A-labels (UTS #46, non-transitional), IPv4 in dotted
//    decimal (WHATWG number forms such as 0x7f.1 are read), IPv6 as "[...]" in RFC 5952 form;
//  - the scheme's default port left out;
//  - percent-encoding: unreserved characters decoded, hex digits upper case, bytes and
//    characters that may not appear raw encoded; %2F and %5C stay encoded;
//  - dot segments removed (also spelled %2E), an empty path is "/";
//  - query and fragment kept, with their percent-encoding normalised the same way.
// Refused (the caller answers 201): userinfo, a raw '\', white space, control
// characters, NUL (also %00), bad or overlong UTF-8 (also percent-encoded overlong
// sequences), '%' without two hex digits, a dot segment hidden behind ';', %2F or %5C,
// a double-encoded dot, slash or backslash (%252E, %252F, %255C), bad ports and hosts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lcc/status.h"

namespace lcc::url {

inline constexpr std::size_t kMaxUrlLength = 8192;

// A URL in normal form, cut into its parts.
struct UrlParts {
  std::string scheme;                   // "http" or "https"
  std::string host;                     // A-labels, dotted IPv4, or "[v6]"
  std::uint16_t port = 0;               // 0: the scheme's default
  std::string path;                     // starts with '/'
  std::optional<std::string> query;     // without the '?'
  std::optional<std::string> fragment;  // without the '#'
};

// The normal form of `input`, or invalidArgument saying why it has none (protocol 201).
// Inputs and results longer than max_length are refused.
[[nodiscard]] Result<std::string> normalizeUrl(std::string_view input, std::size_t max_length = kMaxUrlLength);

// A prefix: the normal form, without query or fragment, its path ending at a segment
// boundary ('/' appended when missing: "http://a/docs" becomes "http://a/docs/").
[[nodiscard]] Result<std::string> normalizePrefix(std::string_view input, std::size_t max_length = kMaxUrlLength);

// Cuts a URL that is already in normal form; invalidArgument if it is not.
[[nodiscard]] Result<UrlParts> splitNormalUrl(std::string_view normal);

// Whether `normal_url` lies under `normal_prefix`: same scheme, host and port, and the
// URL's path starts with the prefix's path, which ends with '/'. Both must be in
// normal form (normalizeUrl, normalizePrefix); then this is a plain comparison.
bool underPrefix(std::string_view normal_url, std::string_view normal_prefix);

// A provider's stored prefixes in normal form; one that has none (userinfo, a bad host)
// is left out, so it covers nothing.
std::vector<std::string> normalPrefixes(const std::vector<std::string>& prefixes,
                                        std::size_t max_length = kMaxUrlLength);
// Whether `normal_url` lies under one of `normal_prefixes` (underPrefix).
bool underAnyPrefix(std::string_view normal_url, const std::vector<std::string>& normal_prefixes);

// "scheme://host[:port]/" of a URL in normal form ("" if it is not one).
std::string originOf(std::string_view normal_url);

// Joins parts back into a URL (the inverse of splitNormalUrl).
std::string joinUrl(const UrlParts& parts);

namespace detail {
// The host part of an authority (without port), normalised; invalidArgument on failure.
Result<std::string> normalizeHost(std::string_view host);
}  // namespace detail

}  // namespace lcc::url
