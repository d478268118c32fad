// cli_cp_sync.cc — `lcc cp sync` (docs/commands.md): a folder tree (as `cp scan`) or a
// site's sitemaps (as `cp sitemap`) and `cp send` in one command, for cron or a systemd
// timer. It keeps its state (what the LCC took), sends a full set when the LCC wants
// one, holds back what init's MIME list and quota say would be refused, retries when
// the UNS says "try later", and exits non-zero with a summary when URLs were refused.
//
// The state file (`--state`) is `cp scan`'s or `cp sitemap`'s format and is replaced
// atomically, only after set_accepted; STATE.lock (flock) keeps two runs apart.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "app/cli.h"
#include "app/cp_hints.h"
#include "app/cli_cp_session.h"
#include "app/cli_cp_sources.h"
#include "common/run_lock.h"

namespace lcc::cli {

namespace {

constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();
constexpr std::size_t kListedHeld = 20;  // held-back URLs named one per line; the rest counted

struct SyncArgs {
  std::string uns, id, password, password_file, state_file, dir, base_url, sitemap, mime_map;
  bool full = false;
  int retries = 3;
  double retry_delay = 30;
  TlsArgs tls;
};

// One URL the run may send: an update of what is there now, or a delete.
struct SyncItem {
  std::string key;  // the state's key
  proto::UrlAttrs attrs;
  bool del = false;
  bool is_new = false;             // an update the state does not have (takes a file of the quota)
  std::optional<std::uint64_t> size, old_size;
};

// What is there now and what changed, from either source.
struct Snapshot {
  std::vector<SyncItem> all;      // every update: a full set
  std::vector<SyncItem> changes;  // new and changed updates, then deletes: a partial set
  bool have_state = false;
};

std::optional<std::uint64_t> sizeOf(const proto::UrlAttrs& attrs) {
  const std::string* sz = proto::findAttr(attrs, "sz");
  if (sz == nullptr) return std::nullopt;
  return std::stoull(*sz);
}

template <typename State>
void addItem(std::vector<SyncItem>& to, const State& old, const std::string& key, proto::UrlAttrs attrs, bool del) {
  SyncItem it;
  it.key = key;
  it.del = del;
  auto o = old.find(key);
  it.is_new = !del && o == old.end();
  it.size = del ? std::nullopt : sizeOf(attrs);
  it.attrs = std::move(attrs);
  to.push_back(std::move(it));
}

// The state after a set the LCC took: a full set leaves only what it named and the LCC
// took; a partial set changes the state by what was sent (a delete is dropped even when
// refused: the LCC does not hold what it refused), and what was held back stays as it was.
template <typename State>
State nextState(const State& old, const State& now, const std::vector<const SyncItem*>& sent,
                const std::set<std::string>& refused_keys, bool full) {
  State out;
  if (!full) out = old;
  for (const SyncItem* it : sent) {
    if (it->del) {
      out.erase(it->key);
    } else if (!refused_keys.count(it->key)) {
      auto n = now.find(it->key);
      if (n != now.end()) out[it->key] = n->second;
    }
  }
  return out;
}

class Sync {
 public:
  explicit Sync(const SyncArgs& a) : a_(a) {}

  int run() {
    if (int rc = prepare(); rc >= 0) return rc;
    double delay = a_.retry_delay;
    CpOutcome o;
    for (int attempt = 0;; ++attempt) {
      o = attempt_once();
      const bool later = (o.kind == CpOutcome::Kind::kInitRejected || o.kind == CpOutcome::Kind::kSetRejected) &&
                         isTryLater(o.code);
      if (!later) break;
      if (attempt >= a_.retries) {
        return fail("the UNS said \"try later\" " + std::to_string(attempt + 1) + " times (last: " +
                        std::to_string(static_cast<unsigned>(o.code)) + " " + o.message +
                        "); giving up, the state is unchanged and the next run sends the same",
                    kCpExitTryLater);
      }
      std::cerr << "lcc cp sync: try later (" << static_cast<unsigned>(o.code) << " " << o.message << "); try "
                << attempt + 2 << " of " << a_.retries + 1 << " in " << delay << " s\n";
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
      delay = std::min(delay * 2, 3600.0);
    }
    return finish(o);
  }

 private:
  int fail(const std::string& why, int rc = kCpExitUsage) {
    std::cerr << "lcc cp sync: " << why << "\n";
    return rc;
  }

  // Lock, state, source. -1: go on; else the exit code.
  int prepare() {
    std::string err;
    if (!cpPassword(a_.password, a_.password_file, password_, &err)) return fail(err);
    if (!a_.mime_map.empty() && !mime_.load(a_.mime_map, &err)) return fail("--mime-map: " + err);
    if (a_.dir.empty() == a_.sitemap.empty()) return fail("give a folder (DIR --base-url URL) or --sitemap: one of them");
    if (!a_.dir.empty()) {
      base_ = scanBaseUrl(a_.base_url);
      if (base_.empty()) return fail("--base-url must be an http or https URL (got " + a_.base_url + ")");
    }
    if (Status s = lock_.acquire(a_.state_file + ".lock"); !s.isOk()) {
      return fail(s.message(), s.isBusy() ? kCpExitLocked : kCpExitUsage);
    }
    return a_.dir.empty() ? readSitemapSource() : readFolder();
  }

  int readFolder() {
    std::string err;
    if (!loadScanState(a_.state_file, old_files_, &snap_.have_state, &err)) return fail(err);
    std::vector<ScannedFile> files;
    TtyProgress progress;
    if (!scanTree(a_.dir, {a_.state_file, a_.state_file + ".lock"}, mime_, old_files_, files, progress, &err)) {
      return fail(err);
    }
    for (const auto& f : files) {
      now_files_[f.key] = f.state;
      addItem(snap_.all, old_files_, f.key, scanUpdateAttrs(base_, f), false);
      if (f.changed) addItem(snap_.changes, old_files_, f.key, scanUpdateAttrs(base_, f), false);
    }
    for (auto& it : snap_.changes) {
      auto o = old_files_.find(it.key);
      if (o != old_files_.end()) it.old_size = o->second.size;
    }
    for (const auto& [key, s] : old_files_) {
      if (!now_files_.count(key)) addItem(snap_.changes, old_files_, key, scanDeleteAttrs(base_, key, s), true);
    }
    return -1;
  }

  int readSitemapSource() {
    std::string err;
    if (!loadSitemapState(a_.state_file, old_pages_, &snap_.have_state, &err)) return fail("--state: " + err);
    if (!readSitemaps("lcc cp sync", a_.sitemap, now_pages_, &err)) return fail(err);
    for (const auto& change : sitemap::diffSitemaps(old_pages_, snap_.have_state, now_pages_)) {
      addItem(snap_.changes, old_pages_, change.url, sitemapAttrs(mime_, change), change.deleted);
    }
    for (const auto& [url, lastmod] : now_pages_) {
      addItem(snap_.all, old_pages_, url, sitemapAttrs(mime_, {url, lastmod, false}), false);
    }
    return -1;
  }

  // Picks the set for what init said, holding back what would be refused.
  CpSetPlan plan(const proto::CpReply& r) {
    const auto& i = r.init;
    full_ = a_.full || i.fullset_wanted;
    wanted_reason_ = i.fullset_wanted ? i.fullset_reason : "";
    held_.clear();
    held_lines_.clear();
    sent_.clear();
    const auto& items = full_ ? snap_.all : snap_.changes;
    std::uint64_t files_room = i.files_free, bytes_room = i.space_free;
    if (full_) {
      files_room = i.files_free == kUnlimited ? kUnlimited : i.files_used + i.files_free;
      bytes_room = i.space_free == kUnlimited ? kUnlimited : i.space_used + i.space_free;
    } else {
      // Deletes go first and free what they held.
      for (const auto& it : items) {
        if (!it.del) continue;
        sent_.push_back(&it);
        if (files_room != kUnlimited) ++files_room;
      }
    }
    for (const auto& it : items) {
      if (it.del) continue;
      ErrorCode code = ErrorCode::kNone;
      const std::string* m = proto::findAttr(it.attrs, "m");
      const std::uint64_t sz = it.size.value_or(0), before = full_ ? 0 : it.old_size.value_or(0);
      if (m == nullptr || !proto::mimeAccepted(*m, i.mime)) {
        code = ErrorCode::kMimeNotAccepted;
      } else if ((full_ || it.is_new) && files_room == 0) {
        code = ErrorCode::kQuotaExceeded;
      } else if (bytes_room != kUnlimited && sz > before && sz - before > bytes_room) {
        code = ErrorCode::kQuotaExceeded;
      }
      if (code != ErrorCode::kNone) {
        hold(it, code);
        continue;
      }
      if ((full_ || it.is_new) && files_room != kUnlimited) --files_room;
      if (bytes_room != kUnlimited) bytes_room = bytes_room - (sz > before ? sz - before : 0) + (before > sz ? before - sz : 0);
      sent_.push_back(&it);
    }
    next_ = 0;
    return CpSetPlan{!sent_.empty() || full_, full_, ""};
  }

  void hold(const SyncItem& it, ErrorCode code) {
    ++held_[static_cast<unsigned>(code)];
    if (held_lines_.size() >= kListedHeld) return;
    proto::UrlError e;
    e.code = code;
    e.attrs = it.attrs;
    e.message = code == ErrorCode::kMimeNotAccepted ? "type not in the LCC's MIME list (not sent)"
                                                    : "would not fit the quota the LCC answered (not sent)";
    held_lines_.push_back("held back " + describeUrl(e));
  }

  CpOutcome attempt_once() {
    refused_keys_.clear();
    CpExchange x;
    x.tool = "lcc cp sync";
    x.uns = a_.uns;
    x.id = a_.id;
    x.password = password_;
    x.tls = a_.tls;
    x.on_init = [this](const proto::CpReply& r) {
      CpSetPlan p = plan(r);
      for (const auto& line : held_lines_) std::cout << line << "\n";
      return p;
    };
    x.next = [this](std::string& out, std::uint64_t& count, bool& done) {
      for (std::size_t n = 0; next_ < sent_.size() && n < 1000; ++n, ++next_, ++count) {
        out += proto::encodeUrlElement(sent_[next_]->attrs);
        by_c_[*proto::findAttr(sent_[next_]->attrs, "c")] = sent_[next_]->key;
      }
      done = next_ == sent_.size();
      return true;
    };
    x.on_refused = [this](const proto::UrlError& e) {
      std::cout << describeUrl(e) << "\n";
      if (const std::string* c = proto::findAttr(e.attrs, "c")) {
        auto k = by_c_.find(*c);
        if (k != by_c_.end()) refused_keys_.insert(k->second);
      }
    };
    return runCpExchange(x);
  }

  int finish(const CpOutcome& o) {
    if (o.kind == CpOutcome::Kind::kFailed) return kCpExitUsage;
    if (o.kind == CpOutcome::Kind::kInitRejected) return kCpExitRejected;
    if (o.kind == CpOutcome::Kind::kSetRejected) {
      std::cout << "rejected " << static_cast<unsigned>(o.code) << ": " << o.message << "\n";
      std::cerr << "lcc cp sync: " << setRejectionHint(static_cast<unsigned>(o.code)) << "\n";
      return kCpExitRejected;
    }
    Status saved = a_.dir.empty() ? saveSitemapState(a_.state_file, nextState(old_pages_, now_pages_, sent_, refused_keys_, full_))
                                  : saveScanState(a_.state_file, nextState(old_files_, now_files_, sent_, refused_keys_, full_));
    printSummary(o);
    if (!saved.isOk()) return fail("cannot write the state file: " + saved.toString());
    return held_.empty() && o.refused.empty() ? kCpExitOk : kCpExitRefused;
  }

  void printSummary(const CpOutcome& o) {
    std::uint64_t updates = 0, deletes = 0, held = 0, refused = 0;
    for (const SyncItem* it : sent_) ++(it->del ? deletes : updates);
    for (const auto& [code, n] : held_) held += n;
    for (const auto& [code, n] : o.refused) refused += n;
    std::cout << (full_ ? "full set" : "partial set");
    if (!wanted_reason_.empty()) std::cout << " (wanted: " << wanted_reason_ << ")";
    std::cout << ": sent " << sent_.size() << " urls (" << updates << " updates, " << deletes << " deletes)";
    if (o.kind == CpOutcome::Kind::kAccepted) std::cout << ", accepted " << o.received;
    if (held > 0) std::cout << "; held back " << held << " (" << codeSummary(held_) << ")";
    if (refused > 0) std::cout << "; refused " << refused << " (" << codeSummary(o.refused) << ")";
    std::cout << "\n";
  }

  const SyncArgs& a_;
  MimeMap mime_;
  std::string password_, base_;
  RunLock lock_;
  ScanState old_files_, now_files_;
  sitemap::SitemapPages old_pages_, now_pages_;
  Snapshot snap_;
  // The attempt's plan and answer.
  bool full_ = false;
  std::string wanted_reason_;
  std::vector<const SyncItem*> sent_;
  std::size_t next_ = 0;
  std::map<unsigned, std::uint64_t> held_;
  std::vector<std::string> held_lines_;
  std::map<std::string, std::string> by_c_;
  std::set<std::string> refused_keys_;
};

}  // namespace

void addCpSyncCommand(CLI::App& cp, Globals& g) {
  auto a = std::make_shared<SyncArgs>();
  auto* cmd = cp.add_subcommand("sync", "scan a folder or read sitemaps and send what changed, as the LCC asks (for cron)");
  cmd->add_option("dir", a->dir, "the folder to scan (with --base-url)");
  cmd->add_option("--base-url", a->base_url, "URL of DIR on the provider's site");
  cmd->add_option("--sitemap", a->sitemap, "a sitemap or sitemap index (URL or file) instead of a folder");
  cmd->add_option("--state", a->state_file, "what the LCC took, between runs (FILE.lock keeps runs apart)")->required();
  cmd->add_option("--uns", a->uns, "the UNS, HOST:PORT (or tls://HOST:PORT)")->required();
  cmd->add_option("--id", a->id, "provider id")->required();
  addPasswordOptions(cmd, a->password, a->password_file);
  cmd->add_option("--mime-map", a->mime_map, "mime.types-style file: 'type/subtype ext ...'");
  cmd->add_flag("--full", a->full, "send a full set even if the LCC did not ask for one (uses an allowance)");
  cmd->add_option("--retries", a->retries, "tries after the first when the UNS says try later (120, 130)")
      ->check(CLI::Range(0, 20))
      ->default_val(3);
  cmd->add_option("--retry-delay", a->retry_delay, "seconds before the first retry, doubled each time (at most 1 h)")
      ->check(CLI::Range(0.0, 3600.0))
      ->default_val(30);
  addTlsOptions(cmd, a->tls);
  cmd->callback([&g, a] { g.exit_code = Sync(*a).run(); });
}

}  // namespace lcc::cli
