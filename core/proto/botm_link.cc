#include "proto/botm_link.h"
#include "proto/codec_util.h"
#include "proto/link_frames.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <limits>

#include "lcc/support/time_util.h"

namespace lcc::proto {

namespace detail {

const std::string* RawElement::attr(std::string_view n) const {
  for (const auto& [k, v] : attrs) {
    if (k == n) return &v;
  }
  return nullptr;
}

StreamDecoder::StreamDecoder(XmlLimits limits, std::string_view ns, std::string_view root, bool frames)
    : reader_(*this, limits, XmlFraming::kStream), ns_(ns), root_(root), frames_(frames) {}
StreamDecoder::~StreamDecoder() = default;

void StreamDecoder::onStart(int depth, const XmlName& name, const XmlAttrs& attrs) {
  if (depth > 2) return;
  if (depth == 1 && (name.ns != ns_ || name.local != root_)) {
    reader_.fail(ErrorCode::kMalformed, "expected the stream root {" + ns_ + "}" + root_ + ", got {" +
                                            std::string(name.ns) + "}" + std::string(name.local));
    return;
  }
  current_.name.assign(name.local);
  current_.attrs.clear();
  current_.text.clear();
  for (const auto& a : attrs.all()) {
    if (a.ns.empty()) current_.attrs.emplace_back(std::string(a.name), std::string(a.value));
  }
  if (depth == 1) ready_.emplace_back(true, current_);
}

void StreamDecoder::onText(int depth, std::string_view text) {
  if (depth == 2) current_.text.append(text);
}

void StreamDecoder::onEnd(int depth, const XmlName& name) {
  if (depth > 2) return;
  if (depth == 2 && name.local == "frames") {  // the switch (link_frames.h): frames follow
    const std::string* v = current_.attr("v");
    if (!frames_) {
      reader_.fail(ErrorCode::kMalformed, "<frames/> on a link that did not offer them");
    } else if (v == nullptr || *v != std::to_string(kFramesVersion)) {
      reader_.fail(ErrorCode::kMalformed, "<frames/> of a version other than " + std::to_string(kFramesVersion));
    } else {
      reader_.handOff();
    }
    current_ = RawElement{};
    return;
  }
  if (depth == 2) ready_.emplace_back(false, std::move(current_));
  current_ = RawElement{};
}


void AttrParser::bad(std::string_view attr, std::string_view why) {
  if (!ok) return;
  ok = false;
  dec.fail(ErrorCode::kMalformed, "<" + el.name + "> " + std::string(attr) + ": " + std::string(why));
}
std::uint64_t AttrParser::reqU64(std::string_view name) {
  const std::string* v = el.attr(name);
  std::uint64_t out = 0;
  if (v == nullptr) {
    bad(name, "missing");
  } else if (!parseDecimal(*v, out)) {
    bad(name, "not a decimal number (got " + v->substr(0, 40) + ")");
  }
  return out;
}
std::uint64_t AttrParser::optU64(std::string_view name, std::uint64_t fallback) {
  const std::string* v = el.attr(name);
  std::uint64_t out = fallback;
  if (v != nullptr && !v->empty() && !parseDecimal(*v, out)) bad(name, "not a decimal number");
  return out;
}
std::optional<std::int64_t> AttrParser::optI64(std::string_view name) {
  const std::string* v = el.attr(name);
  if (v == nullptr || v->empty()) return std::nullopt;
  std::int64_t out = 0;
  if (!parseSignedDecimal(*v, out)) {
    bad(name, "not a number");
    return std::nullopt;
  }
  return out;
}
std::optional<std::int64_t> AttrParser::optTime(std::string_view name) {
  const std::string* v = el.attr(name);
  if (v == nullptr || v->empty()) return std::nullopt;
  auto t = parseTime(*v);
  if (!t) bad(name, "not an RFC 3339 time");
  return t;
}
std::string AttrParser::str(std::string_view name) {
  const std::string* v = el.attr(name);
  return v ? *v : std::string();
}
std::string AttrParser::reqStr(std::string_view name) {
  const std::string* v = el.attr(name);
  if (v == nullptr || v->empty()) {
    bad(name, "missing");
    return {};
  }
  return *v;
}
std::string AttrParser::etag(std::string_view name) {
  const std::string* v = el.attr(name);
  if (v == nullptr) return {};
  if (!isValidEtag(*v)) {
    bad(name, "not an entity tag (1 to " + std::to_string(kMaxEtagBytes) + " bytes of printable ASCII)");
    return {};
  }
  return *v;
}
bool AttrParser::yes(std::string_view name) {
  const std::string* v = el.attr(name);
  return v != nullptr && (*v == "yes" || *v == "true" || *v == "1");
}
ErrorCode AttrParser::code(std::string_view name) {
  const std::string* v = el.attr(name);
  if (v == nullptr || v->empty()) return ErrorCode::kInternal;
  std::uint64_t c = 0;
  if (!parseDecimal(*v, c) || c > 65535) {
    bad(name, "not an error code");
    return ErrorCode::kInternal;
  }
  if (!isKnownErrorCode(static_cast<unsigned>(c))) return ErrorCode::kInternal;
  return static_cast<ErrorCode>(c);
}

void appendResult(std::string& out, const FetchResult& r, bool with_file) {
  out.append("<result");
  appendAttr(out, "id", std::to_string(r.id));
  appendAttr(out, "ok", r.ok() ? "yes" : "no");
  if (!r.ok()) appendAttr(out, "code", std::to_string(static_cast<std::uint16_t>(r.code)));
  if (r.http_status != 0) appendAttr(out, "http", std::to_string(r.http_status));
  if (r.ok() && r.unchanged) appendAttr(out, "unchanged", "yes");
  if (r.ok() && !r.unchanged) {
    if (with_file) {
      appendAttr(out, "machine", r.machine);
      appendAttr(out, "file", r.filename);
    }
    if (!r.mime.empty()) appendAttr(out, "mime", r.mime);
    appendAttr(out, "sz", std::to_string(r.size));
    if (!r.md5.empty()) appendAttr(out, "md5", r.md5);
    if (r.last_modified) appendAttr(out, "mt", formatRfc3339(*r.last_modified));
  }
  if (r.ok() && !r.etag.empty()) appendAttr(out, "etag", r.etag);
  if (r.retry_after) {
    appendAttr(out, "retry_after",
               std::to_string(std::chrono::duration_cast<std::chrono::seconds>(*r.retry_after).count()));
  }
  if (!r.ok() && !r.message.empty()) {
    out.push_back('>');
    appendXmlEscaped(out, r.message);
    out.append("</result>\n");
  } else {
    out.append("/>\n");
  }
}

FetchResult decodeResult(AttrParser& p, const RawElement& el, bool with_file) {
  FetchResult r;
  r.id = p.reqU64("id");
  const bool ok = p.yes("ok");
  const std::uint64_t http = p.optU64("http");
  if (http > 999) p.bad("http", "not an HTTP status (over 999)");  // an int cast would wrap it
  r.http_status = static_cast<int>(std::min<std::uint64_t>(http, 999));
  r.unchanged = p.yes("unchanged");
  if (with_file) {
    r.machine = p.str("machine");
    r.filename = p.str("file");
  }
  r.mime = p.str("mime");
  r.size = p.optU64("sz");
  r.md5 = p.str("md5");
  r.last_modified = p.optTime("mt");
  r.etag = p.etag("etag");
  if (auto s = p.optI64("retry_after")) {
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max() / 1000;
    r.retry_after = std::chrono::seconds(std::clamp(*s, -kMax, kMax));
  }
  if (!ok) {
    r.code = p.code("code");
    if (r.code == ErrorCode::kNone) r.code = ErrorCode::kInternal;  // "ok=no" is never a success
    r.message = el.text;
  }
  return r;
}

// How many of f.redirect_prefixes the wire's scope= looks at: those after the first
// that would take the list past kMaxScopeBytes are left out (one holding a space, or
// empty, is skipped within them).
std::size_t scopeOnWire(const FetchRequest& f) {
  std::size_t bytes = 0, i = 0;
  for (; i < f.redirect_prefixes.size(); ++i) {
    const std::string& p = f.redirect_prefixes[i];
    if (p.empty() || p.find(' ') != std::string::npos) continue;
    if (bytes + 1 + p.size() > kMaxScopeBytes) break;
    bytes += (bytes == 0 ? 0 : 1) + p.size();
  }
  return i;
}

namespace {
// scope="PREFIX PREFIX...": the prefixes that fit in kMaxScopeBytes; one holding a space
// (it could not be read back) or empty is skipped.
void appendScope(std::string& out, const FetchRequest& f) {
  if (f.redirects != RedirectPolicy::kPrefix) appendAttr(out, "redirects", redirectPolicyName(f.redirects));
  std::string list;
  for (std::size_t i = 0, n = scopeOnWire(f); i < n; ++i) {
    const std::string& p = f.redirect_prefixes[i];
    if (p.empty() || p.find(' ') != std::string::npos) continue;
    if (!list.empty()) list.push_back(' ');
    list += p;
  }
  if (!list.empty()) appendAttr(out, "scope", list);
}

void readScope(const RawElement& el, FetchRequest& f) {
  if (const std::string* r = el.attr("redirects"); r && !r->empty()) {
    f.redirects = parseRedirectPolicy(*r).value_or(RedirectPolicy::kNone);
  }
  if (const std::string* list = el.attr("scope")) {
    std::size_t pos = 0;
    while (pos < list->size()) {
      std::size_t sp = list->find(' ', pos);
      if (sp == std::string::npos) sp = list->size();
      if (sp > pos) f.redirect_prefixes.push_back(list->substr(pos, sp - pos));
      pos = sp + 1;
    }
  }
}
}  // namespace

void appendFetch(std::string& out, const FetchRequest& f, FetchWire wire) {
  out.append("<fetch");
  appendAttr(out, "id", std::to_string(f.id));
  appendAttr(out, "url", f.url);
  if (wire == FetchWire::kRobot) appendAttr(out, "file", f.path);
  if (!f.expected_mime.empty()) appendAttr(out, "mime", f.expected_mime);
  if (f.if_modified_since) appendAttr(out, "since", formatRfc3339(*f.if_modified_since));
  if (!f.if_none_match.empty()) appendAttr(out, "etag", f.if_none_match);
  if (f.max_size != 0) appendAttr(out, "maxsize", std::to_string(f.max_size));
  if (wire == FetchWire::kLink && !f.expected_md5.empty()) appendAttr(out, "md5", f.expected_md5);
  if (f.lease.count() > 0) appendAttr(out, "lease", std::to_string(f.lease.count()));
  appendScope(out, f);
  out.append("/>\n");
}

FetchRequest decodeFetch(AttrParser& p, FetchWire wire) {
  FetchRequest f;
  f.id = p.reqU64("id");
  f.url = p.reqStr("url");
  f.expected_mime = p.str("mime");
  f.if_modified_since = p.optTime("since");
  f.if_none_match = p.etag("etag");
  f.max_size = p.optU64("maxsize");
  f.lease = linkLease(p.optU64("lease"));
  readScope(p.el, f);
  if (wire == FetchWire::kLink) f.expected_md5 = p.str("md5");
  if (wire == FetchWire::kRobot) f.path = p.reqStr("file");
  return f;
}

}  // namespace detail

namespace {

using detail::appendFetch;
using detail::AttrParser;
using detail::RawElement;
using detail::appendResult;
using detail::decodeResult;

std::string u64(std::uint64_t v) { return std::to_string(v); }

std::string openRoot(std::string_view root) {
  std::string out = "<lcc:";
  out.append(root);
  out.append(" xmlns:lcc=\"");
  out.append(kInternalNs);
  out.push_back('"');
  return out;
}

}  // namespace

XmlLimits linkLimits(std::size_t max_value_length) {
  XmlLimits l;
  l.max_value_length = max_value_length;
  l.max_depth = 4;
  l.max_elements = std::numeric_limits<std::uint64_t>::max();
  l.max_attributes = 64;
  return l;
}

// ---- encoders ---------------------------------------------------------------

std::string encodeBotmOpen(const LinkBotmHello& hello) {
  std::string out = openRoot("botm");
  appendAttr(out, "machine", hello.machine);
  appendAttr(out, "capacity", u64(hello.capacity));
  if (!hello.content_url.empty()) appendAttr(out, "content", hello.content_url);
  if (hello.frames != 0) appendAttr(out, "frames", u64(hello.frames));
  out.append(">\n");
  return out;
}

std::string encodeResult(const FetchResult& r) {
  std::string out;
  appendResult(out, r, true);
  return out;
}

std::string encodeDeleted(const LinkDeleted& d) {
  std::string out = "<deleted";
  appendAttr(out, "id", u64(d.id));
  appendAttr(out, "ok", d.ok ? "yes" : "no");
  if (!d.ok && !d.reason.empty()) appendAttr(out, "reason", d.reason);
  out.append("/>\n");
  return out;
}

std::string encodeCapacity(const LinkCapacity& c) {
  std::string out = "<capacity";
  appendAttr(out, "slots", u64(c.slots));
  out.append("/>\n");
  return out;
}

std::string encodeMachines(const LinkMachines& m) {
  std::string ids;
  for (const auto& id : m.ids) {
    if (!ids.empty()) ids.push_back(' ');
    ids += id;
  }
  std::string out = "<machines";
  appendAttr(out, "ids", ids);
  if (!m.content_urls.empty()) {
    std::string pairs;
    for (const auto& [id, url] : m.content_urls) {
      if (!pairs.empty()) pairs.push_back(' ');
      pairs += id;
      pairs.push_back('=');
      pairs += url;
    }
    appendAttr(out, "content", pairs);
  }
  out.append("/>\n");
  return out;
}

std::string encodeFile(const LinkFile& f) {
  std::string out = "<file";
  appendAttr(out, "sweep", u64(f.sweep));
  appendAttr(out, "machine", f.machine);
  appendAttr(out, "name", f.name);
  appendAttr(out, "size", u64(f.size));
  out.append("/>\n");
  return out;
}

std::string encodeSwept(const LinkSwept& s) {
  std::string out = "<swept";
  appendAttr(out, "sweep", u64(s.sweep));
  appendAttr(out, "machine", s.machine);
  appendAttr(out, "files", u64(s.files));
  out.append("/>\n");
  return out;
}

std::string encodeBotmClose() { return "</lcc:botm>\n"; }

std::string encodeSourceOpen(const LinkSourceHello& hello) {
  std::string out = openRoot("source");
  appendAttr(out, "name", hello.name);
  if (hello.frames != 0) appendAttr(out, "frames", u64(hello.frames));
  out.append(">\n");
  return out;
}

std::string encodeFetch(const FetchRequest& f) {
  std::string out;
  appendFetch(out, f, detail::FetchWire::kLink);
  return out;
}

std::string encodeDelete(const LinkDelete& d) {
  std::string out = "<delete";
  appendAttr(out, "id", u64(d.id));
  appendAttr(out, "machine", d.machine);
  appendAttr(out, "file", d.file);
  out.append("/>\n");
  return out;
}

std::string encodeSweep(const LinkSweep& s) {
  std::string out = "<sweep";
  appendAttr(out, "id", u64(s.id));
  out.append("/>\n");
  return out;
}

std::string encodeSourceClose() { return "</lcc:source>\n"; }
std::string encodeLinkPing(const LinkPing& p) {
  if (p.lease.count() <= 0) return "<ping/>\n";
  return "<ping lease=\"" + std::to_string(p.lease.count()) + "\"/>\n";
}

Millis linkLease(std::uint64_t ms) {
  return ms >= static_cast<std::uint64_t>(kMaxLinkLease.count()) ? kMaxLinkLease : Millis(static_cast<std::int64_t>(ms));
}

LinkPing LinkStreamReader::readPing(std::string_view payload) const {
  LinkPing p;
  if (payload.empty()) return p;
  FieldReader r(payload, frames_.limits());
  const std::uint64_t ms = r.u64();
  if (r.ok()) p.lease = linkLease(ms);
  return p;
}
std::string encodeLinkPong() { return "<pong/>\n"; }

// ---- decoders ---------------------------------------------------------------

SourceStreamDecoder::SourceStreamDecoder(XmlLimits limits, bool frames)
    : LinkStreamReader(limits, kInternalNs, "source", frames) {}

bool SourceStreamDecoder::feed(std::string_view bytes, std::vector<SourceMessage>* out) {
  auto& dec = dec_;
  return feedStream<LinkEnd>(
      bytes, out,
      [&](bool is_root, const RawElement& el) {
        AttrParser p{dec, el};
        if (is_root) {
          out->push_back(LinkSourceHello{p.str("name"), agreedFrames(p.optU64("frames"), true)});
          return;
        }
        if (detail::readKeepAlive(el, out)) return;
        if (el.name == "fetch") {
          FetchRequest f = detail::decodeFetch(p, detail::FetchWire::kLink);
          if (p.ok) out->push_back(std::move(f));
        } else if (el.name == "delete") {
          LinkDelete d;
          d.id = p.reqU64("id");
          d.machine = p.reqStr("machine");
          d.file = p.reqStr("file");
          if (p.ok) out->push_back(std::move(d));
        } else if (el.name == "sweep") {
          LinkSweep s;
          s.id = p.reqU64("id");
          if (p.ok) out->push_back(s);
        }
      },
      [&](FrameType type, FieldReader& r) { return decodeFrame(type, r, out); });
}

BotmStreamDecoder::BotmStreamDecoder(XmlLimits limits, bool frames)
    : LinkStreamReader(limits, kInternalNs, "botm", frames) {}

namespace {
std::vector<std::string> splitIds(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t' && s[j] != '\n' && s[j] != '\r') ++j;
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}
}  // namespace

bool BotmStreamDecoder::feed(std::string_view bytes, std::vector<BotmMessage>* out) {
  auto& dec = dec_;
  return feedStream<LinkEnd>(
      bytes, out,
      [&](bool is_root, const RawElement& el) {
        AttrParser p{dec, el};
        if (is_root) {
          LinkBotmHello h;
          h.machine = p.reqStr("machine");
          h.capacity = p.optU64("capacity");
          h.content_url = p.str("content");
          h.frames = agreedFrames(p.optU64("frames"), true);
          if (p.ok) out->push_back(std::move(h));
          return;
        }
        if (detail::readKeepAlive(el, out)) return;
        if (el.name == "result") {
          FetchResult r = decodeResult(p, el, true);
          if (p.ok && r.ok() && !r.unchanged && (r.machine.empty() || r.filename.empty())) {
            p.bad("file", "a successful result needs machine and file");
          }
          if (p.ok) out->push_back(std::move(r));
        } else if (el.name == "deleted") {
          LinkDeleted d;
          d.id = p.reqU64("id");
          d.ok = p.yes("ok");
          d.reason = p.str("reason");
          if (p.ok) out->push_back(std::move(d));
        } else if (el.name == "capacity") {
          LinkCapacity c;
          c.slots = p.reqU64("slots");
          if (p.ok) out->push_back(c);
        } else if (el.name == "machines") {
          LinkMachines ms{splitIds(p.str("ids")), {}};
          // "id=url" pairs; a pair without '=' or with an empty side is ignored.
          for (const auto& pair : splitIds(p.str("content"))) {
            auto eq = pair.find('=');
            if (eq == std::string::npos || eq == 0 || eq + 1 == pair.size()) continue;
            ms.content_urls[pair.substr(0, eq)] = pair.substr(eq + 1);
          }
          out->push_back(std::move(ms));
        } else if (el.name == "file") {
          LinkFile f;
          f.sweep = p.reqU64("sweep");
          f.machine = p.reqStr("machine");
          f.name = p.reqStr("name");
          f.size = p.reqU64("size");
          if (p.ok) out->push_back(std::move(f));
        } else if (el.name == "swept") {
          LinkSwept s;
          s.sweep = p.reqU64("sweep");
          s.machine = p.reqStr("machine");
          s.files = p.reqU64("files");
          if (p.ok) out->push_back(std::move(s));
        }
      },
      [&](FrameType type, FieldReader& r) { return decodeFrame(type, r, out); });
}

namespace detail {
FetchRequest fetchAsOnWire(FetchRequest f, FetchWire wire) {
  if (wire == FetchWire::kLink) f.path.clear();  // the leaf BOT-M chooses the file
  if (wire == FetchWire::kRobot) f.expected_md5.clear();
  f.max_response_head = 0;
  f.lease = f.lease.count() <= 0 ? Millis(0) : linkLease(static_cast<std::uint64_t>(f.lease.count()));
  std::vector<std::string> scope;
  for (std::size_t i = 0, n = detail::scopeOnWire(f); i < n; ++i) {
    std::string& p = f.redirect_prefixes[i];
    if (!p.empty() && p.find(' ') == std::string::npos) scope.push_back(std::move(p));
  }
  f.redirect_prefixes = std::move(scope);
  return f;
}

FetchResult resultAsOnWire(FetchResult r, bool with_file) {
  const bool ok = r.ok();
  FetchResult out;
  out.id = r.id;
  out.code = r.code;
  out.http_status = std::clamp(r.http_status, 0, 999);
  out.unchanged = ok && r.unchanged;
  if (ok && !r.unchanged && with_file) {
    out.machine = std::move(r.machine);
    out.filename = std::move(r.filename);
  }
  if (ok && !r.unchanged) {
    out.mime = std::move(r.mime);
    out.size = r.size;
    out.md5 = std::move(r.md5);
    out.last_modified = r.last_modified;
  }
  if (ok) out.etag = std::move(r.etag);
  if (r.retry_after) out.retry_after = std::chrono::duration_cast<std::chrono::seconds>(*r.retry_after);
  if (!ok) out.message = std::move(r.message);
  return out;
}
}  // namespace detail

void asOnWire(SourceMessage& m) {
  if (auto* f = std::get_if<FetchRequest>(&m)) *f = detail::fetchAsOnWire(std::move(*f), detail::FetchWire::kLink);
}

void asOnWire(BotmMessage& m) {
  if (auto* r = std::get_if<FetchResult>(&m)) {
    *r = detail::resultAsOnWire(std::move(*r), true);
  } else if (auto* d = std::get_if<LinkDeleted>(&m); d && d->ok) {
    d->reason.clear();
  }
}

std::string encodeMessage(const SourceMessage& m) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, LinkSourceHello>) return encodeSourceOpen(v);
        if constexpr (std::is_same_v<T, FetchRequest>) return encodeFetch(v);
        if constexpr (std::is_same_v<T, LinkDelete>) return encodeDelete(v);
        if constexpr (std::is_same_v<T, LinkPing>) return encodeLinkPing(v);
        if constexpr (std::is_same_v<T, LinkPong>) return encodeLinkPong();
        if constexpr (std::is_same_v<T, LinkEnd>) return encodeSourceClose();
        if constexpr (std::is_same_v<T, LinkSweep>) return encodeSweep(v);
      },
      m);
}

std::string encodeMessage(const BotmMessage& m) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, LinkBotmHello>) return encodeBotmOpen(v);
        if constexpr (std::is_same_v<T, FetchResult>) return encodeResult(v);
        if constexpr (std::is_same_v<T, LinkDeleted>) return encodeDeleted(v);
        if constexpr (std::is_same_v<T, LinkCapacity>) return encodeCapacity(v);
        if constexpr (std::is_same_v<T, LinkMachines>) return encodeMachines(v);
        if constexpr (std::is_same_v<T, LinkPing>) return encodeLinkPing(v);
        if constexpr (std::is_same_v<T, LinkPong>) return encodeLinkPong();
        if constexpr (std::is_same_v<T, LinkEnd>) return encodeBotmClose();
        if constexpr (std::is_same_v<T, LinkFile>) return encodeFile(v);
        if constexpr (std::is_same_v<T, LinkSwept>) return encodeSwept(v);
      },
      m);
}

}  // namespace lcc::proto
