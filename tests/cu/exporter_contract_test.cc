// The exporter contract suite: the SAME cases on every exporter plugin
// (LCC_EXPORTER_PLUGINS, filled by each plugin's CMakeLists), loaded through the real
// PluginRegistry. Each answer is decoded the way a content user would (XML through a
// namespace-aware parser; tar.gz through zlib and a tar reader; MANIFEST.xml) into
// the same shape, so one set of expectations covers both formats.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "common/logging.h"
#include "common/posix_env.h"
#include "cu_test_util.h"
#include "warc_reader.h"
#include "support/plugin_list.h"

namespace lcc {
namespace {

using cutest::StringSink;
using cutest::UrlOut;

std::vector<std::string> exporterPlugins() {
  return lcc::testing::splitList(LCC_EXPORTER_PLUGINS);
}

// A content source over a string, or a generated one of any size.
class TestSource final : public ContentSource {
 public:
  explicit TestSource(std::string data) : data_(std::move(data)), size_(data_.size()) {}
  TestSource(std::uint64_t size, char fill) : size_(size), fill_(fill), generated_(true) {}
  std::uint64_t size() const override { return size_; }
  Result<std::size_t> read(char* buf, std::size_t n) override {
    if (fail_at_ && off_ >= *fail_at_) return Status::ioError("disk went away");
    std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - off_));
    if (generated_) {
      // Pseudo-random bytes (seeded by fill_) that do not compress.
      for (std::size_t i = 0; i < k; ++i) {
        std::uint64_t x = (off_ + i + 1) * 0x9E3779B97F4A7C15ULL + static_cast<unsigned char>(fill_);
        x ^= x >> 29;
        x *= 0xBF58476D1CE4E5B9ULL;
        buf[i] = static_cast<char>(x >> 56);
      }
    } else {
      std::memcpy(buf, data_.data() + off_, k);
    }
    off_ += k;
    return k;
  }
  std::uint64_t offset() const { return off_; }
  std::optional<std::uint64_t> fail_at_;

 private:
  std::string data_;
  std::uint64_t size_;
  char fill_ = 0;
  bool generated_ = false;
  std::uint64_t off_ = 0;
};

ContentRecord rec(ProviderId pid, std::string url, ChangeSeq seq, std::string mime = "text/html", bool deleted = false) {
  ContentRecord r;
  r.key = {pid, std::move(url), std::move(mime)};
  r.seq = seq;
  r.deleted = deleted;
  r.size = 0;
  r.md5 = deleted ? "" : "0123456789abcdef0123456789abcdef";
  r.machine = cutest::kMachine;
  r.filename = "x/" + std::to_string(seq);
  r.stored = fromUnixMillis(1714564800000 + static_cast<std::int64_t>(seq) * 1000);
  r.mtime = 1714564000;
  r.view_tag = "word:stuff";
  return r;
}

// What a content user gets, whatever the format.
struct Decoded {
  bool ok = false;
  std::string error;
  std::uint64_t count = 0, last_seq = 0;
  std::vector<UrlOut> urls;                    // in answer (manifest) order
  std::map<std::string, std::string> content;  // url -> bytes, for records with content
};

class ExporterContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    HostContext host{&clock_, posixEnv(), pluginLogger("test"), dir_.path(), cutest::kMachine};
    registry_ = std::make_unique<PluginRegistry>(LCC_PLUGIN_DIR, host);
    auto opts = registry_->defaultOptions(GetParam());
    ASSERT_TRUE(opts.isOk()) << opts.status().toString();
    auto e = registry_->makeExporter(GetParam(), *opts);
    ASSERT_TRUE(e.isOk()) << e.status().toString();
    exporter_ = std::move(e).value();
  }

  ExportHeader header(std::uint64_t count, ChangeSeq last, bool content = true) {
    ExportHeader h;
    h.count = count;
    h.last_seq = last;
    h.with_content = content || exporter_->alwaysContent();
    h.temp_dir = dir_.path();
    return h;
  }

  Decoded decode(const std::string& bytes) {
    Decoded d;
    if (exporter_->format() == "xml") {
      auto a = cutest::parseXmlAnswer(bytes);
      d.ok = a.ok && a.root == "result";
      d.error = a.error;
      d.count = a.count, d.last_seq = a.last_seq, d.urls = a.urls;
      for (const auto& u : d.urls) {
        if (u.content) d.content[u.attr("c")] = *u.content;
      }
    } else if (exporter_->format() == "warc.gz") {
      decodeWarc(bytes, d);
    } else {
      auto t = cutest::parseTarAnswer(bytes);
      d.ok = t.ok && t.manifest.root == "result";
      d.error = t.error;
      d.count = t.manifest.count, d.last_seq = t.manifest.last_seq, d.urls = t.manifest.urls;
      std::map<std::string, std::string> by_path;
      for (const auto& m : t.members) by_path[m.name] = m.data;
      for (const auto& u : d.urls) {
        if (u.attr("path").empty()) continue;
        auto it = by_path.find(u.attr("path"));
        if (it == by_path.end()) {
          d.ok = false;
          d.error = "manifest names a missing member " + u.attr("path");
        } else {
          d.content[u.attr("c")] = it->second;
        }
      }
      if (by_path.size() != d.content.size() + 1) {
        d.ok = false;
        d.error = "members the manifest does not name";
      }
    }
    return d;
  }

  // WARC: the manifest (last record) names each content record by WARC-Record-ID.
  static void decodeWarc(const std::string& bytes, Decoded& d) {
    auto w = cutest::parseWarcAnswer(bytes);
    d.ok = w.ok && w.manifest.root == "result";
    d.error = w.error;
    d.count = w.manifest.count, d.last_seq = w.manifest.last_seq, d.urls = w.manifest.urls;
    std::map<std::string, const cutest::WarcRecordOut*> by_id;
    for (const auto& r : w.records) by_id[r.field("WARC-Record-ID")] = &r;
    for (const auto& u : d.urls) {
      if (u.attr("record").empty()) continue;
      auto it = by_id.find(u.attr("record"));
      if (it == by_id.end() || it->second->field("WARC-Target-URI").empty()) {
        d.ok = false;
        d.error = "manifest names a missing record " + u.attr("record");
      } else {
        d.content[u.attr("c")] = it->second->payload();
      }
    }
    if (w.ok && w.records.size() != d.content.size() + 2) {
      d.ok = false;
      d.error = "records the manifest does not name";
    }
  }

  testing::TempDir dir_;
  testing::SimClock clock_;
  std::unique_ptr<PluginRegistry> registry_;
  PluginPtr<Exporter> exporter_;
};

TEST_P(ExporterContract, DescribesItself) {
  EXPECT_FALSE(exporter_->format().empty());
  EXPECT_FALSE(exporter_->contentType().empty());
  if (exporter_->format() == "xml") {
    EXPECT_EQ(exporter_->contentType(), "application/xml");
    EXPECT_FALSE(exporter_->alwaysContent());
  } else if (exporter_->format() == "tar.gz" || exporter_->format() == "warc.gz") {
    EXPECT_EQ(exporter_->contentType(), "application/gzip");
    EXPECT_TRUE(exporter_->alwaysContent());
  }
}

TEST_P(ExporterContract, AnEmptyAnswerIsAValidDocument) {
  StringSink sink;
  auto s = exporter_->begin(sink, header(0, 42));
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  ASSERT_TRUE((*s)->finish().isOk());
  Decoded d = decode(sink.data);
  ASSERT_TRUE(d.ok) << d.error;
  EXPECT_EQ(d.count, 0u);
  EXPECT_EQ(d.last_seq, 42u);
  EXPECT_TRUE(d.urls.empty());
}

TEST_P(ExporterContract, RecordsContentAndTombstones) {
  StringSink sink;
  auto s = exporter_->begin(sink, header(3, 9));
  ASSERT_TRUE(s.isOk());
  ContentRecord a = rec(17, "http://www.server.com/docs/a.htm", 7);
  ContentRecord b = rec(17, "http://www.server.com/docs/b.htm", 8, "text/html", true);
  ContentRecord c = rec(18, "http://other.org/bin", 9, "application/octet-stream");
  std::string bytes_a = "<html>a</html>\n";
  std::string bytes_c;
  for (int i = 0; i < 200000; ++i) bytes_c.push_back(static_cast<char>(i * 31));
  a.size = bytes_a.size();
  c.size = bytes_c.size();
  TestSource sa(bytes_a), sc(bytes_c);
  ASSERT_TRUE((*s)->add(a, &sa).isOk());
  ASSERT_TRUE((*s)->add(b, nullptr).isOk());
  ASSERT_TRUE((*s)->add(c, &sc).isOk());
  ASSERT_TRUE((*s)->finish().isOk());

  Decoded d = decode(sink.data);
  ASSERT_TRUE(d.ok) << d.error;
  EXPECT_EQ(d.count, 3u);
  EXPECT_EQ(d.last_seq, 9u);
  ASSERT_EQ(d.urls.size(), 3u);
  EXPECT_EQ(d.urls[0].attr("seq"), "7");
  EXPECT_EQ(d.urls[0].attr("pid"), "17");
  EXPECT_EQ(d.urls[0].attr("c"), a.key.url);
  EXPECT_EQ(d.urls[0].attr("m"), "text/html");
  EXPECT_EQ(d.urls[0].attr("b"), a.key.url);
  EXPECT_EQ(d.urls[0].attr("f"), a.key.url);
  EXPECT_EQ(d.urls[0].attr("st"), "word:stuff");
  EXPECT_EQ(d.urls[0].attr("sz"), std::to_string(bytes_a.size()));
  EXPECT_EQ(d.urls[0].attr("md5"), a.md5);
  EXPECT_EQ(d.urls[0].attr("mt"), "2024-05-01T11:46:40Z");
  EXPECT_EQ(d.urls[0].attr("stored"), "2024-05-01T12:00:07Z");
  EXPECT_EQ(d.urls[1].attr("deleted"), "yes");
  EXPECT_EQ(d.urls[1].attr("seq"), "8");
  EXPECT_TRUE(d.urls[1].attr("sz").empty());
  EXPECT_EQ(d.content.count(b.key.url), 0u);
  EXPECT_EQ(d.content[a.key.url], bytes_a);
  EXPECT_EQ(d.content[c.key.url], bytes_c);
}

TEST_P(ExporterContract, WithoutContentOnlyTheRecords) {
  if (exporter_->alwaysContent()) GTEST_SKIP() << "format always carries content";
  StringSink sink;
  auto s = exporter_->begin(sink, header(1, 1, false));
  ContentRecord a = rec(1, "http://h/a.html", 1);
  ASSERT_TRUE((*s)->add(a, nullptr).isOk());
  ASSERT_TRUE((*s)->finish().isOk());
  Decoded d = decode(sink.data);
  ASSERT_TRUE(d.ok) << d.error;
  ASSERT_EQ(d.urls.size(), 1u);
  EXPECT_FALSE(d.urls[0].content.has_value());
  EXPECT_TRUE(d.urls[0].missing.empty());
}

TEST_P(ExporterContract, MissingContentIsMarkedWithItsReason) {
  StringSink sink;
  auto s = exporter_->begin(sink, header(2, 2));
  ContentRecord here = rec(1, "http://h/here.html", 1);
  ContentRecord there = rec(1, "http://h/there.html", 2);
  there.machine = "m2";
  ASSERT_TRUE((*s)->add(here, nullptr).isOk());
  ASSERT_TRUE((*s)->add(there, nullptr).isOk());
  ASSERT_TRUE((*s)->finish().isOk());
  Decoded d = decode(sink.data);
  ASSERT_TRUE(d.ok) << d.error;
  ASSERT_EQ(d.urls.size(), 2u);
  auto missing = [&](const UrlOut& u) { return u.missing.empty() ? u.attr("missing") : u.missing; };
  EXPECT_EQ(missing(d.urls[0]), "unreadable");
  EXPECT_EQ(missing(d.urls[1]), "other-machine");
  EXPECT_TRUE(d.content.empty());
}

TEST_P(ExporterContract, HostileTextStaysWellFormed) {
  StringSink sink;
  auto s = exporter_->begin(sink, header(2, 2));
  ContentRecord a = rec(1, std::string("http://h/a\x01\x7f\xff\xc3(b\"<&>'.html"), 1);
  a.view_tag = std::string("tag\x02\xed\xa0\x80<x>&\0!", 13);  // a NUL inside, counted
  a.browse = std::string("\xf4\x90\x80\x80");
  a.key.mime = "text/\"html\"";
  a.size = 1;
  TestSource sa("x");
  ASSERT_TRUE((*s)->add(a, &sa).isOk());
  ContentRecord b = rec(1, "http://h/../../etc/passwd", 2);
  b.size = 3;
  TestSource sb("pwn");
  ASSERT_TRUE((*s)->add(b, &sb).isOk());
  ASSERT_TRUE((*s)->finish().isOk());
  Decoded d = decode(sink.data);
  ASSERT_TRUE(d.ok) << d.error;
  ASSERT_EQ(d.urls.size(), 2u);
  EXPECT_EQ(d.urls[0].attr("m"), "text/\"html\"");
  EXPECT_EQ(d.urls[1].attr("c"), "http://h/../../etc/passwd");
  EXPECT_EQ(d.content.size(), 2u);
  for (const auto& u : d.urls) {
    const std::string p = u.attr("path");
    if (!p.empty()) {
      EXPECT_NE(p.front(), '/');
      EXPECT_EQ(("/" + p + "/").find("/../"), std::string::npos) << p;
    }
  }
}

TEST_P(ExporterContract, ContentIsStreamedNotHeld) {
  // 16 MiB of content: the sink must have received output long before the source
  // was read to its end.
  if (exporter_->format() == "warc.gz") {
    GTEST_SKIP() << "a WARC record states its length and digests before its block: cu-warc reads a record's "
                    "content into a spool bounded in memory (CuWarc.BlockSpool* tests), then writes it";
  }
  struct WatchSink final : ByteSink {
    TestSource* src = nullptr;
    std::uint64_t total = 0;
    std::optional<std::uint64_t> source_offset_at_first_big_output;
    Status write(std::string_view b) override {
      total += b.size();
      if (!source_offset_at_first_big_output && total > 256 * 1024) source_offset_at_first_big_output = src->offset();
      return Status::ok();
    }
  } sink;
  const std::uint64_t size = 16 << 20;
  TestSource src(size, 'q');
  sink.src = &src;
  auto s = exporter_->begin(sink, header(1, 1));
  ContentRecord a = rec(1, "http://h/big.bin", 1, "application/octet-stream");
  a.size = size;
  ASSERT_TRUE((*s)->add(a, &src).isOk());
  ASSERT_TRUE((*s)->finish().isOk());
  ASSERT_TRUE(sink.source_offset_at_first_big_output.has_value());
  EXPECT_LT(*sink.source_offset_at_first_big_output, size / 2);
}

TEST_P(ExporterContract, AFailingSinkFailsTheStreamCleanly) {
  for (std::size_t fail_after : {0u, 10u, 5000u, 70000u}) {
    StringSink sink;
    sink.fail_after = fail_after;
    auto s = exporter_->begin(sink, header(50, 50));
    if (!s.isOk()) continue;  // refusing at begin is fine too
    Status st;
    for (int i = 1; i <= 50 && st.isOk(); ++i) {
      ContentRecord r = rec(1, "http://h/" + std::to_string(i), static_cast<ChangeSeq>(i));
      r.size = 100000;
      TestSource src(r.size, static_cast<char>(i));  // incompressible: the output really grows
      st = (*s)->add(r, &src);
    }
    if (st.isOk()) st = (*s)->finish();
    EXPECT_FALSE(st.isOk()) << "fail_after " << fail_after;
    // Once failed, it stays failed.
    TestSource src("x");
    ContentRecord r = rec(1, "http://h/after", 99);
    r.size = 1;
    EXPECT_FALSE((*s)->add(r, &src).isOk());
  }
}

TEST_P(ExporterContract, AFailingContentSourceFailsTheStream) {
  StringSink sink;
  auto s = exporter_->begin(sink, header(1, 1));
  ContentRecord a = rec(1, "http://h/a", 1);
  a.size = 1 << 20;
  TestSource src(a.size, 'a');
  src.fail_at_ = 300000;
  EXPECT_FALSE((*s)->add(a, &src).isOk());
}

TEST_P(ExporterContract, SeveralStreamsAtOnce) {
  StringSink s1, s2;
  auto a = exporter_->begin(s1, header(1, 1));
  auto b = exporter_->begin(s2, header(1, 2));
  ContentRecord r1 = rec(1, "http://h/one.html", 1), r2 = rec(2, "http://h/two.html", 2);
  r1.size = 3, r2.size = 3;
  TestSource x("one"), y("two");
  ASSERT_TRUE((*b)->add(r2, &y).isOk());
  ASSERT_TRUE((*a)->add(r1, &x).isOk());
  ASSERT_TRUE((*a)->finish().isOk());
  ASSERT_TRUE((*b)->finish().isOk());
  Decoded d1 = decode(s1.data), d2 = decode(s2.data);
  ASSERT_TRUE(d1.ok && d2.ok) << d1.error << d2.error;
  EXPECT_EQ(d1.content["http://h/one.html"], "one");
  EXPECT_EQ(d2.content["http://h/two.html"], "two");
  EXPECT_EQ(d2.last_seq, 2u);
}

INSTANTIATE_TEST_SUITE_P(Plugins, ExporterContract, ::testing::ValuesIn(exporterPlugins()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n) if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace lcc

namespace lcc {
namespace {

// cu-tar's two compressors give the same archive contents: one deflate stream in the
// exporting thread, or blocks on several threads joined into one gzip member.
TEST(CuTarCompressors, OneThreadAndSeveralGiveTheSameMembers) {
  testing::TempDir dir;
  testing::SimClock clock;
  HostContext host{&clock, posixEnv(), pluginLogger("test"), dir.path(), cutest::kMachine};
  PluginRegistry reg(LCC_PLUGIN_DIR, host);
  std::vector<cutest::TarAnswer> answers;
  for (const char* threads : {"1", "2", "5"}) {
    auto opts = reg.defaultOptions("cu-tar", {{"compression_threads", threads}, {"compression_level", "1"}});
    ASSERT_TRUE(opts.isOk()) << opts.status().toString();
    auto e = reg.makeExporter("cu-tar", *opts);
    ASSERT_TRUE(e.isOk());
    StringSink sink;
    ExportHeader h;
    h.count = 40;
    h.last_seq = 40;
    h.with_content = true;
    h.temp_dir = dir.path();
    auto s = (*e)->begin(sink, h);
    ASSERT_TRUE(s.isOk());
    for (int i = 1; i <= 40; ++i) {
      ContentRecord r = rec(1, "http://h/" + std::to_string(i) + ".bin", static_cast<ChangeSeq>(i), "application/x");
      r.size = static_cast<std::uint64_t>(i) * 9973;  // crosses many 128 KiB blocks
      TestSource src(r.size, static_cast<char>(i));
      ASSERT_TRUE((*s)->add(r, &src).isOk());
    }
    ASSERT_TRUE((*s)->finish().isOk());
    answers.push_back(cutest::parseTarAnswer(sink.data));
    ASSERT_TRUE(answers.back().ok) << threads << ": " << answers.back().error;
  }
  for (std::size_t k = 1; k < answers.size(); ++k) {
    ASSERT_EQ(answers[k].members.size(), answers[0].members.size());
    for (std::size_t i = 0; i + 1 < answers[0].members.size(); ++i) {
      EXPECT_EQ(answers[k].members[i].name, answers[0].members[i].name);
      EXPECT_EQ(answers[k].members[i].data, answers[0].members[i].data);
    }
  }
}

}  // namespace
}  // namespace lcc
