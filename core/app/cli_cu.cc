// lcc cu query — a content user's query on the CU port (docs/protocol.md §3.3).
//
// Writes the raw answer (XML, tar.gz or warc.gz) to -o FILE (through FILE.part, renamed when
// the answer is complete) or to stdout; progress (bytes, records) on stderr when
// stderr is a terminal. Exit 0: answered; 1: query_rejected or the answer broke off;
// 2: usage or connection error.
//
// lcc cu mirror DIR — keeps DIR equal to what the LCC holds (cu_mirror.h); for cron and
// timers: quiet unless -v or a problem. Exit 0: done; 1: refused, broke off, a file
// could not be written or content was missing; 2: usage or no connection; 3: another
// run holds DIR's lock.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "app/cli.h"
#include "app/cli_cu_merged.h"
#include "app/cu_mirror.h"
#include "app/progress.h"
#include "capi/cu_client.h"
#include "http/url_codec.h"
#include "proto/cu_cursor.h"
#include "common/config/config.h"
#include "common/posix_env.h"
#include "lcc/support/time_util.h"
#include "net/host_port.h"
#include "proto/cu_query.h"

namespace lcc::cli {
namespace {

struct CuArgs {
  std::vector<std::string> cus;  // one CU port, or several LCCs' http(s):// URLs (merged)
  std::vector<std::uint32_t> providers;
  std::string since_seq;         // a decimal seq, or a merged answer's cursor (c1.…)
  std::string since;
  std::vector<std::string> mimes, prefixes;
  bool deleted = false;
  std::optional<std::uint64_t> limit;
  std::string format = "xml";
  bool content = false;
  std::string out;
  int timeout_s = 60;
  TlsArgs tls;
};

// listen.cu (with --tls: listen.cu_tls) from the configuration, else the default port.
std::string defaultCu(const Globals& g, bool tls) {
  std::vector<ConfigProblem> problems;
  std::string listen = tls ? "" : "127.0.0.1:7704";
  if (std::filesystem::exists(g.config_file)) {
    auto cfg = Config::load(g.config_file, {}, &problems);
    if (cfg.isOk()) listen = cfg->getString(tls ? "listen.cu_tls" : "listen.cu");
  }
  if (listen.empty()) return tls ? "(listen.cu_tls is off; give --cu)" : "(listen.cu is off; give --cu)";
  auto hp = net::HostPort::parse(listen);
  return hp.isOk() ? hp->reachable().toString() : listen;  // a bad one is reported by parseEndpoint
}

// The CU port (--cu, else the configuration's) and its TLS context; false after
// printing why.
bool resolveCu(const Globals& g, const std::string& cu, const TlsArgs& tls_args, const char* who,
               capi::Endpoint* endpoint, net::TlsContextPtr* tls) {
  auto ep = capi::parseEndpoint(cu.empty() ? defaultCu(g, tls_args.tls) : cu);
  if (!ep.isOk()) {
    std::cerr << who << ": " << ep.status().message() << "\n";
    return false;
  }
  if (tls_args.tls) ep->tls = true;
  if (ep->tls) {
    auto made = tlsContext(tls_args);
    if (!made.isOk()) {
      std::cerr << who << ": " << made.status().message() << "\n";
      return false;
    }
    *tls = made.value();
  }
  *endpoint = *ep;
  return true;
}

// Counts "<url " in a stream whose chunks may split the token.
class UrlCounter {
 public:
  void feed(std::string_view b) {
    std::string s = tail_;
    s.append(b);
    for (std::size_t p = s.find("<url "); p != std::string::npos; p = s.find("<url ", p + 1)) ++n_;
    tail_ = s.substr(s.size() > 4 ? s.size() - 4 : 0);  // shorter than the token: never counted twice
  }
  std::uint64_t count() const { return n_; }

 private:
  std::string tail_;
  std::uint64_t n_ = 0;
};

// The query of the options; nullopt after saying what is wrong.
std::optional<proto::CuQuery> queryFrom(const CuArgs& a) {
  proto::CuQuery q;
  q.format = a.format;
  q.content = a.content;
  q.providers = a.providers;
  if (proto::looksLikeCuCursor(a.since_seq)) {
    q.since_cursor = a.since_seq;
  } else if (!a.since_seq.empty()) {
    auto v = http::parseUnsigned(a.since_seq, UINT64_MAX);
    if (!v) {
      std::cerr << "lcc cu query: --since-seq: not a seq or a cursor (c1.…): " << a.since_seq << "\n";
      return std::nullopt;
    }
    q.since_seq = *v;
  }
  if (!a.since.empty()) {
    auto t = parseTime(a.since);
    if (!t) {
      std::cerr << "lcc cu query: --since: not an RFC 3339 time or seconds: " << a.since << "\n";
      return std::nullopt;
    }
    q.since_time = *t;
  }
  q.mimes = a.mimes;
  q.prefixes = a.prefixes;
  q.deleted = a.deleted;
  q.limit = a.limit;
  if (auto e = proto::validateCuQuery(q)) {
    std::cerr << "lcc cu query: " << e->message << "\n";
    return std::nullopt;
  }
  return q;
}

int runQuery(const Globals& g, const CuArgs& a) {
  const std::optional<proto::CuQuery> asked = queryFrom(a);
  if (!asked) return 2;
  const proto::CuQuery& q = *asked;
  if (a.cus.size() > 1 || (a.cus.size() == 1 && a.cus[0].rfind("http", 0) == 0)) {
    return runMergedCuQuery(g, MergedQueryArgs{a.cus, a.out, a.timeout_s, a.tls}, q);
  }
  capi::Endpoint endpoint;
  net::TlsContextPtr tls;
  if (!resolveCu(g, a.cus.empty() ? std::string() : a.cus[0], a.tls, "lcc cu query", &endpoint, &tls)) return 2;

  const std::string part = a.out.empty() ? std::string() : a.out + ".part";
  std::ofstream file;
  if (!part.empty()) {
    file.open(part, std::ios::binary | std::ios::trunc);
    if (!file) {
      std::cerr << "lcc cu query: cannot write " << part << "\n";
      return 2;
    }
  }
  std::ostream& out = part.empty() ? std::cout : file;
  TtyProgress progress;  // repainted at most four times a second
  std::uint64_t bytes = 0;
  UrlCounter urls;
  std::string head;      // the first bytes: a rejection is recognised there
  bool rejected = false;
  std::string rejection;
  auto progressLine = [&] {
    return std::to_string(bytes) + " bytes" + (q.format == "xml" ? ", " + std::to_string(urls.count()) + " records" : "");
  };
  Status s = capi::rawQuery(endpoint, q, a.timeout_s * 1000, [&](std::string_view b) -> Status {
    if (bytes < 512) {
      head.append(b.substr(0, 512));
      if (head.find("query_rejected") != std::string::npos) rejected = true;
    }
    bytes += b.size();
    if (rejected) {
      rejection.append(b);
      return Status::ok();
    }
    if (q.format == "xml") urls.feed(b);
    out.write(b.data(), static_cast<std::streamsize>(b.size()));
    if (!out) return Status::ioError("writing the output failed");
    progress.update(progressLine);
    return Status::ok();
  }, tls);
  progress.done(progressLine());
  if (rejected) {
    if (rejection.empty()) rejection = head;
    if (!part.empty()) std::filesystem::remove(part);
    auto start = rejection.find("<reason");
    std::cerr << "lcc cu query: rejected: " << (start == std::string::npos ? rejection : rejection.substr(start)) << "\n";
    return 1;
  }
  if (!s.isOk()) {
    if (!part.empty()) std::filesystem::remove(part);
    std::cerr << "lcc cu query: " << s.message() << "\n";
    return bytes == 0 ? 2 : 1;
  }
  out.flush();
  if (!part.empty()) {
    file.close();
    std::error_code ec;
    std::filesystem::rename(part, a.out, ec);
    if (ec) {
      std::cerr << "lcc cu query: renaming " << part << ": " << ec.message() << "\n";
      return 1;
    }
  }
  return 0;
}

struct MirrorArgs {
  std::string dir;
  std::string cu;
  std::vector<std::uint32_t> providers;
  std::vector<std::string> mimes, prefixes;
  bool full = false;
  bool verbose = false;
  std::uint64_t batch = 10000;
  int timeout_s = 60;
  TlsArgs tls;
};

int runMirror(const Globals& g, const MirrorArgs& a) {
  mirror::Options o;
  o.dir = a.dir;
  o.providers = a.providers;
  o.mimes = a.mimes;
  o.prefixes = a.prefixes;
  o.full = a.full;
  o.batch = a.batch;
  o.timeout_ms = a.timeout_s * 1000;
  if (!resolveCu(g, a.cu, a.tls, "lcc cu mirror", &o.endpoint, &o.tls)) return 2;
  constexpr int kWarningsShown = 20;
  int warnings = 0;
  TtyProgress progress;
  auto line = [](const mirror::Stats& s) {
    return std::to_string(s.records) + " changes, " + std::to_string(s.written) + " written, " +
           std::to_string(s.removed) + " removed";
  };
  mirror::Callbacks cb;
  cb.warn = [&](const std::string& m) {
    if (++warnings <= kWarningsShown) std::cerr << "lcc cu mirror: " << m << "\n";
  };
  cb.progress = [&](const mirror::Stats& s) { progress.update([&] { return line(s); }); };
  const mirror::Report r = mirror::runMirror(o, posixEnv(), cb);
  progress.done(line(r.stats));
  if (warnings > kWarningsShown) {
    std::cerr << "lcc cu mirror: " << (warnings - kWarningsShown) << " more problems not shown\n";
  }
  if (r.outcome == mirror::Outcome::kOk && a.verbose) {
    std::cout << a.dir << ": seq " << r.stats.from_seq << " -> " << r.stats.to_seq << ", " << line(r.stats)
              << (r.stats.full ? ", full resync: " + r.stats.why_full : std::string()) << "\n";
  }
  if (r.outcome == mirror::Outcome::kOk) return 0;
  std::cerr << "lcc cu mirror: " << a.dir << ": " << r.message << "\n";
  switch (r.outcome) {
    case mirror::Outcome::kLocked: return 3;
    case mirror::Outcome::kNoConnection: return 2;
    default: return 1;
  }
}

void addMirrorCommand(CLI::App* cu, Globals& g) {
  auto args = std::make_shared<MirrorArgs>();
  auto* m = cu->add_subcommand("mirror", "keep DIR equal to what the LCC holds (incremental, for cron)");
  m->add_option("DIR", args->dir, "the mirror folder (its cursor is DIR/.lcc-mirror)")->required();
  m->add_option("--cu", args->cu, "the CU port, as for cu query");
  addTlsOptions(m, args->tls);
  m->add_option("--provider", args->providers, "only this provider (repeatable)");
  m->add_option("--mime", args->mimes, "MIME pattern, e.g. text/* (repeatable)");
  m->add_option("--prefix", args->prefixes, "URL prefix (repeatable)");
  m->add_flag("--full", args->full, "a full resync: fetch everything, remove what the LCC no longer holds");
  m->add_option("--batch", args->batch, "records per answer; the cursor moves after each (default 10000)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1000000}));
  m->add_option("--timeout", args->timeout_s, "seconds to wait for the server (default 60)");
  m->add_flag("-v,--verbose", args->verbose, "print what the run did");
  m->callback([&g, args] { g.exit_code = runMirror(g, *args); });
}

}  // namespace

void addCuCommands(CLI::App& app, Globals& g) {
  auto* cu = app.add_subcommand("cu", "content user: query or mirror what the LCC holds");
  cu->require_subcommand(1);
  auto args = std::make_shared<CuArgs>();
  auto* q = cu->add_subcommand("query", "run a query on the CU port; the answer goes to -o FILE or stdout");
  q->add_option("--cu", args->cus,
                "the CU port, HOST:PORT or tls://HOST:PORT (default: listen.cu of --config; with --tls listen.cu_tls); "
                "repeated, or as http(s)://HOST:PORT: several LCCs' HTTP ports, answered as one (any format, one cursor)");
  addTlsOptions(q, args->tls);
  q->add_option("--provider", args->providers, "only this provider (repeatable)");
  auto* seq = q->add_option("--since-seq", args->since_seq,
                            "only changes after this change sequence (a last_seq: a number, or c1.… of a merged answer)");
  auto* time = q->add_option("--since", args->since, "only URLs stored or removed since this time (RFC 3339 or seconds)");
  seq->excludes(time);
  q->add_option("--mime", args->mimes, "MIME pattern, e.g. text/* (repeatable)");
  q->add_option("--prefix", args->prefixes, "URL prefix (repeatable)");
  q->add_flag("--deleted", args->deleted, "include removals (for mirroring)");
  q->add_option("--limit", args->limit, "at most N records");
  q->add_option("--format", args->format, "xml, tar.gz or warc.gz")->check(CLI::IsMember({"xml", "tar.gz", "warc.gz"}));
  q->add_flag("--content", args->content, "include content (base64 in XML; tar.gz and warc.gz always have it)");
  q->add_option("-o,--output", args->out, "write the answer to FILE (default: stdout)");
  q->add_option("--timeout", args->timeout_s, "seconds to wait for the server (default 60)");
  q->callback([&g, args] { g.exit_code = runQuery(g, *args); });
  addMirrorCommand(cu, g);
}

}  // namespace lcc::cli
