#include "qm/intake_set.h"

#include <cstring>

namespace lcc::qm {
namespace {

enum : std::uint8_t { kHasBrowse = 1, kHasMtime = 2, kHasSize = 4 };

// Little-endian, appended at once (not a push_back per byte: this runs for every field
// of every URL of a set).
template <typename T>
void putInt(std::string& out, T v) {
  char bytes[sizeof(T)];
  for (std::size_t i = 0; i < sizeof(T); ++i) bytes[i] = static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xff);
  out.append(bytes, sizeof bytes);
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

void putUrl(std::string& out, const UrlNotice& u) {
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

std::size_t urlGuess(const UrlNotice& u) {
  return 64 + u.key.url.size() + u.key.mime.size() + u.fetch.size() + u.md5.size() + u.view_tag.size() + u.tod.size();
}

bool getUrl(Reader& r, ProviderId pid, UrlNotice& u) {
  std::uint8_t op = 0, flags = 0;
  std::string browse;
  std::int64_t mtime = 0;
  std::uint64_t size = 0;
  if (!r.get(&op) || op > kUrlOpMax || !r.get(&flags) || !r.str(&u.key.url) || !r.str(&u.key.mime) || !r.str(&u.view_tag) ||
      !r.str(&browse) || !r.str(&u.fetch) || !r.str(&u.md5) || !r.str(&u.tod) || !r.get(&mtime) || !r.get(&size)) {
    return false;
  }
  u.key.pid = pid;
  u.op = static_cast<UrlOp>(op);
  if (flags & kHasBrowse) u.browse = std::move(browse);
  if (flags & kHasMtime) u.mtime = mtime;
  if (flags & kHasSize) u.size = size;
  return true;
}

void putHeader(std::string& out, const IntakeHeader& h) {
  putStr(out, h.uns);
  putInt<std::uint64_t>(out, h.id);
  putInt<std::uint32_t>(out, h.pid);
  out.push_back(static_cast<char>(h.kind));
}

bool getHeader(Reader& r, IntakeHeader& h) {
  std::uint8_t kind = 0;
  if (!r.str(&h.uns) || !r.get(&h.id) || !r.get(&h.pid) || !r.get(&kind) || kind > 1) return false;
  h.kind = static_cast<SetKind>(kind);
  return true;
}

// Reads the type byte; false when it is not `want`.
bool expectType(Reader& r, IntakeRecord want) {
  std::uint8_t t = 0;
  return r.get(&t) && t == static_cast<std::uint8_t>(want);
}

}  // namespace

std::optional<IntakeRecord> intakeRecordType(std::string_view payload) {
  if (payload.empty()) return std::nullopt;
  auto t = static_cast<std::uint8_t>(payload[0]);
  if (t < static_cast<std::uint8_t>(IntakeRecord::kWhole) || t > static_cast<std::uint8_t>(IntakeRecord::kEnd)) {
    return std::nullopt;
  }
  return static_cast<IntakeRecord>(t);
}

std::uint64_t intakeRecordBegin(std::string_view payload) {
  auto t = intakeRecordType(payload);
  if (!t || (*t != IntakeRecord::kPart && *t != IntakeRecord::kEnd)) return 0;
  Reader r(payload.substr(1));
  std::uint64_t begin = 0;
  return r.get(&begin) ? begin : 0;
}

std::string encodeIntakeSet(const IntakeSet& set) {
  std::string out;
  std::size_t guess = 32 + set.uns.size();
  for (const auto& u : set.urls) guess += urlGuess(u);
  out.reserve(guess);
  out.push_back(static_cast<char>(IntakeRecord::kWhole));
  putHeader(out, IntakeHeader{set.uns, set.id, set.pid, set.kind});
  putInt<std::uint32_t>(out, static_cast<std::uint32_t>(set.urls.size()));
  for (const auto& u : set.urls) putUrl(out, u);
  return out;
}

Result<IntakeSet> decodeIntakeSet(std::string_view payload) {
  Reader r(payload);
  if (!expectType(r, IntakeRecord::kWhole)) return Status::corruption("intake record: unknown version");
  IntakeHeader h;
  std::uint32_t count = 0;
  if (!getHeader(r, h) || !r.get(&count)) return Status::corruption("intake record: bad header");
  IntakeSet set;
  set.uns = std::move(h.uns);
  set.id = h.id;
  set.pid = h.pid;
  set.kind = h.kind;
  if (count > payload.size()) return Status::corruption("intake record: bad count");
  set.urls.resize(count);
  for (auto& u : set.urls) {
    if (!getUrl(r, set.pid, u)) return Status::corruption("intake record: bad url");
  }
  if (!r.done()) return Status::corruption("intake record: trailing bytes");
  return set;
}

std::string encodeIntakeBegin(const IntakeHeader& header) {
  std::string out;
  out.push_back(static_cast<char>(IntakeRecord::kBegin));
  putHeader(out, header);
  return out;
}

Result<IntakeHeader> decodeIntakeBegin(std::string_view payload) {
  Reader r(payload);
  IntakeHeader h;
  if (!expectType(r, IntakeRecord::kBegin) || !getHeader(r, h) || !r.done()) {
    return Status::corruption("intake begin record: bad header");
  }
  return h;
}

std::string encodeIntakePart(std::uint64_t begin, const std::vector<UrlNotice>& urls) {
  std::string out;
  std::size_t guess = 16;
  for (const auto& u : urls) guess += urlGuess(u);
  out.reserve(guess);
  out.push_back(static_cast<char>(IntakeRecord::kPart));
  putInt<std::uint64_t>(out, begin);
  putInt<std::uint32_t>(out, static_cast<std::uint32_t>(urls.size()));
  for (const auto& u : urls) putUrl(out, u);
  return out;
}

Result<IntakePart> decodeIntakePart(std::string_view payload, ProviderId pid) {
  Reader r(payload);
  IntakePart part;
  std::uint32_t count = 0;
  if (!expectType(r, IntakeRecord::kPart) || !r.get(&part.begin) || !r.get(&count) || count > payload.size()) {
    return Status::corruption("intake part record: bad header");
  }
  part.urls.resize(count);
  for (auto& u : part.urls) {
    if (!getUrl(r, pid, u)) return Status::corruption("intake part record: bad url");
  }
  if (!r.done()) return Status::corruption("intake part record: trailing bytes");
  return part;
}

std::string encodeIntakeEnd(const IntakeEnd& end) {
  std::string out;
  out.push_back(static_cast<char>(IntakeRecord::kEnd));
  putInt<std::uint64_t>(out, end.begin);
  putInt<std::uint64_t>(out, end.count);
  return out;
}

Result<IntakeEnd> decodeIntakeEnd(std::string_view payload) {
  Reader r(payload);
  IntakeEnd end;
  if (!expectType(r, IntakeRecord::kEnd) || !r.get(&end.begin) || !r.get(&end.count) || !r.done() || end.begin == 0) {
    return Status::corruption("intake end record: bad contents");
  }
  return end;
}

}  // namespace lcc::qm
