#include "list_codec.h"

#include <cstdint>
#include <climits>

namespace lcc::plugins::postgres {
namespace {

class Out {
 public:
  explicit Out(char tag) { s_.push_back(tag); }
  void u64(std::uint64_t v) {
    for (int shift = 56; shift >= 0; shift -= 8) s_.push_back(static_cast<char>((v >> shift) & 0xff));
  }
  void str(std::string_view v) {
    const auto n = static_cast<std::uint32_t>(v.size());
    for (int shift = 24; shift >= 0; shift -= 8) s_.push_back(static_cast<char>((n >> shift) & 0xff));
    s_.append(v);
  }
  void flag(bool b) { s_.push_back(b ? '\1' : '\0'); }
  std::string take() { return std::move(s_); }

 private:
  std::string s_;
};

class In {
 public:
  In(std::string_view b, char tag) : b_(b) { ok_ = !b_.empty() && b_[0] == tag; pos_ = 1; }
  bool more() const { return ok_ && pos_ < b_.size(); }
  bool done() const { return ok_ && pos_ == b_.size(); }
  std::uint64_t u64() {
    if (!need(8)) return 0;
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(b_[pos_++]);
    return v;
  }
  std::string str() {
    if (!need(4)) return {};
    std::uint32_t n = 0;
    for (int i = 0; i < 4; ++i) n = (n << 8) | static_cast<unsigned char>(b_[pos_++]);
    if (!need(n)) return {};
    std::string v(b_.substr(pos_, n));
    pos_ += n;
    return v;
  }
  bool flag() {
    if (!need(1)) return false;
    const char c = b_[pos_++];
    if (c != '\0' && c != '\1') ok_ = false;
    return c == '\1';
  }
  void fail() { ok_ = false; }

 private:
  bool need(std::size_t n) {
    if (!ok_ || b_.size() - pos_ < n) ok_ = false;
    return ok_;
  }
  std::string_view b_;
  std::size_t pos_ = 0;
  bool ok_ = false;
};

void putNotice(Out& o, const UrlNotice& n) {
  o.u64(n.key.pid);
  o.str(n.key.url);
  o.str(n.key.mime);
  o.u64(static_cast<std::uint64_t>(n.op));
  o.str(n.view_tag);
  o.flag(n.browse.has_value());
  if (n.browse) o.str(*n.browse);
  o.str(n.fetch);
  o.flag(n.mtime.has_value());
  if (n.mtime) o.u64(static_cast<std::uint64_t>(*n.mtime));
  o.flag(n.size.has_value());
  if (n.size) o.u64(*n.size);
  o.str(n.md5);
  o.str(n.tod);
}

UrlNotice getNotice(In& in) {
  UrlNotice n;
  const std::uint64_t pid = in.u64();
  if (pid > 0xffffffffu) in.fail();
  n.key.pid = static_cast<ProviderId>(pid);
  n.key.url = in.str();
  n.key.mime = in.str();
  const std::uint64_t op = in.u64();
  if (op > kUrlOpMax) in.fail();
  n.op = static_cast<UrlOp>(op);
  n.view_tag = in.str();
  if (in.flag()) n.browse = in.str();
  n.fetch = in.str();
  if (in.flag()) n.mtime = static_cast<std::int64_t>(in.u64());
  if (in.flag()) n.size = in.u64();
  n.md5 = in.str();
  n.tod = in.str();
  return n;
}

}  // namespace

std::string encodePrefixes(const std::vector<std::string>& prefixes) {
  Out o('P');
  for (const auto& p : prefixes) o.str(p);
  return o.take();
}

std::optional<std::vector<std::string>> decodePrefixes(std::string_view bytes) {
  In in(bytes, 'P');
  std::vector<std::string> out;
  while (in.more()) out.push_back(in.str());
  if (!in.done()) return std::nullopt;
  return out;
}

std::string encodeErrors(const std::vector<FetchErrorEntry>& errors) {
  Out o('E');
  for (const auto& e : errors) {
    putNotice(o, e.notice);
    o.u64(static_cast<std::uint64_t>(e.code));
    o.u64(static_cast<std::uint64_t>(static_cast<std::int64_t>(e.http_status)));
    o.str(e.message);
    o.u64(static_cast<std::uint64_t>(toUnixMillis(e.when)));
  }
  return o.take();
}

std::optional<std::vector<FetchErrorEntry>> decodeErrors(std::string_view bytes) {
  In in(bytes, 'E');
  std::vector<FetchErrorEntry> out;
  while (in.more()) {
    FetchErrorEntry e;
    e.notice = getNotice(in);
    const std::uint64_t code = in.u64();
    if (code > 0xffff) in.fail();
    e.code = static_cast<ErrorCode>(code);
    const auto status = static_cast<std::int64_t>(in.u64());
    if (status < INT32_MIN || status > INT32_MAX) in.fail();
    e.http_status = static_cast<int>(status);
    e.message = in.str();
    e.when = fromUnixMillis(static_cast<std::int64_t>(in.u64()));
    out.push_back(std::move(e));
  }
  if (!in.done()) return std::nullopt;
  return out;
}

}  // namespace lcc::plugins::postgres
