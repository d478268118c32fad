#include "lcc/support/time_util.h"

#include <algorithm>
#include <charconv>

namespace lcc {
namespace {

// Days from 1970-01-01 to y-m-d (proleptic Gregorian), Howard Hinnant's algorithm.
std::int64_t daysFromCivil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

struct CivilDate {
  std::int64_t year;
  unsigned month, day;
};

// y-m-d of a day count from 1970-01-01 (proleptic Gregorian), the inverse of daysFromCivil.
CivilDate civilFromDays(std::int64_t z) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2), m, d};
}

// Two decimal digits of v (0..99).
void put2(char* p, unsigned v) {
  p[0] = static_cast<char>('0' + v / 10);
  p[1] = static_cast<char>('0' + v % 10);
}

bool readInt(std::string_view s, std::size_t pos, std::size_t len, int& out) {
  if (pos + len > s.size()) return false;
  out = 0;
  for (std::size_t i = pos; i < pos + len; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

std::optional<std::int64_t> parseNumberWithSuffix(std::string_view text,
                                                  std::initializer_list<std::pair<std::string_view, std::int64_t>> units) {
  if (text.empty()) return std::nullopt;
  std::int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || value < 0) return std::nullopt;
  std::string_view suffix(ptr, static_cast<std::size_t>(text.data() + text.size() - ptr));
  while (!suffix.empty() && suffix.front() == ' ') suffix.remove_prefix(1);
  for (const auto& [name, mult] : units) {
    if (suffix == name) {
      if (mult != 0 && value > INT64_MAX / mult) return std::nullopt;
      return value * mult;
    }
  }
  return std::nullopt;
}

}  // namespace

void appendRfc3339(std::string& out, std::int64_t unix_seconds) {
  // A four-digit year, always: strftime's %Y wrote "24-05-01…" for the year 24, which
  // parseTime() refuses (found by uns_qm_fuzz: a UNS could spool a set its QM refuses).
  // Written by hand, not with gmtime_r and snprintf: it runs once per URL of a set
  // (docs/design-decisions.md, "CPU per URL").
  const std::int64_t t = std::clamp(unix_seconds, kMinRfc3339Seconds, kMaxRfc3339Seconds);
  const std::int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
  const auto secs = static_cast<unsigned>(t - days * 86400);
  const CivilDate d = civilFromDays(days);
  char buf[20];
  put2(buf, static_cast<unsigned>(d.year / 100));
  put2(buf + 2, static_cast<unsigned>(d.year % 100));
  buf[4] = '-';
  put2(buf + 5, d.month);
  buf[7] = '-';
  put2(buf + 8, d.day);
  buf[10] = 'T';
  put2(buf + 11, secs / 3600);
  buf[13] = ':';
  put2(buf + 14, secs / 60 % 60);
  buf[16] = ':';
  put2(buf + 17, secs % 60);
  buf[19] = 'Z';
  out.append(buf, sizeof buf);
}

std::string formatRfc3339(std::int64_t unix_seconds) {
  std::string out;
  appendRfc3339(out, unix_seconds);
  return out;
}

std::string formatRfc3339(WallTime t) {
  auto ms = toUnixMillis(t);
  std::int64_t s = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
  return formatRfc3339(s);
}

std::optional<std::int64_t> parseTime(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool all_digits = true;
  for (char c : s) all_digits = all_digits && c >= '0' && c <= '9';
  if (all_digits) {
    if (s.size() > 12) return std::nullopt;
    std::int64_t v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    if (v > kMaxRfc3339Seconds) return std::nullopt;
    return v;
  }
  int year, mon, day, hour, min, sec;
  if (s.size() < 20) return std::nullopt;
  if (!readInt(s, 0, 4, year) || s[4] != '-' || !readInt(s, 5, 2, mon) || s[7] != '-' ||
      !readInt(s, 8, 2, day) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !readInt(s, 11, 2, hour) ||
      s[13] != ':' || !readInt(s, 14, 2, min) || s[16] != ':' || !readInt(s, 17, 2, sec)) {
    return std::nullopt;
  }
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60) return std::nullopt;
  std::size_t pos = 19;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    std::size_t digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos, ++digits;
    if (digits == 0) return std::nullopt;
  }
  if (pos >= s.size()) return std::nullopt;
  std::int64_t offset = 0;
  if (s[pos] == 'Z' || s[pos] == 'z') {
    ++pos;
  } else if (s[pos] == '+' || s[pos] == '-') {
    int oh, om;
    if (!readInt(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' || !readInt(s, pos + 4, 2, om)) {
      return std::nullopt;
    }
    if (oh > 23 || om > 59) return std::nullopt;
    offset = (oh * 3600 + om * 60) * (s[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  std::int64_t days = daysFromCivil(year, static_cast<unsigned>(mon), static_cast<unsigned>(day));
  const std::int64_t t = days * 86400 + hour * 3600 + min * 60 + (sec == 60 ? 59 : sec) - offset;
  // An offset can move 0000-01-01 or 9999-12-31 out of what formatRfc3339() can write.
  if (t < kMinRfc3339Seconds || t > kMaxRfc3339Seconds) return std::nullopt;
  return t;
}

std::optional<std::int64_t> parseW3cDatetime(std::string_view s) {
  if (s.size() == 4 || s.size() == 7 || s.size() == 10) {
    int year = 0, mon = 1, day = 1;
    if (!readInt(s, 0, 4, year)) return std::nullopt;
    if (s.size() >= 7 && (s[4] != '-' || !readInt(s, 5, 2, mon))) return std::nullopt;
    if (s.size() == 10 && (s[7] != '-' || !readInt(s, 8, 2, day))) return std::nullopt;
    static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mon < 1 || mon > 12 || day < 1 || day > kDays[mon - 1]) return std::nullopt;
    return daysFromCivil(year, static_cast<unsigned>(mon), static_cast<unsigned>(day)) * 86400;
  }
  if (s.size() < 17 || s[10] != 'T' || s[13] != ':') return std::nullopt;
  if (s[16] == ':') return parseTime(s);
  // hh:mm without seconds: the same instant with ":00".
  std::string with_seconds(s.substr(0, 16));
  with_seconds += ":00";
  with_seconds += s.substr(16);
  return parseTime(with_seconds);
}

std::optional<std::int64_t> parseDurationMs(std::string_view text) {
  return parseNumberWithSuffix(text, {{"", 1},
                                      {"ms", 1},
                                      {"s", 1000},
                                      {"m", 60'000},
                                      {"h", 3'600'000},
                                      {"d", 86'400'000},
                                      {"w", 604'800'000}});
}

std::optional<std::int64_t> parseSizeBytes(std::string_view text) {
  return parseNumberWithSuffix(text, {{"", 1},
                                      {"B", 1},
                                      {"KiB", 1024LL},
                                      {"MiB", 1024LL * 1024},
                                      {"GiB", 1024LL * 1024 * 1024},
                                      {"TiB", 1024LL * 1024 * 1024 * 1024},
                                      {"KB", 1000LL},
                                      {"MB", 1000LL * 1000},
                                      {"GB", 1000LL * 1000 * 1000},
                                      {"TB", 1000LL * 1000 * 1000 * 1000}});
}

}  // namespace lcc
