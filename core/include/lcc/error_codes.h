// lcc/error_codes.h — the protocol error codes of spec/protocol.md §2.
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
};

// The short English text that goes with a code on the wire.
constexpr std::string_view errorCodeMessage(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNone: return "ok";
    case ErrorCode::kMalformed: return "malformed document or protocol order violated";
    case ErrorCode::kLimitExceeded: return "element or attribute limit exceeded";
    case ErrorCode::kAuthFailed: return "authentication failed";
    case ErrorCode::kNotActive: return "provider not active";
    case ErrorCode::kTooManyConnections: return "too many connections";
    case ErrorCode::kOffline: return "system temporarily off-line, try again later";
    case ErrorCode::kFullSetNotAllowed: return "full set not allowed now";
    case ErrorCode::kSetTooLarge: return "set too large";
    case ErrorCode::kTimeout: return "timed out waiting for data";
    case ErrorCode::kInternal: return "internal error";
    case ErrorCode::kInvalidUrl: return "invalid URL";
    case ErrorCode::kOutsidePrefix: return "URL outside the registered prefixes";
    case ErrorCode::kMimeNotAccepted: return "mime type not accepted";
    case ErrorCode::kInvalidOp: return "invalid op";
    case ErrorCode::kInvalidAttribute: return "invalid attribute value";
    case ErrorCode::kQuotaExceeded: return "provider quota exceeded";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kAccessDenied: return "access denied";
    case ErrorCode::kServerError: return "server error after retries";
    case ErrorCode::kFetchTimeout: return "timed out after retries";
    case ErrorCode::kDnsFailure: return "host name did not resolve after retries";
    case ErrorCode::kConnectFailure: return "connection failed after retries";
    case ErrorCode::kMimeMismatch: return "returned MIME type differs from the declared one";
    case ErrorCode::kTooLarge: return "content larger than the configured maximum";
    case ErrorCode::kMd5Mismatch: return "MD5 differs from the declared one";
    case ErrorCode::kRedirectError: return "redirect not followed: too many, not http/https, or outside fetch.redirects";
    case ErrorCode::kAddressRefused: return "address refused by policy";
    case ErrorCode::kHttpOther: return "HTTP status not stored";
  }
  return "unknown error";
}

constexpr bool isKnownErrorCode(unsigned v) {
  return errorCodeMessage(static_cast<ErrorCode>(v)) != "unknown error";
}

// Fetch errors that are about the whole provider site rather than one URL: the QM
// delays the whole set instead of marking one URL bad (design §6, "Fetching").
constexpr bool isProviderWideFetchError(ErrorCode code) {
  return code == ErrorCode::kDnsFailure || code == ErrorCode::kConnectFailure;
}

// Fetch errors worth retrying for the same URL (up to the configured count).
constexpr bool isRetryableFetchError(ErrorCode code) {
  return code == ErrorCode::kServerError || code == ErrorCode::kFetchTimeout ||
         code == ErrorCode::kDnsFailure || code == ErrorCode::kConnectFailure;
}

}  // namespace lcc
