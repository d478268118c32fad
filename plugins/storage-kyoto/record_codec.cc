#include "record_codec.h"

#include "lcc/provider_states.h"

namespace lcc::plugins::kyoto {
namespace {

constexpr std::uint8_t kFormat = 1;

void putNotice(Writer& w, const UrlNotice& n, bool with_key) {
  if (with_key) {
    w.varint(n.key.pid);
    w.str(n.key.url);
    w.str(n.key.mime);
  }
  w.u8(static_cast<std::uint8_t>(n.op));
  w.str(n.view_tag);
  w.optStr(n.browse);
  w.str(n.fetch);
  w.optS64(n.mtime);
  w.optU64(n.size);
  w.str(n.md5);
  w.str(n.tod);
}

bool getNotice(Reader& r, UrlNotice* n, bool with_key) {
  if (with_key) {
    std::uint64_t pid = r.varint();
    if (pid > UINT32_MAX) return false;
    n->key.pid = static_cast<ProviderId>(pid);
    n->key.url = r.str();
    n->key.mime = r.str();
  }
  std::uint8_t op = r.u8();
  if (op > kUrlOpMax) return false;
  n->op = static_cast<UrlOp>(op);
  n->view_tag = r.str();
  n->browse = r.optStr();
  n->fetch = r.str();
  n->mtime = r.optS64();
  n->size = r.optU64();
  n->md5 = r.str();
  n->tod = r.str();
  return r.ok();
}

}  // namespace

std::string be32(std::uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>((v >> (8 * (3 - i))) & 0xff);
  return s;
}
std::string be64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * (7 - i))) & 0xff);
  return s;
}
std::uint64_t readBe64(std::string_view s) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(s[i]);
  return v;
}
std::uint32_t readBe32(std::string_view s) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[i]);
  return v;
}

// The key (pid, url, mime) is the row's KC key: it is not stored again in the value.
std::string encodeQueueEntry(const QueueEntry& e) {
  Writer w;
  w.u8(kFormat);
  putNotice(w, e.notice, false);
  w.u8(static_cast<std::uint8_t>(e.op));
  w.varint(e.pset);
  w.svarint(e.slot);
  w.str(e.next);
  w.varint(e.bad_count);
  w.time(e.queued);
  return w.take();
}

std::optional<QueueEntry> decodeQueueEntry(std::string_view key, std::string_view bytes) {
  auto k = decodeUrlKey(key);
  if (!k) return std::nullopt;
  Reader r(bytes);
  if (r.u8() != kFormat) return std::nullopt;
  QueueEntry e;
  e.notice.key = std::move(*k);
  if (!getNotice(r, &e.notice, false)) return std::nullopt;
  std::uint8_t op = r.u8();
  if (op > 1) return std::nullopt;
  e.op = static_cast<QueueOp>(op);
  e.pset = r.varint();
  std::int64_t slot = r.svarint();
  if (slot < INT32_MIN || slot > INT32_MAX) return std::nullopt;
  e.slot = static_cast<TimeSlot>(slot);
  e.next = r.str();
  std::uint64_t bad = r.varint();
  if (bad > UINT16_MAX) return std::nullopt;
  e.bad_count = static_cast<std::uint16_t>(bad);
  e.queued = r.time();
  if (!r.done()) return std::nullopt;
  return e;
}

std::string encodePSet(const PSetRecord& p) {
  Writer w;
  w.u8(kFormat);
  w.varint(p.pset);
  w.svarint(p.slot);
  w.varint(p.pid);
  w.svarint(p.priority);
  w.str(p.first);
  w.str(p.last);
  w.varint(p.count);
  return w.take();
}

std::optional<PSetRecord> decodePSet(std::string_view bytes) {
  Reader r(bytes);
  if (r.u8() != kFormat) return std::nullopt;
  PSetRecord p;
  p.pset = r.varint();
  std::int64_t slot = r.svarint();
  std::uint64_t pid = r.varint();
  std::int64_t prio = r.svarint();
  if (slot < INT32_MIN || slot > INT32_MAX || pid > UINT32_MAX || prio < INT32_MIN || prio > INT32_MAX) {
    return std::nullopt;
  }
  p.slot = static_cast<TimeSlot>(slot);
  p.pid = static_cast<ProviderId>(pid);
  p.priority = static_cast<std::int32_t>(prio);
  p.first = r.str();
  p.last = r.str();
  p.count = r.varint();
  if (!r.done()) return std::nullopt;
  return p;
}

std::string encodeDelete(const DeleteRequest& d) {
  Writer w;
  w.u8(kFormat);
  w.str(d.machine);
  w.str(d.filename);
  w.time(d.since);
  return w.take();
}

std::optional<DeleteRequest> decodeDelete(std::string_view bytes) {
  Reader r(bytes);
  if (r.u8() != kFormat) return std::nullopt;
  DeleteRequest d;
  d.machine = r.str();
  d.filename = r.str();
  d.since = r.time();
  if (!r.done()) return std::nullopt;
  return d;
}

std::string encodeContent(const ContentRecord& c) {
  Writer w;
  w.u8(kFormat);
  w.varint(c.seq);
  w.u8(c.deleted ? 1 : 0);
  w.str(c.view_tag);
  w.optStr(c.browse);
  w.str(c.fetch);
  w.optS64(c.mtime);
  w.varint(c.size);
  w.str(c.md5);
  w.str(c.machine);
  w.str(c.filename);
  w.time(c.stored);
  w.time(c.refreshed);
  w.optS64(c.declared_mtime);
  w.optU64(c.declared_size);
  w.str(c.declared_md5);
  w.varint(c.created_seq);
  w.str(c.etag);
  return w.take();
}

std::optional<ContentRecord> decodeContent(std::string_view key, std::string_view bytes) {
  auto k = decodeUrlKey(key);
  if (!k) return std::nullopt;
  Reader r(bytes);
  if (r.u8() != kFormat) return std::nullopt;
  ContentRecord c;
  c.key = std::move(*k);
  c.seq = r.varint();
  std::uint8_t del = r.u8();
  if (del > 1) return std::nullopt;
  c.deleted = del == 1;
  c.view_tag = r.str();
  c.browse = r.optStr();
  c.fetch = r.str();
  c.mtime = r.optS64();
  c.size = r.varint();
  c.md5 = r.str();
  c.machine = r.str();
  c.filename = r.str();
  c.stored = r.time();
  c.refreshed = r.time();
  c.declared_mtime = r.optS64();
  c.declared_size = r.optU64();
  c.declared_md5 = r.str();
  // created_seq and then etag came after format 1: a row written before one ends
  // before it (created_seq 0, unknown; etag empty, none).
  if (r.ok() && !r.done()) c.created_seq = r.varint();
  if (r.ok() && !r.done()) c.etag = r.str();
  if (!r.done()) return std::nullopt;
  return c;
}

std::string encodeProvider(const ProviderRecord& p) {
  Writer w;
  w.u8(kFormat);
  w.varint(p.id);
  w.u8(static_cast<std::uint8_t>(p.state));
  w.str(p.password_hash);
  w.varint(p.prefixes.size());
  for (const auto& s : p.prefixes) w.str(s);
  w.svarint(p.priority);
  w.varint(p.bandwidth);
  w.varint(p.quota_files);
  w.varint(p.quota_bytes);
  w.varint(p.used_files);
  w.varint(p.used_bytes);
  w.str(p.secret);
  w.str(p.secret_url);
  w.str(p.contact);
  w.time(p.reg_expires);
  w.varint(p.conn_seq);
  w.str(p.last_ip);
  w.u8(p.last_connect ? 1 : 0);
  if (p.last_connect) w.time(*p.last_connect);
  w.varint(p.fullsets_used);
  w.time(p.fullset_period_start);
  w.u8(p.fullset_wanted ? 1 : 0);
  w.u8(static_cast<std::uint8_t>(p.fullset_reason));
  w.varint(p.error_total);
  w.varint(p.errors.size());
  for (const auto& e : p.errors) {
    putNotice(w, e.notice, true);
    w.varint(static_cast<std::uint16_t>(e.code));
    w.svarint(e.http_status);
    w.str(e.message);
    w.time(e.when);
  }
  w.time(p.created);
  // Appended later: a record written before it ends after `created` (or after
  // state_reason, before the sitemap fields).
  w.str(p.state_reason);
  w.str(p.sitemap_url);
  w.varint(static_cast<std::uint64_t>(p.sitemap_interval.count()));
  return w.take();
}

std::optional<ProviderRecord> decodeProvider(std::string_view bytes) {
  Reader r(bytes);
  if (r.u8() != kFormat) return std::nullopt;
  ProviderRecord p;
  std::uint64_t id = r.varint();
  if (id > UINT32_MAX) return std::nullopt;
  p.id = static_cast<ProviderId>(id);
  std::uint8_t st = r.u8();
  if (st > kProviderStateMax) return std::nullopt;
  p.state = static_cast<ProviderState>(st);
  p.password_hash = r.str();
  std::uint64_t n = r.varint();
  if (!r.ok() || n > bytes.size()) return std::nullopt;
  for (std::uint64_t i = 0; i < n && r.ok(); ++i) p.prefixes.push_back(r.str());
  std::int64_t prio = r.svarint();
  if (prio < INT32_MIN || prio > INT32_MAX) return std::nullopt;
  p.priority = static_cast<std::int32_t>(prio);
  p.bandwidth = r.varint();
  p.quota_files = r.varint();
  p.quota_bytes = r.varint();
  p.used_files = r.varint();
  p.used_bytes = r.varint();
  p.secret = r.str();
  p.secret_url = r.str();
  p.contact = r.str();
  p.reg_expires = r.time();
  p.conn_seq = r.varint();
  p.last_ip = r.str();
  std::uint8_t has_last = r.u8();
  if (has_last > 1) return std::nullopt;
  if (has_last) p.last_connect = r.time();
  std::uint64_t used = r.varint();
  if (used > UINT32_MAX) return std::nullopt;
  p.fullsets_used = static_cast<std::uint32_t>(used);
  p.fullset_period_start = r.time();
  std::uint8_t wanted = r.u8();
  if (wanted > 1) return std::nullopt;
  p.fullset_wanted = wanted == 1;
  std::uint8_t reason = r.u8();
  if (reason > static_cast<std::uint8_t>(FullSetReason::kAdmin)) return std::nullopt;
  p.fullset_reason = static_cast<FullSetReason>(reason);
  p.error_total = r.varint();
  std::uint64_t ne = r.varint();
  if (!r.ok() || ne > bytes.size()) return std::nullopt;
  for (std::uint64_t i = 0; i < ne && r.ok(); ++i) {
    FetchErrorEntry e;
    if (!getNotice(r, &e.notice, true)) return std::nullopt;
    std::uint64_t code = r.varint();
    if (code > UINT16_MAX) return std::nullopt;
    e.code = static_cast<ErrorCode>(code);
    std::int64_t hs = r.svarint();
    if (hs < INT32_MIN || hs > INT32_MAX) return std::nullopt;
    e.http_status = static_cast<int>(hs);
    e.message = r.str();
    e.when = r.time();
    p.errors.push_back(std::move(e));
  }
  p.created = r.time();
  if (r.ok() && !r.done()) p.state_reason = r.str();
  if (r.ok() && !r.done()) {
    p.sitemap_url = r.str();
    const std::uint64_t interval = r.varint();
    if (interval > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    p.sitemap_interval = Millis(static_cast<std::int64_t>(interval));
  }
  if (!r.done()) return std::nullopt;
  return p;
}

}  // namespace lcc::plugins::kyoto
