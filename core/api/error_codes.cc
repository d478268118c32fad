// error_codes.cc — the wire text of each protocol error code (lcc/error_codes.h).
#include "lcc/error_codes.h"

namespace lcc {
namespace {

constexpr std::string_view kUnknown = "unknown error";

}  // namespace

std::string_view errorCodeMessage(ErrorCode code) {
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
    case ErrorCode::kChangesPurged: return "changes purged; take a full export";
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
    case ErrorCode::kProviderQuotaExceeded: return "provider quota exceeded: content not stored";
  }
  return kUnknown;
}

bool isKnownErrorCode(unsigned v) {
  if (v > 0xffff) return false;
  return errorCodeMessage(static_cast<ErrorCode>(v)) != kUnknown;
}

}  // namespace lcc
