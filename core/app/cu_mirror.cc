#include "app/cu_mirror.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <unordered_set>

#include "common/run_lock.h"
#include "member_path.h"  // plugins/cu-tar: the same paths as a tar.gz answer
#include "proto/cu_query.h"

namespace lcc::mirror {
namespace fs = std::filesystem;

namespace {

constexpr int kMaxResyncs = 3;  // a store replaced again and again during one run gives up
constexpr int kChangesPurged = 150;

std::string join(const std::string& dir, std::string_view rel) {
  return rel.empty() ? dir : dir + "/" + std::string(rel);
}

std::string parentOf(std::string_view rel) {
  const auto slash = rel.rfind('/');
  return slash == std::string_view::npos ? std::string() : std::string(rel.substr(0, slash));
}

// Bytes below 0x20 and '%' as %XX, so the cursor's filter line stays one line.
std::string oneLine(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == '%' || c == 0x7f) {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

// The MD5 of what was written, as lower-case hex (the answer's `md5`).
class Md5 {
 public:
  Md5() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_md5(), nullptr); }
  ~Md5() { EVP_MD_CTX_free(ctx_); }
  Md5(const Md5&) = delete;
  Md5& operator=(const Md5&) = delete;
  void update(std::string_view b) { EVP_DigestUpdate(ctx_, b.data(), b.size()); }
  std::string hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx_, md, &len);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < len; ++i) {
      out += kHex[md[i] >> 4];
      out += kHex[md[i] & 15];
    }
    return out;
  }

 private:
  EVP_MD_CTX* ctx_;
};

// The end of one answer.
struct Batch {
  std::uint64_t count = 0, last_seq = 0;
  int reject_code = 0;
  std::string reject_message;
};

class Mirror {
 public:
  Mirror(const Options& o, Env* env, const Callbacks& cb, Stats& stats)
      : o_(o), env_(env), cb_(cb), stats_(stats) {}

  // One pass from `since` (full: from nothing); `restart` is set with its reason when a
  // full resync is needed instead.
  Status run(bool full, std::uint64_t since, std::string* restart);
  bool connectFailed() const { return connect_failed_; }

 private:
  Result<Batch> query(std::uint64_t since, bool full);
  Status apply(capi::AnswerReader& reader, bool full);
  Status applyOne(capi::AnswerReader& reader, const capi::AnswerRecord& r, bool full);
  Status ensureFolder(const std::string& rel);
  // OK and *matches = false when the bytes are not the record's md5 (nothing renamed).
  Status writeFile(const std::string& rel, const std::string& md5, capi::AnswerReader& reader, bool* matches);
  Status removePath(const std::string& rel);
  Status syncTouched();
  Status sweep();
  Status sweepTree(const std::string& top);
  void warn(const std::string& m) {
    if (cb_.warn) cb_.warn(m);
  }

  const Options& o_;
  Env* env_;
  const Callbacks& cb_;
  Stats& stats_;
  std::unordered_set<std::string> held_;      // full resync: the paths written
  std::unordered_set<std::string> folders_;   // folders checked (real folders, not links)
  std::set<std::string> touched_;             // folders whose entries changed since the last sync
  bool connect_failed_ = false;               // the last query found no CU port
};

Status Mirror::ensureFolder(const std::string& rel) {
  if (rel.empty() || folders_.count(rel) != 0) return Status::ok();
  LCC_RETURN_IF_ERROR(ensureFolder(parentOf(rel)));
  std::error_code ec;
  const auto st = fs::symlink_status(join(o_.dir, rel), ec);
  if (st.type() == fs::file_type::not_found) {
    LCC_RETURN_IF_ERROR(env_->createDirs(join(o_.dir, rel)));
    touched_.insert(parentOf(rel));
  } else if (st.type() != fs::file_type::directory) {
    // A link or a file where a folder belongs: never followed, never replaced.
    return Status::ioError(join(o_.dir, rel) + ": not a folder (a link or a file is in the way)");
  }
  folders_.insert(rel);
  return Status::ok();
}

Status Mirror::writeFile(const std::string& rel, const std::string& md5, capi::AnswerReader& reader,
                         bool* matches) {
  const std::string folder = parentOf(rel);
  LCC_RETURN_IF_ERROR(ensureFolder(folder));
  const std::string part = join(join(o_.dir, folder), kPartName);
  // A part left by a killed run is removed, never written through: O_EXCL does not
  // follow a link, so a link planted under the part's name cannot point the body
  // outside DIR.
  std::error_code ec;
  if (fs::symlink_status(part, ec).type() != fs::file_type::not_found) LCC_RETURN_IF_ERROR(env_->removeFile(part));
  LCC_ASSIGN_OR_RETURN(auto file, env_->openWritable(part, OpenMode::kCreateNew));
  Md5 digest;
  char buf[64 * 1024];
  for (;;) {
    LCC_ASSIGN_OR_RETURN(std::size_t n, reader.readContent(buf, sizeof buf));
    if (n == 0) break;
    LCC_RETURN_IF_ERROR(file->append(std::string_view(buf, n)));
    digest.update(std::string_view(buf, n));
    stats_.bytes += n;
  }
  // A body the LCC could not read to its end comes zero-filled (docs/protocol.md §3.2):
  // its md5 tells, and it is not kept.
  std::string want = md5;
  std::transform(want.begin(), want.end(), want.begin(), [](unsigned char c) { return std::tolower(c); });
  *matches = want.empty() || digest.hex() == want;
  if (*matches) LCC_RETURN_IF_ERROR(file->sync());
  LCC_RETURN_IF_ERROR(file->close());
  if (!*matches) return env_->removeFile(part);
  LCC_RETURN_IF_ERROR(env_->rename(part, join(o_.dir, rel)));
  touched_.insert(folder);
  return Status::ok();
}

Status Mirror::removePath(const std::string& rel) {
  std::error_code ec;
  const auto st = fs::symlink_status(join(o_.dir, rel), ec);
  if (st.type() == fs::file_type::not_found || st.type() == fs::file_type::directory) return Status::ok();
  LCC_RETURN_IF_ERROR(env_->removeFile(join(o_.dir, rel)));
  touched_.insert(parentOf(rel));
  ++stats_.removed;
  return Status::ok();
}

Status Mirror::syncTouched() {
  for (const auto& rel : touched_) {
    std::error_code ec;
    if (!fs::is_directory(fs::symlink_status(join(o_.dir, rel), ec))) continue;  // removed meanwhile
    LCC_RETURN_IF_ERROR(env_->syncDir(join(o_.dir, rel)));
  }
  touched_.clear();
  return Status::ok();
}

Status Mirror::applyOne(capi::AnswerReader& reader, const capi::AnswerRecord& r, bool full) {
  ++stats_.records;
  auto rel = mirrorPath(r.pid, r.url, r.mime);
  if (!rel.isOk()) {
    ++stats_.missing;
    warn(r.url + ": " + rel.status().message());
    return Status::ok();
  }
  if (r.deleted) {
    if (full) held_.erase(*rel);
    return removePath(*rel);
  }
  if (!r.has_content) {
    // The LCC holds the URL but could not give its bytes: an old copy would be wrong.
    ++stats_.missing;
    warn(r.url + ": content " + (r.content_missing.empty() ? "missing" : r.content_missing) + "; " + *rel +
         " removed until a later run gets it");
    if (full) held_.erase(*rel);
    return removePath(*rel);
  }
  bool matches = true;
  Status s = writeFile(*rel, r.md5, reader, &matches);
  if (!s.isOk()) return s.withContext("writing " + join(o_.dir, *rel));
  if (!matches) {
    ++stats_.missing;
    warn(r.url + ": content does not match its md5 " + r.md5 + "; " + *rel + " removed until a later run gets it");
    if (full) held_.erase(*rel);
    return removePath(*rel);
  }
  ++stats_.written;
  if (full) held_.insert(*rel);
  return Status::ok();
}

Status Mirror::apply(capi::AnswerReader& reader, bool full) {
  for (;;) {
    LCC_ASSIGN_OR_RETURN(const capi::AnswerRecord* r, reader.next());
    if (r == nullptr) return Status::ok();
    LCC_RETURN_IF_ERROR(applyOne(reader, *r, full));
    if (cb_.progress) cb_.progress(stats_);
  }
}

Result<Batch> Mirror::query(std::uint64_t since, bool full) {
  proto::CuQuery q;
  q.format = "xml";
  q.content = true;
  q.deleted = true;
  q.providers = o_.providers;
  q.mimes = o_.mimes;
  q.prefixes = o_.prefixes;
  if (since > 0) q.since_seq = since;
  q.limit = o_.batch;
  auto sock = capi::Socket::connect(o_.endpoint, o_.timeout_ms, o_.tls);
  connect_failed_ = !sock.isOk();
  if (!sock.isOk()) return sock.status();
  LCC_RETURN_IF_ERROR((*sock)->writeAll(proto::formatCuQueryXml(q)));
  capi::AnswerReader reader(std::move(sock).value());
  LCC_RETURN_IF_ERROR(reader.start());
  Batch b;
  if (reader.rejected()) {
    b.reject_code = reader.rejectCode();
    b.reject_message = reader.rejectMessage();
    return b;
  }
  b.count = reader.count();
  b.last_seq = reader.lastSeq();
  LCC_RETURN_IF_ERROR(apply(reader, full));
  return b;
}

Status Mirror::run(bool full, std::uint64_t since, std::string* restart) {
  held_.clear();
  std::uint64_t from = full ? 0 : since;
  // Each turn either ends or moves `from` strictly up: bounded by the store's records.
  for (;;) {
    LCC_ASSIGN_OR_RETURN(Batch b, query(from, full));
    if (b.reject_code == kChangesPurged) {
      *restart = "the LCC purged changes after seq " + std::to_string(from) + " (" + b.reject_message + ")";
      return syncTouched();
    }
    if (b.reject_code != 0) {
      return Status::ioError("query rejected (" + std::to_string(b.reject_code) + "): " + b.reject_message);
    }
    if (b.last_seq < from) {
      *restart = "the LCC's last seq " + std::to_string(b.last_seq) + " is below the cursor's " +
                 std::to_string(from) + " (a new store)";
      return syncTouched();
    }
    LCC_RETURN_IF_ERROR(syncTouched());
    if (!full && b.last_seq != stats_.to_seq) {
      LCC_RETURN_IF_ERROR(writeCursor(env_, o_.dir, Cursor{b.last_seq, filterText(o_)}));
    }
    stats_.to_seq = b.last_seq;
    if (b.count < o_.batch || b.last_seq == from) break;
    from = b.last_seq;
  }
  if (!full) return Status::ok();
  LCC_RETURN_IF_ERROR(sweep());
  LCC_RETURN_IF_ERROR(syncTouched());
  return writeCursor(env_, o_.dir, Cursor{stats_.to_seq, filterText(o_)});
}

// Every file under DIR/<digits>/ that this full resync did not write goes, then the
// folders left empty. Links are removed, never followed.
Status Mirror::sweep() {
  std::error_code ec;
  fs::directory_iterator it(o_.dir, ec);
  if (ec) return Status::ioError(o_.dir + ": " + ec.message());
  std::vector<std::string> tops;
  for (const auto& e : it) {
    const std::string name = e.path().filename().string();
    const bool digits = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits && e.symlink_status(ec).type() == fs::file_type::directory) tops.push_back(name);
  }
  for (const auto& top : tops) LCC_RETURN_IF_ERROR(sweepTree(top));
  return Status::ok();
}

Status Mirror::sweepTree(const std::string& top) {
  std::error_code ec;
  std::vector<std::string> folders{top};
  std::vector<std::string> files;
  fs::recursive_directory_iterator it(join(o_.dir, top), fs::directory_options::none, ec);
  if (ec) return Status::ioError(join(o_.dir, top) + ": " + ec.message());
  const std::size_t base = o_.dir.size() + 1;
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return Status::ioError(join(o_.dir, top) + ": " + ec.message());
    const std::string rel = it->path().string().substr(base);
    if (it->symlink_status(ec).type() == fs::file_type::directory) {
      folders.push_back(rel);
    } else if (held_.count(rel) == 0) {
      files.push_back(rel);
    }
  }
  for (const auto& rel : files) LCC_RETURN_IF_ERROR(removePath(rel));
  // Deepest first: a folder's children are gone before it is looked at.
  std::sort(folders.begin(), folders.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const auto& rel : folders) {
    if (fs::is_empty(join(o_.dir, rel), ec) && !ec && fs::remove(join(o_.dir, rel), ec)) {
      touched_.insert(parentOf(rel));
      touched_.erase(rel);
      folders_.erase(rel);
    }
  }
  return Status::ok();
}

}  // namespace

bool isSafeRelativePath(std::string_view rel) {
  if (rel.empty() || rel.size() > 2048 || rel.front() == '/' || rel.find('\0') != std::string_view::npos) return false;
  std::size_t start = 0;
  while (start <= rel.size()) {
    const std::size_t end = std::min(rel.find('/', start), rel.size());
    const std::string_view part = rel.substr(start, end - start);
    if (part.empty() || part == "." || part == ".." || part.size() > 255) return false;
    start = end + 1;
  }
  return true;
}

Result<std::string> mirrorPath(ProviderId pid, std::string_view url, std::string_view mime) {
  std::string rel = plugins::cu_tar::memberPath(pid, url, mime);
  if (!isSafeRelativePath(rel)) return Status::invalidArgument("no safe path for this URL (got " + oneLine(rel) + ")");
  return rel;
}

std::string filterText(const Options& o) {
  std::vector<ProviderId> p = o.providers;
  std::vector<std::string> m = o.mimes, x = o.prefixes;
  std::sort(p.begin(), p.end());
  std::sort(m.begin(), m.end());
  std::sort(x.begin(), x.end());
  std::string out = "providers=";
  for (std::size_t i = 0; i < p.size(); ++i) out += (i ? "," : "") + std::to_string(p[i]);
  for (const auto& s : m) out += " mime=" + oneLine(s);
  for (const auto& s : x) out += " prefix=" + oneLine(s);
  return out;
}

Result<std::optional<Cursor>> readCursor(Env* env, const std::string& dir) {
  const std::string path = join(dir, kCursorName);
  if (!env->exists(path)) return std::optional<Cursor>();
  LCC_ASSIGN_OR_RETURN(std::string text, env->readFile(path));
  Cursor c;
  const std::string head = "lcc-cu-mirror 1\nseq ";
  const auto nl = text.find('\n', head.size());
  const auto fl = text.find("filter ", nl == std::string::npos ? 0 : nl);
  if (text.compare(0, head.size(), head) != 0 || nl == std::string::npos || fl != nl + 1 || text.back() != '\n') {
    return Status::corruption(path + ": not a mirror cursor");
  }
  const std::string seq = text.substr(head.size(), nl - head.size());
  if (seq.empty() || seq.size() > 20 || !std::all_of(seq.begin(), seq.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
    return Status::corruption(path + ": bad seq");
  }
  c.seq = std::stoull(seq);
  c.filter = text.substr(fl + 7, text.size() - fl - 8);
  return std::optional<Cursor>(c);
}

Status writeCursor(Env* env, const std::string& dir, const Cursor& c) {
  return env->writeFileAtomic(join(dir, kCursorName),
                              "lcc-cu-mirror 1\nseq " + std::to_string(c.seq) + "\nfilter " + c.filter + "\n");
}

Report runMirror(const Options& o, Env* env, const Callbacks& cb) {
  Report rep;
  auto fail = [&rep](Outcome out, std::string m) {
    rep.outcome = out;
    rep.message = std::move(m);
    return rep;
  };
  if (Status s = env->createDirs(o.dir); !s.isOk()) return fail(Outcome::kNoConnection, s.message());
  RunLock lock;
  if (Status s = lock.acquire(join(o.dir, kLockName)); !s.isOk()) {
    return fail(s.code() == StatusCode::kBusy ? Outcome::kLocked : Outcome::kNoConnection, s.message());
  }
  Stats& st = rep.stats;
  auto cursor = readCursor(env, o.dir);
  const std::string filter = filterText(o);
  if (o.full) {
    st.why_full = "asked for (--full)";
  } else if (!cursor.isOk()) {
    st.why_full = cursor.status().message();
  } else if (!cursor->has_value()) {
    st.why_full = "no cursor yet";
  } else if ((*cursor)->filter != filter) {
    st.why_full = "the filter changed (was: " + (*cursor)->filter + ")";
  }
  st.full = !st.why_full.empty();
  st.from_seq = st.full ? 0 : (*cursor)->seq;
  st.to_seq = st.from_seq;
  Mirror m(o, env, cb, st);
  for (int attempt = 0; attempt <= kMaxResyncs; ++attempt) {
    std::string restart;
    Status s = m.run(st.full, st.from_seq, &restart);
    if (!s.isOk()) {
      return fail(m.connectFailed() && st.records == 0 ? Outcome::kNoConnection : Outcome::kFailed, s.message());
    }
    if (restart.empty()) {
      if (st.missing > 0) return fail(Outcome::kFailed, std::to_string(st.missing) + " records without content or path");
      return rep;
    }
    st.full = true;
    st.why_full = restart;
    st.from_seq = 0;
  }
  return fail(Outcome::kFailed, "gave up after " + std::to_string(kMaxResyncs) + " full resyncs: " + st.why_full);
}

}  // namespace lcc::mirror
