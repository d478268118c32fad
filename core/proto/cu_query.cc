#include "proto/cu_query.h"

#include "proto/cu_cursor.h"

#include <charconv>
#include <limits>

#include "lcc/support/time_util.h"
#include "lcc/support/cu_xml_format.h"
#include "proto/xml_reader.h"

namespace lcc::proto {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

template <typename T>
std::optional<T> parseUnsigned(std::string_view s) {
  s = trim(s);
  if (s.empty() || s.size() > 20) return std::nullopt;
  T v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<bool> parseYesNo(std::string_view s) {
  s = trim(s);
  if (s == "yes" || s == "true" || s == "1") return true;
  if (s == "no" || s == "false" || s == "0") return false;
  return std::nullopt;
}

bool isTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '!' || c == '#' ||
         c == '$' || c == '&' || c == '-' || c == '^' || c == '_' || c == '.' || c == '+';
}

bool validMimePattern(std::string_view p) {
  if (p == "*" || p == "*/*") return true;
  auto slash = p.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == p.size()) return false;
  std::string_view type = p.substr(0, slash), sub = p.substr(slash + 1);
  for (char c : type) {
    if (!isTokenChar(c)) return false;
  }
  if (sub == "*") return true;
  for (char c : sub) {
    if (!isTokenChar(c)) return false;
  }
  return true;
}

CuQueryError bad(std::string msg) { return CuQueryError{ErrorCode::kMalformed, std::move(msg)}; }

}  // namespace

std::optional<CuQueryError> validateCuQuery(const CuQuery& q) {
  if (q.format.empty()) return bad("format is empty");
  for (ProviderId p : q.providers) {
    if (p == 0) return bad("provider id 0 is not valid");
  }
  if (q.since_seq && q.since_time) return bad("since takes seq or time, not both");
  if (q.since_cursor) {
    if (q.since_seq || q.since_time) return bad("since takes one seq, cursor or time");
    if (auto c = decodeCuCursor(*q.since_cursor); !c.isOk()) return bad(c.status().message());
  }
  for (const auto& m : q.mimes) {
    if (!validMimePattern(m)) return bad("mime pattern '" + m + "' is not type/subtype, type/* or */*");
  }
  for (const auto& p : q.prefixes) {
    if (p.empty()) return bad("empty prefix");
    if (p.find('\0') != std::string::npos) return bad("prefix holds a NUL byte");
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// The XML query.

struct CuQueryParser::Impl final : XmlHandler {
  std::size_t max_bytes;
  std::size_t seen = 0;
  State state = State::kNeedMore;
  CuQuery query;
  CuQueryError error;
  XmlReader reader;
  std::string child;  // local name of the depth-2 element being read
  std::string text;
  bool since_seen = false;

  explicit Impl(std::size_t max)
      : max_bytes(max), reader(*this, XmlLimits{8192, 4, 10000, 16}, XmlFraming::kDocuments) {}

  void fail(CuQueryError e) {
    if (state == State::kFailed) return;
    error = std::move(e);
    state = State::kFailed;
    reader.fail(error.code, error.message);
  }

  static bool ourNs(std::string_view ns) { return ns.empty() || ns == kLococaNs; }

  void onStart(int depth, const XmlName& name, const XmlAttrs& attrs) override {
    if (state == State::kFailed) return;
    if (depth == 1) {
      if (name.local != "query" || !ourNs(name.ns)) {
        return fail(bad("expected <lococa:query>, got <" + std::string(name.local) + ">"));
      }
      if (auto f = attrs.get("format")) query.format = std::string(trim(*f));
      for (const char* flag : {"content", "deleted"}) {
        if (auto v = attrs.get(flag)) {
          auto b = parseYesNo(*v);
          if (!b) return fail(bad(std::string(flag) + " must be yes or no (got '" + std::string(*v) + "')"));
          (flag[0] == 'c' ? query.content : query.deleted) = *b;
        }
      }
      return;
    }
    if (depth != 2 || !ourNs(name.ns)) return;  // deeper or foreign: ignored
    child.assign(name.local);
    text.clear();
    if (child == "provider") {
      auto id = attrs.get("id");
      auto v = id ? parseUnsigned<std::uint32_t>(*id) : std::nullopt;
      if (!v || *v == 0) return fail(bad("provider needs id=\"N\" with N a provider id"));
      query.providers.push_back(*v);
    } else if (child == "since") {
      if (since_seen) return fail(bad("more than one <since>"));
      since_seen = true;
      auto seq = attrs.get("seq");
      auto time = attrs.get("time");
      if ((seq != nullptr) == (time != nullptr)) return fail(bad("since takes exactly one of seq or time"));
      if (seq && looksLikeCuCursor(*seq)) {
        query.since_cursor = std::string(*seq);
      } else if (seq) {
        auto v = parseUnsigned<std::uint64_t>(*seq);
        if (!v) return fail(bad("since seq must be a decimal number (got '" + std::string(*seq) + "')"));
        query.since_seq = *v;
      } else {
        auto v = parseTime(trim(*time));
        if (!v) return fail(bad("since time must be RFC 3339 or seconds (got '" + std::string(*time) + "')"));
        query.since_time = *v;
      }
    }
  }

  void onText(int depth, std::string_view t) override {
    if (depth == 2 && state != State::kFailed) text.append(t);
  }

  void onEnd(int depth, const XmlName& name) override {
    if (state == State::kFailed) return;
    if (depth == 2 && ourNs(name.ns)) {
      if (child == "mime") {
        query.mimes.emplace_back(trim(text));
      } else if (child == "prefix") {
        query.prefixes.emplace_back(trim(text));
      } else if (child == "deleted") {
        auto b = parseYesNo(text);
        if (!b) return fail(bad("deleted must be yes or no (got '" + std::string(trim(text)) + "')"));
        query.deleted = *b;
      } else if (child == "limit") {
        auto v = parseUnsigned<std::uint64_t>(text);
        if (!v) return fail(bad("limit must be a decimal number (got '" + std::string(trim(text)) + "')"));
        query.limit = *v;
      }
      child.clear();
    } else if (depth == 1) {
      if (auto e = validateCuQuery(query)) return fail(*e);
      state = State::kDone;
    }
  }
};

CuQueryParser::CuQueryParser(std::size_t max_bytes) : impl_(std::make_unique<Impl>(max_bytes)) {}
CuQueryParser::~CuQueryParser() = default;

CuQueryParser::State CuQueryParser::feed(std::string_view bytes) {
  Impl& s = *impl_;
  if (s.state != State::kNeedMore) return s.state;
  // Only count bytes up to the document's end; whatever follows is ignored.
  std::size_t room = s.max_bytes > s.seen ? s.max_bytes - s.seen : 0;
  std::string_view part = bytes.substr(0, std::min(bytes.size(), room + 1));
  std::size_t used = s.reader.feed(part);
  s.seen += used;
  if (s.state == State::kNeedMore && s.reader.failed()) {
    s.error = CuQueryError{s.reader.error(), s.reader.errorMessage()};
    s.state = State::kFailed;
  } else if (s.state == State::kNeedMore && s.seen > s.max_bytes) {
    s.fail(CuQueryError{ErrorCode::kLimitExceeded, "query longer than " + std::to_string(s.max_bytes) + " bytes"});
  }
  return s.state;
}

CuQueryParser::State CuQueryParser::endOfInput() {
  if (impl_->state == State::kNeedMore) impl_->fail(bad("connection closed before the query ended"));
  return impl_->state;
}

CuQueryParser::State CuQueryParser::state() const { return impl_->state; }
const CuQuery& CuQueryParser::query() const { return impl_->query; }
const CuQueryError& CuQueryParser::error() const { return impl_->error; }

Result<CuQuery> parseCuQueryXml(std::string_view doc, CuQueryError* error) {
  CuQueryParser p(doc.size() + 1);
  auto st = p.feed(doc);
  if (st == CuQueryParser::State::kNeedMore) st = p.endOfInput();
  if (st == CuQueryParser::State::kDone) return p.query();
  if (error) *error = p.error();
  return Status::invalidArgument(p.error().message);
}

// ---------------------------------------------------------------------------
// HTTP parameters.

std::optional<CuQuery> parseCuQueryParams(const std::multimap<std::string, std::string>& params, CuQueryError* error) {
  CuQuery q;
  auto fail = [&](std::string msg) -> std::optional<CuQuery> {
    if (error) *error = bad(std::move(msg));
    return std::nullopt;
  };
  for (const auto& [key, value] : params) {
    if (key == "format") {
      q.format = std::string(trim(value));
    } else if (key == "content" || key == "deleted") {
      auto b = parseYesNo(value);
      if (!b) return fail(key + " must be yes or no (got '" + value + "')");
      (key == "content" ? q.content : q.deleted) = *b;
    } else if (key == "provider") {
      auto v = parseUnsigned<std::uint32_t>(value);
      if (!v || *v == 0) return fail("provider must be a provider id (got '" + value + "')");
      q.providers.push_back(*v);
    } else if (key == "since_seq" && looksLikeCuCursor(value)) {
      if (q.since_seq || q.since_cursor) return fail("since_seq given twice");
      q.since_cursor = value;
    } else if (key == "since_seq") {
      auto v = parseUnsigned<std::uint64_t>(value);
      if (!v) return fail("since_seq must be a decimal number (got '" + value + "')");
      if (q.since_seq || q.since_cursor) return fail("since_seq given twice");
      q.since_seq = *v;
    } else if (key == "since" || key == "since_time") {
      auto v = parseTime(trim(value));
      if (!v) return fail(key + " must be RFC 3339 or seconds (got '" + value + "')");
      if (q.since_time) return fail(key + " given twice");
      q.since_time = *v;
    } else if (key == "mime") {
      q.mimes.emplace_back(trim(value));
    } else if (key == "prefix") {
      q.prefixes.emplace_back(trim(value));
    } else if (key == "limit") {
      auto v = parseUnsigned<std::uint64_t>(value);
      if (!v) return fail("limit must be a decimal number (got '" + value + "')");
      q.limit = *v;
    }
  }
  if (auto e = validateCuQuery(q)) {
    if (error) *error = *e;
    return std::nullopt;
  }
  return q;
}

// ---------------------------------------------------------------------------
// Formatting.

std::string formatCuQueryXml(const CuQuery& q) {
  std::string out = "<lococa:query xmlns:lococa=\"";
  out += kLococaNs;
  out += "\" format=\"";
  appendXmlText(out, q.format);
  out += q.content ? "\" content=\"yes\">\n" : "\" content=\"no\">\n";
  for (ProviderId p : q.providers) out += "  <provider id=\"" + std::to_string(p) + "\"/>\n";
  if (q.since_seq) out += "  <since seq=\"" + std::to_string(*q.since_seq) + "\"/>\n";
  if (q.since_cursor) {
    out += "  <since seq=\"";
    appendXmlEscaped(out, *q.since_cursor);
    out += "\"/>\n";
  }
  if (q.since_time) out += "  <since time=\"" + formatRfc3339(*q.since_time) + "\"/>\n";
  for (const auto& m : q.mimes) {
    out += "  <mime>";
    appendXmlText(out, m);
    out += "</mime>\n";
  }
  for (const auto& p : q.prefixes) {
    out += "  <prefix>";
    appendXmlUrl(out, p);
    out += "</prefix>\n";
  }
  if (q.deleted) out += "  <deleted>yes</deleted>\n";
  if (q.limit) out += "  <limit>" + std::to_string(*q.limit) + "</limit>\n";
  out += "</lococa:query>\n";
  return out;
}

std::string formatQueryRejected(ErrorCode code, std::string_view message) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<lococa:query_rejected xmlns:lococa=\"";
  out += kLococaNs;
  out += "\"><reason code=\"" + std::to_string(static_cast<int>(code)) + "\">";
  appendXmlText(out, message);
  out += "</reason></lococa:query_rejected>\n";
  return out;
}

}  // namespace lcc::proto
