#include "warc_reader.h"

#include <openssl/sha.h>
#include <zlib.h>

#include <cstdlib>

namespace lcc::cutest {
namespace {

std::string sha1Raw(std::string_view bytes) {
  unsigned char d[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), d);
  return std::string(reinterpret_cast<const char*>(d), sizeof d);
}

// "" when `digest` is "sha1:<base32>" of `bytes`, else why not.
std::string checkDigest(const std::string& digest, std::string_view bytes) {
  if (digest.rfind("sha1:", 0) != 0) return "not a sha1: digest: " + digest;
  std::string raw;
  if (!base32Decode(digest.substr(5), raw)) return "bad base32 in " + digest;
  return raw == sha1Raw(bytes) ? std::string() : "digest mismatch: " + digest;
}

// Parses one member's bytes as exactly one record; "" or why not.
std::string parseRecord(const std::string& m, WarcRecordOut& rec) {
  if (m.rfind("WARC/1.1\r\n", 0) != 0) return "a member does not start with WARC/1.1";
  const auto end = m.find("\r\n\r\n");
  if (end == std::string::npos) return "no end of the WARC header";
  std::size_t p = 10;
  while (p < end + 2) {
    const auto eol = m.find("\r\n", p);
    const std::string line = m.substr(p, eol - p);
    const auto colon = line.find(": ");
    if (colon == std::string::npos) return "bad header line: " + line;
    rec.fields.emplace_back(line.substr(0, colon), line.substr(colon + 2));
    p = eol + 2;
  }
  const std::string length = rec.field("Content-Length");
  if (length.empty()) return "no Content-Length";
  const std::size_t n = std::strtoull(length.c_str(), nullptr, 10);
  const std::size_t start = end + 4;
  if (m.size() != start + n + 4) return "member is not one record of Content-Length " + length;
  if (m.compare(start + n, 4, "\r\n\r\n") != 0) return "record does not end with CRLF CRLF";
  rec.block = m.substr(start, n);
  for (const char* name : {"WARC-Type", "WARC-Record-ID", "WARC-Date", "Content-Type"}) {
    if (rec.field(name).empty()) return std::string("no ") + name;
  }
  if (std::string why = checkDigest(rec.field("WARC-Block-Digest"), rec.block); !why.empty()) return "block " + why;
  if (!rec.field("WARC-Payload-Digest").empty()) {
    if (std::string why = checkDigest(rec.field("WARC-Payload-Digest"), rec.payload()); !why.empty()) {
      return "payload " + why;
    }
  }
  return {};
}

}  // namespace

std::string WarcRecordOut::field(const std::string& name) const {
  for (const auto& [k, v] : fields) {
    if (k == name) return v;
  }
  return {};
}

std::string WarcRecordOut::payload() const {
  if (field("WARC-Type") != "response") return block;
  const auto end = block.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : block.substr(end + 4);
}

std::vector<std::string> gunzipMembers(const std::string& gz, std::string* error) {
  std::vector<std::string> out;
  std::size_t off = 0;
  while (off < gz.size() && error->empty()) {
    z_stream zs{};
    if (inflateInit2(&zs, 15 + 16) != Z_OK) {
      *error = "inflateInit2";
      break;
    }
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data() + off));
    zs.avail_in = static_cast<uInt>(gz.size() - off);
    std::string member;
    char buf[65536];
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      zs.next_out = reinterpret_cast<Bytef*>(buf);
      zs.avail_out = sizeof buf;
      rc = inflate(&zs, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END) {
        *error = std::string("inflate: ") + (zs.msg ? zs.msg : std::to_string(rc));
        break;
      }
      member.append(buf, sizeof buf - zs.avail_out);
      if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
        *error = "gzip member truncated";
        break;
      }
    }
    off = gz.size() - zs.avail_in;
    inflateEnd(&zs);
    out.push_back(std::move(member));
  }
  return out;
}

bool base32Decode(std::string_view in, std::string& out) {
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= '2' && c <= '7') v = c - '2' + 26;
    else if (c == '=') break;
    else return false;
    acc = (acc << 5) | static_cast<std::uint32_t>(v);
    bits += 5;
    if (bits >= 8) {
      out.push_back(static_cast<char>((acc >> (bits - 8)) & 0xff));
      bits -= 8;
    }
  }
  return true;
}

WarcAnswer parseWarcAnswer(const std::string& gz) {
  WarcAnswer a;
  std::string err;
  std::vector<std::string> members = gunzipMembers(gz, &err);
  for (const auto& m : members) {
    if (!err.empty()) break;
    WarcRecordOut rec;
    err = parseRecord(m, rec);
    a.records.push_back(std::move(rec));
  }
  if (err.empty() && (a.records.size() < 2 || a.records.front().field("WARC-Type") != "warcinfo")) {
    err = "the first record is not warcinfo";
  }
  if (err.empty()) {
    const WarcRecordOut& last = a.records.back();
    if (last.field("WARC-Type") != "metadata" || last.field("WARC-Target-URI").find("MANIFEST.xml") == std::string::npos) {
      err = "the last record is not the MANIFEST.xml metadata record";
    } else {
      a.manifest = parseXmlAnswer(last.block);
      if (!a.manifest.ok) err = "MANIFEST.xml: " + a.manifest.error;
    }
  }
  a.error = err;
  a.ok = err.empty();
  return a;
}

}  // namespace lcc::cutest
