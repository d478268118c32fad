#include "record_codec.h"

#include <cstdint>
#include <limits>

namespace lcc::plugins::sqlite {
namespace {

constexpr char kCodecVersion = 1;

class Writer {
 public:
  void u64(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void i64(std::int64_t v) { u64((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63)); }
  void str(std::string_view s) {
    u64(s.size());
    out_.append(s);
  }
  void byte(char c) { out_.push_back(c); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool u64(std::uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= in_.size()) return false;
      const auto b = static_cast<unsigned char>(in_[pos_++]);
      *v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  bool i64(std::int64_t* v) {
    std::uint64_t u;
    if (!u64(&u)) return false;
    *v = static_cast<std::int64_t>((u >> 1) ^ (~(u & 1) + 1));
    return true;
  }
  bool str(std::string* s) {
    std::uint64_t n;
    if (!u64(&n) || n > in_.size() - pos_) return false;
    s->assign(in_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool byte(char* c) {
    if (pos_ >= in_.size()) return false;
    *c = in_[pos_++];
    return true;
  }
  bool done() const { return pos_ == in_.size(); }
  std::size_t left() const { return in_.size() - pos_; }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string encodeStringList(const std::vector<std::string>& items) {
  Writer w;
  w.byte(kCodecVersion);
  w.u64(items.size());
  for (const auto& s : items) w.str(s);
  return w.take();
}

std::optional<std::vector<std::string>> decodeStringList(std::string_view bytes) {
  Reader r(bytes);
  char version;
  std::uint64_t n;
  if (!r.byte(&version) || version != kCodecVersion || !r.u64(&n) || n > r.left()) return std::nullopt;
  std::vector<std::string> out(n);
  for (auto& s : out) {
    if (!r.str(&s)) return std::nullopt;
  }
  if (!r.done()) return std::nullopt;
  return out;
}

std::string encodeErrorList(const std::vector<FetchErrorEntry>& errors) {
  Writer w;
  w.byte(kCodecVersion);
  w.u64(errors.size());
  for (const auto& e : errors) {
    const UrlNotice& n = e.notice;
    w.i64(n.key.pid);
    w.str(n.key.url);
    w.str(n.key.mime);
    w.i64(static_cast<std::int64_t>(n.op));
    w.str(n.view_tag);
    w.byte(n.browse ? 1 : 0);
    if (n.browse) w.str(*n.browse);
    w.str(n.fetch);
    w.byte(n.mtime ? 1 : 0);
    if (n.mtime) w.i64(*n.mtime);
    w.byte(n.size ? 1 : 0);
    if (n.size) w.u64(*n.size);
    w.str(n.md5);
    w.str(n.tod);
    w.i64(static_cast<std::int64_t>(e.code));
    w.i64(e.http_status);
    w.str(e.message);
    w.i64(toUnixMillis(e.when));
  }
  return w.take();
}

std::optional<std::vector<FetchErrorEntry>> decodeErrorList(std::string_view bytes) {
  Reader r(bytes);
  char version;
  std::uint64_t n;
  if (!r.byte(&version) || version != kCodecVersion || !r.u64(&n) || n > r.left()) return std::nullopt;
  std::vector<FetchErrorEntry> out(n);
  for (auto& e : out) {
    UrlNotice& nt = e.notice;
    std::int64_t pid, op, code, http, when;
    char has;
    if (!r.i64(&pid) || pid < 0 || pid > 0xffffffffLL || !r.str(&nt.key.url) || !r.str(&nt.key.mime) ||
        !r.i64(&op) || op < 0 || op > kUrlOpMax || !r.str(&nt.view_tag) || !r.byte(&has)) {
      return std::nullopt;
    }
    nt.key.pid = static_cast<ProviderId>(pid);
    nt.op = static_cast<UrlOp>(op);
    if (has) {
      std::string b;
      if (!r.str(&b)) return std::nullopt;
      nt.browse = std::move(b);
    }
    if (!r.str(&nt.fetch) || !r.byte(&has)) return std::nullopt;
    if (has) {
      std::int64_t m;
      if (!r.i64(&m)) return std::nullopt;
      nt.mtime = m;
    }
    if (!r.byte(&has)) return std::nullopt;
    if (has) {
      std::uint64_t sz;
      if (!r.u64(&sz)) return std::nullopt;
      nt.size = sz;
    }
    if (!r.str(&nt.md5) || !r.str(&nt.tod) || !r.i64(&code) || code < 0 || code > 0xffff || !r.i64(&http) ||
        http < std::numeric_limits<int>::min() || http > std::numeric_limits<int>::max() || !r.str(&e.message) ||
        !r.i64(&when)) {
      return std::nullopt;
    }
    e.code = static_cast<ErrorCode>(code);
    e.http_status = static_cast<int>(http);
    e.when = fromUnixMillis(when);
  }
  if (!r.done()) return std::nullopt;
  return out;
}

}  // namespace lcc::plugins::sqlite
