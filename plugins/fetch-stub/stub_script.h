// stub_script.h — what fetch-stub does for a URL: directives from the URL's query
// string (stub_status=404, ...) and from an optional script file. Pure functions.
//
// Script file: one rule per line, "URL-or-prefix directive=value ...", '#' starts a
// comment. Directive names may be written with or without the "stub_" prefix. The
// longest matching prefix wins; `times=N` makes a rule apply to its first N
// matching fetches only (then the next-longest rule, or the defaults, apply).
// Directives in the URL's query string override the script's.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lcc/status.h"
#include "lcc/types.h"

namespace lcc::plugins::stub {

struct Directives {
  std::optional<int> status;              // HTTP status to pretend
  std::optional<ErrorCode> code;          // protocol error code to return as is
  std::optional<Millis> delay;            // on the host clock
  std::optional<std::uint64_t> size;      // body bytes
  std::optional<std::string> mime;        // Content-Type returned
  std::optional<std::int64_t> lm;         // Last-Modified, seconds since the epoch
  std::optional<std::string> etag;        // ETag (lcc::isValidEtag)
  std::optional<Millis> retry_after;
  std::optional<bool> hang;               // never finishes until cancelled or stopped
  std::optional<std::string> md5;         // report this MD5 instead of the real one

  // Fields set in `o` replace those here.
  void overlay(const Directives& o);
};

// Parses one "name=value" (name with or without "stub_"). Error text on failure.
Status applyDirective(std::string_view name, std::string_view value, Directives* d);

// Directives from the query string of `url`; parameters not starting with "stub_"
// are ignored (they are part of the URL).
Result<Directives> directivesFromUrl(std::string_view url);

class Script {
 public:
  struct Rule {
    std::string prefix;
    Directives directives;
    std::optional<std::uint64_t> times;  // remaining uses, when limited
    int line = 0;
  };

  // Parses script text; `name` is used in error messages ("file:line: why").
  static Result<Script> parse(std::string_view text, const std::string& name);

  // The directives for `url` (consumes one use of a limited rule). Thread-safe.
  Directives lookup(std::string_view url);
  std::size_t size() const { return rules_.size(); }

  Script() = default;
  Script(Script&& o) noexcept : rules_(std::move(o.rules_)) {}
  Script& operator=(Script&& o) noexcept {
    rules_ = std::move(o.rules_);
    return *this;
  }

 private:
  std::mutex mu_;
  std::vector<Rule> rules_;
};

std::optional<std::int64_t> parseStubDuration(std::string_view s);  // ms
std::optional<std::int64_t> parseStubSize(std::string_view s);      // bytes
std::optional<std::int64_t> parseStubTime(std::string_view s);      // RFC 3339 or epoch seconds

}  // namespace lcc::plugins::stub
