// qm_bench — the QM engine's numbers (docs/benchmarks.md, "QM"):
//   dispatch  URLs/s through dispatch -> stub BOT-M result -> LCC DB write -> QDB drop
//   fill      absorb N URLs through the intake journal (group commit) into the stores
//   ready     a fresh process opening a filled queue: time to ready, RSS per queued URL
// Usage:
//   qm_bench dispatch [--plugin storage-memory] [--urls 200000] [--providers 1000] [--capacity 512]
//   qm_bench fill  --dir D [--plugin storage-kyoto] [--urls 1000000] [--providers 1000] [--set 1000]
//   qm_bench ready --dir D [--plugin storage-kyoto]
//   every mode: [--apply-ops N] (qm.apply_batch_ops, store operations per apply batch)
//               [--opt key=value ...] (a storage plugin option, e.g. buckets=20000000)
//               [--quota-files N] (each provider's files quota; large enough, nothing is refused)
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "common/config/config.h"
#include "bench_util.h"
#include "lcc/support/journal.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "common/system_clock.h"
#include "qm/queue_manager.h"

using namespace lcc;
using namespace lcc::qm;

namespace {

// CPU seconds (user + system) of this process: the machine is shared, so wall time
// alone mixes in other people's load.
double cpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct Args {
  std::string mode;
  std::string plugin;
  std::string dir;
  std::uint64_t urls = 0;
  std::uint32_t providers = 1000;
  std::uint64_t capacity = 512;
  std::uint64_t set_size = 1000;
  std::uint64_t apply_ops = 0;  // qm.apply_batch_ops; 0: the QM's default
  std::uint64_t quota_files = 0;  // each provider's quota_files (0: none); the files quota's check runs per new URL
  std::map<std::string, std::string> opts;  // storage plugin options (--opt key=value)
};

// The QM as the benchmark runs it: no back-pressure from the queue's length.
QmOptions benchQmOptions(const Args& a) {
  QmOptions o = QmOptions::fromConfig(Config::defaults());
  o.queue_high = 1ull << 40;
  o.queue_low = 1ull << 39;
  if (a.apply_ops > 0) o.apply_batch_ops = a.apply_ops;
  return o;
}

class StubBotm : public BotmPort {
 public:
  void sendFetch(LinkId link, const FetchRequest& order) override { orders.push_back({link, order.id}); }
  void sendDelete(LinkId, std::uint64_t, const std::string&, const std::string&) override {}
  void sendSweep(LinkId, std::uint64_t) override {}
  std::vector<std::pair<LinkId, std::uint64_t>> orders;
};

struct Opened {
  std::unique_ptr<PluginRegistry> registry;
  PluginPtr<QueueStore> queue;
  PluginPtr<ContentStore> content;
  PluginPtr<ProviderStore> providers;
};

Opened openStores(const std::string& plugin, const std::string& dir, Clock* clock,
                  const std::map<std::string, std::string>& overrides = {}) {
  Opened o;
  o.registry = std::make_unique<PluginRegistry>(LCC_PLUGIN_DIR, HostContext{clock, posixEnv(), nullptr, dir, "m1"});
  auto opts = o.registry->defaultOptions(plugin, overrides);
  if (!opts.isOk()) {
    std::fprintf(stderr, "%s: %s\n", plugin.c_str(), opts.status().toString().c_str());
    std::exit(1);
  }
  auto q = o.registry->makeQueueStore(plugin, opts.value());
  auto c = o.registry->makeContentStore(plugin, opts.value());
  auto p = o.registry->makeProviderStore(plugin, opts.value());
  if (!q.isOk() || !c.isOk() || !p.isOk()) {
    std::fprintf(stderr, "opening %s stores failed\n", plugin.c_str());
    std::exit(1);
  }
  o.queue = std::move(q).value();
  o.content = std::move(c).value();
  o.providers = std::move(p).value();
  return o;
}

void check(const Status& s, const char* what) {
  if (!s.isOk()) {
    std::fprintf(stderr, "%s: %s\n", what, s.toString().c_str());
    std::exit(1);
  }
}

// Submits `urls` URLs over `providers` providers in sets of `set_size`, committing
// (one journal sync) every `group` sets.
struct FillState {
  std::uint64_t made = 0;    // URLs named so far (names stay unique across calls)
  std::uint64_t set_id = 0;  // the bench UNS's set ids (strictly increasing)
  std::uint32_t next_provider = 0;
};

double fillQueue(QueueManager& qm, std::vector<std::function<void()>>& posted, const Args& a, FillState& st) {
  bench::Stopwatch sw;
  const std::uint64_t end = st.made + a.urls;
  std::uint64_t& made = st.made;
  std::uint64_t& set_id = st.set_id;
  std::uint32_t& next_provider = st.next_provider;
  const int group = 16;
  int in_group = 0;
  while (made < end) {
    IntakeSet s;
    s.uns = "bench/uns";
    s.id = ++set_id;
    s.pid = 1 + (next_provider++ % a.providers);
    std::uint64_t n = std::min<std::uint64_t>(a.set_size, end - made);
    s.urls.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      UrlNotice u;
      u.key = {s.pid, "http://www.site" + std::to_string(s.pid) + ".example/dir/page" + std::to_string(made + i) + ".html",
               "text/html"};
      u.mtime = 1714564800;
      u.size = 5120;
      s.urls.push_back(std::move(u));
    }
    made += n;
    qm.submit(std::move(s), nullptr);
    if (++in_group == group || made >= end) {
      in_group = 0;
      for (auto& fn : posted) fn();
      posted.clear();
      qm.commitPending();
    }
  }
  return sw.seconds();
}

// The baseline of `dispatch`: the store work a fetch result needs at least, without
// the QM — per URL one ContentStore batch (the record) and one QueueStore batch (drop
// the row, update its list), on rows put there first. Returns URLs per CPU-second.
double storeFloor(const Args& a, double* wall_rate) {
  const std::string dir = bench::makeTempDir("qm-floor");
  SystemClock clock;
  Opened st = openStores(a.plugin, dir, &clock, a.opts);
  std::vector<std::string> keys;
  keys.reserve(a.urls);
  QueueBatch fill;
  for (std::uint64_t i = 0; i < a.urls; ++i) {
    QueueEntry e;
    ProviderId pid = 1 + static_cast<ProviderId>(i % a.providers);
    e.notice.key = {pid, "http://www.site" + std::to_string(pid) + ".example/dir/page" + std::to_string(i) + ".html",
                    "text/html"};
    e.notice.mtime = 1714564800;
    e.notice.size = 5120;
    e.pset = 1 + i / a.set_size;
    keys.push_back(encodeUrlKey(e.notice.key));
    fill.putEntry(std::move(e));
    if (fill.size() >= 1000) {
      check(st.queue->apply(fill), "floor fill");
      fill.clear();
    }
  }
  check(st.queue->apply(fill), "floor fill");
  check(st.queue->sync(), "floor sync");
  bench::Stopwatch sw;
  const double cpu0 = cpuSeconds();
  bench::Stopwatch since_checkpoint;
  for (std::uint64_t i = 0; i < a.urls; ++i) {
    auto k = decodeUrlKey(keys[i]);
    ContentRecord r;
    r.key = *k;
    r.seq = i + 1;
    r.machine = "m1";
    r.filename = std::to_string(i);
    r.size = 5120;
    r.md5 = "0123456789abcdef0123456789abcdef";
    r.declared_mtime = 1714564800;
    r.declared_size = 5120;
    ContentBatch cb;
    cb.put(std::move(r));
    check(st.content->apply(cb), "floor content");
    QueueBatch qb;
    qb.removeEntry(keys[i]);
    PSetRecord p;
    p.pset = 1 + i / a.set_size;
    p.pid = k->pid;
    p.first = p.last = keys[i];
    qb.putPSet(p);
    check(st.queue->apply(qb), "floor queue");
    if (since_checkpoint.seconds() >= 2.0) {
      check(st.content->sync(), "floor sync");
      check(st.queue->sync(), "floor sync");
      since_checkpoint = bench::Stopwatch();
    }
  }
  check(st.content->sync(), "floor sync");
  check(st.queue->sync(), "floor sync");
  const double s = sw.seconds(), cpu = cpuSeconds() - cpu0;
  *wall_rate = static_cast<double>(a.urls) / s;
  (void)st.queue->close();
  (void)st.content->close();
  (void)st.providers->close();
  bench::removeTree(dir);
  return static_cast<double>(a.urls) / cpu;
}

int runDispatch(const Args& a) {
  double floor_wall = 0;
  const double floor_cpu = storeFloor(a, &floor_wall);
  std::printf("baseline (store floor: 1 content batch + 1 queue batch per URL, no QM): %.0f URLs/s wall, %.0f URLs per "
              "CPU-second\n",
              floor_wall, floor_cpu);
  const std::string dir = bench::makeTempDir("qm-dispatch");
  SystemClock clock;
  Opened st = openStores(a.plugin, dir, &clock, a.opts);
  for (std::uint32_t i = 0; i < a.providers; ++i) {
    ProviderRecord r;
    r.state = ProviderState::kActive;
    r.quota_files = a.quota_files;
    check(st.providers->create(r).status(), "create provider");
  }
  auto j = Journal::open(posixEnv(), dir + "/journal");
  check(j.status(), "journal");
  std::vector<std::function<void()>> posted;
  StubBotm botm;
  QmOptions o = benchQmOptions(a);
  o.botm_overload_pct = 100;
  QmDeps deps{st.queue.get(), st.content.get(), st.providers.get(), j.value().get(), &clock, nullptr, &botm,
              [&](std::function<void()> fn) { posted.push_back(std::move(fn)); }};
  QueueManager qm(deps, o);
  check(qm.open(), "open");
  FillState fs;
  double fill_s = fillQueue(qm, posted, a, fs);
  check(qm.checkpoint(), "checkpoint");
  std::printf("filled %llu URLs in %.2f s (%.0f URLs/s absorbed)\n", static_cast<unsigned long long>(qm.queued()), fill_s,
              static_cast<double>(a.urls) / fill_s);
  bench::Stopwatch sw;
  const double cpu0 = cpuSeconds();
  qm.linkUp(1, "m1", a.capacity);
  std::uint64_t done = 0, file = 0;
  bench::Stopwatch since_checkpoint;
  while (!botm.orders.empty()) {
    auto batch = std::move(botm.orders);
    botm.orders.clear();
    for (auto [link, id] : batch) {
      FetchResult r;
      r.id = id;
      r.http_status = 200;
      r.machine = "m1";
      r.filename = std::to_string(++file);
      r.size = 5120;
      r.md5 = "0123456789abcdef0123456789abcdef";
      qm.onResult(link, r);
      ++done;
    }
    if (since_checkpoint.seconds() >= 2.0) {  // as qm.checkpoint_interval would
      check(qm.checkpoint(), "checkpoint");
      since_checkpoint = bench::Stopwatch();
    }
  }
  check(qm.checkpoint(), "checkpoint");
  double s = sw.seconds();
  double cpu = cpuSeconds() - cpu0;
  std::printf("dispatch: %s, %u providers, capacity %llu: %llu URLs fetched+stored in %.2f s wall = %.0f URLs/s; "
              "%.2f s CPU = %.0f URLs per CPU-second (queue left %llu); ratio to the store floor (CPU) %.2f\n",
              a.plugin.c_str(), a.providers, static_cast<unsigned long long>(a.capacity),
              static_cast<unsigned long long>(done), s, static_cast<double>(done) / s, cpu,
              static_cast<double>(done) / cpu, static_cast<unsigned long long>(qm.queued()),
              static_cast<double>(done) / cpu / floor_cpu);
  (void)qm.close();
  (void)st.queue->close();
  (void)st.content->close();
  (void)st.providers->close();
  bench::removeTree(dir);
  return 0;
}

int runFill(const Args& a) {
  SystemClock clock;
  Opened st = openStores(a.plugin, a.dir, &clock, a.opts);
  std::uint64_t have = 0;
  (void)st.providers->scan([&](const ProviderRecord&) { return ++have, true; });
  for (std::uint64_t i = have; i < a.providers; ++i) {
    ProviderRecord r;
    r.state = ProviderState::kActive;
    r.quota_files = a.quota_files;
    check(st.providers->create(r).status(), "create provider");
  }
  auto j = Journal::open(posixEnv(), a.dir + "/journal");
  check(j.status(), "journal");
  std::vector<std::function<void()>> posted;
  StubBotm botm;
  QmOptions o = benchQmOptions(a);
  QmDeps deps{st.queue.get(), st.content.get(), st.providers.get(), j.value().get(), &clock, nullptr, &botm,
              [&](std::function<void()> fn) { posted.push_back(std::move(fn)); }};
  QueueManager qm(deps, o);
  check(qm.open(), "open");
  // Checkpoint as the timers would, by journal size and time.
  bench::Stopwatch sw;
  const double cpu0 = cpuSeconds();
  Args part = a;
  std::uint64_t left = a.urls;
  FillState fs;
  // Continue the names and set ids of an earlier fill of the same folder.
  fs.made = qm.queued();
  {
    auto m = st.queue->getMeta(metaUnsKey("bench/uns"));
    if (m.isOk() && m.value()) fs.set_id = std::stoull(*m.value());
  }
  while (left > 0) {
    part.urls = std::min<std::uint64_t>(left, 200000);
    fillQueue(qm, posted, part, fs);
    left -= part.urls;
    check(qm.checkpoint(), "checkpoint");
  }
  double s = sw.seconds();
  double cpu = cpuSeconds() - cpu0;
  std::printf("fill: %s: %llu URLs queued in %.1f s wall = %.0f URLs/s, %.1f s CPU (journal group commit every 16 sets of "
              "%llu); %s\n",
              a.plugin.c_str(), static_cast<unsigned long long>(qm.queued()), s, static_cast<double>(a.urls) / s, cpu,
              static_cast<unsigned long long>(a.set_size), bench::memoryLine().c_str());
  check(qm.close(), "close");
  check(st.queue->close(), "close queue");
  check(st.content->close(), "close content");
  check(st.providers->close(), "close providers");
  auto du = bench::diskUse(a.dir);
  std::printf("disk: %.1f MiB allocated under %s\n", static_cast<double>(du.allocated) / (1 << 20), a.dir.c_str());
  return 0;
}

int runReady(const Args& a) {
  const std::uint64_t rss0 = bench::rssBytes();
  bench::Stopwatch sw;
  SystemClock clock;
  Opened st = openStores(a.plugin, a.dir, &clock, a.opts);
  const double stores_s = sw.seconds();
  const std::uint64_t rss_stores = bench::rssBytes();
  auto j = Journal::open(posixEnv(), a.dir + "/journal");
  check(j.status(), "journal");
  StubBotm botm;
  QmOptions o = benchQmOptions(a);
  QmDeps deps{st.queue.get(), st.content.get(), st.providers.get(), j.value().get(), &clock, nullptr, &botm, nullptr};
  QueueManager qm(deps, o);
  check(qm.open(), "open");
  // Ready = the first fetch can go out.
  qm.linkUp(1, "m1", 64);
  const double ready_s = sw.seconds();
  const std::uint64_t rss1 = bench::rssBytes();
  const std::uint64_t n = qm.queued();
  std::printf("ready: %s: %llu URLs queued, %zu ready sets, %zu providers; stores open %.2f s, ready %.2f s; "
              "first fetches out: %zu\n",
              a.plugin.c_str(), static_cast<unsigned long long>(n), qm.scheduler().readySetCount(),
              qm.scheduler().providerCount(), stores_s, ready_s, botm.orders.size());
  std::printf("rss: %.1f MiB at start, %.1f MiB with the stores open, %.1f MiB ready: %.2f bytes per queued URL "
              "(whole process), %.2f bytes per queued URL (growth from stores open to ready)\n",
              static_cast<double>(rss0) / (1 << 20), static_cast<double>(rss_stores) / (1 << 20),
              static_cast<double>(rss1) / (1 << 20), n ? static_cast<double>(rss1) / static_cast<double>(n) : 0.0,
              n ? static_cast<double>(rss1 - rss_stores) / static_cast<double>(n) : 0.0);
  qm.linkDown(1);
  (void)qm.close();
  (void)st.queue->close();
  (void)st.content->close();
  (void)st.providers->close();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (argc < 2) {
    std::fprintf(stderr, "usage: qm_bench dispatch|fill|ready [--plugin P] [--urls N] [--providers N] [--capacity N] "
                         "[--set N] [--dir D] [--apply-ops N] [--quota-files N] [--opt key=value]...\n");
    return 2;
  }
  a.mode = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--plugin") a.plugin = v;
    else if (k == "--urls") a.urls = std::stoull(v);
    else if (k == "--providers") a.providers = static_cast<std::uint32_t>(std::stoul(v));
    else if (k == "--capacity") a.capacity = std::stoull(v);
    else if (k == "--set") a.set_size = std::stoull(v);
    else if (k == "--dir") a.dir = v;
    else if (k == "--apply-ops") a.apply_ops = std::stoull(v);
    else if (k == "--quota-files") a.quota_files = std::stoull(v);
    else if (k == "--opt" && v.find('=') != std::string::npos) a.opts[v.substr(0, v.find('='))] = v.substr(v.find('=') + 1);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  std::printf("%s\n", bench::machineLine(a.dir.empty() ? "/tmp" : a.dir).c_str());
  if (a.mode == "dispatch") {
    if (a.plugin.empty()) a.plugin = "storage-memory";
    if (a.urls == 0) a.urls = 200000;
    return runDispatch(a);
  }
  if (a.plugin.empty()) a.plugin = "storage-kyoto";
  if (a.dir.empty()) {
    std::fprintf(stderr, "--dir is required for %s\n", a.mode.c_str());
    return 2;
  }
  if (a.mode == "fill") {
    if (a.urls == 0) a.urls = 1000000;
    return runFill(a);
  }
  if (a.mode == "ready") return runReady(a);
  std::fprintf(stderr, "unknown mode %s\n", a.mode.c_str());
  return 2;
}
