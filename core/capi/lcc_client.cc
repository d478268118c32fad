// lcc_client.cc — the C API over capi::AnswerReader (see lcc_client.h).
#include "capi/lcc_client.h"

#include <map>
#include <new>
#include <string>
#include <vector>

#include "capi/cu_client.h"

using lcc::capi::AnswerReader;
using lcc::capi::Endpoint;

struct lcc_client {
  std::vector<Endpoint> endpoints;
  std::vector<std::string> texts;
  int timeout_ms = 30000;
  lcc::net::TlsContextPtr tls;  // for tls:// endpoints; made on first use when not set
  std::string tls_error;        // why the default context could not be made
};

struct lcc_query {
  lcc::proto::CuQuery q;
  std::map<std::size_t, std::uint64_t> since_by_endpoint;
};

struct lcc_cursor {
  lcc_client* client = nullptr;
  lcc_query query;
  std::size_t index = 0;  // endpoint being read
  std::unique_ptr<AnswerReader> reader;
  std::vector<std::uint64_t> counts, last_seqs;
  lcc_record record{};
  const lcc::capi::AnswerRecord* current = nullptr;
  int reject_code = 0;
  std::string error;
  bool finished = false;
};

namespace {

int fail(lcc_cursor* c, int code, const std::string& why) {
  c->error = why;
  return code;
}

int codeFor(const lcc::Status& s) {
  if (s.code() == lcc::StatusCode::kCorruption) return LCC_EPROTOCOL;
  return LCC_EIO;
}

// Connects to endpoint c->index and reads its answer's root element.
int openEndpoint(lcc_cursor* c) {
  const Endpoint& ep = c->client->endpoints[c->index];
  lcc::proto::CuQuery q = c->query.q;
  if (auto it = c->query.since_by_endpoint.find(c->index); it != c->query.since_by_endpoint.end()) {
    q.since_seq = it->second;
    q.since_time.reset();
  }
  if (ep.tls && !c->client->tls) {
    auto made = lcc::net::makeClientContext({});  // the system's CAs
    if (!made.isOk()) return fail(c, LCC_ECONNECT, ep.text() + ": " + made.status().message());
    c->client->tls = made.value();
  }
  auto sock = lcc::capi::Socket::connect(ep, c->client->timeout_ms, c->client->tls);
  if (!sock.isOk()) return fail(c, LCC_ECONNECT, sock.status().message());
  if (auto s = (*sock)->writeAll(lcc::proto::formatCuQueryXml(q)); !s.isOk()) {
    return fail(c, LCC_EIO, ep.text() + ": " + s.message());
  }
  c->reader = std::make_unique<AnswerReader>(std::move(sock).value());
  if (auto s = c->reader->start(); !s.isOk()) return fail(c, codeFor(s), ep.text() + ": " + s.message());
  if (c->reader->rejected()) {
    c->reject_code = c->reader->rejectCode();
    return fail(c, LCC_EREJECTED,
                ep.text() + ": query rejected (" + std::to_string(c->reject_code) + "): " + c->reader->rejectMessage());
  }
  c->counts[c->index] = c->reader->count();
  c->last_seqs[c->index] = c->reader->lastSeq();
  return LCC_OK;
}

void fillRecord(lcc_cursor* c, const lcc::capi::AnswerRecord& a) {
  lcc_record& r = c->record;
  r.endpoint = c->index;
  r.seq = a.seq;
  r.pid = a.pid;
  r.url = a.url.c_str();
  r.mime = a.mime.c_str();
  r.browse = a.browse.c_str();
  r.fetch = a.fetch.c_str();
  r.view_tag = a.view_tag.c_str();
  r.md5 = a.md5.c_str();
  r.mtime = a.mtime ? *a.mtime : -1;
  r.stored = a.stored ? *a.stored : 0;
  r.size = a.size;
  r.deleted = a.deleted ? 1 : 0;
  r.has_content = a.has_content ? 1 : 0;
  r.content_missing = a.content_missing.empty() ? nullptr : a.content_missing.c_str();
}

}  // namespace

extern "C" {

int lcc_client_new(const char* endpoints, lcc_client** out) {
  if (endpoints == nullptr || out == nullptr) return LCC_EINVAL;
  *out = nullptr;
  auto* c = new (std::nothrow) lcc_client;
  if (c == nullptr) return LCC_ENOMEM;
  std::string_view list(endpoints);
  while (!list.empty()) {
    auto comma = list.find(',');
    std::string_view one = list.substr(0, comma);
    while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
    while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
    auto ep = lcc::capi::parseEndpoint(one);
    if (!ep.isOk()) {
      delete c;
      return LCC_EINVAL;
    }
    c->texts.push_back(ep->text());
    c->endpoints.push_back(std::move(ep).value());
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  if (c->endpoints.empty()) {
    delete c;
    return LCC_EINVAL;
  }
  *out = c;
  return LCC_OK;
}

void lcc_client_free(lcc_client* client) { delete client; }
size_t lcc_client_endpoint_count(const lcc_client* client) { return client ? client->endpoints.size() : 0; }
const char* lcc_client_endpoint(const lcc_client* client, size_t index) {
  return client && index < client->texts.size() ? client->texts[index].c_str() : nullptr;
}
void lcc_client_set_timeout(lcc_client* client, int timeout_ms) {
  if (client) client->timeout_ms = timeout_ms < 0 ? 0 : timeout_ms;
}

int lcc_client_set_tls(lcc_client* client, const char* ca_file, const char* cert_file, const char* key_file) {
  if (!client) return LCC_EINVAL;
  lcc::net::TlsClientOptions o;
  o.ca_file = ca_file ? ca_file : "";
  o.cert_file = cert_file ? cert_file : "";
  o.key_file = key_file ? key_file : "";
  auto made = lcc::net::makeClientContext(o);
  if (!made.isOk()) {
    client->tls_error = made.status().message();
    return LCC_EINVAL;
  }
  client->tls = made.value();
  client->tls_error.clear();
  return LCC_OK;
}
const char* lcc_client_tls_error(const lcc_client* client) { return client ? client->tls_error.c_str() : ""; }

lcc_query* lcc_query_new(void) { return new (std::nothrow) lcc_query; }
void lcc_query_free(lcc_query* query) { delete query; }

int lcc_query_add_provider(lcc_query* q, uint32_t pid) {
  if (!q || pid == 0) return LCC_EINVAL;
  q->q.providers.push_back(pid);
  return LCC_OK;
}
int lcc_query_set_since_seq(lcc_query* q, uint64_t seq) {
  if (!q) return LCC_EINVAL;
  q->q.since_seq = seq;
  q->q.since_time.reset();
  return LCC_OK;
}
int lcc_query_set_endpoint_since_seq(lcc_query* q, size_t endpoint, uint64_t seq) {
  if (!q) return LCC_EINVAL;
  q->since_by_endpoint[endpoint] = seq;
  return LCC_OK;
}
int lcc_query_set_since_time(lcc_query* q, int64_t unix_seconds) {
  if (!q) return LCC_EINVAL;
  q->q.since_time = unix_seconds;
  q->q.since_seq.reset();
  return LCC_OK;
}
int lcc_query_add_mime(lcc_query* q, const char* pattern) {
  if (!q || !pattern) return LCC_EINVAL;
  q->q.mimes.emplace_back(pattern);
  return LCC_OK;
}
int lcc_query_add_prefix(lcc_query* q, const char* prefix) {
  if (!q || !prefix || !*prefix) return LCC_EINVAL;
  q->q.prefixes.emplace_back(prefix);
  return LCC_OK;
}
int lcc_query_set_deleted(lcc_query* q, int include) {
  if (!q) return LCC_EINVAL;
  q->q.deleted = include != 0;
  return LCC_OK;
}
int lcc_query_set_limit(lcc_query* q, uint64_t limit) {
  if (!q) return LCC_EINVAL;
  q->q.limit = limit;
  return LCC_OK;
}
int lcc_query_set_content(lcc_query* q, int with_content) {
  if (!q) return LCC_EINVAL;
  q->q.content = with_content != 0;
  return LCC_OK;
}

int lcc_query_run(lcc_client* client, const lcc_query* query, lcc_cursor** out) {
  if (!client || !query || !out) return LCC_EINVAL;
  *out = nullptr;
  try {
    auto* c = new lcc_cursor;
    c->client = client;
    c->query = *query;
    c->query.q.format = "xml";
    c->counts.assign(client->endpoints.size(), 0);
    c->last_seqs.assign(client->endpoints.size(), 0);
    *out = c;
    if (auto e = lcc::proto::validateCuQuery(c->query.q)) return fail(c, LCC_EINVAL, e->message);
    return openEndpoint(c);
  } catch (const std::bad_alloc&) {
    return LCC_ENOMEM;
  } catch (const std::exception& e) {
    if (*out) (*out)->error = e.what();
    return LCC_EIO;
  }
}

int lcc_cursor_next(lcc_cursor* c, const lcc_record** record) {
  if (!c || !record) return LCC_EINVAL;
  *record = nullptr;
  try {
    for (;;) {
      if (c->finished) return LCC_DONE;
      if (!c->reader) return fail(c, LCC_EINVAL, c->error.empty() ? "the query did not start" : c->error);
      auto next = c->reader->next();
      if (!next.isOk()) {
        return fail(c, codeFor(next.status()), c->client->texts[c->index] + ": " + next.status().message());
      }
      if (*next != nullptr) {
        c->current = *next;
        fillRecord(c, **next);
        *record = &c->record;
        return LCC_OK;
      }
      // This endpoint is done: on to the next one.
      c->current = nullptr;
      c->reader.reset();
      if (c->index + 1 >= c->client->endpoints.size()) {
        c->finished = true;
        return LCC_DONE;
      }
      ++c->index;
      if (int rc = openEndpoint(c); rc != LCC_OK) return rc;
    }
  } catch (const std::bad_alloc&) {
    return LCC_ENOMEM;
  } catch (const std::exception& e) {
    return fail(c, LCC_EIO, e.what());
  }
}

long long lcc_cursor_read_content(lcc_cursor* c, void* buf, size_t n) {
  if (!c || !buf) return LCC_EINVAL;
  if (!c->reader || !c->current) return fail(c, LCC_EINVAL, "no current record");
  try {
    auto got = c->reader->readContent(static_cast<char*>(buf), n);
    if (!got.isOk()) return fail(c, codeFor(got.status()), got.status().message());
    return static_cast<long long>(*got);
  } catch (const std::bad_alloc&) {
    return LCC_ENOMEM;
  }
}

uint64_t lcc_cursor_count(const lcc_cursor* c, size_t endpoint) {
  return c && endpoint < c->counts.size() ? c->counts[endpoint] : 0;
}
uint64_t lcc_cursor_last_seq(const lcc_cursor* c, size_t endpoint) {
  return c && endpoint < c->last_seqs.size() ? c->last_seqs[endpoint] : 0;
}
int lcc_cursor_reject_code(const lcc_cursor* c) { return c ? c->reject_code : 0; }
const char* lcc_cursor_error(const lcc_cursor* c) { return c ? c->error.c_str() : ""; }
void lcc_cursor_free(lcc_cursor* c) { delete c; }

const char* lcc_strerror(int code) {
  switch (code) {
    case LCC_OK: return "ok";
    case LCC_DONE: return "no more records";
    case LCC_EINVAL: return "invalid argument";
    case LCC_ECONNECT: return "cannot connect to the LCC";
    case LCC_EIO: return "connection failed or timed out";
    case LCC_EPROTOCOL: return "malformed answer";
    case LCC_EREJECTED: return "query rejected";
    case LCC_ENOMEM: return "out of memory";
  }
  return "unknown error";
}

}  // extern "C"
