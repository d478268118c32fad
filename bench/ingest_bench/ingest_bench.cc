// ingest_bench — one large set through `lcc cp send` to a real lccd (roles uns, qm;
// no BOT-M, so nothing is fetched), per size in --urls: URLs/s from the start of
// `lcc cp send` to its set_accepted, lccd's peak RSS (VmHWM) and its RSS once the
// set is applied, the `processing` a provider sees at its next connect right after
// the ack, beside the limit measured in the same run: the same file parsed with
// Expat (proto::XmlReader), each URL's attributes appended to an lcc::Journal, one
// commit (fdatasync) per 1000 URLs. Also the CPU per URL that lccd and the `lcc cp
// send` client used until the ack, which the load of a shared machine disturbs less
// than the rate. Every URL carries sz, md5 and mt, as `lcc cp scan` writes them. With --apply off it does not wait for the apply: the peak is then
// lccd's at the ack (the UNS's share; the QM applies while the set comes).
//
//   build/bin/ingest_bench [--urls 1000000,10000000] [--store storage-kyoto] [--keep on] [--apply off] [--threads N]
//                          [--links xml|tcp|process|both|all]
// --links: how the UNS and the QM link (session_bench/lccd_process.h): xml, over
// loopback TCP as the XML stream (node.link_frames off); tcp, over TCP as compact
// frames (two hosts' form); process, the UNS hands the QM its parsed notices; both: tcp
// then process; all: xml, tcp, process.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "common/posix_env.h"
#include "lcc/support/journal.h"
#include "proto/xml_reader.h"
#include "session_bench/lccd_process.h"

namespace lcc::bench {
namespace {

struct Args {
  std::vector<std::uint64_t> sizes{1'000'000, 10'000'000};
  std::string store = "storage-kyoto";
  bool keep = false;
  bool apply = true;
  std::vector<Links> links{Links::kInProcess};  // one pass per form (--links)
  int threads = 0;                               // lccd's io threads (--threads; 0: lccd's default, 2 here)
};

// The set document `lcc cp scan` would print for `n` files (sz, md5, mt on each).
void writeSet(const std::string& path, std::uint64_t n) {
  std::ofstream f(path, std::ios::binary);
  f << "<lococa:set xmlns:lococa=\"http://www.lococa.org/1.0\" set=\"partial\" urlprefix=\"http://p0.example/\">\n";
  char line[320];
  for (std::uint64_t i = 0; i < n; ++i) {
    const int len = std::snprintf(line, sizeof line,
                                  "<url c=\"http://p0.example/d%03llu/file-%09llu.html\" m=\"text/html\" sz=\"%llu\" "
                                  "md5=\"%016llx%016llx\" mt=\"2024-05-%02lluT10:%02llu:%02lluZ\"/>\n",
                                  static_cast<unsigned long long>(i % 1000), static_cast<unsigned long long>(i),
                                  static_cast<unsigned long long>(1000 + i % 50000),
                                  static_cast<unsigned long long>(i * 0x9e3779b97f4a7c15ull),
                                  static_cast<unsigned long long>(~i), static_cast<unsigned long long>(1 + i % 28),
                                  static_cast<unsigned long long>(i % 60), static_cast<unsigned long long>(i / 60 % 60));
    f.write(line, len);
  }
  f << "</lococa:set>\n";
}

// The limit: parse + journal append + fdatasync per 1000 URLs. URLs/s.
double baseline(const std::string& set_path, const std::string& dir) {
  struct H : proto::XmlHandler {
    Journal* j = nullptr;
    std::string rec;
    std::uint64_t urls = 0;
    Status st;
    void onStart(int depth, const proto::XmlName& name, const proto::XmlAttrs& a) override {
      if (depth != 2 || name.local != "url" || !st.isOk()) return;
      for (const char* k : {"c", "m", "sz", "md5", "mt"}) {
        if (const auto* v = a.get(k)) rec.append(*v).push_back('\0');
      }
      if (++urls % 1000 == 0) flush();
    }
    void onEnd(int, const proto::XmlName&) override {}
    void flush() {
      if (rec.empty()) return;
      auto p = j->append(rec);
      if (p.isOk()) p = j->commit();
      if (!p.isOk()) st = p.status();
      rec.clear();
    }
  } h;
  auto j = Journal::open(posixEnv(), dir + "/baseline-journal");
  if (!j.isOk()) return 0;
  h.j = j.value().get();
  proto::XmlLimits limits;
  limits.max_elements = ~0ull;
  proto::XmlReader reader(h, limits, proto::XmlFraming::kDocuments);
  Stopwatch sw;
  int fd = ::open(set_path.c_str(), O_RDONLY);
  std::vector<char> buf(1 << 16);
  ssize_t n;
  while (fd >= 0 && (n = ::read(fd, buf.data(), buf.size())) > 0) reader.feed(buf.data(), static_cast<std::size_t>(n));
  if (fd >= 0) ::close(fd);
  h.flush();
  const double s = sw.seconds();
  if (reader.failed() || !h.st.isOk()) std::fprintf(stderr, "baseline failed: %s\n", reader.errorMessage().c_str());
  return h.urls / s;
}

// CPU seconds (user + system) the process `pid` has used so far; 0 when unknown.
double processCpuSeconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// CPU seconds (user + system) of the waited-for children so far.
double childrenCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_CHILDREN, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

// `processing` of a provider's init_accepted (a session with init only); -1 on failure.
long long processingAtConnect(std::uint16_t port, const std::string& id, const std::string& password) {
  int fd = connectLoopback(port);
  if (fd < 0) return -1;
  const std::string init = "<lococa:init xmlns:lococa=\"http://www.lococa.org/1.0\"><provider id=\"" + id +
                           "\" passwd=\"" + password + "\"/></lococa:init>";
  std::string in;
  if (::write(fd, init.data(), init.size()) == static_cast<ssize_t>(init.size())) {
    ::shutdown(fd, SHUT_WR);
    char b[4096];
    ssize_t n;
    while ((n = ::read(fd, b, sizeof b)) > 0) in.append(b, static_cast<std::size_t>(n));
  }
  ::close(fd);
  auto p = in.find("processing=\"");
  return p == std::string::npos ? -1 : std::atoll(in.c_str() + p + 12);
}

// The QM's applied URL count from `lcc status --json`; -1 when unknown.
long long queuedUrls(const LccdProcess& lccd) {
  const std::string j = lccd.lcc({"status", "--json"});
  auto p = j.find("\"queued_urls\":");
  return p == std::string::npos ? -1 : std::atoll(j.c_str() + p + 14);
}

void runOne(const Args& a, std::uint64_t n, Links links) {
  const std::string dir = makeTempDir("ingest");
  const std::string set_path = dir + "/set.xml";
  writeSet(set_path, n);
  const double base = baseline(set_path, dir);
  std::ostringstream extra;
  extra << "storage:\n  queue: {plugin: " << a.store << "}\n  content: {plugin: " << a.store
        << "}\n  providers: {plugin: " << a.store << "}\nuns:\n  max_set_urls: " << n
        << "\n  session_timeout: 1h\n  idle_timeout: 10m\n"
        // new providers get a files quota of 100,000 by default (issue 25): the QM would
        // queue only that many of the set's URLs
        << "rs:\n  default_quota_files: 0\n  default_quota_bytes: 0\nthreads: " << a.threads << "\n";
  LccdProcess lccd(dir, {"uns", "qm"}, extra.str(), {}, links);
  if (!lccd.start()) return (void)std::fprintf(stderr, "lccd did not start\n");
  const std::string added = lccd.lcc({"provider", "add", "--prefix", "http://p0.example/"});
  const auto id_at = added.find("id="), pw_at = added.find(" password=");
  if (id_at == std::string::npos || pw_at == std::string::npos) return (void)std::fprintf(stderr, "provider add failed\n");
  const std::string id = added.substr(id_at + 3, pw_at - id_at - 3);
  std::string pw = added.substr(pw_at + 10);
  while (!pw.empty() && (pw.back() == '\n' || pw.back() == '\r')) pw.pop_back();
  const std::uint64_t rss_start = lccd.rss();
  const std::string cmd = std::string(LCC_BIN_DIR) + "/lcc cp send --uns 127.0.0.1:" +
                          std::to_string(lccd.port("uns")) + " --id " + id + " --password '" + pw + "' '" + set_path +
                          "' > '" + dir + "/send.out' 2>&1";
  const double lccd_cpu0 = processCpuSeconds(lccd.pid()), client_cpu0 = childrenCpuSeconds();
  Stopwatch sw;
  const int rc = std::system(cmd.c_str());
  const double send_s = sw.seconds();
  // CPU per URL from the start of the send to the ack: what the shared machine's load
  // does not change much, unlike the rate (docs/benchmarks.md, "CPU per URL").
  const double lccd_us = (processCpuSeconds(lccd.pid()) - lccd_cpu0) * 1e6 / static_cast<double>(n);
  const double client_us = (childrenCpuSeconds() - client_cpu0) * 1e6 / static_cast<double>(n);
  const long long processing = processingAtConnect(lccd.port("uns"), id, pw);
  const std::uint64_t peak_at_ack = lccd.peakRss();
  // Applied: the QM's queue holds every URL (no BOT-M: nothing leaves it).
  Stopwatch apply;
  // Stalled: neither the queue nor lccd's CPU time moved for a minute (a streamed set's
  // URLs may show in the queue only at its end).
  long long queued = 0, queued_before = -1;
  double cpu_before = -1;
  Stopwatch since_progress;
  while (a.apply && (queued = queuedUrls(lccd)) < static_cast<long long>(n)) {
    const double cpu = processCpuSeconds(lccd.pid());
    if (queued != queued_before || cpu > cpu_before + 1.0) {
      since_progress = Stopwatch(), queued_before = queued, cpu_before = cpu;
    }
    if (since_progress.seconds() > 60) {
      std::fprintf(stderr, "ingest_bench: the apply stalled at %lld of %llu URLs queued for 60 s\n", queued,
                   static_cast<unsigned long long>(n));
      lccd.stop();
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  const double apply_s = apply.seconds();
  // RSS after the apply: once a checkpoint passed (3 s), and once the node monitor's
  // heap trim (every 10 s, node.heap_trim_threshold) has run after it (13 s).
  std::uint64_t rss_after_checkpoint = 0;
  if (a.apply) {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    rss_after_checkpoint = lccd.rss();
    std::this_thread::sleep_for(std::chrono::seconds(10));
  }
  std::printf("%9llu URLs, link %s: cp send %s in %.1f s = %.0f URLs/s (%.2fx the baseline of %.0f URLs/s); processing at "
              "the next connect %lld; %s %.1f s after the ack; lccd RSS %.0f MB at start, peak (VmHWM) %.0f MB at "
              "the ack, %.0f MB in all, %.0f MB 3 s after the apply, %.0f MB 13 s after; CPU per URL until the ack: "
              "lccd %.2f us, lcc cp send %.2f us\n",
              static_cast<unsigned long long>(n), linksName(links), rc == 0 ? "ok" : "FAILED", send_s, n / send_s, n / send_s / base,
              base, processing, a.apply ? "applied" : "not waiting for the apply;", apply_s, rss_start / 1e6,
              peak_at_ack / 1e6, lccd.peakRss() / 1e6, rss_after_checkpoint / 1e6, lccd.rss() / 1e6, lccd_us,
              client_us);
  std::fflush(stdout);
  lccd.stop();
  if (!a.keep) removeTree(dir);
}

}  // namespace
}  // namespace lcc::bench

int main(int argc, char** argv) {
  lcc::bench::Args a;
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i], v = i + 1 < argc ? argv[i + 1] : "";
    if (k == "--urls") {
      a.sizes.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) a.sizes.push_back(std::strtoull(x.c_str(), nullptr, 10));
    } else if (k == "--store") {
      a.store = v;
    } else if (k == "--keep") {
      a.keep = v == "on";
    } else if (k == "--apply") {
      a.apply = v != "off";
    } else if (k == "--links" && !lcc::bench::parseLinks(v).empty()) {
      a.links = lcc::bench::parseLinks(v);
    } else if (k == "--threads") {
      a.threads = std::atoi(v.c_str());
    } else {
      std::fprintf(stderr, "usage: ingest_bench [--urls 1000000,10000000] [--store storage-kyoto] [--keep on] [--apply off] [--links xml|tcp|process|both|all] [--threads N]\n");
      return 2;
    }
  }
  std::printf("ingest_bench: store %s\n%s\n", a.store.c_str(), lcc::bench::machineLine("/tmp").c_str());
  for (auto n : a.sizes) {
    for (lcc::bench::Links links : a.links) lcc::bench::runOne(a, n, links);
  }
  return 0;
}
