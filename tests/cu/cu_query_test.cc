// The CU query of docs/protocol.md §3: the XML document, the HTTP parameters, refusals.
#include <gtest/gtest.h>

#include "cu_test_util.h"
#include "proto/cu_query.h"
#include "lcc/support/cu_xml_format.h"

namespace lcc {
namespace {

using proto::CuQuery;
using proto::CuQueryError;
using proto::CuQueryParser;

TEST(CuQuery, ParsesTheProtocolExample) {
  const char* doc = R"(<lococa:query xmlns:lococa="http://www.lococa.org/1.0" format="xml" content="no">
  <provider id="17"/>
  <since seq="1200"/>
  <mime>text/*</mime>
  <prefix>http://www.server.com/docs/</prefix>
  <deleted>yes</deleted>
  <limit>1000</limit>
</lococa:query>)";
  auto q = proto::parseCuQueryXml(doc);
  ASSERT_TRUE(q.isOk()) << q.status().toString();
  EXPECT_EQ(q->format, "xml");
  EXPECT_FALSE(q->content);
  EXPECT_EQ(q->providers, std::vector<ProviderId>{17});
  EXPECT_EQ(q->since_seq, 1200u);
  EXPECT_EQ(q->mimes, std::vector<std::string>{"text/*"});
  EXPECT_EQ(q->prefixes, std::vector<std::string>{"http://www.server.com/docs/"});
  EXPECT_TRUE(q->deleted);
  EXPECT_EQ(q->limit, 1000u);
}

TEST(CuQuery, RepeatedKindsAndDefaults) {
  auto q = proto::parseCuQueryXml(
      R"(<q:query xmlns:q="http://www.lococa.org/1.0" format="tar.gz" deleted="yes"><provider id="1"/><provider id="2"/>)"
      R"(<mime>text/html</mime><mime>application/pdf</mime><since time="2024-05-01T12:00:00Z"/><unknown a="1"/></q:query>)");
  ASSERT_TRUE(q.isOk()) << q.status().toString();
  EXPECT_EQ(q->format, "tar.gz");
  EXPECT_EQ(q->providers, (std::vector<ProviderId>{1, 2}));
  EXPECT_EQ(q->mimes.size(), 2u);
  EXPECT_EQ(q->since_time, 1714564800);
  EXPECT_TRUE(q->deleted);
  EXPECT_FALSE(q->limit.has_value());

  auto empty = proto::parseCuQueryXml(R"(<lococa:query xmlns:lococa="http://www.lococa.org/1.0"/>)");
  ASSERT_TRUE(empty.isOk());
  EXPECT_EQ(*empty, CuQuery{});
}

TEST(CuQuery, BadQueriesAreRefusedWithCode100) {
  for (const char* doc : {
           R"(<lococa:query xmlns:lococa="http://www.lococa.org/1.0"><provider id="x"/></lococa:query>)",
           R"(<lococa:query xmlns:lococa="http://www.lococa.org/1.0"><provider id="0"/></lococa:query>)",
           R"(<lococa:query xmlns:lococa="http://www.lococa.org/1.0"><since seq="1" time="2"/></lococa:query>)",
           R"(<lococa:query xmlns:lococa="http://www.lococa.org/1.0"><since/></lococa:query>)",
           R"(<lococa:query xmlns:lococa="http://www.lococa.org/1.0"><since seq="1"/><since seq="2"/></lococa:query>)",
           R"(<lococa:query xmlns:lococa="http://www.lococa.org/1.0"><since time="yesterday"/></lococa:query>)",
           R"(<lococa:query xmlns:lococa="http://www.lococa.org/1.0"><limit>-1</limit></lococa:query>)",
           R"(<lococa:query xmlns:lococa="http://www.lococa.org/1.0"><mime>html</mime></lococa:query>)",
           R"(<lococa:query xmlns:lococa="http://www.lococa.org/1.0"><deleted>maybe</deleted></lococa:query>)",
           R"(<lococa:query xmlns:lococa="http://www.lococa.org/1.0" content="perhaps"/>)",
           R"(<lococa:set xmlns:lococa="http://www.lococa.org/1.0"/>)",
           R"(<query xmlns="urn:other"/>)",
           R"(<!DOCTYPE x [<!ENTITY a "b">]><lococa:query xmlns:lococa="http://www.lococa.org/1.0"/>)",
           R"(<lococa:query xmlns:lococa="http://www.lococa.org/1.0"><limit>1</lococa:query>)",
       }) {
    CuQueryError e;
    auto q = proto::parseCuQueryXml(doc, &e);
    EXPECT_FALSE(q.isOk()) << doc;
    EXPECT_EQ(e.code, ErrorCode::kMalformed) << doc << ": " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
}

TEST(CuQuery, IncrementalParsingAndLimits) {
  std::string doc = proto::formatCuQueryXml(CuQuery{"xml", true, {3}, 5, std::nullopt, {"text/*"}, {"http://a/"}, true, 10});
  while (doc.back() == '\n') doc.pop_back();  // the document ends at its last '>'

  CuQueryParser p(64 * 1024);
  for (std::size_t i = 0; i + 1 < doc.size(); ++i) {
    ASSERT_EQ(p.feed(doc.substr(i, 1)), CuQueryParser::State::kNeedMore) << i;
  }
  ASSERT_EQ(p.feed(doc.substr(doc.size() - 1) + "trailing garbage"), CuQueryParser::State::kDone);
  EXPECT_EQ(p.query(), (CuQuery{"xml", true, {3}, 5, std::nullopt, {"text/*"}, {"http://a/"}, true, 10}));

  // Longer than max_bytes: 101, however it arrives.
  CuQueryParser small(1024);
  std::string big = "<lococa:query xmlns:lococa=\"http://www.lococa.org/1.0\">";
  while (big.size() < 4096) big += "<prefix>http://example.com/</prefix>";
  auto st = small.feed(big);
  EXPECT_EQ(st, CuQueryParser::State::kFailed);
  EXPECT_EQ(small.error().code, ErrorCode::kLimitExceeded);

  // A peer that closes before the end.
  CuQueryParser cut(1024);
  EXPECT_EQ(cut.feed("<lococa:query xmlns:lococa=\"http://www.lococa.org/1.0\">"), CuQueryParser::State::kNeedMore);
  EXPECT_EQ(cut.endOfInput(), CuQueryParser::State::kFailed);
  EXPECT_EQ(cut.error().code, ErrorCode::kMalformed);
}

TEST(CuQuery, FormatRoundTrips) {
  CuQuery q{"tar.gz", true, {1, 99}, std::nullopt, 1714564800, {"text/html", "*/*"}, {"http://x/<&>\"/"}, true, 0};
  auto back = proto::parseCuQueryXml(proto::formatCuQueryXml(q));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(*back, q);
}

TEST(CuQuery, HttpParameters) {
  std::multimap<std::string, std::string> p = {
      {"format", "tar.gz"}, {"provider", "17"}, {"provider", "18"}, {"since_seq", "1200"}, {"mime", "text/*"},
      {"prefix", "http://www.server.com/docs/"}, {"deleted", "yes"}, {"limit", "1000"}, {"content", "no"},
      {"unknown", "ignored"}};
  CuQueryError e;
  auto q = proto::parseCuQueryParams(p, &e);
  ASSERT_TRUE(q) << e.message;
  EXPECT_EQ(*q, (CuQuery{"tar.gz", false, {17, 18}, 1200, std::nullopt, {"text/*"}, {"http://www.server.com/docs/"}, true, 1000}));

  auto t = proto::parseCuQueryParams({{"since", "2024-05-01T12:00:00Z"}}, &e);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->since_time, 1714564800);

  for (auto bad : std::vector<std::multimap<std::string, std::string>>{
           {{"provider", "abc"}}, {{"since_seq", "-3"}}, {{"since", "x"}}, {{"limit", "1e3"}}, {{"deleted", "perhaps"}},
           {{"since_seq", "1"}, {"since", "2"}}, {{"mime", "nonsense"}}}) {
    EXPECT_FALSE(proto::parseCuQueryParams(bad, &e)) << bad.begin()->first;
    EXPECT_EQ(e.code, ErrorCode::kMalformed);
  }
}

TEST(CuQuery, RejectionIsWellFormedWhateverTheMessage) {
  const std::string doc = proto::formatQueryRejected(ErrorCode::kMalformed, "bad \x01 byte \xff and <tag> & \"q\"");
  auto a = cutest::parseXmlAnswer(doc);
  ASSERT_TRUE(a.ok) << a.error << "\n" << doc;
  EXPECT_EQ(a.root, "query_rejected");
  EXPECT_EQ(a.reject_code, 100);
  EXPECT_NE(a.reject_text.find("<tag> & \"q\""), std::string::npos);
}

TEST(CuXmlFormat, Base64RoundTripsInAnyPieces) {
  std::string bytes;
  for (int i = 0; i < 1000; ++i) bytes.push_back(static_cast<char>(i * 7 + 3));
  for (std::size_t piece : {1u, 2u, 3u, 5u, 64u, 1000u}) {
    proto::Base64Encoder enc;
    std::string b64;
    for (std::size_t i = 0; i < bytes.size(); i += piece) enc.update(bytes.data() + i, std::min(piece, bytes.size() - i), b64);
    enc.finish(b64);
    proto::Base64Decoder dec;
    std::string back;
    for (std::size_t i = 0; i < b64.size(); i += 7) ASSERT_TRUE(dec.update(b64.substr(i, 7), back));
    EXPECT_TRUE(dec.finish());
    EXPECT_EQ(back, bytes) << piece;
  }
  proto::Base64Decoder bad;
  std::string sink;
  EXPECT_FALSE(bad.update("ab*d", sink));
}

}  // namespace
}  // namespace lcc
