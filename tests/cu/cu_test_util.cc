#include "cu_test_util.h"

#include "cu/merged_export.h"

#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "common/config/config.h"
#include "common/logging.h"
#include "common/posix_env.h"
#include "proto/xml_reader.h"

namespace lcc::cutest {
namespace {

// An independent base64 decoder (the exporters' encoder is under test).
bool base64Decode(std::string_view in, std::string& out) {
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=' || c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    else return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return true;
}

class AnswerHandler final : public proto::XmlHandler {
 public:
  explicit AnswerHandler(XmlAnswer& a) : a_(a) {}
  void onStart(int depth, const proto::XmlName& name, const proto::XmlAttrs& attrs) override {
    if (depth == 1) {
      a_.root = std::string(name.local);
      if (name.ns != proto::kLococaNs) a_.error = "root not in the lococa namespace: " + std::string(name.ns);
      a_.count = std::strtoull(std::string(attrs.getOr("count", "0")).c_str(), nullptr, 10);
      a_.last_seq = std::strtoull(std::string(attrs.getOr("last_seq", "0")).c_str(), nullptr, 10);
    } else if (depth == 2 && name.local == "url") {
      UrlOut u;
      for (const auto& at : attrs.all()) u.attrs[std::string(at.name)] = std::string(at.value);
      a_.urls.push_back(std::move(u));
    } else if (depth == 2 && name.local == "reason") {
      a_.reject_code = std::atoi(std::string(attrs.getOr("code", "0")).c_str());
    } else if (depth == 3 && name.local == "content" && !a_.urls.empty()) {
      if (auto m = attrs.get("missing")) {
        a_.urls.back().missing = std::string(*m);
      } else {
        if (attrs.getOr("encoding", "") != "base64") a_.error = "content without encoding=base64";
        a_.urls.back().content = std::string();
        in_content_ = true;
        text_.clear();
      }
    }
  }
  void onText(int depth, std::string_view t) override {
    if (depth == 3 && in_content_) text_.append(t);
    if (depth == 2 && a_.root == "query_rejected") a_.reject_text.append(t);
  }
  void onEnd(int depth, const proto::XmlName&) override {
    if (depth == 3 && in_content_) {
      in_content_ = false;
      if (!base64Decode(text_, *a_.urls.back().content)) a_.error = "content is not base64";
    }
  }

 private:
  XmlAnswer& a_;
  bool in_content_ = false;
  std::string text_;
};

std::uint64_t octal(const char* p, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n && p[i] >= '0' && p[i] <= '7'; ++i) v = v * 8 + static_cast<std::uint64_t>(p[i] - '0');
  return v;
}

void writeFile(const std::string& path, const std::string& data) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
}

}  // namespace

XmlAnswer parseXmlAnswer(const std::string& doc) {
  XmlAnswer a;
  AnswerHandler h(a);
  proto::XmlReader reader(h, proto::XmlLimits{std::numeric_limits<std::size_t>::max() / 4, 8,
                                               std::numeric_limits<std::uint64_t>::max(), 64},
                          proto::XmlFraming::kDocuments);
  std::size_t used = reader.feed(doc);
  if (reader.failed()) {
    a.error = reader.errorMessage();
  } else if (!reader.documentComplete()) {
    a.error = "the document did not end";
  } else {
    std::string_view rest = std::string_view(doc).substr(used);
    if (rest.find_first_not_of(" \r\n\t") != std::string_view::npos) a.error = "bytes after the document";
  }
  a.ok = a.error.empty();
  return a;
}

std::string gunzip(const std::string& gz, std::string* error) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) {
    *error = "inflateInit2";
    return {};
  }
  std::string out;
  char buf[65536];
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      *error = std::string("inflate: ") + (zs.msg ? zs.msg : std::to_string(rc));
      break;
    }
    out.append(buf, sizeof buf - zs.avail_out);
    if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
      *error = "gzip stream truncated";
      break;
    }
  }
  inflateEnd(&zs);
  return out;
}

std::vector<TarMember> readTar(const std::string& tar, std::string* error) {
  std::vector<TarMember> out;
  std::size_t off = 0;
  std::string pax_path;
  bool ended = false;
  while (off + 512 <= tar.size()) {
    const char* h = tar.data() + off;
    bool zero = true;
    for (int i = 0; i < 512 && zero; ++i) zero = h[i] == 0;
    if (zero) {
      ended = true;
      break;
    }
    unsigned sum = 0;
    for (int i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
    if (sum != octal(h + 148, 8)) {
      *error = "bad header checksum at offset " + std::to_string(off);
      return out;
    }
    if (std::memcmp(h + 257, "ustar", 5) != 0) {
      *error = "not a ustar header at offset " + std::to_string(off);
      return out;
    }
    std::string name(h, strnlen(h, 100));
    std::string prefix(h + 345, strnlen(h + 345, 155));
    if (!prefix.empty()) name = prefix + "/" + name;
    const std::uint64_t size = octal(h + 124, 12);
    const char type = h[156];
    off += 512;
    if (off + size > tar.size()) {
      *error = "member data past the end";
      return out;
    }
    std::string data = tar.substr(off, size);
    off += (size + 511) / 512 * 512;
    if (type == 'x') {
      std::size_t p = 0;
      while (p < data.size()) {
        std::size_t sp = data.find(' ', p);
        std::size_t len = std::strtoull(data.substr(p, sp - p).c_str(), nullptr, 10);
        std::string rec = data.substr(sp + 1, p + len - sp - 2);
        if (rec.rfind("path=", 0) == 0) pax_path = rec.substr(5);
        p += len;
      }
      continue;
    }
    if (!pax_path.empty()) name = pax_path, pax_path.clear();
    out.push_back({name, type, std::move(data)});
  }
  if (!ended) *error = "no end-of-archive blocks";
  return out;
}

TarAnswer parseTarAnswer(const std::string& gz) {
  TarAnswer t;
  std::string err;
  std::string tar = gunzip(gz, &err);
  if (err.empty()) t.members = readTar(tar, &err);
  if (err.empty()) {
    if (t.members.empty() || t.members.back().name != "MANIFEST.xml") {
      err = "the last member is not MANIFEST.xml";
    } else {
      t.manifest = parseXmlAnswer(t.members.back().data);
      if (!t.manifest.ok) err = "MANIFEST.xml: " + t.manifest.error;
    }
  }
  t.error = err;
  t.ok = err.empty();
  return t;
}

CuWorld::CuWorld() {
  content_dir_ = dir_.path() + "/content";
  std::filesystem::create_directories(content_dir_);
  std::filesystem::create_directories(dir_.path() + "/tmp");
  HostContext host{&clock_, posixEnv(), pluginLogger("test"), dir_.path(), kMachine};
  registry_ = std::make_unique<PluginRegistry>(LCC_PLUGIN_DIR, host);
  auto s = registry_->makeContentStore("storage-memory", OptionsView());
  if (!s.isOk()) throw std::runtime_error("storage-memory: " + s.status().toString());
  store_ = std::move(s).value();
  for (const char* name : {"cu-xml", "cu-tar", "cu-warc"}) {
    auto opts = registry_->defaultOptions(name);
    if (!opts.isOk()) throw std::runtime_error(std::string(name) + ": " + opts.status().toString());
    auto e = registry_->makeExporter(name, *opts);
    if (!e.isOk()) throw std::runtime_error(std::string(name) + ": " + e.status().toString());
    exporters_.push_back(std::move(e).value());
  }
}

CuWorld::~CuWorld() {
  exporters_.clear();
  if (store_) (void)store_->close();
}

Exporter& CuWorld::exporter(const std::string& format) {
  for (auto& e : exporters_) {
    if (e->format() == format) return *e;
  }
  throw std::runtime_error("no exporter for " + format);
}

std::vector<Exporter*> CuWorld::exporters() {
  std::vector<Exporter*> out;
  for (auto& e : exporters_) out.push_back(e.get());
  return out;
}

ContentRecord CuWorld::put(ProviderId pid, const std::string& url, const std::string& mime, const std::string& content,
                           const std::string& machine) {
  ContentRecord r;
  r.key = {pid, url, mime};
  r.seq = store_->maxSeq().value() + 1;
  r.size = content.size();
  r.md5 = "0123456789abcdef0123456789abcdef";
  r.machine = machine;
  r.filename = "f" + std::to_string(r.seq % 7) + "/" + std::to_string(r.seq);
  r.stored = clock_.now();
  r.refreshed = r.stored;
  r.mtime = 1714564800 + static_cast<std::int64_t>(r.seq);
  if (machine == kMachine) writeFile(content_dir_ + "/" + r.filename, content);
  ContentBatch b;
  b.put(r);
  if (auto s = store_->apply(b); !s.isOk()) throw std::runtime_error(s.toString());
  return r;
}

ContentRecord CuWorld::remove(ProviderId pid, const std::string& url, const std::string& mime) {
  auto old = store_->get(encodeUrlKey({pid, url, mime})).value();
  ContentRecord r;
  r.key = {pid, url, mime};
  r.seq = store_->maxSeq().value() + 1;
  r.deleted = true;
  r.stored = clock_.now();
  if (old && !old->filename.empty()) std::filesystem::remove(content_dir_ + "/" + old->filename);
  ContentBatch b;
  b.put(r);
  if (auto s = store_->apply(b); !s.isOk()) throw std::runtime_error(s.toString());
  return r;
}

void CuWorld::putMany(const std::vector<ContentRecord>& records) {
  ContentBatch b;
  for (const auto& r : records) b.put(r);
  if (auto s = store_->apply(b); !s.isOk()) throw std::runtime_error(s.toString());
}

cu::EngineOptions CuWorld::engineOptions() const {
  cu::EngineOptions o = cu::EngineOptions::fromConfig(Config::defaults(), "", "");
  o.machine_id = kMachine;
  o.content_dir = content_dir_;
  o.temp_dir = dir_.path() + "/tmp";
  return o;
}

std::unique_ptr<cu::QueryEngine> CuWorld::makeEngine(cu::EngineOptions options) {
  return std::make_unique<cu::QueryEngine>(*store_, exporters(), *posixEnv(), std::move(options));
}

std::string exportMerged(CuWorld& w, cu::QueryEngine& local, const cu::MergedResult& r, const proto::CuQuery& q,
                         Status* status) {
  cu::MergedExportOptions o;
  o.machine_id = kMachine;
  o.temp_dir = w.dataDir();
  o.remote = local.options().remote;
  cu::MergedExport exp(r, w.exporter(q.format), q.content, &local, o);
  StringSink sink;
  Status s = exp.stream(sink);
  if (status) *status = s;
  return sink.data;
}

std::string runQuery(cu::QueryEngine& engine, const proto::CuQuery& q, Status* status) {
  StringSink sink;
  Status s = engine.run(q, sink);
  if (status) *status = s;
  return sink.data;
}

}  // namespace lcc::cutest
