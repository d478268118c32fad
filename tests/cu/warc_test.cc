// cu-warc: the record writer's pieces (base32, SHA-1 digests, record ids, a gzip member
// per record), the exporter's records (warcinfo first, response or resource per URL,
// the manifest last, header fields in wget's order), its spool, the response-head side
// file (common/response_head.h), and the CU engine pairing a stored head with its body.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "common/logging.h"
#include "common/posix_env.h"
#include "common/response_head.h"
#include "cu_test_util.h"
#include "warc_reader.h"
#include "block_spool.h"
#include "warc_exporter.h"
#include "warc_writer.h"

namespace lcc {
namespace {

using namespace lcc::plugins::cu_warc;
using cutest::StringSink;

TEST(CuWarcWriter, Base32IsRfc4648) {
  EXPECT_EQ(base32(""), "");
  EXPECT_EQ(base32("f"), "MY======");
  EXPECT_EQ(base32("foobar"), "MZXW6YTBOI======");
  // SHA-1 of nothing: the WARC-Payload-Digest every empty record carries.
  const unsigned char empty_sha1[] = {0xda, 0x39, 0xa3, 0xee, 0x5e, 0x6b, 0x4b, 0x0d, 0x32, 0x55,
                                      0xbf, 0xef, 0x95, 0x60, 0x18, 0x90, 0xaf, 0xd8, 0x07, 0x09};
  EXPECT_EQ(base32(std::string_view(reinterpret_cast<const char*>(empty_sha1), 20)),
            "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
}

TEST(CuWarcWriter, Sha1DigestsOfKnownBodies) {
  Sha1 empty;
  EXPECT_EQ(empty.warcDigest(), "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
  Sha1 abc;
  abc.update("a");
  abc.update("");
  abc.update("bc");
  EXPECT_EQ(abc.warcDigest(), "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5");
}

TEST(CuWarcWriter, RecordIdsAreVersion4Uuids) {
  RandomSource zeros = [](unsigned char* out, std::size_t n) { std::fill(out, out + n, 0xff); };
  EXPECT_EQ(newRecordId(zeros), "<urn:uuid:ffffffff-ffff-4fff-bfff-ffffffffffff>");
  RandomSource sys = systemRandom();
  ASSERT_TRUE(sys);
  const std::string a = newRecordId(sys), b = newRecordId(sys);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.size(), std::string("<urn:uuid:>").size() + 36);
  EXPECT_EQ(a[10 + 14], '4');
}

TEST(CuWarcWriter, DatesUrisAndHeaders) {
  EXPECT_EQ(warcDate(1714564807), "2024-05-01T12:00:07Z");
  EXPECT_EQ(warcUri("http://h/a b\r\nWARC-Type: x<\">\xc3\xa9"), "http://h/a%20b%0D%0AWARC-Type:%20x%3C%22%3E%C3%A9");
  EXPECT_EQ(warcHeader({{"WARC-Type", "resource"}, {"Content-Length", "3"}}),
            "WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 3\r\n\r\n");
  EXPECT_EQ(archivedHead("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Transfer-Encoding: a\r\n\r\n"),
            "HTTP/1.1 200 OK\r\nX-LCC-Original-Transfer-Encoding: chunked\r\nX-Transfer-Encoding: a\r\n\r\n");
  EXPECT_EQ(archivedHead("HTTP/1.1 200 OK\r\n\r\nX: inside\r\n\r\n"), "");  // an empty line before the end
  EXPECT_EQ(archivedHead("HTTP/1.1 200 OK\nX: y\r\n\r\n"), "");               // a bare LF
  EXPECT_EQ(archivedHead("HTTP/1.1 200 OK\r\n"), "");                            // no empty line
  EXPECT_EQ(archivedHead("garbage\r\n\r\n"), "");
}

TEST(CuWarcWriter, EachMemberIsAGzipStreamZlibReadsAlone) {
  StringSink sink;
  GzipMemberWriter w(sink, 6, 4096);
  ASSERT_TRUE(w.init().isOk());
  std::string big(300000, 'z');
  for (const std::string& part : {std::string("first record"), std::string(), big}) {
    ASSERT_TRUE(w.write(part).isOk());
    ASSERT_TRUE(w.endMember().isOk());
  }
  ASSERT_TRUE(w.finish().isOk());
  std::string err;
  auto members = cutest::gunzipMembers(sink.data, &err);
  ASSERT_TRUE(err.empty()) << err;
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[0], "first record");
  EXPECT_EQ(members[1], "");
  EXPECT_EQ(members[2], big);
  // The first member alone is a complete gzip file (the plain single-member reader stops at its end).
  EXPECT_EQ(cutest::gunzip(sink.data, &err), "first record");
}

TEST(CuWarcSpool, KeepsSmallBlocksInMemoryAndSpillsBigOnes) {
  testing::TempDir dir;
  BlockSpool spool(*posixEnv(), dir.path(), 64 * 1024);
  ASSERT_TRUE(spool.append("small").isOk());
  EXPECT_FALSE(spool.spilled());
  std::string big;
  for (int i = 0; i < 3 << 20; ++i) big.push_back(static_cast<char>(i * 7));
  ASSERT_TRUE(spool.append(big).isOk());
  EXPECT_TRUE(spool.spilled());
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
  for (int pass = 0; pass < 2; ++pass) {
    std::string back;
    ASSERT_TRUE(spool.forEach(100000, [&](std::string_view b) {
                       EXPECT_LE(b.size(), 100000u);
                       back.append(b);
                       return Status::ok();
                     }).isOk());
    EXPECT_EQ(back, "small" + big);
  }
  EXPECT_FALSE(spool.append("x").isOk());  // read: clear() first
  spool.clear();
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 0);
  ASSERT_TRUE(spool.append("again").isOk());
  EXPECT_EQ(spool.size(), 5u);
}

// A content source with a response head, as the CU gives one for a fetched file.
class HeadSource final : public ContentSource {
 public:
  HeadSource(std::string head, std::string body) : head_(std::move(head)), body_(std::move(body)) {}
  std::uint64_t size() const override { return body_.size(); }
  Result<std::size_t> read(char* buf, std::size_t n) override {
    n = std::min(n, body_.size() - off_);
    std::copy_n(body_.data() + off_, n, buf);
    off_ += n;
    return n;
  }
  std::string responseHead() override { return head_; }

 private:
  std::string head_, body_;
  std::size_t off_ = 0;
};

ContentRecord record(ChangeSeq seq, std::string url, std::uint64_t size) {
  ContentRecord r;
  r.key = {3, std::move(url), "text/html"};
  r.seq = seq;
  r.size = size;
  r.md5 = "0123456789abcdef0123456789abcdef";
  r.machine = cutest::kMachine;
  r.filename = "0/" + std::to_string(seq);
  r.stored = fromUnixMillis(1714564807000);
  return r;
}

std::vector<std::string> names(const cutest::WarcRecordOut& r) {
  std::vector<std::string> out;
  for (const auto& [k, v] : r.fields) out.push_back(k);
  return out;
}

TEST(CuWarcExporter, ResponseAndResourceRecordsInWgetsFieldOrder) {
  testing::TempDir dir;
  testing::SimClock clock;
  HostContext host{&clock, posixEnv(), pluginLogger("test"), dir.path(), cutest::kMachine};
  unsigned char counter = 0;
  WarcExporter exporter(host, WarcOptions{.level = 1, .spool_memory = 4096},
                        [&counter](unsigned char* out, std::size_t n) { std::fill(out, out + n, counter++); });
  StringSink sink;
  ExportHeader h;
  h.count = 3, h.last_seq = 12, h.with_content = true, h.temp_dir = dir.path();
  auto s = exporter.begin(sink, h);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 50000\r\n\r\n";
  const std::string body(50000, 'b');  // past spool_memory: through the spool file
  HeadSource with_head(head, body), without("", "old");
  ASSERT_TRUE((*s)->add(record(10, "http://h/new.html", body.size()), &with_head).isOk());
  ASSERT_TRUE((*s)->add(record(11, "http://h/old.html", 3), &without).isOk());
  ContentRecord gone = record(12, "http://h/gone.html", 0);
  gone.deleted = true;
  ASSERT_TRUE((*s)->add(gone, nullptr).isOk());
  ASSERT_TRUE((*s)->finish().isOk());

  auto w = cutest::parseWarcAnswer(sink.data);
  ASSERT_TRUE(w.ok) << w.error;
  ASSERT_EQ(w.records.size(), 4u);  // warcinfo, response, resource, manifest
  const auto& info = w.records[0];
  EXPECT_EQ(info.field("WARC-Record-ID"), "<urn:uuid:00000000-0000-4000-8000-000000000000>");
  EXPECT_NE(info.block.find("lcc-last-seq: 12\r\n"), std::string::npos);
  const auto& resp = w.records[1];
  EXPECT_EQ(names(resp), (std::vector<std::string>{"WARC-Type", "WARC-Record-ID", "WARC-Warcinfo-ID", "WARC-Target-URI",
                                                   "WARC-Date", "WARC-Block-Digest", "WARC-Payload-Digest",
                                                   "Content-Type", "Content-Length"}));
  EXPECT_EQ(resp.field("WARC-Type"), "response");
  EXPECT_EQ(resp.field("WARC-Target-URI"), "http://h/new.html");
  EXPECT_EQ(resp.field("WARC-Date"), "2024-05-01T12:00:07Z");
  EXPECT_EQ(resp.field("WARC-Warcinfo-ID"), info.field("WARC-Record-ID"));
  EXPECT_EQ(resp.field("Content-Type"), "application/http; msgtype=response");
  EXPECT_EQ(resp.block, head + body);
  EXPECT_EQ(resp.payload(), body);
  const auto& res = w.records[2];
  EXPECT_EQ(res.field("WARC-Type"), "resource");
  EXPECT_EQ(res.field("Content-Type"), "text/html");
  EXPECT_EQ(res.block, "old");
  EXPECT_EQ(res.field("WARC-Payload-Digest"), res.field("WARC-Block-Digest"));
  ASSERT_EQ(w.manifest.urls.size(), 3u);
  EXPECT_EQ(w.manifest.urls[0].attr("record"), resp.field("WARC-Record-ID"));
  EXPECT_EQ(w.manifest.urls[1].attr("record"), res.field("WARC-Record-ID"));
  EXPECT_EQ(w.manifest.urls[2].attr("deleted"), "yes");
  EXPECT_EQ(w.manifest.urls[2].attr("record"), "");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 0) << "spool files left";
}

// A head is what a server sent: any bytes, also ones that look like WARC. Each stays
// inside its own record's block (Content-Length frames it), and the records after it
// are read unharmed.
TEST(CuWarcExporter, HostileHeadsStayInsideTheirRecords) {
  testing::TempDir dir;
  testing::SimClock clock;
  HostContext host{&clock, posixEnv(), pluginLogger("test"), dir.path(), cutest::kMachine};
  WarcExporter exporter(host, WarcOptions{}, systemRandom());
  std::mt19937 rng(16);
  const std::vector<std::string> pieces = {"\r\n", "\r\n\r\n", "WARC/1.1\r\n", "Content-Length: 9\r\n", "\n",
                                           std::string("\0", 1), "Transfer-Encoding: chunked\r\n", "\xff\xfe", ":"};
  StringSink sink;
  ExportHeader h;
  h.count = 200, h.last_seq = 200, h.with_content = true, h.temp_dir = dir.path();
  auto s = exporter.begin(sink, h);
  ASSERT_TRUE(s.isOk());
  std::vector<std::string> heads;
  for (int i = 0; i < 200; ++i) {
    std::string head = "HTTP/1.1 200 OK\r\n";
    if (i % 2 == 0) {  // header lines, some that look like WARC, and the empty line
      for (int k = static_cast<int>(rng() % 6); k > 0; --k) head += pieces[2 + rng() % 2] + "X: \xff\r\n";
      head += "\r\n";
    } else {
      for (int k = static_cast<int>(rng() % 12); k > 0; --k) head += pieces[rng() % pieces.size()];
    }
    heads.push_back(head);
    HeadSource src(head, "body " + std::to_string(i));
    ASSERT_TRUE((*s)->add(record(static_cast<ChangeSeq>(i + 1), "http://h/" + std::to_string(i), src.size()), &src).isOk());
  }
  ASSERT_TRUE((*s)->finish().isOk());
  auto w = cutest::parseWarcAnswer(sink.data);
  ASSERT_TRUE(w.ok) << w.error;
  ASSERT_EQ(w.records.size(), 202u);  // and the reader checked every payload digest
  int responses = 0;
  for (int i = 0; i < 200; ++i) {
    const auto& r = w.records[i + 1];
    const std::string body = "body " + std::to_string(i);
    if (r.field("WARC-Type") == "response") {
      ++responses;
      EXPECT_TRUE(wellFormedHead(heads[i])) << i;
      EXPECT_EQ(r.block, archivedHead(heads[i]) + body) << i;
    } else {
      EXPECT_FALSE(wellFormedHead(heads[i])) << i;  // an empty line inside, a bare CR or LF, no end
      EXPECT_EQ(r.block, body) << i;
    }
  }
  EXPECT_GE(responses, 100);  // every even one, and the odd ones that happen to be well formed
  EXPECT_LT(responses, 200);
}

TEST(ResponseHeadFile, BelongsToOneBodyAndIsWhole) {
  const std::string md5 = "00112233445566778899aabbccddeeff";
  const std::string head = "HTTP/1.1 200 OK\r\nServer: x\r\n\r\n";
  EXPECT_EQ(responseHeadPath("/c/00/01/7"), "/c/00/01/7.http");
  EXPECT_EQ(decodeResponseHead(encodeResponseHead(md5, head), md5), head);
  EXPECT_EQ(decodeResponseHead(encodeResponseHead(md5, head), "ffeeddccbbaa99887766554433221100"), "");
  EXPECT_EQ(decodeResponseHead(encodeResponseHead(md5, head.substr(0, 20)), md5), "");  // cut
  EXPECT_EQ(decodeResponseHead(encodeResponseHead(md5, "garbage\r\n\r\n"), md5), "");
  EXPECT_EQ(decodeResponseHead(encodeResponseHead("", head), ""), "");
  EXPECT_EQ(decodeResponseHead("", md5), "");
}

// Exports everything of `w` as warc.gz; the records by target URI (`count`: how many
// records there must be, warcinfo and manifest included; they share the URI "").
std::map<std::string, cutest::WarcRecordOut> exportWarcByUri(cutest::CuWorld& w, std::size_t count) {
  auto engine = w.makeEngine();
  proto::CuQuery q;
  q.format = "warc.gz";
  Status s;
  auto ans = cutest::parseWarcAnswer(cutest::runQuery(*engine, q, &s));
  EXPECT_TRUE(s.isOk()) << s.toString();
  EXPECT_TRUE(ans.ok) << ans.error;
  EXPECT_EQ(ans.records.size(), count);
  std::map<std::string, cutest::WarcRecordOut> by_uri;
  for (const auto& r : ans.records) by_uri[r.field("WARC-Target-URI")] = r;
  return by_uri;
}

// The engine reads <file>.http (the robot's fallback) beside a content file of this machine and pairs it only
// with the body whose MD5 it names.
TEST(CuWarcEngine, StoredHeadsMakeResponseRecords) {
  cutest::CuWorld w;
  ContentRecord a = w.put(1, "http://a.org/a.html", "text/html", "<p>a</p>");
  ContentRecord b = w.put(1, "http://a.org/b.html", "text/html", "<p>b</p>");
  ContentRecord c = w.put(1, "http://a.org/c.html", "text/html", "<p>c</p>");
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n";
  std::ofstream(responseHeadPath(w.contentDir() + "/" + a.filename)) << encodeResponseHead(a.md5, head);
  std::ofstream(responseHeadPath(w.contentDir() + "/" + b.filename)) << encodeResponseHead("ffff", head);
  auto by_uri = exportWarcByUri(w, 5);
  if (HasFailure()) return;
  EXPECT_EQ(by_uri.at(a.key.url).field("WARC-Type"), "response");
  EXPECT_EQ(by_uri.at(a.key.url).block, head + "<p>a</p>");
  EXPECT_EQ(by_uri.at(b.key.url).field("WARC-Type"), "resource");  // the head names another body
  EXPECT_EQ(by_uri.at(c.key.url).field("WARC-Type"), "resource");  // no head kept
  EXPECT_EQ(by_uri.at(c.key.url).block, "<p>c</p>");
}

// The robot keeps a head as the content file's attribute (common/response_head.h),
// with <file>.http as the fallback: the engine reads the attribute first, takes the
// side file when the attribute is absent or names another body, and pairs neither
// with bytes whose MD5 it does not name.
TEST(CuWarcEngine, HeadsOnTheFileComeFirstThenTheSideFile) {
  cutest::CuWorld w;
  Env& env = *posixEnv();
  ContentRecord a = w.put(1, "http://a.org/a.html", "text/html", "<p>a</p>");
  ContentRecord b = w.put(1, "http://a.org/b.html", "text/html", "<p>b</p>");
  ContentRecord c = w.put(1, "http://a.org/c.html", "text/html", "<p>c</p>");
  ContentRecord d = w.put(1, "http://a.org/d.html", "text/html", "<p>d</p>");
  auto path = [&](const ContentRecord& r) { return w.contentDir() + "/" + r.filename; };
  const std::string on_file = "HTTP/1.1 200 OK\r\nServer: attribute\r\n\r\n";
  const std::string beside = "HTTP/1.1 200 OK\r\nServer: side file\r\n\r\n";
  const std::string other_md5 = "ffffffffffffffffffffffffffffffff";  // CuWorld gives every record one MD5
  Status probe = env.setAttribute(path(a), kResponseHeadAttribute, encodeResponseHead(a.md5, on_file));
  if (probe.code() == StatusCode::kNotSupported) GTEST_SKIP() << "no attributes here: " << probe.message();
  ASSERT_TRUE(probe.isOk()) << probe.toString();
  ASSERT_TRUE(env.setAttribute(path(b), kResponseHeadAttribute, encodeResponseHead(b.md5, on_file)).isOk());
  std::ofstream(responseHeadPath(path(b))) << encodeResponseHead(b.md5, beside);
  ASSERT_TRUE(env.setAttribute(path(c), kResponseHeadAttribute, encodeResponseHead(other_md5, on_file)).isOk());
  std::ofstream(responseHeadPath(path(c))) << encodeResponseHead(c.md5, beside);
  ASSERT_TRUE(env.setAttribute(path(d), kResponseHeadAttribute, encodeResponseHead(other_md5, on_file)).isOk());
  auto by_uri = exportWarcByUri(w, 6);
  if (HasFailure()) return;
  EXPECT_EQ(by_uri.at(a.key.url).block, on_file + "<p>a</p>");  // the attribute alone
  EXPECT_EQ(by_uri.at(b.key.url).block, on_file + "<p>b</p>");  // the attribute before the side file
  EXPECT_EQ(by_uri.at(c.key.url).block, beside + "<p>c</p>");   // the attribute names another body
  EXPECT_EQ(by_uri.at(d.key.url).field("WARC-Type"), "resource");
  EXPECT_EQ(by_uri.at(d.key.url).block, "<p>d</p>");
}

}  // namespace
}  // namespace lcc
