#include "qm/intake_set.h"

#include <cstring>

namespace lcc::qm {
namespace {

constexpr std::uint8_t kVersion = 1;
enum : std::uint8_t { kHasBrowse = 1, kHasMtime = 2, kHasSize = 4 };

template <typename T>
void putInt(std::string& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xff));
}
void putStr(std::string& out, std::string_view s) {
  putInt<std::uint32_t>(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  bool get(T* v) {
    if (in_.size() - pos_ < sizeof(T) || pos_ > in_.size()) return false;
    std::uint64_t x = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) x |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[pos_ + i])) << (8 * i);
    pos_ += sizeof(T);
    *v = static_cast<T>(x);
    return true;
  }
  bool str(std::string* s) {
    std::uint32_t n = 0;
    if (!get(&n) || in_.size() - pos_ < n) return false;
    s->assign(in_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string encodeIntakeSet(const IntakeSet& set) {
  std::string out;
  std::size_t guess = 32 + set.uns.size();
  for (const auto& u : set.urls) guess += 64 + u.key.url.size() + u.key.mime.size() + u.fetch.size() + u.md5.size();
  out.reserve(guess);
  out.push_back(static_cast<char>(kVersion));
  putStr(out, set.uns);
  putInt<std::uint64_t>(out, set.id);
  putInt<std::uint32_t>(out, set.pid);
  out.push_back(static_cast<char>(set.kind));
  putInt<std::uint32_t>(out, static_cast<std::uint32_t>(set.urls.size()));
  for (const auto& u : set.urls) {
    out.push_back(static_cast<char>(u.op));
    std::uint8_t flags = (u.browse ? kHasBrowse : 0) | (u.mtime ? kHasMtime : 0) | (u.size ? kHasSize : 0);
    out.push_back(static_cast<char>(flags));
    putStr(out, u.key.url);
    putStr(out, u.key.mime);
    putStr(out, u.view_tag);
    putStr(out, u.browse ? *u.browse : std::string_view());
    putStr(out, u.fetch);
    putStr(out, u.md5);
    putStr(out, u.tod);
    putInt<std::int64_t>(out, u.mtime.value_or(0));
    putInt<std::uint64_t>(out, u.size.value_or(0));
  }
  return out;
}

Result<IntakeSet> decodeIntakeSet(std::string_view payload) {
  Reader r(payload);
  std::uint8_t version = 0;
  if (!r.get(&version) || version != kVersion) return Status::corruption("intake record: unknown version");
  IntakeSet set;
  std::uint8_t kind = 0;
  std::uint32_t count = 0;
  if (!r.str(&set.uns) || !r.get(&set.id) || !r.get(&set.pid) || !r.get(&kind) || !r.get(&count) || kind > 1) {
    return Status::corruption("intake record: bad header");
  }
  set.kind = static_cast<SetKind>(kind);
  if (count > payload.size()) return Status::corruption("intake record: bad count");
  set.urls.resize(count);
  for (auto& u : set.urls) {
    std::uint8_t op = 0, flags = 0;
    std::string browse;
    std::int64_t mtime = 0;
    std::uint64_t size = 0;
    if (!r.get(&op) || op > 1 || !r.get(&flags) || !r.str(&u.key.url) || !r.str(&u.key.mime) || !r.str(&u.view_tag) ||
        !r.str(&browse) || !r.str(&u.fetch) || !r.str(&u.md5) || !r.str(&u.tod) || !r.get(&mtime) || !r.get(&size)) {
      return Status::corruption("intake record: bad url");
    }
    u.key.pid = set.pid;
    u.op = static_cast<UrlOp>(op);
    if (flags & kHasBrowse) u.browse = std::move(browse);
    if (flags & kHasMtime) u.mtime = mtime;
    if (flags & kHasSize) u.size = size;
  }
  if (!r.done()) return Status::corruption("intake record: trailing bytes");
  return set;
}

}  // namespace lcc::qm
