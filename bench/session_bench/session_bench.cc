// session_bench — CP sessions over real sockets against a real lccd (roles uns, qm):
//  - serial: one session at a time (init + a set of --urls URLs, until set_result);
//  - concurrent: --clients clients at once (default: one per provider; client c is
//    provider c mod --providers), --sessions in all;
// beside the limit of the durable path measured in the same run: the same set bytes
// appended serially to a file with an fdatasync each (what one set costs at least when
// nothing is batched). Prints sets/s, latencies and the ratio to that baseline, and
// the CPU seconds lccd and the bench's clients used (both share the machine).
// --runs N repeats baseline + concurrent N times against the same lccd and prints
// the median of each; the load average is printed before and after.
//
//   build/bin/session_bench [--providers 64] [--clients N] [--sessions 20000] [--urls 10]
//                           [--serial 20] [--runs 1] [--store storage-kyoto] [--tls on]
//                           [--lccd PATH] [--links xml|tcp|process|both|all]
// --links: how the UNS and the QM of the lccd link (lccd_process.h): xml, over loopback
// TCP as the XML stream; tcp, over TCP as compact frames (two hosts' form); process,
// the UNS hands the QM its parsed notices; both: a whole pass of tcp then process in
// one run; all: xml, tcp, process.
// --tls on: the sessions go to listen.uns_tls (a certificate made with openssl in the
// bench folder), each one a new TCP connection and a full TLS handshake.
// --lccd PATH: run that lccd binary instead of build/bin/lccd (to compare two builds).
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "capi/cu_client.h"
#include "session_bench/lccd_process.h"

namespace lcc::bench {
namespace {

struct Args {
  int providers = 64;
  int clients = 0;  // 0: one per provider
  int runs = 1;
  std::string lccd;
  int sessions = 20000;
  int urls = 10;
  int serial = 20;
  std::string store = "storage-kyoto";
  bool tls = false;
  std::vector<Links> links{Links::kInProcess};  // one pass per form (--links)
  Links link = Links::kInProcess;                // this pass's
};

// The client context of a TLS run (null: plain TCP).
net::TlsContextPtr g_tls;

struct Provider {
  std::string id, password;
};

std::string setDocument(int provider_index, int session, int urls) {
  std::string s = "<lococa:set xmlns:lococa=\"http://www.lococa.org/1.0\" set=\"partial\" urlprefix=\"http://p" +
                  std::to_string(provider_index) + ".example/\">";
  for (int u = 0; u < urls; ++u) {
    s += "<url c=\"s" + std::to_string(session) + "/u" + std::to_string(u) + ".html\" m=\"text/html\" sz=\"" +
         std::to_string(1000 + u) + "\"/>";
  }
  return s + "</lococa:set>";
}

// One whole session over TLS (capi::Socket, as `lcc cp send --tls`).
bool runTlsSession(std::uint16_t port, const std::string& out) {
  auto sock = capi::Socket::connect(capi::Endpoint{"localhost", port, true}, 30000, g_tls);
  if (!sock.isOk() || !(*sock)->writeAll(out).isOk()) return false;
  std::string in;
  char buf[8192];
  for (;;) {
    auto n = (*sock)->read(buf, sizeof buf);
    if (!n.isOk() || *n == 0) break;
    in.append(buf, *n);
    if (in.find("set_result>") != std::string::npos || in.find("init_rejected>") != std::string::npos) break;
  }
  return in.find("<set_accepted") != std::string::npos;
}

// One whole session; true when the set was accepted.
bool runSession(std::uint16_t port, const Provider& p, const std::string& set) {
  if (g_tls) {
    return runTlsSession(port, "<lococa:init xmlns:lococa=\"http://www.lococa.org/1.0\"><provider id=\"" + p.id +
                                   "\" passwd=\"" + p.password + "\"/></lococa:init>" + set);
  }
  int fd = connectLoopback(port);
  if (fd < 0) return false;
  std::string out = "<lococa:init xmlns:lococa=\"http://www.lococa.org/1.0\"><provider id=\"" + p.id +
                    "\" passwd=\"" + p.password + "\"/></lococa:init>" + set;
  bool ok = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(out.size());
  std::string in;
  char buf[8192];
  while (ok) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    in.append(buf, static_cast<std::size_t>(n));
    if (in.find("set_result>") != std::string::npos || in.find("init_rejected>") != std::string::npos) break;
  }
  ::close(fd);
  return ok && in.find("<set_accepted") != std::string::npos;
}

double baselineSetsPerSecond(const std::string& dir, const std::string& set, int count) {
  const std::string path = dir + "/baseline.journal";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return 0;
  Stopwatch sw;
  for (int i = 0; i < count; ++i) {
    if (::write(fd, set.data(), set.size()) != static_cast<ssize_t>(set.size()) || ::fdatasync(fd) != 0) break;
  }
  double s = sw.seconds();
  ::close(fd);
  return count / s;
}

std::vector<Provider> addProviders(const LccdProcess& lccd, int n) {
  std::vector<Provider> out;
  for (int i = 0; i < n; ++i) {
    std::string line = lccd.lcc({"provider", "add", "--prefix", "http://p" + std::to_string(i) + ".example/"});
    auto id = line.find("id="), pw = line.find(" password=");
    if (id == std::string::npos || pw == std::string::npos) return {};
    std::string pass = line.substr(pw + 10);
    while (!pass.empty() && (pass.back() == '\n' || pass.back() == '\r')) pass.pop_back();
    out.push_back({line.substr(id + 3, pw - id - 3), pass});
  }
  return out;
}

struct RunResult {
  double baseline = 0, rate = 0, p50_ms = 0, p99_ms = 0, lccd_cpu = 0, client_cpu = 0;
  int failed = 0;
};

// The three load averages, as /proc/loadavg gives them.
std::string loadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

// --clients threads run --sessions sessions in all; run `r` numbers its URLs apart.
RunResult runConcurrent(const Args& a, const LccdProcess& lccd, std::uint16_t port,
                        const std::vector<Provider>& providers, int r) {
  std::atomic<int> next{0}, failed{0};
  std::vector<std::vector<double>> lat(static_cast<std::size_t>(a.clients));
  const double lccd_cpu = lccd.cpuSeconds(), client_cpu = cpuSeconds();
  Stopwatch wall;
  std::vector<std::thread> clients;
  for (int c = 0; c < a.clients; ++c) {
    clients.emplace_back([&, c] {
      const int p = c % static_cast<int>(providers.size());
      for (int s; (s = next.fetch_add(1)) < a.sessions;) {
        Stopwatch sw;
        const int session = a.serial + r * a.sessions + s;
        if (!runSession(port, providers[static_cast<std::size_t>(p)], setDocument(p, session, a.urls))) ++failed;
        lat[static_cast<std::size_t>(c)].push_back(sw.micros());
      }
    });
  }
  for (auto& t : clients) t.join();
  RunResult out;
  out.rate = a.sessions / wall.seconds();
  out.lccd_cpu = lccd.cpuSeconds() - lccd_cpu;
  out.client_cpu = cpuSeconds() - client_cpu;
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  out.p50_ms = percentile(all, 50) / 1000;
  out.p99_ms = percentile(all, 99) / 1000;
  out.failed = failed.load();
  return out;
}

int run(const Args& a) {
  const std::string load_before = loadAverage();
  const std::string dir = makeTempDir("session");
  std::printf("session_bench: %d providers, %d clients, %d sessions of %d URLs, %d run(s), store %s, links %s%s%s\n%s\n",
              a.providers, a.clients, a.sessions, a.urls, a.runs, a.store.c_str(),
              linksName(a.link), a.tls ? ", over TLS" : "",
              a.lccd.empty() ? "" : (", lccd " + a.lccd).c_str(), machineLine(dir).c_str());
  const std::string stores = "storage:\n  queue: {plugin: " + a.store + "}\n  content: {plugin: " + a.store +
                             "}\n  providers: {plugin: " + a.store + "}\nuns:\n  max_connections_per_ip: 4096\n";
  std::string tls_keys;
  if (a.tls) {
    const std::string make = "cd '" + dir + "' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
                             "-days 2 -subj /CN=localhost -addext subjectAltName=DNS:localhost -keyout k.pem -out c.pem "
                             ">/dev/null 2>&1";
    auto ctx = std::system(make.c_str()) == 0 ? net::makeClientContext({dir + "/c.pem", "", "", net::TlsVersion::k12})
                                              : Result<net::TlsContextPtr>(Status::ioError("openssl failed"));
    if (!ctx.isOk()) {
      std::fprintf(stderr, "no certificate: %s\n", ctx.status().toString().c_str());
      return 1;
    }
    g_tls = ctx.value();
    tls_keys = "tls:\n  cert_file: " + dir + "/c.pem\n  key_file: " + dir + "/k.pem\n";
  }
  LccdProcess lccd(dir, {"uns", "qm"}, stores + tls_keys,
                   a.tls ? std::vector<std::string>{"uns_tls"} : std::vector<std::string>{}, a.link);
  if (!lccd.start(a.lccd)) {
    std::fprintf(stderr, "lccd did not start (see %s/lccd.log)\n", dir.c_str());
    return 1;
  }
  std::vector<Provider> providers = addProviders(lccd, a.providers);
  if (providers.size() != static_cast<std::size_t>(a.providers)) {
    std::fprintf(stderr, "lcc provider add failed\n");
    return 1;
  }
  const std::uint16_t port = lccd.port(a.tls ? "uns_tls" : "uns");
  std::fprintf(stderr, "lccd pid %d\n", static_cast<int>(lccd.pid()));  // for perf record -p / strace -p

  std::vector<double> serial_us;
  for (int i = 0; i < a.serial; ++i) {
    Stopwatch sw;
    if (!runSession(port, providers[0], setDocument(0, i, a.urls))) std::fprintf(stderr, "serial session %d failed\n", i);
    serial_us.push_back(sw.micros());
  }

  std::vector<RunResult> runs;
  int failed = 0;
  for (int r = 0; r < a.runs; ++r) {
    RunResult one = runConcurrent(a, lccd, port, providers, r);
    one.baseline = baselineSetsPerSecond(dir, setDocument(0, 0, a.urls), std::min(a.sessions, 5000));
    std::printf("run %d      baseline %.0f sets/s; concurrent %.0f sets/s (%.2fx), p50 %.2f ms, p99 %.2f ms; "
                "CPU lccd %.2f s, clients %.2f s\n",
                r + 1, one.baseline, one.rate, one.rate / one.baseline, one.p50_ms, one.p99_ms, one.lccd_cpu,
                one.client_cpu);
    failed += one.failed;
    runs.push_back(one);
  }
  auto median = [&](double RunResult::*field) {
    std::vector<double> v;
    for (const auto& r : runs) v.push_back(r.*field);
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double base = median(&RunResult::baseline), rate = median(&RunResult::rate);
  std::printf("baseline   append + fdatasync per set, serial: %.0f sets/s (median of %d)\n", base, a.runs);
  std::printf("serial     %d sessions: mean %.2f ms, p50 %.2f ms, p99 %.2f ms\n", a.serial,
              [&] { double t = 0; for (double v : serial_us) t += v; return t / serial_us.size() / 1000; }(),
              percentile(serial_us, 50) / 1000, percentile(serial_us, 99) / 1000);
  std::printf("concurrent %d clients: %.0f sets/s (%.0f URLs/s), p50 %.2f ms, p99 %.2f ms, %d failed (median of %d)\n",
              a.clients, rate, rate * a.urls, median(&RunResult::p50_ms), median(&RunResult::p99_ms), failed, a.runs);
  std::printf("ratio      concurrent / baseline: %.2fx\n", rate / base);
  std::printf("lccd       peak RSS %.1f MB\n", static_cast<double>(lccd.peakRss()) / 1e6);
  std::printf("load       %s at the start, %s at the end\n", load_before.c_str(), loadAverage().c_str());
  const bool clean = lccd.stop();
  if (!std::getenv("KEEP")) removeTree(dir);
  return failed == 0 && clean ? 0 : 1;
}

}  // namespace
}  // namespace lcc::bench

int main(int argc, char** argv) {
  lcc::bench::Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--providers") a.providers = std::atoi(v.c_str());
    else if (k == "--clients") a.clients = std::atoi(v.c_str());
    else if (k == "--runs") a.runs = std::atoi(v.c_str());
    else if (k == "--lccd") a.lccd = v;
    else if (k == "--sessions") a.sessions = std::atoi(v.c_str());
    else if (k == "--urls") a.urls = std::atoi(v.c_str());
    else if (k == "--serial") a.serial = std::atoi(v.c_str());
    else if (k == "--store") a.store = v;
    else if (k == "--tls") a.tls = v == "on";
    else if (k == "--links" && !lcc::bench::parseLinks(v).empty()) a.links = lcc::bench::parseLinks(v);
    else {
      std::fprintf(stderr,
                   "usage: session_bench [--providers N] [--clients N] [--sessions N] [--urls N] [--serial N] "
                   "[--runs N] [--store P] [--tls on] [--lccd PATH] [--links xml|tcp|process|both|all]\n");
      return 2;
    }
  }
  if (a.clients == 0) a.clients = a.providers;
  if (a.providers < 1 || a.clients < 1 || a.sessions < 1 || a.urls < 1 || a.serial < 1 || a.runs < 1) return 2;
  int rc = 0;
  for (lcc::bench::Links link : a.links) {
    a.link = link;
    rc |= lcc::bench::run(a);
  }
  return rc;
}
