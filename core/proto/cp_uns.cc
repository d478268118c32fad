#include "proto/cp_uns.h"
#include "proto/codec_util.h"

#include <algorithm>
#include <charconv>
#include <cctype>

#include "common/md5.h"
#include "lcc/support/time_util.h"
#include "lcc/support/url_norm.h"

namespace lcc::proto {

namespace {

constexpr std::string_view kKnownUrlAttrs[] = {"c", "m", "st", "b", "f", "op", "mt", "sz", "md5", "tod"};

bool isLococa(std::string_view ns) { return ns.empty() || ns == kLococaNs; }


// ASCII only, without the locale (the names and tokens it is used on are ASCII).
char lowerAscii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = lowerAscii(c);
  return out;
}

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lowerAscii(a[i]) != lowerAscii(b[i])) return false;
  }
  return true;
}

// Length of a leading "scheme:" (RFC 3986 scheme syntax), 0 if none.
std::size_t schemeLength(std::string_view u) {
  if (u.empty() || !std::isalpha(static_cast<unsigned char>(u[0]))) return 0;
  for (std::size_t i = 1; i < u.size() && i < 32; ++i) {
    char c = u[i];
    if (c == ':') return i + 1;
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.')) return 0;
  }
  return 0;
}

bool mimeToken(std::string_view s) {
  if (s.empty() || s.size() > 127) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$&^_.+-").find(c) != std::string_view::npos)) {
      return false;
    }
  }
  return true;
}

}  // namespace

const std::string* findAttr(const UrlAttrs& attrs, std::string_view name) {
  for (const auto& [k, v] : attrs) {
    if (k == name) return &v;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// CpRequestDecoder

struct CpRequestDecoder::Impl final : XmlHandler {
  CpRequestHandler& h;
  XmlReader reader;
  enum class Doc { kNone, kInit, kSet, kOther } doc = Doc::kNone;
  std::string id, password;
  UrlAttrs url_attrs;  // the current <url>'s known attributes

  // Expat holds a whole start tag before it reports it, so an endless attribute would
  // be buffered before the length limit is checked: bound the bytes between two
  // element events instead (ten attributes at the limit, plus slack).
  std::uint64_t since_event = 0;
  std::uint64_t max_since_event;

  Impl(CpRequestHandler& handler, XmlLimits limits)
      : h(handler),
        reader(*this, limits, XmlFraming::kDocuments),
        max_since_event(static_cast<std::uint64_t>(limits.max_value_length) * 10 + 65536) {}

  void onStart(int depth, const XmlName& name, const XmlAttrs& a) override {
    since_event = 0;
    if (depth == 1) {
      if (isLococa(name.ns) && name.local == "init") {
        doc = Doc::kInit;
        id.clear();
        password.clear();
      } else if (isLococa(name.ns) && name.local == "set") {
        doc = Doc::kSet;
        h.onSetBegin(a.getOr("set", ""), a.getOr("urlprefix", ""));
      } else {
        doc = Doc::kOther;
        h.onUnknownDocument(name.ns, name.local);
      }
      return;
    }
    if (depth != 2 || !isLococa(name.ns)) return;
    if (doc == Doc::kInit && name.local == "provider") {
      id.assign(a.getOr("id", ""));
      password.assign(a.getOr("passwd", ""));
    } else if (doc == Doc::kSet && name.local == "url") {
      // Into the strings of the previous <url>: no allocation once they are large enough.
      std::size_t n = 0;
      for (const auto& at : a.all()) {
        if (!at.ns.empty()) continue;
        for (auto known : kKnownUrlAttrs) {
          if (at.name == known) {
            if (n == url_attrs.size()) url_attrs.emplace_back();
            url_attrs[n].first.assign(at.name);
            url_attrs[n].second.assign(at.value);
            ++n;
            break;
          }
        }
      }
      url_attrs.resize(n);
      h.onUrl(url_attrs);
    }
  }
  void onEnd(int depth, const XmlName&) override {
    since_event = 0;
    if (depth != 1) return;
    if (doc == Doc::kInit) h.onInit(id, password);
    if (doc == Doc::kSet) h.onSetEnd();
    doc = Doc::kNone;
  }
};

CpRequestDecoder::CpRequestDecoder(CpRequestHandler& handler, XmlLimits limits)
    : impl_(std::make_unique<Impl>(handler, limits)) {}
CpRequestDecoder::~CpRequestDecoder() = default;
std::size_t CpRequestDecoder::feed(const char* data, std::size_t n) {
  Impl& s = *impl_;
  if (s.reader.failed()) return n;
  // Feed in slices so that a runaway element is caught within one slice of the bound.
  constexpr std::size_t kSlice = 16384;
  std::size_t used = 0;
  while (used < n) {
    std::size_t len = std::min(kSlice, n - used);
    s.since_event += len;
    std::size_t u = s.reader.feed(data + used, len);
    used += u;
    if (s.reader.failed()) return n;
    if (u < len || s.reader.documentComplete()) return used;  // a document ended
    if (s.since_event > s.max_since_event) {
      s.reader.fail(ErrorCode::kLimitExceeded, "element larger than " + std::to_string(s.max_since_event) + " bytes");
      return n;
    }
  }
  return used;
}
void CpRequestDecoder::fail(ErrorCode code, std::string message) { impl_->reader.fail(code, std::move(message)); }
bool CpRequestDecoder::failed() const { return impl_->reader.failed(); }
ErrorCode CpRequestDecoder::error() const { return impl_->reader.error(); }
const std::string& CpRequestDecoder::errorMessage() const { return impl_->reader.errorMessage(); }
bool CpRequestDecoder::inDocument() const { return impl_->reader.inDocument(); }

// ---------------------------------------------------------------------------
// Validation

std::string resolveUrl(std::string_view urlprefix, std::string_view url) {
  if (schemeLength(url) > 0) return std::string(url);
  std::string out(urlprefix);
  out += url;
  return out;
}

bool mimeAccepted(std::string_view mime, const std::vector<std::string>& patterns) {
  // Compared without case and without a lower-case copy of either (once per URL).
  auto slash = mime.find('/');
  if (slash == std::string_view::npos) return false;
  for (std::string_view p : patterns) {
    if (equalsIgnoringCase(p, mime)) return true;
    if (p.size() >= 2 && p.substr(p.size() - 2) == "/*" && equalsIgnoringCase(p.substr(0, p.size() - 1), mime.substr(0, slash + 1))) {
      return true;
    }
    if (p == "*/*" || p == "*") return true;
  }
  return false;
}

std::optional<std::string> canonicalTod(std::string_view tod, int slots) {
  std::vector<std::pair<int, int>> ranges;
  std::size_t pos = 0;
  if (tod.empty()) return std::nullopt;
  while (pos <= tod.size()) {
    std::size_t comma = tod.find(',', pos);
    std::string_view part = tod.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    auto dash = part.find('-');
    if (dash == std::string_view::npos) return std::nullopt;
    int a = 0, b = 0;
    if (!parseDecimalAs(part.substr(0, dash), a) || !parseDecimalAs(part.substr(dash + 1), b)) return std::nullopt;
    if (a >= b || b > slots) return std::nullopt;
    ranges.emplace_back(a, b);
    if (ranges.size() > 1000) return std::nullopt;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<int, int>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  std::string out;
  for (const auto& [a, b] : merged) {
    if (!out.empty()) out.push_back(',');
    out += std::to_string(a) + "-" + std::to_string(b);
  }
  return out;
}

bool validViewTag(std::string_view st) {
  if (st.empty() || st.size() > 100) return false;
  auto colon = st.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  for (std::size_t i = 0; i < st.size(); ++i) {
    auto c = static_cast<unsigned char>(st[i]);
    if (c <= 0x20 || c == 0x7f) return false;
    if (i < colon && !(std::isalnum(c) || c == '_' || c == '-')) return false;
  }
  return true;
}

UrlVerdict validateUrl(const UrlAttrs& attrs, std::string_view urlprefix, ProviderId pid, const UrlRules& rules) {
  UrlVerdict v;
  auto bad = [&](ErrorCode code, std::string msg) {
    v.code = code;
    v.message = std::move(msg);
    return v;
  };
  UrlNotice& n = v.notice;
  n.key.pid = pid;
  const std::string* c = findAttr(attrs, "c");
  if (!c || c->empty()) return bad(ErrorCode::kInvalidUrl, "invalid URL: c is missing");
  // Every URL is compared, stored and fetched in its normal form (url/url_norm.h).
  auto normal = [&](const std::string& given) {
    if (schemeLength(given) > 0) return url::normalizeUrl(given, rules.max_url_length);  // resolveUrl() would copy it
    return url::normalizeUrl(resolveUrl(urlprefix, given), rules.max_url_length);
  };
  auto key = normal(*c);
  if (!key.isOk()) return bad(ErrorCode::kInvalidUrl, "invalid URL: " + key.status().message());
  n.key.url = std::move(key).value();
  if (const std::string* f = findAttr(attrs, "f")) {
    if (!f->empty()) {
      auto rf = normal(*f);
      if (!rf.isOk()) return bad(ErrorCode::kInvalidUrl, "invalid fetch URL: " + rf.status().message());
      // The form of a slot move's copy (core/qm/move_copy.h), which only the QM's admin
      // import makes: a CP's fetch URL never passes for one.
      if (rf.value().find("?lcc_copy=") != std::string::npos) {
        return bad(ErrorCode::kInvalidUrl, "invalid fetch URL: the query lcc_copy= is reserved for slot moves");
      }
      if (rf.value() != n.key.url) n.fetch = std::move(rf).value();
    }
  }
  if (const std::string* b = findAttr(attrs, "b")) {
    if (b->empty()) {
      n.browse = std::string();
    } else {
      auto rb = normal(*b);
      if (!rb.isOk()) return bad(ErrorCode::kInvalidUrl, "invalid browse URL: " + rb.status().message());
      if (rb.value() != n.key.url) n.browse = std::move(rb).value();
    }
  }
  auto inPrefixes = [&](const std::string& u) { return url::underAnyPrefix(u, rules.prefixes); };
  if (!inPrefixes(n.key.url)) return bad(ErrorCode::kOutsidePrefix, "URL outside the registered prefixes");
  if (!n.fetch.empty() && !inPrefixes(n.fetch)) {
    return bad(ErrorCode::kOutsidePrefix, "fetch URL outside the registered prefixes");
  }
  const std::string* m = findAttr(attrs, "m");
  if (!m || m->empty()) return bad(ErrorCode::kMimeNotAccepted, "mime type missing");
  auto slash = m->find('/');
  if (slash == std::string::npos || !mimeToken(std::string_view(*m).substr(0, slash)) ||
      !mimeToken(std::string_view(*m).substr(slash + 1))) {
    return bad(ErrorCode::kMimeNotAccepted, "mime type not of the form type/subtype");
  }
  if (!mimeAccepted(*m, rules.accept_mime)) return bad(ErrorCode::kMimeNotAccepted, "mime type not accepted");
  n.key.mime = lower(*m);
  if (const std::string* op = findAttr(attrs, "op")) {
    if (*op == "delete") {
      n.op = UrlOp::kDelete;
    } else if (*op != "update") {
      return bad(ErrorCode::kInvalidOp, "invalid op (update or delete)");
    }
  }
  if (const std::string* mt = findAttr(attrs, "mt")) {
    auto t = parseTime(*mt);
    if (!t) return bad(ErrorCode::kInvalidAttribute, "invalid attribute value: mt");
    n.mtime = *t;
  }
  if (const std::string* sz = findAttr(attrs, "sz")) {
    std::uint64_t s = 0;
    if (!parseDecimalAs(*sz, s)) return bad(ErrorCode::kInvalidAttribute, "invalid attribute value: sz");
    n.size = s;
  }
  if (const std::string* md5 = findAttr(attrs, "md5")) {
    std::string l = lower(*md5);
    if (!isMd5Hex(l)) return bad(ErrorCode::kInvalidAttribute, "invalid attribute value: md5");
    n.md5 = std::move(l);
  }
  if (const std::string* tod = findAttr(attrs, "tod")) {
    auto t = canonicalTod(*tod, rules.tod_slots);
    if (!t) return bad(ErrorCode::kInvalidAttribute, "invalid attribute value: tod");
    n.tod = std::move(*t);
  }
  if (const std::string* st = findAttr(attrs, "st")) {
    if (validViewTag(*st)) n.view_tag = *st;  // blanked when malformed
  }
  return v;
}

// ---------------------------------------------------------------------------
// Replies

namespace {
std::string topOpen(std::string_view local) {
  std::string out = "<lococa:";
  out += local;
  out += " xmlns:lococa=\"";
  out += kLococaNs;
  out += "\">";
  return out;
}

void appendErrorUrl(std::string& out, ErrorCode code, const UrlAttrs& attrs, std::string_view message) {
  out += "<url code=\"";
  out += std::to_string(static_cast<unsigned>(code));
  out += "\"";
  for (const auto& [k, v] : attrs) {
    if (k == "code") continue;
    appendAttr(out, k, v);
  }
  out += ">";
  appendXmlEscaped(out, message);
  out += "</url>";
}

UrlAttrs attrsOfNotice(const UrlNotice& n) {
  UrlAttrs a;
  a.emplace_back("c", n.key.url);
  a.emplace_back("m", n.key.mime);
  if (!n.view_tag.empty()) a.emplace_back("st", n.view_tag);
  if (n.browse) a.emplace_back("b", *n.browse);
  a.emplace_back("f", n.fetchUrl());
  if (n.op == UrlOp::kDelete) a.emplace_back("op", "delete");
  if (n.mtime) a.emplace_back("mt", formatRfc3339(*n.mtime));
  if (n.size) a.emplace_back("sz", std::to_string(*n.size));
  if (!n.md5.empty()) a.emplace_back("md5", n.md5);
  if (!n.tod.empty()) a.emplace_back("tod", n.tod);
  return a;
}
}  // namespace

std::string encodeInitAccepted(const InitAcceptedInfo& info) {
  std::string out = topOpen("init_accepted");
  out += "<connect_info seq=\"" + std::to_string(info.seq) + "\"";
  appendAttr(out, "lastConnectIP", info.last_ip);
  appendAttr(out, "lastConnectTime", info.last_time ? formatRfc3339(*info.last_time) : std::string());
  out += "/>";
  for (const auto& m : info.mime) {
    out += "<mime>";
    appendXmlEscaped(out, m);
    out += "</mime>";
  }
  out += "<quota><files used=\"" + std::to_string(info.files_used) + "\" free=\"" + std::to_string(info.files_free) +
         "\"/><space used=\"" + std::to_string(info.space_used) + "\" free=\"" + std::to_string(info.space_free) +
         "\"/><fullset allowed=\"" + std::to_string(info.fullset_allowed) + "\" wanted=\"" +
         (info.fullset_wanted ? "yes" : "no") + "\"";
  if (info.fullset_wanted && !info.fullset_reason.empty()) appendAttr(out, "reason", info.fullset_reason);
  out += "/></quota>";
  out += "<processing_status errors=\"" + std::to_string(info.error_total) + "\" processing=\"" +
         std::to_string(info.processing) + "\"><errors>";
  for (const auto& e : info.errors) {
    std::string msg = e.message.empty() ? std::string(errorCodeMessage(e.code)) : e.message;
    appendErrorUrl(out, e.code, attrsOfNotice(e.notice), msg);
  }
  out += "</errors></processing_status></lococa:init_accepted>";
  return out;
}

std::string encodeInitRejected(ErrorCode code, std::string_view message) {
  std::string out = topOpen("init_rejected");
  out += "<reason code=\"" + std::to_string(static_cast<unsigned>(code)) + "\">";
  appendXmlEscaped(out, message);
  out += "</reason></lococa:init_rejected>";
  return out;
}

std::string encodeSetResultBegin() { return topOpen("set_result") + "<errors>"; }

std::string encodeUrlError(ErrorCode code, const UrlAttrs& attrs, std::string_view message) {
  std::string out;
  appendErrorUrl(out, code, attrs, message);
  return out;
}

std::string encodeSetAccepted(std::uint64_t received) {
  return "</errors><set_accepted received=\"" + std::to_string(received) + "\"/></lococa:set_result>";
}

std::string encodeSetRejected(ErrorCode code, std::string_view message) {
  std::string out = "</errors><set_rejected code=\"" + std::to_string(static_cast<unsigned>(code)) + "\">";
  appendXmlEscaped(out, message);
  out += "</set_rejected></lococa:set_result>";
  return out;
}

// ---------------------------------------------------------------------------
// CP side

std::string encodeInit(std::string_view id, std::string_view password) {
  std::string out = topOpen("init");
  out += "<provider";
  appendAttr(out, "id", id);
  appendAttr(out, "passwd", password);
  out += "/></lococa:init>\n";
  return out;
}

std::string encodeSetBegin(bool full, std::string_view urlprefix) {
  std::string out = "<lococa:set xmlns:lococa=\"";
  out += kLococaNs;
  out += "\" set=\"";
  out += full ? "full" : "partial";
  out += "\"";
  if (!urlprefix.empty()) appendAttr(out, "urlprefix", urlprefix);
  out += ">\n";
  return out;
}

std::string encodeUrlElement(const UrlAttrs& attrs) {
  std::string out = "<url";
  for (const auto& [k, v] : attrs) appendAttr(out, k, v);
  out += "/>\n";
  return out;
}

void appendUrlElement(std::string& out, const XmlAttrs& attrs) {
  out += "<url";
  for (const auto& at : attrs.all()) {
    if (at.ns.empty()) appendAttr(out, at.name, at.value);
  }
  out += "/>\n";
}

std::string encodeSetEnd() { return "</lococa:set>\n"; }

struct ReplyDecoder::Impl final : XmlHandler {
  XmlReader reader;
  CpReply cur;
  std::vector<CpReply> done;
  std::vector<UrlError> streamed;
  // Where we are inside the reply.
  bool in_processing = false, in_errors = false, in_url = false, in_reason = false, in_mime = false;
  UrlError url;

  explicit Impl(XmlLimits limits) : reader(*this, limits, XmlFraming::kDocuments) {}

  static std::uint64_t num(const XmlAttrs& a, std::string_view name) {
    std::uint64_t v = 0;
    if (const auto* s = a.get(name)) (void)parseDecimalAs(*s, v);
    return v;
  }

  void onStart(int depth, const XmlName& name, const XmlAttrs& a) override {
    if (depth == 1) {
      cur = CpReply{};
      if (name.ns != kLococaNs) {
        reader.fail(ErrorCode::kMalformed, "reply not in the lococa namespace");
        return;
      }
      if (name.local == "init_accepted") cur.kind = CpReply::Kind::kInitAccepted;
      if (name.local == "init_rejected") cur.kind = CpReply::Kind::kInitRejected;
      if (name.local == "set_result") cur.kind = CpReply::Kind::kSetResult;
      return;
    }
    std::string_view l = name.local;
    if (l == "connect_info") {
      cur.init.seq = num(a, "seq");
      cur.init.last_ip = std::string(a.getOr("lastConnectIP", ""));
      if (auto t = parseTime(a.getOr("lastConnectTime", ""))) cur.init.last_time = *t;
    } else if (l == "mime" && depth == 2) {
      in_mime = true;
      cur.init.mime.emplace_back();
    } else if (l == "files") {
      cur.init.files_used = num(a, "used");
      cur.init.files_free = num(a, "free");
    } else if (l == "space") {
      cur.init.space_used = num(a, "used");
      cur.init.space_free = num(a, "free");
    } else if (l == "fullset") {
      cur.init.fullset_allowed = num(a, "allowed");
      cur.init.fullset_wanted = a.getOr("wanted", "no") == "yes";
      cur.init.fullset_reason = std::string(a.getOr("reason", ""));
    } else if (l == "processing_status") {
      cur.init.error_total = num(a, "errors");
      cur.init.processing = num(a, "processing");
    } else if (l == "errors") {
      in_errors = true;
    } else if (l == "url" && in_errors) {
      in_url = true;
      url = UrlError{};
      url.code = static_cast<ErrorCode>(num(a, "code"));
      for (const auto& at : a.all()) {
        if (at.ns.empty() && at.name != "code") url.attrs.emplace_back(std::string(at.name), std::string(at.value));
      }
    } else if (l == "reason" || l == "set_rejected") {
      in_reason = true;
      cur.code = static_cast<ErrorCode>(num(a, "code"));
      cur.accepted = false;
    } else if (l == "set_accepted") {
      cur.accepted = true;
      cur.received = num(a, "received");
    }
  }
  void onText(int, std::string_view text) override {
    if (in_url) url.message.append(text);
    else if (in_reason) cur.message.append(text);
    else if (in_mime) cur.init.mime.back().append(text);
  }
  void onEnd(int depth, const XmlName& name) override {
    std::string_view l = name.local;
    if (depth == 1) {
      done.push_back(std::move(cur));
      cur = CpReply{};
      return;
    }
    if (l == "url" && in_url) {
      in_url = false;
      if (cur.kind == CpReply::Kind::kSetResult) {
        cur.set_errors.push_back(url);
        streamed.push_back(url);
      } else {
        cur.init_errors.push_back(url);
      }
    } else if (l == "errors") {
      in_errors = false;
    } else if (l == "reason" || l == "set_rejected") {
      in_reason = false;
    } else if (l == "mime") {
      in_mime = false;
    }
  }
};

ReplyDecoder::ReplyDecoder(XmlLimits limits) : impl_(std::make_unique<Impl>(limits)) {}
ReplyDecoder::~ReplyDecoder() = default;

std::vector<CpReply> ReplyDecoder::feed(std::string_view bytes) {
  while (!bytes.empty() && !impl_->reader.failed()) {
    std::size_t used = impl_->reader.feed(bytes.data(), bytes.size());
    if (used == 0) break;
    bytes.remove_prefix(used);
  }
  std::vector<CpReply> out = std::move(impl_->done);
  impl_->done.clear();
  return out;
}

std::vector<UrlError> ReplyDecoder::takeStreamedErrors() {
  std::vector<UrlError> out = std::move(impl_->streamed);
  impl_->streamed.clear();
  return out;
}
bool ReplyDecoder::failed() const { return impl_->reader.failed(); }
const std::string& ReplyDecoder::errorMessage() const { return impl_->reader.errorMessage(); }

}  // namespace lcc::proto
