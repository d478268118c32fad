#include "warc_writer.h"

#include <openssl/evp.h>
#include <sodium.h>

#include <cstdio>
#include <ctime>

namespace lcc::plugins::cu_warc {

std::string base32(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  std::string out;
  out.reserve((bytes.size() + 4) / 5 * 8);
  std::uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 5) {
      out.push_back(kAlphabet[(buffer >> (bits - 5)) & 31]);
      bits -= 5;
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(buffer << (5 - bits)) & 31]);
  while (out.size() % 8 != 0) out.push_back('=');
  return out;
}

Sha1::Sha1() : ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha1(), nullptr);
}

Sha1::~Sha1() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha1::update(std::string_view bytes) {
  if (!bytes.empty()) EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), bytes.data(), bytes.size());
}

std::string Sha1::warcDigest() {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), d, &n);
  return "sha1:" + base32(std::string_view(reinterpret_cast<const char*>(d), n));
}

RandomSource systemRandom() {
  // sodium_init() is idempotent and thread-safe; randombytes_buf needs it first.
  if (sodium_init() < 0) return nullptr;
  return [](unsigned char* out, std::size_t n) { randombytes_buf(out, n); };
}

std::string newRecordId(const RandomSource& random) {
  unsigned char b[16];
  random(b, sizeof b);
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "<urn:uuid:";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[b[i] >> 4]);
    out.push_back(kHex[b[i] & 15]);
  }
  out.push_back('>');
  return out;
}

std::string warcDate(std::int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

std::string warcUri(std::string_view url) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(url.size());
  for (unsigned char c : url) {
    if (c <= 0x20 || c >= 0x7f || c == '<' || c == '>' || c == '"') {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

std::string warcHeader(const WarcFields& fields) {
  std::string out = "WARC/1.1\r\n";
  for (const auto& [name, value] : fields) out.append(name).append(": ").append(value).append("\r\n");
  out.append("\r\n");
  return out;
}

// ---- GzipMemberWriter ------------------------------------------------------------

GzipMemberWriter::GzipMemberWriter(ByteSink& sink, int level, std::size_t out_block)
    : sink_(sink), level_(level), out_block_(out_block) {}

GzipMemberWriter::~GzipMemberWriter() {
  if (ready_) deflateEnd(&zs_);
}

Status GzipMemberWriter::init() {
  // windowBits 15 + 16: a gzip wrapper (header and CRC-32/size trailer) per member.
  if (deflateInit2(&zs_, level_, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Status::internal("cu-warc: deflateInit2 failed");
  }
  ready_ = true;
  out_.reserve(out_block_ + 64 * 1024);
  return Status::ok();
}

Status GzipMemberWriter::deflateIn(std::string_view bytes, int flush) {
  zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs_.avail_in = static_cast<uInt>(bytes.size());
  unsigned char buf[32 * 1024];
  for (;;) {
    zs_.next_out = buf;
    zs_.avail_out = sizeof buf;
    const int rc = deflate(&zs_, flush);
    if (rc == Z_STREAM_ERROR) return Status::internal("cu-warc: deflate failed");
    out_.append(reinterpret_cast<const char*>(buf), sizeof buf - zs_.avail_out);
    if (out_.size() >= out_block_) LCC_RETURN_IF_ERROR(drainOut());
    if (flush == Z_FINISH ? rc == Z_STREAM_END : (zs_.avail_in == 0 && zs_.avail_out != 0)) break;
  }
  return Status::ok();
}

Status GzipMemberWriter::write(std::string_view bytes) {
  // zlib counts in uInt: feed very large pieces in parts.
  constexpr std::size_t kPart = 1 << 30;
  while (bytes.size() > kPart) {
    LCC_RETURN_IF_ERROR(deflateIn(bytes.substr(0, kPart), Z_NO_FLUSH));
    bytes.remove_prefix(kPart);
  }
  return deflateIn(bytes, Z_NO_FLUSH);
}

Status GzipMemberWriter::endMember() {
  LCC_RETURN_IF_ERROR(deflateIn({}, Z_FINISH));
  if (deflateReset(&zs_) != Z_OK) return Status::internal("cu-warc: deflateReset failed");
  return Status::ok();
}

Status GzipMemberWriter::drainOut() {
  if (out_.empty()) return Status::ok();
  Status s = sink_.write(out_);
  out_.clear();
  return s;
}

Status GzipMemberWriter::finish() {
  LCC_RETURN_IF_ERROR(drainOut());
  return sink_.flush();
}

}  // namespace lcc::plugins::cu_warc
