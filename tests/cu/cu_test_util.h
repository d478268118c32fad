// cu_test_util.h — what the CU tests share: a storage-memory LCC DB with real content
// files (through the real plugin loader), the exporters, sinks, and decoders of both
// answer formats (XML through the namespace-aware XmlReader; tar.gz through zlib and a
// small tar reader written here), so every test checks what a content user receives.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/plugin/plugin_registry.h"
#include "cu/merged_query.h"
#include "cu/query_engine.h"
#include "lcc/byte_sink.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc::cutest {

constexpr const char* kMachine = "m1";

// A ByteSink into a string; optionally fails after `fail_after` bytes.
class StringSink final : public ByteSink {
 public:
  Status write(std::string_view b) override {
    if (fail_after && data.size() + b.size() > *fail_after) return Status::ioError("sink closed");
    data.append(b);
    ++writes;
    return Status::ok();
  }
  std::string data;
  std::size_t writes = 0;
  std::optional<std::size_t> fail_after;
};

// One <url> of an answer (or of MANIFEST.xml).
struct UrlOut {
  std::map<std::string, std::string> attrs;
  std::optional<std::string> content;  // decoded <content encoding="base64">
  std::string missing;                 // <content missing="...">
  std::string attr(const std::string& k) const {
    auto it = attrs.find(k);
    return it == attrs.end() ? std::string() : it->second;
  }
};

struct XmlAnswer {
  bool ok = false;            // parsed, namespace-correct, complete
  std::string error;
  std::string root;           // "result" or "query_rejected"
  std::uint64_t count = 0;
  std::uint64_t last_seq = 0;
  int reject_code = 0;
  std::string reject_text;
  std::vector<UrlOut> urls;
};
XmlAnswer parseXmlAnswer(const std::string& doc);

struct TarMember {
  std::string name;
  char type = '0';
  std::string data;
};
// Decompresses gzip (error text in *error on failure).
std::string gunzip(const std::string& gz, std::string* error);
// The members of a POSIX tar (pax 'x' headers applied to the next member).
std::vector<TarMember> readTar(const std::string& tar, std::string* error);

struct TarAnswer {
  bool ok = false;
  std::string error;
  std::vector<TarMember> members;  // the files, MANIFEST.xml included
  XmlAnswer manifest;
};
TarAnswer parseTarAnswer(const std::string& gz);

// A node with the storage-memory content store, both exporters and a content folder.
class CuWorld {
 public:
  CuWorld();
  ~CuWorld();

  ContentStore& store() { return *store_; }
  Exporter& exporter(const std::string& format);
  std::vector<Exporter*> exporters();
  const std::string& contentDir() const { return content_dir_; }
  const std::string& dataDir() const { return dir_.path(); }
  testing::SimClock& clock() { return clock_; }
  PluginRegistry& registry() { return *registry_; }

  // Stores (or replaces) a record with `content` in a content file of this machine
  // (machine m1) and returns it. seq = maxSeq() + 1.
  ContentRecord put(ProviderId pid, const std::string& url, const std::string& mime, const std::string& content,
                    const std::string& machine = kMachine);
  // A tombstone for the key, seq = maxSeq() + 1; the content file is removed.
  ContentRecord remove(ProviderId pid, const std::string& url, const std::string& mime);
  // Several records in one batch (fast bulk load); no content files when content is empty.
  void putMany(const std::vector<ContentRecord>& records);

  cu::EngineOptions engineOptions() const;
  std::unique_ptr<cu::QueryEngine> makeEngine(cu::EngineOptions options);
  std::unique_ptr<cu::QueryEngine> makeEngine() { return makeEngine(engineOptions()); }

 private:
  testing::TempDir dir_;
  testing::SimClock clock_;
  std::string content_dir_;
  std::unique_ptr<PluginRegistry> registry_;
  PluginPtr<ContentStore> store_;
  std::vector<PluginPtr<Exporter>> exporters_;
};

// A merged answer (cu/merged_query.h) written by w's exporter of q.format, `local`
// answering for this node; the Status of the export in *status.
std::string exportMerged(CuWorld& w, cu::QueryEngine& local, const cu::MergedResult& r, const proto::CuQuery& q,
                         Status* status = nullptr);

// Runs a query through the engine into a string; the Status of the run in *status.
std::string runQuery(cu::QueryEngine& engine, const proto::CuQuery& q, Status* status = nullptr);

}  // namespace lcc::cutest
