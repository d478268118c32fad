#include "xml_reader.h"

#include <expat.h>

#include <cstring>

namespace lcc::proto {

namespace {
constexpr char kNsSep = '\x01';  // namespace separator: cannot appear in a name

XmlName splitName(const char* raw) {
  std::string_view s(raw);
  auto sep = s.find(kNsSep);
  if (sep == std::string_view::npos) return {{}, s};
  return {s.substr(0, sep), s.substr(sep + 1)};
}
}  // namespace

struct XmlReader::Impl {
  XmlHandler& handler;
  XmlLimits limits;
  XmlFraming framing;
  XML_Parser parser = nullptr;
  int depth = 0;
  bool started = false;     // the top-level element began
  bool complete = false;    // the top-level element ended
  bool handed_off = false;  // handOff(): the bytes after the current event are not XML
  std::uint64_t elements = 0;
  std::uint64_t fed_total = 0;   // bytes given to the current parser before this chunk
  std::uint64_t end_offset = 0;  // absolute offset just after the top-level end tag
  std::size_t text_len = 0;      // text length of the current element
  ErrorCode error = ErrorCode::kNone;
  std::string message;
  std::vector<XmlAttr> attrs;

  Impl(XmlHandler& h, XmlLimits l, XmlFraming f) : handler(h), limits(l), framing(f) {}
  ~Impl() {
    if (parser) XML_ParserFree(parser);
  }

  void reset() {
    if (parser) XML_ParserFree(parser);
    parser = XML_ParserCreateNS("UTF-8", kNsSep);
    XML_SetUserData(parser, this);
    XML_SetElementHandler(parser, &Impl::startCb, &Impl::endCb);
    XML_SetCharacterDataHandler(parser, &Impl::textCb);
    XML_SetStartDoctypeDeclHandler(parser, &Impl::doctypeCb);
    XML_SetEntityDeclHandler(parser, &Impl::entityCb);
    // Never read external entities or DTDs.
    XML_SetParamEntityParsing(parser, XML_PARAM_ENTITY_PARSING_NEVER);
    // Expat's reparse deferral (2.6, backported into later Debian 12 updates of 2.5)
    // may hold a complete token until more bytes arrive; a peer that sent its last '>'
    // and now waits for our answer would wait forever. Our limits already bound the
    // reparse cost, so we switch it off. An Expat without the switch (Debian 12's
    // 2.5.0-1+deb12u1) has no deferral either: there is nothing to switch off, and the
    // build checks for the symbol (core/proto/CMakeLists.txt) instead of assuming it.
#if LCC_HAVE_XML_REPARSE_DEFERRAL
    XML_SetReparseDeferralEnabled(parser, XML_FALSE);
#endif
    depth = 0;
    started = false;
    complete = false;
    handed_off = false;
    elements = 0;
    fed_total = 0;
    end_offset = 0;
    text_len = 0;
  }

  void stop(ErrorCode code, std::string msg) {
    if (error == ErrorCode::kNone) {
      error = code;
      message = std::move(msg);
    }
    XML_StopParser(parser, XML_FALSE);
  }

  static void XMLCALL startCb(void* ud, const XML_Char* name, const XML_Char** atts) {
    auto* self = static_cast<Impl*>(ud);
    if (self->error != ErrorCode::kNone) return;
    ++self->depth;
    ++self->elements;
    self->text_len = 0;
    self->started = true;
    if (self->depth > self->limits.max_depth) {
      return self->stop(ErrorCode::kLimitExceeded, "document nested deeper than " + std::to_string(self->limits.max_depth));
    }
    if (self->elements > self->limits.max_elements) {
      return self->stop(ErrorCode::kLimitExceeded, "more than " + std::to_string(self->limits.max_elements) + " elements");
    }
    self->attrs.clear();
    for (int i = 0; atts[i] != nullptr; i += 2) {
      if (self->attrs.size() >= self->limits.max_attributes) {
        return self->stop(ErrorCode::kLimitExceeded, "more than " + std::to_string(self->limits.max_attributes) + " attributes");
      }
      std::size_t len = std::strlen(atts[i + 1]);
      if (len > self->limits.max_value_length) {
        return self->stop(ErrorCode::kLimitExceeded, std::string("attribute longer than ") +
                                                         std::to_string(self->limits.max_value_length) + " bytes");
      }
      XmlName an = splitName(atts[i]);
      self->attrs.push_back({an.ns, an.local, std::string_view(atts[i + 1], len)});
    }
    XmlAttrs view(self->attrs);
    self->handler.onStart(self->depth, splitName(name), view);
  }

  static void XMLCALL endCb(void* ud, const XML_Char* name) {
    auto* self = static_cast<Impl*>(ud);
    if (self->error != ErrorCode::kNone) return;
    self->handler.onEnd(self->depth, splitName(name));
    --self->depth;
    self->text_len = 0;
    if (self->depth == 0 && self->error == ErrorCode::kNone) {
      self->complete = true;
      self->end_offset = static_cast<std::uint64_t>(XML_GetCurrentByteIndex(self->parser)) +
                         static_cast<std::uint64_t>(XML_GetCurrentByteCount(self->parser));
      XML_StopParser(self->parser, XML_FALSE);
    }
  }

  static void XMLCALL textCb(void* ud, const XML_Char* s, int len) {
    auto* self = static_cast<Impl*>(ud);
    if (self->error != ErrorCode::kNone || self->depth == 0) return;
    self->text_len += static_cast<std::size_t>(len);
    if (self->text_len > self->limits.max_value_length) {
      return self->stop(ErrorCode::kLimitExceeded, "text longer than " + std::to_string(self->limits.max_value_length) + " bytes");
    }
    self->handler.onText(self->depth, std::string_view(s, static_cast<std::size_t>(len)));
  }

  static void XMLCALL doctypeCb(void* ud, const XML_Char*, const XML_Char*, const XML_Char*, int) {
    static_cast<Impl*>(ud)->stop(ErrorCode::kMalformed, "DOCTYPE declarations are not accepted");
  }

  static void XMLCALL entityCb(void* ud, const XML_Char*, int, const XML_Char*, int, const XML_Char*, const XML_Char*,
                               const XML_Char*, const XML_Char*) {
    static_cast<Impl*>(ud)->stop(ErrorCode::kMalformed, "entity declarations are not accepted");
  }
};

XmlReader::XmlReader(XmlHandler& handler, XmlLimits limits, XmlFraming framing)
    : impl_(std::make_unique<Impl>(handler, limits, framing)) {
  impl_->reset();
}

XmlReader::~XmlReader() = default;

std::size_t XmlReader::feed(const char* data, std::size_t n) {
  Impl& s = *impl_;
  if (s.error != ErrorCode::kNone) return n;
  if (s.handed_off) return 0;
  if (s.complete) {
    if (s.framing == XmlFraming::kStream) return 0;  // the stream is over
    s.reset();
  }
  if (n == 0) return 0;
  // Skip whitespace between documents so that it does not start a new parser's input.
  std::size_t skipped = 0;
  if (!s.started && s.fed_total == 0) {
    while (skipped < n && (data[skipped] == ' ' || data[skipped] == '\n' || data[skipped] == '\r' || data[skipped] == '\t')) {
      ++skipped;
    }
    if (skipped == n) return n;
  }
  const char* p = data + skipped;
  const std::size_t len = n - skipped;
  // Expat takes a NUL in a document's first two bytes, or a UTF-16 byte-order mark, as
  // UTF-16 whatever encoding it was given, and only when both bytes come in one chunk:
  // "d\0" whole was a UTF-16 'd', split it was malformed (found by cp_uns_fuzz). Every
  // protocol here is UTF-8, where neither byte can start a document.
  for (std::size_t i = 0; s.fed_total + i < 2 && i < len; ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (c == 0x00 || c == 0xFE || c == 0xFF) {
      s.stop(ErrorCode::kMalformed, "malformed XML at line 1: not UTF-8 (a NUL or 0xFE/0xFF byte at the start)");
      return n;
    }
  }
  XML_Status st = XML_Parse(s.parser, p, static_cast<int>(len), XML_FALSE);
  if (s.complete || s.handed_off) {
    std::uint64_t used = s.end_offset - s.fed_total;
    s.fed_total += len;
    return skipped + static_cast<std::size_t>(used);
  }
  s.fed_total += len;
  if (st == XML_STATUS_ERROR && s.error == ErrorCode::kNone) {
    s.error = ErrorCode::kMalformed;
    s.message = std::string("malformed XML at line ") + std::to_string(XML_GetCurrentLineNumber(s.parser)) + ": " +
                XML_ErrorString(XML_GetErrorCode(s.parser));
  }
  return n;
}

bool XmlReader::finish() {
  Impl& s = *impl_;
  if (s.error == ErrorCode::kNone && !s.complete && s.fed_total > 0 &&
      XML_Parse(s.parser, "", 0, XML_TRUE) == XML_STATUS_ERROR && s.error == ErrorCode::kNone) {
    s.error = ErrorCode::kMalformed;
    s.message = std::string("malformed XML at line ") + std::to_string(XML_GetCurrentLineNumber(s.parser)) + ": " +
                XML_ErrorString(XML_GetErrorCode(s.parser));
  }
  return s.error == ErrorCode::kNone;
}

void XmlReader::fail(ErrorCode code, std::string message) { impl_->stop(code, std::move(message)); }
void XmlReader::handOff() {
  Impl& s = *impl_;
  if (s.error != ErrorCode::kNone || s.handed_off) return;
  s.handed_off = true;
  s.end_offset = static_cast<std::uint64_t>(XML_GetCurrentByteIndex(s.parser)) +
                 static_cast<std::uint64_t>(XML_GetCurrentByteCount(s.parser));
  XML_StopParser(s.parser, XML_FALSE);
}
bool XmlReader::handedOff() const { return impl_->handed_off; }
bool XmlReader::failed() const { return impl_->error != ErrorCode::kNone; }
ErrorCode XmlReader::error() const { return impl_->error; }
const std::string& XmlReader::errorMessage() const { return impl_->message; }
bool XmlReader::documentComplete() const { return impl_->complete; }
bool XmlReader::inDocument() const { return impl_->started && !impl_->complete; }
std::uint64_t XmlReader::elementCount() const { return impl_->elements; }

namespace {

// Whether a byte needs escaping in an attribute value or element content: the five
// markup characters and every control character (the three kept ones as references).
constexpr bool needsEscape(unsigned char c) {
  return c < 0x20 || c == '&' || c == '<' || c == '>' || c == '"' || c == '\'';
}

std::string_view escapeOf(char c) {
  switch (c) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '"': return "&quot;";
    case '\'': return "&apos;";
    case '\n': return "&#10;";
    case '\r': return "&#13;";
    case '\t': return "&#9;";
    default: return "\xEF\xBF\xBD";  // a control character XML 1.0 cannot carry: replaced
  }
}

}  // namespace

void appendXmlEscaped(std::string& out, std::string_view s) {
  // Runs of bytes that need no escape are appended whole (a URL is usually one run).
  std::size_t run = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!needsEscape(static_cast<unsigned char>(s[i]))) continue;
    out.append(s.data() + run, i - run);
    out.append(escapeOf(s[i]));
    run = i + 1;
  }
  out.append(s.data() + run, s.size() - run);
}

bool xmlCanCarry(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned c = p[i];
    if (c < 0x80) {
      if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return false;
      ++i;
      continue;
    }
    const std::size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (len == 0 || c > 0xF4 || n - i < len) return false;  // a continuation byte first, an overlong lead, past U+10FFFF
    std::uint32_t cp = c & (0xFF >> (len + 1));
    for (std::size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    const std::uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF) return false;
    i += len;
  }
  return true;
}

std::string xmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  appendXmlEscaped(out, s);
  return out;
}

}  // namespace lcc::proto
