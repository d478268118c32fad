#include "proto/link_frames.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <type_traits>

namespace lcc::proto {

using detail::FetchWire;

std::string encodeFramesSwitch() { return "<frames v=\"" + std::to_string(kFramesVersion) + "\"/>"; }

std::uint32_t agreedFrames(std::uint64_t offered, bool frames_enabled) {
  if (!frames_enabled || offered == 0) return 0;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(offered, kFramesVersion));
}

namespace {

constexpr FrameLimits kWriteLimits{};

// ---- one record of a batch ------------------------------------------------------
// A fetch: id, url, [robot: file], mime, since (a flag, then zigzag seconds), etag,
// maxsize, [link: md5], redirects (0 prefix, 1 host, 2 none), scope (a count, then
// the prefixes that fit in kMaxScopeBytes, as on the XML wire). The batch's leases
// follow its records (appendBatches).
void putFetch(FrameWriter& w, const FetchRequest& f, FetchWire wire) {
  w.u64(f.id);
  w.str(f.url);
  if (wire == FetchWire::kRobot) w.str(f.path);
  w.str(f.expected_mime);
  w.boolean(f.if_modified_since.has_value());
  if (f.if_modified_since) w.i64(*f.if_modified_since);
  w.str(f.if_none_match);
  w.u64(f.max_size);
  if (wire == FetchWire::kLink) w.str(f.expected_md5);
  w.u64(static_cast<std::uint64_t>(f.redirects));
  const FetchRequest on_wire = detail::fetchAsOnWire(f, wire);  // the prefixes XML would carry
  w.u64(on_wire.redirect_prefixes.size());
  for (const auto& p : on_wire.redirect_prefixes) w.str(p);
}

FetchRequest readFetch(FieldReader& r, FetchWire wire) {
  FetchRequest f;
  f.id = r.u64();
  f.url = r.str();
  if (r.ok() && f.url.empty()) r.bad("fetch: url missing");
  if (wire == FetchWire::kRobot) {
    f.path = r.str();
    if (r.ok() && f.path.empty()) r.bad("fetch: file missing");
  }
  f.expected_mime = r.str();
  if (r.boolean()) f.if_modified_since = r.i64();
  f.if_none_match = r.str();
  if (r.ok() && !f.if_none_match.empty() && !isValidEtag(f.if_none_match)) r.bad("fetch: etag not an entity tag");
  f.max_size = r.u64();
  if (wire == FetchWire::kLink) f.expected_md5 = r.str();
  const std::uint64_t policy = r.u64();
  f.redirects = policy <= 2 ? static_cast<RedirectPolicy>(policy) : RedirectPolicy::kNone;
  const std::size_t n = r.count(1);
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < n && r.ok(); ++i) {
    std::string p = r.str();
    bytes += p.size() + 1;
    if (bytes > kMaxScopeBytes + 1) r.bad("fetch: scope longer than " + std::to_string(kMaxScopeBytes) + " bytes");
    if (p.empty() || p.find(' ') != std::string::npos) r.bad("fetch: an empty scope prefix or one with a space");
    f.redirect_prefixes.push_back(std::move(p));
  }
  return f;
}

// A result: id, code (0: ok), http, unchanged; on a stored success [link: machine,
// file], mime, size, md5, mt (a flag, then zigzag seconds); on a success etag;
// retry_after (a flag, then zigzag seconds); on a failure the message.
void putResult(FrameWriter& w, const FetchResult& in, bool with_file) {
  const FetchResult r = detail::resultAsOnWire(in, with_file);
  const bool ok = r.ok();
  w.u64(r.id);
  w.u64(static_cast<std::uint64_t>(r.code));
  w.u64(static_cast<std::uint64_t>(r.http_status));
  w.boolean(r.unchanged);
  if (ok && !r.unchanged) {
    if (with_file) {
      w.str(r.machine);
      w.str(r.filename);
    }
    w.str(r.mime);
    w.u64(r.size);
    w.str(r.md5);
    w.boolean(r.last_modified.has_value());
    if (r.last_modified) w.i64(*r.last_modified);
  }
  if (ok) w.str(r.etag);
  w.boolean(r.retry_after.has_value());
  if (r.retry_after) w.i64(std::chrono::duration_cast<std::chrono::seconds>(*r.retry_after).count());
  if (!ok) w.str(r.message);
}

FetchResult readResult(FieldReader& r, bool with_file) {
  FetchResult out;
  out.id = r.u64();
  const std::uint64_t code = r.u64();
  if (code != 0) {
    out.code = code <= 65535 && isKnownErrorCode(static_cast<unsigned>(code)) ? static_cast<ErrorCode>(code)
                                                                            : ErrorCode::kInternal;
  }
  const std::uint64_t http = r.u64();
  if (http > 999) r.bad("result: not an HTTP status (over 999)");
  out.http_status = static_cast<int>(std::min<std::uint64_t>(http, 999));
  const bool unchanged = r.boolean();
  const bool ok = out.ok();
  out.unchanged = ok && unchanged;
  if (ok && !unchanged) {
    if (with_file) {
      out.machine = r.str();
      out.filename = r.str();
      if (r.ok() && (out.machine.empty() || out.filename.empty())) r.bad("result: a stored result needs machine and file");
    }
    out.mime = r.str();
    out.size = r.u64();
    out.md5 = r.str();
    if (r.boolean()) out.last_modified = r.i64();
  }
  if (ok) {
    out.etag = r.str();
    if (r.ok() && !out.etag.empty() && !isValidEtag(out.etag)) r.bad("result: etag not an entity tag");
  }
  if (r.boolean()) {
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max() / 1000;
    out.retry_after = std::chrono::seconds(std::clamp(r.i64(), -kMax, kMax));
  }
  if (!ok) out.message = r.str();
  return out;
}

std::uint64_t leaseMs(const FetchRequest& f) { return static_cast<std::uint64_t>(std::max<std::int64_t>(0, f.lease.count())); }
std::uint64_t leaseMs(const FetchRequest* f) { return leaseMs(*f); }

// Frames of a run of fetches or results: a new frame past kBatchBytes or max_batch. A
// batch of fetches ends with their leases (issue 27 §3): a count, then each fetch's in
// milliseconds; a reader from before them ignores the bytes after the last record.
template <typename Record, typename Put>
void appendBatches(std::string& out, FrameType type, const Record* rec, std::size_t n, Put&& put) {
  std::size_t i = 0;
  while (i < n) {
    FrameWriter w(out);
    w.begin(static_cast<std::uint8_t>(type));
    const std::size_t count_at = out.size();
    out.append(3, '\0');  // the count, a 3-byte varint (max_batch < 2^21) written below
    const std::size_t start = out.size();
    std::size_t k = 0;
    while (i < n && k < kWriteLimits.max_batch && out.size() - start < kBatchBytes) put(w, rec[i++]), ++k;
    out[count_at] = static_cast<char>((k & 0x7F) | 0x80);
    out[count_at + 1] = static_cast<char>(((k >> 7) & 0x7F) | 0x80);
    out[count_at + 2] = static_cast<char>((k >> 14) & 0x7F);
    if constexpr (std::is_same_v<std::remove_cv_t<std::remove_pointer_t<Record>>, FetchRequest>) {
      w.u64(k);
      for (std::size_t j = i - k; j < i; ++j) w.u64(leaseMs(rec[j]));
    }
    w.end();
  }
}

void putSimple(std::string& out, FrameType type) {
  FrameWriter w(out);
  w.begin(static_cast<std::uint8_t>(type));
  w.end();
}

// ---- the messages other than fetches and results --------------------------------
template <typename Fill>
void putFrame(std::string& out, FrameType type, Fill&& fill) {
  FrameWriter w(out);
  w.begin(static_cast<std::uint8_t>(type));
  fill(w);
  w.end();
}

void putOther(std::string& out, const LinkDelete& d) {
  putFrame(out, FrameType::kDelete, [&](FrameWriter& w) { w.u64(d.id), w.str(d.machine), w.str(d.file); });
}
void putOther(std::string& out, const LinkSweep& s) {
  putFrame(out, FrameType::kSweep, [&](FrameWriter& w) { w.u64(s.id); });
}
void putOther(std::string& out, const LinkDeleted& d) {
  putFrame(out, FrameType::kDeleted, [&](FrameWriter& w) { w.u64(d.id), w.boolean(d.ok), w.str(d.ok ? "" : d.reason); });
}
void putOther(std::string& out, const LinkCapacity& c) {
  putFrame(out, FrameType::kCapacity, [&](FrameWriter& w) { w.u64(c.slots); });
}
void putOther(std::string& out, const LinkMachines& m) {
  putFrame(out, FrameType::kMachines, [&](FrameWriter& w) {
    w.u64(m.ids.size());
    for (const auto& id : m.ids) w.str(id);
    w.u64(m.content_urls.size());
    for (const auto& [id, url] : m.content_urls) w.str(id), w.str(url);
  });
}
void putOther(std::string& out, const LinkFile& f) {
  putFrame(out, FrameType::kFile, [&](FrameWriter& w) { w.u64(f.sweep), w.str(f.machine), w.str(f.name), w.u64(f.size); });
}
void putOther(std::string& out, const LinkSwept& s) {
  putFrame(out, FrameType::kSwept, [&](FrameWriter& w) { w.u64(s.sweep), w.str(s.machine), w.u64(s.files); });
}

std::string reqStr(FieldReader& r, const char* what) {
  std::string s = r.str();
  if (r.ok() && s.empty()) r.bad(std::string(what) + " missing");
  return s;
}

// Every message of a side in `form`; runs of Record go in batch frames.
template <typename Message, typename Record, typename PutRecord, typename PutXml, typename PutOther>
std::string encodeAll(const std::vector<Message>& ms, LinkForm form, FrameType batch_type, PutRecord&& put_record,
                      PutXml&& put_xml, PutOther&& put_other) {
  std::string out;
  std::size_t i = 0;
  while (i < ms.size()) {
    if (form == LinkForm::kXml || !std::holds_alternative<Record>(ms[i])) {
      if (form == LinkForm::kXml) {
        out += put_xml(ms[i]);
      } else {
        put_other(out, ms[i]);
      }
      ++i;
      continue;
    }
    std::vector<const Record*> run;
    while (i < ms.size() && std::holds_alternative<Record>(ms[i])) run.push_back(&std::get<Record>(ms[i++]));
    appendBatches(out, batch_type, run.data(), run.size(),
                  [&](FrameWriter& w, const Record* rec) { put_record(w, *rec); });
  }
  return out;
}

// A message that is not a batch record, as a frame: hellos stay XML.
template <typename Message, typename Hello, typename EndT, typename XmlOf>
void putNonBatch(std::string& out, const Message& m, XmlOf&& xml_of) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Hello>) {
          out += xml_of(m);
        } else if constexpr (std::is_same_v<T, LinkPing>) {
          if (v.lease.count() <= 0) return putSimple(out, FrameType::kPing);
          putFrame(out, FrameType::kPing, [&](FrameWriter& w) { w.u64(static_cast<std::uint64_t>(v.lease.count())); });
        } else if constexpr (std::is_same_v<T, LinkPong>) {
          putSimple(out, FrameType::kPong);
        } else if constexpr (std::is_same_v<T, EndT>) {
          putSimple(out, FrameType::kEnd);
        } else if constexpr (!std::is_same_v<T, FetchRequest> && !std::is_same_v<T, FetchResult>) {
          putOther(out, v);
        }
      },
      m);
}

}  // namespace

namespace {
// One side's messages: Hello and End its own, Record the one that goes in batches.
template <typename Message, typename Record, typename Hello, typename End>
std::string encodeSide(const std::vector<Message>& ms, LinkForm form, FrameType batch_type,
                       void (*put)(FrameWriter&, const Record&)) {
  auto xml = [](const Message& m) { return encodeMessage(m); };
  return encodeAll<Message, Record>(ms, form, batch_type, put, xml, [&](std::string& out, const Message& m) {
    putNonBatch<Message, Hello, End>(out, m, xml);
  });
}
void putLinkFetch(FrameWriter& w, const FetchRequest& f) { putFetch(w, f, FetchWire::kLink); }
void putRobotFetch(FrameWriter& w, const FetchRequest& f) { putFetch(w, f, FetchWire::kRobot); }
void putLinkResult(FrameWriter& w, const FetchResult& r) { putResult(w, r, true); }
void putRobotResult(FrameWriter& w, const FetchResult& r) { putResult(w, r, false); }

template <typename Message>
std::string encodeOne(const Message& m, LinkForm form) {
  return form == LinkForm::kXml ? encodeMessage(m) : encodeMessages(std::vector<Message>{m}, form);
}
}  // namespace

std::string encodeMessages(const std::vector<SourceMessage>& ms, LinkForm form) {
  return encodeSide<SourceMessage, FetchRequest, LinkSourceHello, LinkEnd>(ms, form, FrameType::kFetches, &putLinkFetch);
}
std::string encodeMessages(const std::vector<BotmMessage>& ms, LinkForm form) {
  return encodeSide<BotmMessage, FetchResult, LinkBotmHello, LinkEnd>(ms, form, FrameType::kResults, &putLinkResult);
}
std::string encodeMessages(const std::vector<ToRobotMessage>& ms, LinkForm form) {
  return encodeSide<ToRobotMessage, FetchRequest, RobotBotmHello, RobotEnd>(ms, form, FrameType::kFetches,
                                                                            &putRobotFetch);
}
std::string encodeMessages(const std::vector<FromRobotMessage>& ms, LinkForm form) {
  return encodeSide<FromRobotMessage, FetchResult, RobotHello, RobotEnd>(ms, form, FrameType::kResults,
                                                                         &putRobotResult);
}
std::string encodeMessage(const SourceMessage& m, LinkForm form) { return encodeOne(m, form); }
std::string encodeMessage(const BotmMessage& m, LinkForm form) { return encodeOne(m, form); }
std::string encodeMessage(const ToRobotMessage& m, LinkForm form) { return encodeOne(m, form); }
std::string encodeMessage(const FromRobotMessage& m, LinkForm form) { return encodeOne(m, form); }

namespace {
// A run of fetches or results: each as its XML element, or batch frames.
template <typename Record, typename AppendXml, typename Put>
void appendRun(std::string& out, const std::vector<Record>& rs, LinkForm form, FrameType type, AppendXml&& xml,
               Put&& put) {
  if (form == LinkForm::kXml) {
    for (const auto& r : rs) xml(out, r);
    return;
  }
  appendBatches(out, type, rs.data(), rs.size(), put);
}
}  // namespace

void appendFetches(std::string& out, const std::vector<FetchRequest>& fs, FetchWire wire, LinkForm form) {
  appendRun(
      out, fs, form, FrameType::kFetches, [&](std::string& o, const FetchRequest& f) { detail::appendFetch(o, f, wire); },
      [&](FrameWriter& w, const FetchRequest& f) { putFetch(w, f, wire); });
}

void appendResults(std::string& out, const std::vector<FetchResult>& rs, bool with_file, LinkForm form) {
  appendRun(
      out, rs, form, FrameType::kResults,
      [&](std::string& o, const FetchResult& r) { detail::appendResult(o, r, with_file); },
      [&](FrameWriter& w, const FetchResult& r) { putResult(w, r, with_file); });
}

// ---- decoders -----------------------------------------------------------------
namespace {
// The smallest record of a batch: a fetch (id, url, mime, since flag, etag, maxsize,
// redirects, scope count) or a result (id, code, http, unchanged, retry flag).
constexpr std::size_t kMinFetchBytes = 8;
constexpr std::size_t kMinResultBytes = 5;

// A batch: its count, then records of at least `min_bytes` each, read by read_one.
template <typename Message, typename ReadOne>
void readBatch(FieldReader& r, std::size_t min_bytes, ReadOne&& read_one, std::vector<Message>* out) {
  const std::size_t n = r.count(min_bytes);
  for (std::size_t i = 0; i < n && r.ok(); ++i) {
    auto rec = read_one();
    if (r.ok()) out->push_back(std::move(rec));
  }
}
template <typename Message>
void readFetches(FieldReader& r, FetchWire wire, std::vector<Message>* out) {
  const std::size_t first = out->size();
  readBatch(r, kMinFetchBytes, [&] { return readFetch(r, wire); }, out);
  if (!r.ok() || r.atEnd()) return;  // written before the leases: none
  const std::size_t n = r.count(1);
  for (std::size_t j = 0; j < n && r.ok(); ++j) {
    const std::uint64_t ms = r.u64();
    if (r.ok() && first + j < out->size()) std::get<FetchRequest>((*out)[first + j]).lease = linkLease(ms);
  }
}
template <typename Message>
void readResults(FieldReader& r, bool with_file, std::vector<Message>* out) {
  readBatch(r, kMinResultBytes, [&] { return readResult(r, with_file); }, out);
}
}  // namespace

bool decodeFrame(FrameType type, FieldReader& r, std::vector<SourceMessage>* out) {
  if (type == FrameType::kFetches) {
    readFetches(r, FetchWire::kLink, out);
  } else if (type == FrameType::kDelete) {
    LinkDelete d;
    d.id = r.u64();
    d.machine = reqStr(r, "delete: machine");
    d.file = reqStr(r, "delete: file");
    if (r.ok()) out->push_back(std::move(d));
  } else if (type == FrameType::kSweep) {
    LinkSweep s{r.u64()};
    if (r.ok()) out->push_back(s);
  }
  return r.ok();
}

namespace {
LinkMachines readMachines(FieldReader& r) {
  LinkMachines ms;
  const std::size_t n = r.count(1);
  for (std::size_t i = 0; i < n && r.ok(); ++i) {
    std::string id = r.str();
    if (r.ok() && !id.empty()) ms.ids.push_back(std::move(id));
  }
  const std::size_t k = r.count(2);
  for (std::size_t i = 0; i < k && r.ok(); ++i) {
    std::string id = r.str();
    std::string url = r.str();
    if (r.ok() && !id.empty() && !url.empty()) ms.content_urls[std::move(id)] = std::move(url);
  }
  return ms;
}
}  // namespace

bool decodeFrame(FrameType type, FieldReader& r, std::vector<BotmMessage>* out) {
  if (type == FrameType::kResults) {
    readResults(r, true, out);
  } else if (type == FrameType::kDeleted) {
    LinkDeleted d;
    d.id = r.u64();
    d.ok = r.boolean();
    d.reason = r.str();
    if (d.ok) d.reason.clear();
    if (r.ok()) out->push_back(std::move(d));
  } else if (type == FrameType::kCapacity) {
    LinkCapacity c{r.u64()};
    if (r.ok()) out->push_back(c);
  } else if (type == FrameType::kMachines) {
    LinkMachines ms = readMachines(r);
    if (r.ok()) out->push_back(std::move(ms));
  } else if (type == FrameType::kFile) {
    LinkFile f;
    f.sweep = r.u64();
    f.machine = reqStr(r, "file: machine");
    f.name = reqStr(r, "file: name");
    f.size = r.u64();
    if (r.ok()) out->push_back(std::move(f));
  } else if (type == FrameType::kSwept) {
    LinkSwept s;
    s.sweep = r.u64();
    s.machine = reqStr(r, "swept: machine");
    s.files = r.u64();
    if (r.ok()) out->push_back(std::move(s));
  }
  return r.ok();
}

bool decodeFrame(FrameType type, FieldReader& r, std::vector<ToRobotMessage>* out) {
  if (type == FrameType::kFetches) readFetches(r, FetchWire::kRobot, out);
  return r.ok();
}

bool decodeFrame(FrameType type, FieldReader& r, std::vector<FromRobotMessage>* out) {
  if (type == FrameType::kResults) readResults(r, false, out);
  return r.ok();
}

}  // namespace lcc::proto
