// lcc/status.h — the error currency of every interface in core/include/lcc.
//
// WHO: everything. A Status is returned by every fallible call that crosses a
// component or plugin boundary; exceptions never do (see CONTRIBUTING.md).
// THREADS: values; copy freely.
// Result<T> is either a T or a non-OK Status.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace lcc {

enum class StatusCode : std::uint8_t {
  kOk = 0,
  kNotFound,         // the thing asked for does not exist
  kCorruption,       // stored bytes are not what was written (checksum, format)
  kIOError,          // the operating system said no (disk full, EIO, fsync failed)
  kInvalidArgument,  // the caller passed something it should not have (bad config value, bad input)
  kNotSupported,     // this implementation does not do that
  kBusy,             // try again later (overload, lock held elsewhere)
  kAborted,          // stopped on request (shutdown, cancel)
  kInternal,         // a bug, or an exception caught at a boundary
};

std::string_view statusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK

  static Status ok() { return Status(); }
  static Status notFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status corruption(std::string msg) { return {StatusCode::kCorruption, std::move(msg)}; }
  static Status ioError(std::string msg) { return {StatusCode::kIOError, std::move(msg)}; }
  static Status invalidArgument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
  static Status notSupported(std::string msg) { return {StatusCode::kNotSupported, std::move(msg)}; }
  static Status busy(std::string msg) { return {StatusCode::kBusy, std::move(msg)}; }
  static Status aborted(std::string msg) { return {StatusCode::kAborted, std::move(msg)}; }
  static Status internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

  bool isOk() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  bool isNotFound() const { return code_ == StatusCode::kNotFound; }
  bool isCorruption() const { return code_ == StatusCode::kCorruption; }
  bool isIOError() const { return code_ == StatusCode::kIOError; }
  bool isBusy() const { return code_ == StatusCode::kBusy; }

  // Returns a copy whose message is "context: message".
  Status withContext(std::string_view context) const;

  // "OK" or "IOError: message".
  std::string toString() const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  Status(StatusCode code, std::string msg) : code_(code), message_(std::move(msg)) {}

  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a value or a non-OK Status. Constructing a Result from an OK Status is a
// programming error and yields an Internal status instead.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status)                      // NOLINT(google-explicit-constructor)
      : v_(status.isOk() ? Status::internal("Result built from an OK status") : std::move(status)) {}

  bool isOk() const { return v_.index() == 0; }
  explicit operator bool() const { return isOk(); }

  const Status& status() const {
    static const Status kOkStatus;
    return isOk() ? kOkStatus : std::get<1>(v_);
  }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  T valueOr(T fallback) const& { return isOk() ? value() : std::move(fallback); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace lcc

#define LCC_STATUS_CONCAT_INNER(a, b) a##b
#define LCC_STATUS_CONCAT(a, b) LCC_STATUS_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define LCC_RETURN_IF_ERROR(expr)                       \
  do {                                                  \
    ::lcc::Status lcc_status_tmp_ = (expr);             \
    if (!lcc_status_tmp_.isOk()) return lcc_status_tmp_; \
  } while (0)

// `LCC_ASSIGN_OR_RETURN(auto x, f());` — declares x from a Result or returns its Status.
#define LCC_ASSIGN_OR_RETURN(lhs, expr) \
  LCC_ASSIGN_OR_RETURN_IMPL(LCC_STATUS_CONCAT(lcc_result_, __LINE__), lhs, expr)
#define LCC_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.isOk()) return tmp.status();           \
  lhs = std::move(tmp).value()
