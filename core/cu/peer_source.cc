#include "cu/peer_source.h"

#include <algorithm>
#include <charconv>

#include "common/content_locator.h"
#include "cu/query_engine.h"
#include "http/admin_client.h"
#include "http/url_codec.h"
#include "lcc/support/time_util.h"
#include "net/host_port.h"
#include "proto/xml_reader.h"

namespace lcc::cu {
namespace {

std::optional<std::uint64_t> decimal(std::string_view s) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// <lococa:result count last_seq><url …/>…</lococa:result>, records into ContentRecord.
class AnswerHandler final : public proto::XmlHandler {
 public:
  AnswerHandler(proto::XmlReader*& reader, std::uint64_t max_records) : reader_(reader), max_records_(max_records) {}
  ParsedAnswer answer;
  bool root_seen = false;

  void onStart(int depth, const proto::XmlName& name, const proto::XmlAttrs& attrs) override {
    if (depth == 1) {
      root_seen = true;
      if (name.ns != proto::kLococaNs || name.local != "result") return fail("its root is not <lococa:result>");
      auto last = decimal(attrs.getOr("last_seq", ""));
      if (!last) return fail("its last_seq is not a decimal seq (a merged answer is not merged again)");
      answer.last_seq = *last;
    } else if (depth == 2 && name.local == "url") {
      if (answer.records.size() >= max_records_) return fail("it holds more records than asked for");
      ContentRecord r;
      if (!record(attrs, &r)) return fail("a <url> lacks seq, pid, c or m, or has a bad value");
      answer.records.push_back(std::move(r));
    }
  }
  void onEnd(int, const proto::XmlName&) override {}

 private:
  void fail(const std::string& why) { reader_->fail(ErrorCode::kMalformed, why); }

  static bool record(const proto::XmlAttrs& a, ContentRecord* r) {
    auto seq = decimal(a.getOr("seq", ""));
    auto pid = decimal(a.getOr("pid", ""));
    const std::string_view* c = a.get("c");
    const std::string_view* m = a.get("m");
    if (!seq || !pid || *pid == 0 || *pid > 0xffffffffu || c == nullptr || m == nullptr) return false;
    r->seq = *seq;
    r->key = UrlKey{static_cast<ProviderId>(*pid), std::string(*c), std::string(*m)};
    r->deleted = a.getOr("deleted", "no") == "yes";
    if (auto b = a.get("b")) r->browse = std::string(*b);
    r->fetch = a.getOr("f", "");
    r->view_tag = a.getOr("st", "");
    r->md5 = a.getOr("md5", "");
    if (auto mt = a.get("mt")) r->mtime = parseTime(*mt);
    r->size = decimal(a.getOr("sz", "0")).value_or(0);
    auto stored = parseTime(a.getOr("stored", ""));
    if (!stored) return false;
    r->stored = fromUnixMillis(*stored * 1000);
    return true;
  }

  proto::XmlReader*& reader_;
  const std::uint64_t max_records_;
};

// GET parameters of `q` (proto/cu_query.h parseCuQueryParams reads them back).
std::string queryParams(const proto::CuQuery& q) {
  std::string p = "format=" + http::percentEncode(q.format) + "&content=no&peers=no";
  auto add = [&](const char* k, const std::string& v) { p += std::string("&") + k + "=" + http::percentEncode(v); };
  if (q.limit) add("limit", std::to_string(*q.limit));
  if (q.deleted) add("deleted", "yes");
  for (ProviderId pid : q.providers) add("provider", std::to_string(pid));
  for (const auto& m : q.mimes) add("mime", m);
  for (const auto& x : q.prefixes) add("prefix", x);
  if (q.since_cursor) add("since_seq", *q.since_cursor);
  if (q.since_seq) add("since_seq", std::to_string(*q.since_seq));
  if (q.since_time) add("since", std::to_string(*q.since_time));
  return p;
}

// A normalised peer URL as the admin client's target and the path before /cu/query.
Result<std::pair<http::AdminTarget, std::string>> targetOf(const std::string& url, const PeerOptions& o) {
  const bool tls = url.rfind("https://", 0) == 0;
  std::string_view rest = std::string_view(url).substr(tls ? 8 : 7);
  const std::size_t slash = rest.find('/');
  auto hp = net::HostPort::parseAuthority(rest.substr(0, slash), tls ? 443 : 80);
  if (!hp.isOk()) return hp.status();
  http::AdminTarget t;
  t.host = hp->host;
  t.port = std::to_string(hp->port);
  if (tls) {
    t.tls = o.tls ? o.tls->current() : nullptr;
    if (!t.tls) return Status::invalidArgument("no TLS client context for an https:// peer");
  }
  return std::make_pair(t, slash == std::string_view::npos ? std::string() : std::string(rest.substr(slash)));
}

// This node's answer, held to the bound a peer's answer has (cu.peer_max_answer_bytes).
class AnswerBuffer final : public ByteSink {
 public:
  explicit AnswerBuffer(std::uint64_t max) : max_(max) {}
  Status write(std::string_view b) override {
    if (b.size() > max_ - text.size()) {
      over_ = true;
      return Status::aborted("over the answer bound");
    }
    text.append(b);
    return Status::ok();
  }
  bool over() const { return over_; }
  std::string text;

 private:
  const std::uint64_t max_;
  bool over_ = false;
};

SourceAnswer down(const std::string& where, std::string why) {
  SourceAnswer a;
  a.where = where;
  a.why = std::move(why);
  return a;
}

// The answer of one source: headers X-LCC-Source, X-LCC-Since; the XML body.
SourceAnswer fromBody(const std::string& where, std::string source, std::string_view since, std::string_view body,
                      std::uint64_t max_records) {
  auto s = decimal(since);
  if (!s) return down(where, "its answer has no X-LCC-Since (an LCC too old to be a peer?)");
  auto parsed = parseXmlAnswer(body, max_records);
  if (!parsed.isOk()) return down(where, "its answer is not usable: " + parsed.status().message());
  SourceAnswer a;
  a.where = where;
  a.reachable = true;
  a.source = std::move(source);
  a.since = *s;
  a.last_seq = parsed->last_seq;
  a.records = std::move(parsed->records);
  return a;
}

}  // namespace

std::vector<std::string> parsePeerUrls(const std::vector<std::string>& urls, std::vector<std::string>* problems) {
  std::vector<std::string> out;
  if (urls.size() > kMaxCuPeers) {
    problems->push_back("at most " + std::to_string(kMaxCuPeers) + " peers (got " + std::to_string(urls.size()) + ")");
  }
  for (const auto& u : urls) {
    std::string why;
    auto norm = normalizeContentUrl(u, &why);
    if (!norm) {
      problems->push_back("url " + why + " (got " + u + ")");
    } else if (std::find(out.begin(), out.end(), *norm) != out.end()) {
      problems->push_back("listed twice (got " + u + ")");
    } else {
      out.push_back(*norm);
    }
  }
  return out;
}

Result<ParsedAnswer> parseXmlAnswer(std::string_view body, std::uint64_t max_records) {
  proto::XmlReader* reader = nullptr;
  AnswerHandler handler(reader, max_records);
  proto::XmlLimits limits;
  limits.max_depth = 4;
  proto::XmlReader r(handler, limits, proto::XmlFraming::kDocuments);
  reader = &r;
  const std::size_t used = r.feed(body);
  if (r.failed()) return Status::corruption(r.errorMessage());
  if (!r.documentComplete() || !handler.root_seen) return Status::corruption("the answer is cut off");
  if (body.find_first_not_of(" \t\r\n", used) != std::string_view::npos) {
    return Status::corruption("bytes follow the answer");
  }
  return std::move(handler.answer);
}

proto::CuQuery sourceQuery(const proto::CuQuery& merged, std::uint64_t limit) {
  proto::CuQuery q = merged;
  q.format = "xml";
  q.content = false;
  q.limit = limit;
  return q;
}

Result<SourceAnswer> askPeer(const std::string& url, const proto::CuQuery& q, const PeerOptions& o) {
  auto target = targetOf(url, o);
  if (!target.isOk()) return down(url, target.status().message());
  const std::string path = target->second + "/cu/query?" + queryParams(q);
  auto got = http::adminRequest(target->first, "GET", path, "", o.timeout_ms, o.max_answer_bytes);
  if (!got.isOk()) return down(url, got.status().message());
  const http::ClientResponse& r = *got;
  if (r.status == 400 || r.status == 410) {
    std::string why = http::trimSpace(r.body.substr(0, 512));
    const std::size_t at = why.find("<reason");
    if (at != std::string::npos) why = why.substr(at);
    const std::string msg = "peer " + url + " refused the query: " + why;
    return r.status == 410 ? Status::notFound(msg) : Status::invalidArgument(msg);
  }
  if (r.status != 200) return down(url, "it answered HTTP " + std::to_string(r.status));
  return fromBody(url, r.header("X-LCC-Source"), r.header("X-LCC-Since"), r.body, q.limit.value_or(0));
}

Result<SourceAnswer> askLocal(QueryEngine& engine, const proto::CuQuery& q, std::uint64_t max_answer_bytes) {
  LCC_ASSIGN_OR_RETURN(auto id, engine.storeId());
  if (!id) {
    return down(std::string(kThisNode), "its LCC DB has no lcc.store_id yet (the QM writes it when it opens the store)");
  }
  LCC_ASSIGN_OR_RETURN(auto prepared, engine.prepare(q));
  AnswerBuffer sink(max_answer_bytes);
  if (Status s = prepared->stream(sink); !s.isOk()) {
    if (sink.over()) return down(std::string(kThisNode), "its answer is over cu.peer_max_answer_bytes");
    return s;
  }
  return fromBody(std::string(kThisNode), *id, std::to_string(prepared->since()), sink.text, q.limit.value_or(0));
}

}  // namespace lcc::cu
