// status.cc — Status's names and text (lcc/status.h).
#include "lcc/status.h"

namespace lcc {

std::string_view statusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kCorruption: return "Corruption";
    case StatusCode::kIOError: return "IOError";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotSupported: return "NotSupported";
    case StatusCode::kBusy: return "Busy";
    case StatusCode::kAborted: return "Aborted";
    case StatusCode::kInternal: return "Internal";
  }
  return "Unknown";
}

Status Status::withContext(std::string_view context) const {
  if (isOk()) return *this;
  std::string msg(context);
  msg += ": ";
  msg += message_;
  return Status(code_, std::move(msg));
}

std::string Status::toString() const {
  if (isOk()) return "OK";
  std::string s(statusCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

}  // namespace lcc
