// lcc/error_codes.h — the protocol error codes of docs/protocol.md §2.
//
// WHO: the UNS (session and url codes), the QM (fetch codes into the PIDB error
// list), fetchers (fetch codes in FetchResult), the CU (query_rejected).
// These numbers cross sockets and are stored: never renumber.
#pragma once

#include <cstdint>
#include <string_view>

namespace lcc {

enum class ErrorCode : std::uint16_t {
  kNone = 0,
  // Session / document level.
  kMalformed = 100,         // malformed XML, DOCTYPE/entities, protocol order violated
  kLimitExceeded = 101,     // element or attribute limit exceeded
  kAuthFailed = 110,        // unknown provider or wrong password
  kNotActive = 111,         // registration not verified, expired or suspended
  kTooManyConnections = 120,
  kOffline = 130,           // try again later
  kFullSetNotAllowed = 131,
  kSetTooLarge = 132,
  kTimeout = 133,
  kInternal = 140,
  kChangesPurged = 150,     // CU: `since seq` older than the tombstone purge horizon (take a full export)
  // Per URL, found by the UNS.
  kInvalidUrl = 201,
  kOutsidePrefix = 202,
  kMimeNotAccepted = 203,
  kInvalidOp = 204,
  kInvalidAttribute = 205,
  kQuotaExceeded = 206,
  // Fetch outcomes.
  kNotFound = 301,
  kAccessDenied = 302,
  kServerError = 303,
  kFetchTimeout = 304,
  kDnsFailure = 305,
  kConnectFailure = 306,
  kMimeMismatch = 307,
  kTooLarge = 308,
  kMd5Mismatch = 309,
  kRedirectError = 310,     // too many redirects, or one outside http/https or fetch.redirects
  kAddressRefused = 311,
  kHttpOther = 312,
  kProviderQuotaExceeded = 313,  // QM: the fetched body would take the provider past its byte quota
};

// The short English text that goes with a code on the wire; "unknown error" for a
// number that is not a code.
std::string_view errorCodeMessage(ErrorCode code);

// True when `v` is the number of a code above (input from the wire or a file).
bool isKnownErrorCode(unsigned v);

// Fetch errors that are about the whole provider site rather than one URL: the QM
// delays the whole set instead of marking one URL bad (design document §6, "Fetching").
constexpr bool isProviderWideFetchError(ErrorCode code) {
  return code == ErrorCode::kDnsFailure || code == ErrorCode::kConnectFailure;
}

}  // namespace lcc
