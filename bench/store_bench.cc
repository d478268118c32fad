// store_bench — durable queue absorb: the raw storage engine (baseline) against the
// same records going through a storage plugin's QueueStore, in one run.
//
//   store_bench [--plugin storage-kyoto] [--urls 1000000] [--batch 1000] [--dir /tmp]
//               [--skip-raw] [--keep] [--upsert] [--interleave] [--opt key=value ...]
//
// Baseline ("raw"): the engine the plugin is built on, used the fastest durable way
// its documentation allows: for Kyoto, HashDB (same buckets and mmap as the plugin's
// defaults) with plain set() per record and synchronize(true) per batch. Plugin: the
// same keys and about the same value bytes as QueueEntry rows, QueueStore::apply()
// per batch + sync() per batch (durable, atomic per batch), loaded through the real
// plugin loader. The keys are new, and the puts say so (QueueBatch::PutEntry::fresh),
// as the QM's do for rows it read as absent; --upsert leaves them unmarked.
// Reports URLs/s, the ratio to the baseline, disk bytes per URL (and
// per raw byte: key + value), RSS growth, per-batch commit latency. Every line makes
// a batch's rows (keys, QueueEntry values) before its clock starts: URLs/s is URLs
// over the sum of the batches' write times, what the store costs and not the bench's
// own record making; CPU is the whole process's, record making included.
//
// storage-postgres (built with libpq): `--opt conninfo=...` names the server; the raw
// baselines are libpq writing the same keys into a two-column table, one durable
// transaction per batch: a multi-row INSERT before the plugin, COPY (binary) after it
// (store_bench_pg.cc); each runs in a schema of its own, dropped afterwards.
// --interleave: raw COPY and the plugin alternate batch by batch instead (on a shared
// machine the phases one after the other meet different loads).
// Disk figures do not apply there (the server's data directory is elsewhere).
//
// Add another engine's baseline to kBaselines (the key is the plugin name).
#include <fcntl.h>
#include <kchashdb.h>
#include <unistd.h>
#include <sqlite3.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench_util.h"
#include "store_bench_sqlite.h"
#ifdef LCC_BENCH_HAVE_PG
#include "store_bench_pg.h"
#endif
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "common/system_clock.h"

using namespace lcc;
using lcc::bench::Stopwatch;

namespace {

struct Args {
  std::string plugin = "storage-kyoto";
  std::uint64_t urls = 1000000;
  std::uint64_t batch = 1000;
  std::string dir;
  bool skip_raw = false;
  bool keep = false;
  bool upsert = false;  // --upsert: rows not marked fresh (QueueBatch::PutEntry::fresh)
  bool interleave = false;  // --interleave (storage-postgres): raw COPY and the plugin batch by batch
  std::map<std::string, std::string> opts;
};

constexpr std::size_t kValueBytes = 300;  // research note §2: 58-byte key + 300-byte value

std::uint64_t mix(std::uint64_t x) {  // splitmix64: keys in hash order, as in the research note
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

UrlKey urlKey(std::uint64_t i) {
  std::uint64_t h = mix(i);
  char buf[128];
  std::snprintf(buf, sizeof buf, "http://www.server%03u.com/dir%04u/page%010llu.htm", unsigned(h % 1000),
                unsigned((h >> 10) % 10000), static_cast<unsigned long long>(i));
  return UrlKey{static_cast<ProviderId>(1 + (h >> 40) % 50), buf, "text/html"};
}

// A QueueEntry whose row is about kValueBytes long once encoded.
QueueEntry entry(std::uint64_t i) {
  QueueEntry e;
  e.notice.key = urlKey(i);
  e.notice.md5 = "0123456789abcdef0123456789abcdef";
  e.notice.mtime = 1714564800;
  e.notice.size = 10240;
  e.notice.fetch = e.notice.key.url + "?lococa";
  e.notice.view_tag = std::string(kValueBytes - 32 - e.notice.fetch.size() - 70 - 30, 'v');
  e.pset = 1 + i / 1000;
  e.next = encodeUrlKey(urlKey(i + 1));
  e.queued = fromUnixMillis(1714564800000);
  return e;
}

struct Result_ {
  std::string name;
  double seconds = 0;
  double cpu_seconds = 0;
  std::uint64_t urls = 0;
  std::uint64_t raw_bytes = 0;  // key + value bytes written
  bench::DiskUse disk;
  bench::DiskUse disk_after_close;
  std::int64_t rss_growth = 0;
  std::vector<double> commit_us;
  std::vector<double> apply_us;  // plugin only: the apply() part of commit_us
  double rate() const { return seconds > 0 ? static_cast<double>(urls) / seconds : 0; }
};

void report(const Result_& r) {
  std::printf("%-22s %9.0f URLs/s  %7.2f s  disk %6.1f B/URL (%.2fx raw; after close %.1f B/URL)  "
              "RSS +%.1f MB  commit p50 %.2f ms p99 %.2f ms\n",
              r.name.c_str(), r.rate(), r.seconds, double(r.disk.allocated) / double(r.urls),
              double(r.disk.allocated) / double(r.raw_bytes), double(r.disk_after_close.allocated) / double(r.urls),
              double(r.rss_growth) / 1e6, bench::percentile(r.commit_us, 50) / 1000,
              bench::percentile(r.commit_us, 99) / 1000);
  if (r.cpu_seconds > 0) {  // not measured for the interleaved raw line
    std::printf("%-22s CPU %.2f us/URL (%.0f URLs per CPU-second)\n", "", r.cpu_seconds * 1e6 / double(r.urls),
                double(r.urls) / r.cpu_seconds);
  }
  if (!r.apply_us.empty()) {
    std::printf("%-22s of which apply() p50 %.2f ms, sync() p50 %.2f ms\n", "",
                bench::percentile(r.apply_us, 50) / 1000,
                (bench::percentile(r.commit_us, 50) - bench::percentile(r.apply_us, 50)) / 1000);
  }
  std::fflush(stdout);
}

// The disk's share: append key+value bytes of each batch to one file and fdatasync,
// nothing else. No store can be durable per batch faster than this on the same disk.
Result_ syncFloor(const Args& a, const std::string& dir) {
  Result_ r;
  r.name = "floor: append+fdatasync";
  int fd = ::open((dir + "/floor.dat").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::perror("floor");
    std::exit(1);
  }
  const double cpu0 = bench::cpuSeconds();
  std::string buf;
  for (std::uint64_t i = 0; i < a.urls;) {
    buf.clear();
    for (std::uint64_t end = std::min(a.urls, i + a.batch); i < end; ++i) {
      buf += encodeUrlKey(urlKey(i));
      buf.append(kValueBytes, 'x');
    }
    r.raw_bytes += buf.size();
    Stopwatch batch;
    if (::write(fd, buf.data(), buf.size()) != static_cast<ssize_t>(buf.size()) || ::fdatasync(fd) != 0) {
      std::perror("floor");
      std::exit(1);
    }
    r.commit_us.push_back(batch.micros());
    r.seconds += r.commit_us.back() / 1e6;
  }
  r.cpu_seconds = bench::cpuSeconds() - cpu0;
  r.urls = a.urls;
  ::close(fd);
  r.disk = r.disk_after_close = bench::diskUse(dir);
  return r;
}

// --- baselines --------------------------------------------------------------
Result_ rawKyoto(const Args& a, const std::string& dir) {
  Result_ r;
  r.name = "raw kyoto (kch)";
  kyotocabinet::HashDB db;
  db.tune_buckets(2000000);
  db.tune_map(32ll << 20);
  if (!db.open(dir + "/raw.kch", kyotocabinet::HashDB::OWRITER | kyotocabinet::HashDB::OCREATE)) {
    std::fprintf(stderr, "raw kyoto: open failed: %s\n", db.error().message());
    std::exit(1);
  }
  const std::string value(kValueBytes, 'x');
  const std::uint64_t rss0 = bench::rssBytes();
  const double cpu0 = bench::cpuSeconds();
  std::vector<std::string> keys;
  for (std::uint64_t i = 0; i < a.urls;) {
    keys.clear();  // the caller's rows, made before the clock runs
    for (std::uint64_t end = std::min(a.urls, i + a.batch); i < end; ++i) keys.push_back(encodeUrlKey(urlKey(i)));
    Stopwatch batch;
    for (const std::string& k : keys) {
      r.raw_bytes += k.size() + value.size();
      db.set(k, value);
    }
    if (!db.synchronize(true)) {
      std::fprintf(stderr, "raw kyoto: synchronize failed\n");
      std::exit(1);
    }
    r.commit_us.push_back(batch.micros());
    r.seconds += r.commit_us.back() / 1e6;
  }
  r.cpu_seconds = bench::cpuSeconds() - cpu0;
  r.urls = a.urls;
  r.rss_growth = static_cast<std::int64_t>(bench::rssBytes()) - static_cast<std::int64_t>(rss0);
  r.disk = bench::diskUse(dir);
  db.close();
  r.disk_after_close = bench::diskUse(dir);
  return r;
}

// Plain SQLite inserts in `batch`-row transactions (store_bench_sqlite.cc).
Result_ rawSqlite(const Args& a, const std::string& dir) {
  const double cpu0 = bench::cpuSeconds();
  auto run = bench::rawSqliteInsert(a.urls, a.batch, kValueBytes, dir,
                                    [](std::uint64_t i) { return encodeUrlKey(urlKey(i)); });
  Result_ r;
  r.name = "raw sqlite (WAL FULL)";
  r.cpu_seconds = bench::cpuSeconds() - cpu0;
  r.seconds = run.seconds;
  r.urls = a.urls;
  r.raw_bytes = run.raw_bytes;
  r.disk = run.disk;
  r.disk_after_close = run.disk_after_close;
  r.rss_growth = run.rss_growth;
  r.commit_us = std::move(run.commit_us);
  return r;
}

#ifdef LCC_BENCH_HAVE_PG
// libpq in `batch`-row transactions (store_bench_pg.cc), in a schema of its own: COPY,
// or one multi-row INSERT per batch.
Result_ rawPostgres(const Args& a, bool copy) {
  auto it = a.opts.find("conninfo");
  const double cpu0 = bench::cpuSeconds();
  auto run = bench::rawPgBatches(it == a.opts.end() ? "" : it->second, a.opts.at("schema") + "_raw", copy, a.urls,
                                 a.batch, kValueBytes, [](std::uint64_t i) { return encodeUrlKey(urlKey(i)); });
  if (!run.error.empty()) {
    std::fprintf(stderr, "raw postgres: %s\n", run.error.c_str());
    std::exit(1);
  }
  Result_ r;
  r.name = copy ? "raw libpq COPY" : "raw libpq INSERT";
  r.cpu_seconds = bench::cpuSeconds() - cpu0;
  r.seconds = run.seconds;
  r.urls = a.urls;
  r.raw_bytes = run.raw_bytes;
  r.commit_us = std::move(run.commit_us);
  return r;
}
#endif

const std::map<std::string, std::function<Result_(const Args&, const std::string&)>> kBaselines = {
    {"storage-kyoto", rawKyoto},
    {"storage-sqlite", rawSqlite},
#ifdef LCC_BENCH_HAVE_PG
    {"storage-postgres", [](const Args& a, const std::string&) { return rawPostgres(a, false); }},
#endif
};

// --- the plugin ---------------------------------------------------------------
// `beside` (--interleave): called with each batch's URL range, before the plugin writes
// it for even batches and after for odd ones, so neither side always goes first.
Result_ viaPlugin(const Args& a, const std::string& dir,
                  const std::function<void(std::uint64_t, std::uint64_t)>& beside = {}) {
  Result_ r;
  r.name = a.plugin + " apply+sync";
  SystemClock clock;
  PluginRegistry registry(LCC_PLUGIN_DIR, HostContext{&clock, posixEnv(), nullptr, dir, "m1"});
  auto opts = registry.defaultOptions(a.plugin, a.opts);
  if (!opts.isOk()) {
    std::fprintf(stderr, "%s: %s\n", a.plugin.c_str(), opts.status().toString().c_str());
    std::exit(1);
  }
  auto store = registry.makeQueueStore(a.plugin, *opts);
  if (!store.isOk()) {
    std::fprintf(stderr, "%s: %s\n", a.plugin.c_str(), store.status().toString().c_str());
    std::exit(1);
  }
  auto& q = *store;
  const std::uint64_t rss0 = bench::rssBytes();
  const double cpu0 = bench::cpuSeconds();
  for (std::uint64_t i = 0; i < a.urls;) {
    QueueBatch b;  // the caller's rows, made before the clock runs
    const std::uint64_t from = i, end = std::min(a.urls, i + a.batch);
    const bool beside_first = (from / a.batch) % 2 == 0;
    for (; i < end; ++i) {
      QueueEntry e = entry(i);
      r.raw_bytes += encodeUrlKey(e.notice.key).size() + kValueBytes;
      b.putEntry(std::move(e), !a.upsert);  // new keys, marked as the QM marks rows it read as absent
    }
    b.putMeta("journal_pos", std::to_string(i));
    if (beside && beside_first) beside(from, end);
    Stopwatch batch;
    Status s = q->apply(b);
    r.apply_us.push_back(batch.micros());
    if (s.isOk()) s = q->sync();
    if (!s.isOk()) {
      std::fprintf(stderr, "%s: %s\n", a.plugin.c_str(), s.toString().c_str());
      std::exit(1);
    }
    r.commit_us.push_back(batch.micros());
    r.seconds += r.commit_us.back() / 1e6;
    if (beside && !beside_first) beside(from, end);
  }
  r.cpu_seconds = bench::cpuSeconds() - cpu0;
  r.urls = a.urls;
  r.rss_growth = static_cast<std::int64_t>(bench::rssBytes()) - static_cast<std::int64_t>(rss0);
  r.disk = bench::diskUse(dir);
  auto count = q->entryCount();
  if (!count.isOk() || *count != a.urls) {
    std::fprintf(stderr, "%s: expected %llu rows, found %s\n", a.plugin.c_str(),
                 static_cast<unsigned long long>(a.urls),
                 count.isOk() ? std::to_string(*count).c_str() : count.status().toString().c_str());
    std::exit(1);
  }
  Status c = q->close();
  if (!c.isOk()) std::fprintf(stderr, "%s: close: %s\n", a.plugin.c_str(), c.toString().c_str());
  r.disk_after_close = bench::diskUse(dir);
  return r;
}

#ifdef LCC_BENCH_HAVE_PG
// --interleave: raw libpq COPY of each batch's keys alternated with the plugin's batch,
// one batch each in turn (two connections, two schemas): both meet the same moments
// of a shared machine's load. Prints both lines and the ratio.
void interleaved(const Args& a, const std::string& base) {
  const std::string dir = base + "/plugin";
  (void)posixEnv()->createDirs(dir);
  bench::RawPgWriter w(a.opts.count("conninfo") ? a.opts.at("conninfo") : "", a.opts.at("schema") + "_raw", true);
  Result_ raw;
  raw.name = "raw libpq COPY";
  const std::string value(kValueBytes, 'x');
  std::vector<std::string> keys;
  Result_ p = viaPlugin(a, dir, [&](std::uint64_t from, std::uint64_t end) {
    keys.clear();
    for (std::uint64_t k = from; k < end; ++k) keys.push_back(encodeUrlKey(urlKey(k)));
    const double t = w.write(keys, value);
    if (t < 0) {
      std::fprintf(stderr, "raw postgres: %s\n", w.error().c_str());
      std::exit(1);
    }
    raw.commit_us.push_back(t * 1e6);
    raw.seconds += t;
  });
  raw.urls = a.urls;
  raw.raw_bytes = w.rawBytes();
  report(raw);
  report(p);
  std::printf("(interleaved batch by batch; the CPU line is the process's: both sides)\n");
  std::printf("ratio to raw libpq COPY: %.2fx URLs/s\n", p.rate() / raw.rate());
  if (a.keep) return;
  const std::string err = bench::dropPgSchema(a.opts.at("conninfo"), a.opts.at("schema"));
  if (!err.empty()) std::fprintf(stderr, "dropping schema %s: %s\n", a.opts.at("schema").c_str(), err.c_str());
  bench::removeTree(dir);
  if (a.dir.empty()) bench::removeTree(base);
}
#endif

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: store_bench [--plugin NAME] [--urls N] [--batch N] [--dir DIR] [--skip-raw] [--keep] "
               "[--upsert] [--interleave] [--opt key=value]...\n");
  std::exit(2);
}

Args parseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (k == "--plugin") a.plugin = next();
    else if (k == "--urls") a.urls = std::stoull(next());
    else if (k == "--batch") a.batch = std::stoull(next());
    else if (k == "--dir") a.dir = next();
    else if (k == "--skip-raw") a.skip_raw = true;
    else if (k == "--keep") a.keep = true;
    else if (k == "--upsert") a.upsert = true;
    else if (k == "--interleave") a.interleave = true;
    else if (k == "--opt") {
      std::string kv = next();
      auto eq = kv.find('=');
      if (eq == std::string::npos) usage();
      a.opts[kv.substr(0, eq)] = kv.substr(eq + 1);
    } else usage();
  }
  if (a.urls == 0 || a.batch == 0) usage();
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parseArgs(argc, argv);
  const bool pg = a.plugin == "storage-postgres";
  if (pg && a.opts.count("schema") == 0) a.opts["schema"] = "lcc_bench_" + std::to_string(::getpid());
  const std::string base = a.dir.empty() ? bench::makeTempDir("store") : a.dir;
  std::printf("store_bench: %llu URLs, batches of %llu, durable (sync per batch)\nmachine: %s\n",
              static_cast<unsigned long long>(a.urls), static_cast<unsigned long long>(a.batch),
              bench::machineLine(base).c_str());
#ifdef LCC_BENCH_HAVE_PG
  if (pg && a.interleave) {
    interleaved(a, base);
    return 0;
  }
#endif
  Result_ raw;
  bool have_raw = false;
  if (!a.skip_raw) {
    const std::string fd = base + "/floor";
    (void)posixEnv()->createDirs(fd);
    report(syncFloor(a, fd));
    bench::removeTree(fd);
    auto it = kBaselines.find(a.plugin);
    if (it == kBaselines.end()) {
      std::printf("(no raw baseline for %s yet)\n", a.plugin.c_str());
    } else {
      const std::string d = base + "/raw";
      posixEnv()->createDirs(d).isOk();
      raw = it->second(a, d);
      report(raw);
      have_raw = true;
      if (!a.keep) bench::removeTree(d);
    }
  }
  const std::string d = base + "/plugin";
  (void)posixEnv()->createDirs(d);
  Result_ p = viaPlugin(a, d);
  report(p);
  if (have_raw) {
    std::printf("ratio to baseline: %.2fx URLs/s, %.2fx disk bytes\n", p.rate() / raw.rate(),
                double(p.disk_after_close.allocated) / double(std::max<std::uint64_t>(1, raw.disk_after_close.allocated)));
  }
#ifdef LCC_BENCH_HAVE_PG
  if (pg && have_raw) {
    // COPY too, after the plugin: the fastest bulk path PostgreSQL has (no upsert).
    Result_ copy = rawPostgres(a, true);
    report(copy);
    std::printf("ratio to raw libpq COPY: %.2fx URLs/s\n", p.rate() / copy.rate());
  }
#endif
#ifdef LCC_BENCH_HAVE_PG
  if (pg && !a.keep) {
    const std::string err = bench::dropPgSchema(a.opts["conninfo"], a.opts["schema"]);
    if (!err.empty()) std::fprintf(stderr, "dropping schema %s: %s\n", a.opts["schema"].c_str(), err.c_str());
  }
#endif
  if (!a.keep) {
    bench::removeTree(d);
    if (a.dir.empty()) bench::removeTree(base);
  }
  return 0;
}
