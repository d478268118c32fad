#include "sitemap/sitemap.h"

#include <zlib.h>

#include <algorithm>

#include "lcc/support/time_util.h"
#include "proto/xml_reader.h"

namespace lcc::sitemap {
namespace {

using proto::XmlAttrs;
using proto::XmlFraming;
using proto::XmlHandler;
using proto::XmlLimits;
using proto::XmlName;
using proto::XmlReader;

constexpr std::size_t kInflateChunk = 64 * 1024;
constexpr std::size_t kMaxLastmodText = 64;

std::string_view trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

enum class Field : std::uint8_t { kNone, kLoc, kLastmod };
enum class Framing : std::uint8_t { kUndecided, kPlain, kGzip };

}  // namespace

struct SitemapReader::Impl : XmlHandler {
  Impl(OnEntry cb, SitemapLimits lim)
      : on_entry(std::move(cb)),
        limits(lim),
        xml(*this,
            XmlLimits{.max_value_length = 64 * 1024,
                      .max_depth = 16,
                      .max_elements = lim.max_entries * 64 + 64,
                      .max_attributes = 64},
            XmlFraming::kDocuments) {}
  ~Impl() override {
    if (framing == Framing::kGzip) inflateEnd(&zs);
  }

  OnEntry on_entry;
  SitemapLimits limits;
  XmlReader xml;
  std::string error;
  SitemapKind kind = SitemapKind::kUnknown;
  std::uint64_t entries = 0, bad_lastmods = 0, xml_bytes = 0;
  bool root_ended = false;

  // The entry being read.
  bool in_entry = false, has_loc = false;
  Field field = Field::kNone;
  std::string loc, lastmod;

  // Plain or gzip, decided by the first two bytes.
  Framing framing = Framing::kUndecided;
  std::string first_bytes;
  z_stream zs{};
  bool gzip_member_open = false;

  bool refuse(std::string why) {
    if (error.empty()) error = boundedError(std::move(why));
    return false;
  }
  void stop(std::string why) {
    why = boundedError(std::move(why));
    xml.fail(ErrorCode::kMalformed, why);
    refuse(std::move(why));
  }

  // ---- XmlHandler: the elements of a urlset or a sitemapindex.
  void onStart(int depth, const XmlName& name, const XmlAttrs&) override {
    if (depth == 1) return startRoot(name);
    const std::string_view entry = kind == SitemapKind::kUrlSet ? "url" : "sitemap";
    if (depth == 2 && name.ns == kSitemapNs) {
      if (name.local != entry) {
        return stop("a <" + std::string(name.local) + "> inside a <" + rootName() + ">");
      }
      in_entry = true;
      has_loc = false;
      loc.clear();
      lastmod.clear();
    } else if (depth == 3 && in_entry && name.ns == kSitemapNs) {
      field = name.local == "loc" ? Field::kLoc : name.local == "lastmod" ? Field::kLastmod : Field::kNone;
      if (field == Field::kLoc && has_loc) return stop("an entry with two <loc>");
      if (field == Field::kLoc) has_loc = true;
    }
  }
  void startRoot(const XmlName& name) {
    if (name.ns == kSitemapNs && name.local == "urlset") {
      kind = SitemapKind::kUrlSet;
    } else if (name.ns == kSitemapNs && name.local == "sitemapindex") {
      kind = SitemapKind::kIndex;
    } else {
      stop("the root element is <" + std::string(name.local) + "> in namespace \"" + std::string(name.ns) +
           "\", not a <urlset> or <sitemapindex> of " + std::string(kSitemapNs));
    }
  }
  std::string rootName() const { return kind == SitemapKind::kUrlSet ? "urlset" : "sitemapindex"; }

  void onText(int depth, std::string_view text) override {
    if (depth != 3 || !in_entry) return;
    if (field == Field::kLoc) {
      loc.append(text);
      // White space may surround the URL; anything far past the limit is refused now.
      if (loc.size() > limits.max_loc_length + 4096) stop(locTooLong(loc.size()));
    } else if (field == Field::kLastmod && lastmod.size() < kMaxLastmodText) {
      lastmod.append(text.substr(0, kMaxLastmodText - lastmod.size()));
    }
  }
  std::string locTooLong(std::size_t n) const {
    return "a <loc> of " + std::to_string(n) + " characters (the limit is " +
           std::to_string(limits.max_loc_length) + ")";
  }

  void onEnd(int depth, const XmlName&) override {
    if (depth == 3) field = Field::kNone;
    if (depth == 1) root_ended = true;
    if (depth != 2 || !in_entry) return;
    in_entry = false;
    SitemapEntry e;
    e.loc = std::string(trim(loc));
    if (e.loc.empty()) return stop("a <" + std::string(kind == SitemapKind::kUrlSet ? "url" : "sitemap") +
                                   "> without a <loc>");
    if (e.loc.size() > limits.max_loc_length) return stop(locTooLong(e.loc.size()));
    if (++entries > limits.max_entries) {
      return stop("more than " + std::to_string(limits.max_entries) +
                  " entries in one file (sitemaps.org allows 50,000; split it with a sitemap index)");
    }
    if (auto t = trim(lastmod); !t.empty()) {
      e.lastmod = parseW3cDatetime(t);
      if (!e.lastmod) ++bad_lastmods;
    }
    on_entry(e);
  }

  // ---- Bytes of XML, after any gzip. The byte limit cuts at its exact byte, so that
  // what comes out does not depend on how the bytes were split.
  bool feedXml(const char* data, std::size_t n) {
    const std::uint64_t room = limits.max_bytes - xml_bytes;
    const std::size_t take = n > room ? static_cast<std::size_t>(room) : n;
    xml_bytes += take;
    if (!parseXml(data, take)) return false;
    if (take < n) {
      const std::uint64_t mib = 1024 * 1024, max = limits.max_bytes;
      return refuse("more than " + (max % mib == 0 ? std::to_string(max / mib) + " MB" : std::to_string(max) + " bytes") +
                    " uncompressed (sitemaps.org allows 50 MB per file)");
    }
    return true;
  }
  bool parseXml(const char* data, std::size_t n) {
    if (!root_ended) {
      const std::size_t used = xml.feed(data, n);
      if (xml.failed()) return refuse(xml.errorMessage());
      data += used;
      n -= used;
    }
    if (!trim(std::string_view(data, n)).empty()) return refuse("more than white space after the root element");
    return true;
  }

  // ---- Raw bytes: plain XML or a gzip stream of one or more members.
  bool feedRaw(std::string_view bytes) {
    if (framing == Framing::kUndecided) {
      first_bytes.append(bytes);
      if (first_bytes.size() < 2) return true;
      const bool gzip = static_cast<unsigned char>(first_bytes[0]) == 0x1f &&
                        static_cast<unsigned char>(first_bytes[1]) == 0x8b;
      if (gzip && inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return refuse("zlib could not start");
      framing = gzip ? Framing::kGzip : Framing::kPlain;
      std::string all = std::move(first_bytes);
      return feedRaw(all);
    }
    if (framing == Framing::kPlain) return feedXml(bytes.data(), bytes.size());
    return inflateSome(bytes);
  }

  bool inflateSome(std::string_view bytes) {
    if (bytes.empty()) return true;
    char out[kInflateChunk];
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    zs.avail_in = static_cast<uInt>(bytes.size());
    gzip_member_open = true;
    do {  // until the input is used and zlib holds no more output
      zs.next_out = reinterpret_cast<Bytef*>(out);
      zs.avail_out = sizeof out;
      const int rc = inflate(&zs, Z_NO_FLUSH);
      // What was inflated before a bad spot is read first, so that the verdict does not
      // depend on how the input was split (a fuzz property).
      if (!feedXml(out, sizeof out - zs.avail_out)) return false;
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
        return refuse(std::string("not a valid gzip stream: ") + (zs.msg != nullptr ? zs.msg : "inflate failed"));
      }
      if (rc == Z_STREAM_END) {
        inflateReset(&zs);  // another member may follow
        gzip_member_open = zs.avail_in > 0;
        if (!gzip_member_open) break;
      } else if (rc == Z_BUF_ERROR) {
        break;  // no progress possible: it needs more input
      }
    } while (zs.avail_in > 0 || zs.avail_out == 0);
    return true;
  }

  bool finish() {
    if (!error.empty()) return false;
    if (framing == Framing::kUndecided) {
      framing = Framing::kPlain;
      if (!feedXml(first_bytes.data(), first_bytes.size())) return false;
    }
    if (framing == Framing::kGzip && gzip_member_open) return refuse("the gzip stream is cut off");
    // Expat judges what it held back: a malformed last token is malformed XML.
    if (!root_ended && !xml.finish() && kind == SitemapKind::kUnknown) return refuse(xml.errorMessage());
    if (kind == SitemapKind::kUnknown) return refuse("no sitemap in the file (it is empty or has no root element)");
    if (!root_ended) return refuse("the file ends before </" + rootName() + ">");
    return true;
  }
};

std::string boundedError(std::string text) {
  if (text.size() <= kMaxErrorBytes) return text;
  std::size_t cut = kMaxErrorBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  text.resize(cut);
  return text + "…";
}

SitemapReader::SitemapReader(OnEntry on_entry, SitemapLimits limits)
    : impl_(std::make_unique<Impl>(std::move(on_entry), limits)) {}
SitemapReader::~SitemapReader() = default;

bool SitemapReader::feed(std::string_view bytes) {
  if (!impl_->error.empty()) return false;
  return impl_->feedRaw(bytes);
}
bool SitemapReader::finish() { return impl_->finish(); }
SitemapKind SitemapReader::kind() const { return impl_->kind; }
std::uint64_t SitemapReader::entries() const { return impl_->entries; }
std::uint64_t SitemapReader::badLastmods() const { return impl_->bad_lastmods; }
const std::string& SitemapReader::error() const { return impl_->error; }

}  // namespace lcc::sitemap
