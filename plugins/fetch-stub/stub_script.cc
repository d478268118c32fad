#include "stub_script.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>

namespace lcc::plugins::stub {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<std::int64_t> parseUnsigned(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// "123" plus a suffix from `units`.
std::optional<std::int64_t> parseWithUnits(std::string_view s,
                                           std::initializer_list<std::pair<std::string_view, std::int64_t>> units) {
  s = trim(s);
  std::size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  auto n = parseUnsigned(s.substr(0, digits));
  if (!n) return std::nullopt;
  std::string_view suffix = trim(s.substr(digits));
  for (const auto& [name, mult] : units) {
    if (suffix == name) {
      if (*n > INT64_MAX / mult) return std::nullopt;
      return *n * mult;
    }
  }
  return std::nullopt;
}

std::string percentDecode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else if (s[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

std::optional<std::int64_t> parseStubDuration(std::string_view s) {
  return parseWithUnits(s, {{"", 1}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}});
}

std::optional<std::int64_t> parseStubSize(std::string_view s) {
  return parseWithUnits(s, {{"", 1},
                            {"B", 1},
                            {"KiB", 1024},
                            {"MiB", 1024 * 1024},
                            {"GiB", 1024LL * 1024 * 1024},
                            {"KB", 1000},
                            {"MB", 1000 * 1000},
                            {"GB", 1000LL * 1000 * 1000}});
}

std::optional<std::int64_t> parseStubTime(std::string_view s) {
  s = trim(s);
  if (auto n = parseUnsigned(s)) return n;
  // YYYY-MM-DDTHH:MM:SS[.fff](Z|+hh:mm|-hh:mm)
  auto num = [&](std::size_t pos, std::size_t len) -> std::optional<int> {
    if (pos + len > s.size()) return std::nullopt;
    auto v = parseUnsigned(s.substr(pos, len));
    if (!v) return std::nullopt;
    return static_cast<int>(*v);
  };
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  auto y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2), se = num(17, 2);
  if (!y || !mo || !d || !h || !mi || !se || *mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 ||
      *se > 60) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) ++pos;
  }
  std::int64_t offset = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z') && pos + 1 == s.size()) {
    offset = 0;
  } else if (pos + 6 == s.size() && (s[pos] == '+' || s[pos] == '-') && s[pos + 3] == ':') {
    auto oh = num(pos + 1, 2), om = num(pos + 4, 2);
    if (!oh || !om) return std::nullopt;
    offset = (*oh * 3600 + *om * 60) * (s[pos] == '+' ? 1 : -1);
  } else {
    return std::nullopt;
  }
  using namespace std::chrono;
  year_month_day ymd{year(*y), month(static_cast<unsigned>(*mo)), day(static_cast<unsigned>(*d))};
  if (!ymd.ok()) return std::nullopt;
  std::int64_t days = sys_days(ymd).time_since_epoch().count();
  return days * 86400 + *h * 3600 + *mi * 60 + *se - offset;
}

void Directives::overlay(const Directives& o) {
  if (o.status) status = o.status;
  if (o.code) code = o.code;
  if (o.delay) delay = o.delay;
  if (o.size) size = o.size;
  if (o.mime) mime = o.mime;
  if (o.lm) lm = o.lm;
  if (o.etag) etag = o.etag;
  if (o.retry_after) retry_after = o.retry_after;
  if (o.hang) hang = o.hang;
  if (o.md5) md5 = o.md5;
}

Status applyDirective(std::string_view name, std::string_view value, Directives* d) {
  if (name.substr(0, 5) == "stub_") name.remove_prefix(5);
  const std::string v(value);
  auto bad = [&](const char* want) {
    return Status::invalidArgument("stub_" + std::string(name) + ": expected " + want + " (got '" + v + "')");
  };
  if (name == "status") {
    auto n = parseUnsigned(value);
    if (!n || *n < 100 || *n > 599) return bad("an HTTP status 100-599");
    d->status = static_cast<int>(*n);
  } else if (name == "code") {
    auto n = parseUnsigned(value);
    if (!n || !isKnownErrorCode(static_cast<unsigned>(*n))) return bad("a protocol error code (docs/protocol.md §2)");
    d->code = static_cast<ErrorCode>(*n);
  } else if (name == "delay") {
    auto n = parseStubDuration(value);
    if (!n) return bad("a duration like 500ms or 2s");
    d->delay = Millis(*n);
  } else if (name == "size") {
    auto n = parseStubSize(value);
    if (!n) return bad("a size like 12345 or 64KiB");
    d->size = static_cast<std::uint64_t>(*n);
  } else if (name == "mime") {
    if (value.empty()) return bad("a MIME type");
    d->mime = v;
  } else if (name == "lm") {
    auto n = parseStubTime(value);
    if (!n) return bad("an RFC 3339 time or seconds since the epoch");
    d->lm = *n;
  } else if (name == "etag") {
    if (!isValidEtag(value)) return bad("an entity tag (1-256 bytes of printable ASCII)");
    d->etag = v;
  } else if (name == "retry_after") {
    auto n = parseUnsigned(value);
    if (!n) return bad("seconds");
    d->retry_after = Millis(*n * 1000);
  } else if (name == "hang") {
    if (value == "1" || value == "yes" || value == "true" || value.empty()) {
      d->hang = true;
    } else if (value == "0" || value == "no" || value == "false") {
      d->hang = false;
    } else {
      return bad("yes or no");
    }
  } else if (name == "md5") {
    if (value.size() != 32) return bad("32 hex digits");
    d->md5 = v;
  } else {
    return Status::invalidArgument("unknown directive stub_" + std::string(name));
  }
  return Status::ok();
}

Result<Directives> directivesFromUrl(std::string_view url) {
  Directives d;
  auto q = url.find('?');
  if (q == std::string_view::npos) return d;
  std::string_view query = url.substr(q + 1);
  if (auto hash = query.find('#'); hash != std::string_view::npos) query = query.substr(0, hash);
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    auto eq = part.find('=');
    std::string name = percentDecode(part.substr(0, eq));
    if (name.rfind("stub_", 0) != 0) continue;
    std::string value = eq == std::string_view::npos ? std::string() : percentDecode(part.substr(eq + 1));
    LCC_RETURN_IF_ERROR(applyDirective(name, value, &d));
  }
  return d;
}

Result<Script> Script::parse(std::string_view text, const std::string& name) {
  Script s;
  int line_no = 0;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string_view::npos &&
                                    (hash == 0 || std::isspace(static_cast<unsigned char>(line[hash - 1])))) {
      line = line.substr(0, hash);
    }
    line = trim(line);
    if (line.empty()) continue;
    Rule rule;
    rule.line = line_no;
    bool first = true;
    while (!line.empty()) {
      std::size_t end = 0;
      while (end < line.size() && !std::isspace(static_cast<unsigned char>(line[end]))) ++end;
      std::string_view word = line.substr(0, end);
      line = trim(line.substr(end));
      if (first) {
        rule.prefix = std::string(word);
        first = false;
        continue;
      }
      auto eq = word.find('=');
      if (eq == std::string_view::npos) {
        return Status::invalidArgument(name + ":" + std::to_string(line_no) + ": expected directive=value (got '" +
                                       std::string(word) + "')");
      }
      if (word.substr(0, eq) == "times") {
        auto n = parseUnsigned(word.substr(eq + 1));
        if (!n || *n == 0) {
          return Status::invalidArgument(name + ":" + std::to_string(line_no) + ": times: expected a count >= 1");
        }
        rule.times = static_cast<std::uint64_t>(*n);
        continue;
      }
      if (Status st = applyDirective(word.substr(0, eq), word.substr(eq + 1), &rule.directives); !st.isOk()) {
        return Status::invalidArgument(name + ":" + std::to_string(line_no) + ": " + st.message());
      }
    }
    s.rules_.push_back(std::move(rule));
  }
  return s;
}

Directives Script::lookup(std::string_view url) {
  std::lock_guard<std::mutex> lock(mu_);
  Rule* best = nullptr;
  for (auto& r : rules_) {
    if (r.times && *r.times == 0) continue;
    if (url.substr(0, r.prefix.size()) != r.prefix) continue;
    if (best == nullptr || r.prefix.size() > best->prefix.size()) best = &r;
  }
  if (best == nullptr) return {};
  if (best->times) --*best->times;
  return best->directives;
}

}  // namespace lcc::plugins::stub
