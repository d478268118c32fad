// export_bench — CU export throughput and memory (docs/benchmarks.md, "CU export").
//
//   export_bench tar [--corpus DIR] [--level N] [--threads N] [--runs N]
//       Every regular file under DIR (default /usr/include) becomes a stored record
//       whose content file is the file itself (content_dir = DIR); the tar.gz answer
//       (URL order) and the warc.gz answer are written to files, and GNU `tar czf`
//       archives the same files in the same order, alternately, --runs times. Prints
//       input MB/s of the three (median) and the warc.gz / tar.gz ratio.
//   export_bench xml [--records N] [--store PLUGIN] [--format xml|tar.gz] [--runs N]
//       N records (default 1 000 000) in PLUGIN (default storage-sqlite, on disk),
//       exported (content off; for tar.gz the records are another machine's, so the
//       archive is MANIFEST.xml, spooled through a file) through the CU port to a
//       client in this process, --runs times; prints the median time, MB/s,
//       records/s and the process's peak RSS.
#include <sys/stat.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "bench_util.h"
#include "capi/cu_client.h"
#include "common/config/config.h"
#include "common/logging.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "common/system_clock.h"
#include "cu/cu_server.h"
#include "cu/query_engine.h"

namespace fs = std::filesystem;
using namespace lcc;

namespace {

std::uint64_t hwmBytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

std::string arg(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 2; i + 1 < argc; ++i) {
    if (argv[i] == name) return argv[i + 1];
  }
  return fallback;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class FileSink final : public ByteSink {
 public:
  explicit FileSink(const std::string& path) : f_(std::fopen(path.c_str(), "wb")) {}
  ~FileSink() override {
    if (f_) std::fclose(f_);
  }
  Status write(std::string_view b) override {
    if (std::fwrite(b.data(), 1, b.size(), f_) != b.size()) return Status::ioError("fwrite");
    bytes += b.size();
    return Status::ok();
  }
  std::uint64_t bytes = 0;

 private:
  std::FILE* f_;
};

struct Corpus {
  std::vector<std::string> files;  // relative, sorted
  std::uint64_t total = 0;
};

Corpus scanCorpus(const std::string& corpus) {
  Corpus c;
  for (auto it = fs::recursive_directory_iterator(corpus, fs::directory_options::skip_permission_denied);
       it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_symlink() || !it->is_regular_file()) continue;
    const std::string rel = fs::relative(it->path(), corpus).string();
    if (!cu::safeContentName(rel) || rel.find_first_of(" \t\n\\") != std::string::npos) continue;
    c.files.push_back(rel);
    c.total += it->file_size();
  }
  std::sort(c.files.begin(), c.files.end());
  return c;
}

// One stored record per corpus file, its content file the file itself.
Status storeCorpus(ContentStore& store, const std::string& dir, const Corpus& c, Clock& clock) {
  ContentBatch batch;
  ChangeSeq seq = 0;
  for (const auto& rel : c.files) {
    ContentRecord r;
    r.key = {1, "http://corpus.example/" + rel, "text/plain"};
    r.seq = ++seq;
    r.size = fs::file_size(fs::path(dir) / rel);
    r.machine = "m1";
    r.filename = rel;
    r.stored = clock.now();
    batch.put(std::move(r));
  }
  return store.apply(batch);
}

// One export of `format` to a file: seconds, and the output size in *out.
double timeExport(cu::QueryEngine& engine, const std::string& format, const std::string& path, std::uint64_t* out) {
  proto::CuQuery q;
  q.format = format;
  FileSink sink(path);
  bench::Stopwatch sw;
  Status s = engine.run(q, sink);
  const double secs = sw.seconds();
  if (!s.isOk()) {
    std::cerr << format << ": " << s.toString() << "\n";
    std::exit(1);
  }
  *out = sink.bytes;
  return secs;
}

void printRow(const char* what, double secs, double mb, std::uint64_t out, std::uint64_t total) {
  std::printf("| %s | %.2f s | %.1f MB/s | %.1f MB out (%.1fx) |\n", what, secs, mb / secs,
              static_cast<double>(out) / 1e6, static_cast<double>(total) / static_cast<double>(out));
}

int tarBench(int argc, char** argv) {
  const std::string corpus = fs::absolute(arg(argc, argv, "--corpus", "/usr/include")).string();
  const int level = std::stoi(arg(argc, argv, "--level", "6"));
  const int runs = std::stoi(arg(argc, argv, "--runs", "3"));
  const std::string threads = arg(argc, argv, "--threads", "2");
  const std::string tmp = bench::makeTempDir("export-bench");
  const Corpus c = scanCorpus(corpus);

  SystemClock clock;
  HostContext host{&clock, posixEnv(), pluginLogger("bench"), tmp, "m1"};
  PluginRegistry reg(LCC_PLUGIN_DIR, host);
  auto store = reg.makeContentStore("storage-memory", OptionsView()).value();
  const std::string lv = std::to_string(level);
  auto tar = reg.makeExporter("cu-tar", reg.defaultOptions("cu-tar", {{"compression_level", lv},
                                                                      {"compression_threads", threads}}).value()).value();
  auto warc = reg.makeExporter("cu-warc", reg.defaultOptions("cu-warc", {{"compression_level", lv}}).value()).value();
  if (!storeCorpus(*store, corpus, c, clock).isOk()) return 1;
  cu::EngineOptions eo = cu::EngineOptions::fromConfig(Config::defaults(), "", "");
  eo.machine_id = "m1";
  eo.content_dir = corpus;
  eo.temp_dir = tmp;
  cu::QueryEngine engine(*store, {tar.get(), warc.get()}, *posixEnv(), eo);
  {
    std::ofstream list(tmp + "/list.txt");
    for (const auto& f : c.files) list << f << "\n";
  }
  // Warm the page cache, then alternate.
  (void)std::system(("tar cf /dev/null -C '" + corpus + "' -T '" + tmp + "/list.txt' 2>/dev/null").c_str());
  std::vector<double> ours, warcs, gnu;
  std::uint64_t our_out = 0, warc_out = 0, gnu_out = 0;
  for (int r = 0; r < runs; ++r) {
    ours.push_back(timeExport(engine, "tar.gz", tmp + "/lcc.tar.gz", &our_out));
    warcs.push_back(timeExport(engine, "warc.gz", tmp + "/lcc.warc.gz", &warc_out));
    bench::Stopwatch sw;
    const std::string cmd = "GZIP=-" + lv + " tar czf '" + tmp + "/gnu.tar.gz' -C '" + corpus + "' -T '" + tmp +
                            "/list.txt' 2>/dev/null";
    (void)std::system(cmd.c_str());
    gnu.push_back(sw.seconds());
    gnu_out = fs::file_size(tmp + "/gnu.tar.gz");
  }
  const double mb = static_cast<double>(c.total) / 1e6;
  std::printf("machine: %s\n", bench::machineLine(tmp).c_str());
  std::printf("corpus %s: %zu files, %.1f MB, gzip level %d, cu-tar compression_threads %s, %d runs (median)\n",
              corpus.c_str(), c.files.size(), mb, level, threads.c_str(), runs);
  printRow("lcc cu-tar (URL order)", median(ours), mb, our_out, c.total);
  printRow("lcc cu-warc (change order, a gzip member per record)", median(warcs), mb, warc_out, c.total);
  printRow("GNU tar czf (same order)", median(gnu), mb, gnu_out, c.total);
  std::printf("ratio lcc / GNU tar: %.2fx\n", median(gnu) / median(ours));
  std::printf("ratio warc.gz / tar.gz: time %.2fx, size %.2fx\n", median(warcs) / median(ours),
              static_cast<double>(warc_out) / static_cast<double>(our_out));
  bench::removeTree(tmp);
  return 0;
}

int xmlBench(int argc, char** argv) {
  const std::uint64_t n = std::stoull(arg(argc, argv, "--records", "1000000"));
  const std::string plugin = arg(argc, argv, "--store", "storage-sqlite");
  const std::string format = arg(argc, argv, "--format", "xml");
  const int runs = std::stoi(arg(argc, argv, "--runs", "3"));
  const std::string tmp = bench::makeTempDir("export-bench-xml");
  SystemClock clock;
  HostContext host{&clock, posixEnv(), pluginLogger("bench"), tmp, "m1"};
  PluginRegistry reg(LCC_PLUGIN_DIR, host);
  auto sopts = reg.defaultOptions(plugin);
  if (!sopts.isOk()) {
    std::cerr << plugin << ": " << sopts.status().toString() << "\n";
    return 1;
  }
  auto store_r = reg.makeContentStore(plugin, *sopts);
  if (!store_r.isOk()) {
    std::cerr << plugin << ": " << store_r.status().toString() << "\n";
    return 1;
  }
  auto store = std::move(store_r).value();
  auto xml = reg.makeExporter("cu-xml", reg.defaultOptions("cu-xml").value()).value();
  auto tar = reg.makeExporter("cu-tar", reg.defaultOptions("cu-tar").value()).value();
  bench::Stopwatch load;
  ContentBatch batch;
  for (std::uint64_t i = 1; i <= n; ++i) {
    ContentRecord r;
    r.key = {static_cast<ProviderId>(1 + i % 50),
             "http://site" + std::to_string(i % 997) + ".example.org/docs/page" + std::to_string(i) + ".html", "text/html"};
    r.seq = i;
    r.size = 1000 + i % 50000;
    r.md5 = "0123456789abcdef0123456789abcdef";
    r.machine = "m2";  // another machine: tar.gz carries the manifest only (no content files needed)
    r.filename = std::to_string(i % 256) + "/" + std::to_string(i);
    r.stored = clock.now();
    r.mtime = 1714564800;
    batch.put(std::move(r));
    if (batch.size() == 10000 || i == n) {
      if (auto s = store->apply(batch); !s.isOk()) {
        std::cerr << s.toString() << "\n";
        return 1;
      }
      batch.clear();
    }
  }
  (void)store->sync();
  const double load_s = load.seconds();
  const std::uint64_t rss_loaded = bench::rssBytes();

  cu::EngineOptions eo = cu::EngineOptions::fromConfig(Config::defaults(), "", "");
  eo.machine_id = "m1";
  eo.content_dir = tmp;
  eo.temp_dir = tmp;
  cu::QueryEngine engine(*store, {xml.get(), tar.get()}, *posixEnv(), eo);
  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  cu::CuServerOptions so = cu::CuServerOptions::fromConfig(Config::defaults());
  so.listen = "127.0.0.1:0";
  cu::CuServer server(io, engine, clock, so);
  if (!server.start().isOk()) return 1;
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) threads.emplace_back([&io] { io.run(); });
  std::uint64_t bytes = 0;
  std::vector<double> times;
  Status s;
  proto::CuQuery q;
  q.format = format;
  for (int r = 0; r < runs && s.isOk(); ++r) {
    bytes = 0;
    bench::Stopwatch sw;
    s = capi::rawQuery(capi::Endpoint{"127.0.0.1", server.port()}, q, 600000, [&](std::string_view b) {
      bytes += b.size();
      return Status::ok();
    });
    times.push_back(sw.seconds());
  }
  const double secs = median(times);
  const double lo = *std::min_element(times.begin(), times.end()), hi = *std::max_element(times.begin(), times.end());
  server.stop();
  guard.reset();
  io.stop();
  for (auto& t : threads) t.join();
  if (!s.isOk()) {
    std::cerr << s.toString() << "\n";
    return 1;
  }
  std::printf("machine: %s\n", bench::machineLine(tmp).c_str());
  std::printf("%llu records in %s (loaded in %.1f s)\n", static_cast<unsigned long long>(n), plugin.c_str(), load_s);
  std::printf("| %s export, content off, via the CU port | %.2f s [%.2f..%.2f] | %.1f MB/s out | %.0f records/s | RSS after load %.0f MB, peak %.0f MB |\n",
              format.c_str(), secs, lo, hi, static_cast<double>(bytes) / 1e6 / secs, static_cast<double>(n) / secs,
              static_cast<double>(rss_loaded) / 1048576.0, static_cast<double>(hwmBytes()) / 1048576.0);
  (void)store->close();
  bench::removeTree(tmp);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "tar") return tarBench(argc, argv);
  if (mode == "xml") return xmlBench(argc, argv);
  std::fprintf(stderr, "usage: export_bench tar [--corpus DIR] [--level N] [--threads N] [--runs N]\n"
                       "       export_bench xml [--records N] [--store PLUGIN] [--format xml|tar.gz] [--runs N]\n");
  return 2;
}
