#include "botm/filename_store.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <sstream>

namespace lcc::botm {

namespace {
constexpr std::string_view kMagic = "lcc-botm-filenames 1";

bool parseNumber(std::string_view s, std::uint64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string hexPad(std::uint64_t v, int width) {
  static const char* k = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), k[v & 15]);
    v >>= 4;
  } while (v != 0);
  while (static_cast<int>(s.size()) < width) s.insert(s.begin(), '0');
  return s;
}

bool parseHex(std::string_view s, std::uint64_t* out) {
  if (s.empty() || s.size() > 16) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return false;
    }
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  *out = v;
  return true;
}
}  // namespace

FilenameStore::FilenameStore(Env* env, std::string dir, FilenameStoreOptions o)
    : env_(env), dir_(std::move(dir)), opts_(o) {
  if (opts_.fanout < 2) opts_.fanout = 2;
  if (opts_.reserve_batch < 1) opts_.reserve_batch = 1;
  if (opts_.take_batch < 1) opts_.take_batch = 1;
}

FilenameStore::~FilenameStore() {
  if (log_) {
    (void)log_->sync();
    (void)log_->close();
  }
}

Result<std::unique_ptr<FilenameStore>> FilenameStore::open(Env* env, const std::string& state_dir,
                                                           FilenameStoreOptions options) {
  std::unique_ptr<FilenameStore> s(new FilenameStore(env, state_dir, options));
  LCC_RETURN_IF_ERROR(env->createDirs(state_dir));
  LCC_RETURN_IF_ERROR(s->load());
  return s;
}

std::string FilenameStore::format(std::uint64_t n) const { return formatName(n, opts_.fanout); }

std::string FilenameStore::formatName(std::uint64_t n, std::uint32_t fanout) {
  if (fanout < 2) fanout = 2;
  const int width = static_cast<int>(hexPad(fanout - 1, 1).size());
  const std::uint64_t f = fanout;
  std::string out = hexPad((n / f / f) % f, width);
  out.push_back('/');
  out += hexPad((n / f) % f, width);
  out.push_back('/');
  out += hexPad(n, 1);
  return out;
}

std::optional<std::uint64_t> FilenameStore::parse(std::string_view name) const {
  return parseName(name, opts_.fanout);
}

std::optional<std::uint64_t> FilenameStore::parseName(std::string_view name, std::uint32_t fanout) {
  auto a = name.find('/');
  if (a == std::string_view::npos) return std::nullopt;
  auto b = name.find('/', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
  std::uint64_t n = 0;
  if (!parseHex(name.substr(b + 1), &n)) return std::nullopt;
  if (formatName(n, fanout) != name) return std::nullopt;  // exactly our spelling, nothing else
  return n;
}

bool FilenameStore::isFree(std::uint64_t n) const {
  if (free_.count(n)) return true;
  for (auto t : taken_) {
    if (t == n) return true;
  }
  return n >= next_ && n < reserved_;  // never handed out (rest of the reserved range)
}

Status FilenameStore::load() {
  const std::string snap = dir_ + "/filenames.snapshot";
  const std::string logp = dir_ + "/filenames.log";
  if (env_->exists(snap)) {
    LCC_ASSIGN_OR_RETURN(std::string text, env_->readFile(snap));
    std::istringstream in(text);
    std::string line;
    if (!std::getline(in, line) || line != kMagic) {
      return Status::corruption(snap + ": not a BOT-M filename snapshot");
    }
    bool ended = false;
    while (std::getline(in, line)) {
      std::uint64_t v = 0;
      if (line == "end") {
        ended = true;
        break;
      }
      if (line.rfind("reserved ", 0) == 0 && parseNumber(std::string_view(line).substr(9), &v)) {
        reserved_ = v;
      } else if (line.rfind("f ", 0) == 0 && parseNumber(std::string_view(line).substr(2), &v)) {
        if (free_.insert(v).second) free_order_.push_back(v);
      } else {
        return Status::corruption(snap + ": bad line: " + line.substr(0, 60));
      }
    }
    if (!ended) return Status::corruption(snap + ": truncated (no end line)");
  }
  bool corrupt = false;
  if (env_->exists(logp)) {
    LCC_ASSIGN_OR_RETURN(std::string text, env_->readFile(logp));
    std::size_t pos = 0;
    while (pos < text.size()) {
      auto nl = text.find('\n', pos);
      if (nl == std::string::npos) break;  // a torn last line: never synced, ignore
      std::string_view line(text.data() + pos, nl - pos);
      pos = nl + 1;
      std::uint64_t v = 0;
      if (line.size() < 3 || line[1] != ' ' || !parseNumber(line.substr(2), &v)) {
        corrupt = true;
        break;
      }
      switch (line[0]) {
        case 'R': reserved_ = std::max(reserved_, v); break;
        case 'F':
          if (free_.insert(v).second) free_order_.push_back(v);
          break;
        case 'T':
          free_.erase(v);
          break;
        default: corrupt = true; break;
      }
      if (corrupt) break;
    }
  }
  // Drop stale entries: names taken in the log, and the older places of a name freed,
  // taken and freed again ("F n", "T n", "F n" leaves n twice in free_order_; handing
  // it out from both places would give one name to two files). A name keeps the place
  // of its last free.
  std::deque<std::uint64_t> order;
  std::unordered_set<std::uint64_t> placed;
  for (auto it = free_order_.rbegin(); it != free_order_.rend(); ++it) {
    if (free_.count(*it) && placed.insert(*it).second) order.push_front(*it);
  }
  free_order_.swap(order);
  if (corrupt) {
    // Reservations after the bad line may be lost: skip far ahead so no name handed
    // out before the crash can come back.
    spdlog::warn("botm: {}/filenames.log is damaged; skipping {} names to stay safe", dir_, 64 * opts_.reserve_batch);
    reserved_ += 64 * opts_.reserve_batch;
  }
  next_ = reserved_;
  return compact();
}

// Out of descriptors (Busy, issue 25) fails nothing: the old log stays open (the new one
// replaces it only once opened), and the next allocate() compacts again. The snapshot may
// then be newer than the log's first lines, as after a crash between the two steps.
Status FilenameStore::compact() {
  std::string snap(kMagic);
  snap += "\nreserved " + std::to_string(reserved_) + "\n";
  for (auto v : free_order_) snap += "f " + std::to_string(v) + "\n";
  snap += "end\n";
  Status s = env_->writeFileAtomic(dir_ + "/filenames.snapshot", snap);
  if (s.isOk()) {
    auto f = env_->openWritable(dir_ + "/filenames.log", OpenMode::kTruncate);
    if (f.isOk()) {
      if (log_) (void)log_->close();
      log_ = std::move(f).value();
      log_bytes_ = 0;
      s = log_->sync();
      if (s.isOk()) s = env_->syncDir(dir_);  // the log's name must be durable too
    } else {
      s = f.status();
    }
  }
  if (s.isBusy() && log_) {
    spdlog::warn("botm filename state: compaction put off: {}", s.toString());
    return s;
  }
  if (!s.isOk()) {
    failed_ = s.withContext("botm filename state");
    spdlog::error("{}", failed_.message());
  }
  return s;
}

Status FilenameStore::appendLine(const std::string& line, bool sync) {
  if (!failed_.isOk()) return failed_;
  Status s = log_->append(line);
  if (s.isOk() && sync) s = log_->sync();
  if (!s.isOk()) {
    failed_ = s.withContext("botm filename state");
    spdlog::error("{}", failed_.message());
    return failed_;
  }
  log_bytes_ += line.size();
  return Status::ok();
}

Status FilenameStore::sync() {
  if (!failed_.isOk()) return failed_;
  Status s = log_ ? log_->sync() : Status::ok();
  if (!s.isOk()) {
    failed_ = s.withContext("botm filename state");
    spdlog::error("{}", failed_.message());
  }
  return s;
}

Result<std::uint64_t> FilenameStore::allocate() {
  if (!failed_.isOk()) return failed_;
  // Compact first, whichever way the name comes (new or reused: a store that only
  // reuses freed names must not grow its log forever), and hand out nothing if it fails.
  if (log_bytes_ > opts_.compact_bytes) {
    Status c = compact();
    if (!c.isOk() && !c.isBusy()) return c;  // Busy: the log grows a little, compacted next time
  }
  if (taken_.empty() && !free_order_.empty()) {
    std::string lines;
    std::deque<std::uint64_t> batch;
    while (!free_order_.empty() && batch.size() < opts_.take_batch) {
      std::uint64_t v = free_order_.front();
      free_order_.pop_front();
      free_.erase(v);
      batch.push_back(v);
      lines += "T " + std::to_string(v) + "\n";
    }
    LCC_RETURN_IF_ERROR(appendLine(lines, true));
    taken_ = std::move(batch);
  }
  if (!taken_.empty()) {
    std::uint64_t v = taken_.front();
    taken_.pop_front();
    return v;
  }
  if (next_ >= reserved_) {
    std::uint64_t mark = next_ + opts_.reserve_batch;
    LCC_RETURN_IF_ERROR(appendLine("R " + std::to_string(mark) + "\n", true));
    reserved_ = mark;
  }
  return next_++;
}

void FilenameStore::release(std::uint64_t n) {
  if (n >= next_) return;  // never handed out (a delete of a name past the counter)
  if (!free_.insert(n).second) return;
  free_order_.push_back(n);
  (void)appendLine("F " + std::to_string(n) + "\n", false);
}

}  // namespace lcc::botm
