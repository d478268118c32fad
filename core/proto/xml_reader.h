// xml_reader.h — streaming Expat with hard limits, for every XML protocol of the LCC.
//
// Two framings (docs/protocol.md §0):
//  - kDocuments: each top-level element is one document (CP↔UNS: init, then set;
//    the CU query). When a top-level element ends, feed() stops and reports how
//    many bytes it used; the next bytes start a fresh document.
//  - kStream: one root element is opened once and its children are the messages
//    (robot protocol §4, the internal protocols). The root's end ends the stream.
// Names are namespace-resolved: an element is {ns, local}; the prefix the peer
// chose does not matter. Attributes without a prefix have an empty ns.
// Refused with kMalformed (code 100): malformed XML, a DOCTYPE, any entity
// declaration. Refused with kLimit (code 101): an attribute or text longer than
// max_value_length, nesting deeper than max_depth, more than max_elements elements
// in one document, more than max_attributes attributes on one element.
// THREADS: one reader per connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lcc/error_codes.h"

namespace lcc::proto {

// Namespaces of the LCC's XML protocols.
inline constexpr std::string_view kLococaNs = "http://www.lococa.org/1.0";            // docs/protocol.md §1, §3
inline constexpr std::string_view kRobotNs = "http://www.lococa.org/1.0/robot";       // docs/protocol.md §4
inline constexpr std::string_view kInternalNs = "http://www.lococa.org/1.0/internal"; // docs/internal-protocols.md

struct XmlName {
  std::string_view ns;
  std::string_view local;
};

struct XmlAttr {
  std::string_view ns;
  std::string_view name;
  std::string_view value;
};

class XmlAttrs {
 public:
  explicit XmlAttrs(const std::vector<XmlAttr>& attrs) : attrs_(attrs) {}
  // Value of the un-namespaced attribute `name`, or nullptr.
  const std::string_view* get(std::string_view name) const {
    for (const auto& a : attrs_) {
      if (a.ns.empty() && a.name == name) return &a.value;
    }
    return nullptr;
  }
  std::string_view getOr(std::string_view name, std::string_view fallback) const {
    auto v = get(name);
    return v ? *v : fallback;
  }
  const std::vector<XmlAttr>& all() const { return attrs_; }

 private:
  const std::vector<XmlAttr>& attrs_;
};

// Receives parse events. depth is 1 for a top-level element (the document element
// or the stream root), 2 for its children, and so on.
class XmlHandler {
 public:
  virtual ~XmlHandler() = default;
  virtual void onStart(int depth, const XmlName& name, const XmlAttrs& attrs) = 0;
  virtual void onEnd(int depth, const XmlName& name) = 0;
  // Character data directly inside the element at `depth` (may arrive in pieces).
  virtual void onText(int depth, std::string_view text) { (void)depth, (void)text; }
};

struct XmlLimits {
  std::size_t max_value_length = 8192;    // attribute value, or text of one element
  int max_depth = 8;
  std::uint64_t max_elements = 2'000'000;  // per document (kDocuments) or per stream
  std::size_t max_attributes = 64;
};

enum class XmlFraming : std::uint8_t { kDocuments, kStream };

class XmlReader {
 public:
  XmlReader(XmlHandler& handler, XmlLimits limits, XmlFraming framing);
  ~XmlReader();
  XmlReader(const XmlReader&) = delete;
  XmlReader& operator=(const XmlReader&) = delete;

  // Parses bytes. Returns how many were used: fewer than n only when a document
  // ended (kDocuments) or the stream root closed (kStream) inside this chunk; feed the
  // rest again to start the next document. After an error nothing more is parsed.
  std::size_t feed(const char* data, std::size_t n);
  std::size_t feed(std::string_view s) { return feed(s.data(), s.size()); }

  // The input ended: Expat judges what it held back (a token cut off, bytes it could
  // not yet tell apart). False if that is malformed; then error() says why. For a
  // reader whose input has a known end (a file), not for a connection.
  bool finish();
  // Let the handler refuse: stops parsing with this code and message.
  void fail(ErrorCode code, std::string message);
  // From a handler: the XML ends with the current event (an element's end tag, or an
  // empty element); feed() returns the bytes used up to it, and parses nothing more
  // (the link readers switch to frames there: link_frames.h).
  void handOff();
  bool handedOff() const;

  bool failed() const;
  ErrorCode error() const;              // kNone, kMalformed, kLimitExceeded, or what fail() set
  const std::string& errorMessage() const;
  // True between the end of a document (or stream) and the next feed.
  bool documentComplete() const;
  // True once a document's top-level element has started and not yet ended.
  bool inDocument() const;
  // Elements seen in the current document.
  std::uint64_t elementCount() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Escapes text for an attribute value or element content.
std::string xmlEscape(std::string_view s);
void appendXmlEscaped(std::string& out, std::string_view s);
// True when `s` survives xmlEscape() and a parse unchanged: well-formed UTF-8 of XML 1.0
// characters (no control character but tab, newline and carriage return; no surrogate,
// U+FFFE or U+FFFF). The binary forms of the links refuse what XML could not carry.
bool xmlCanCarry(std::string_view s);

}  // namespace lcc::proto
