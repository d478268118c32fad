// warc_writer.h — WARC/1.1 records (ISO 28500:2017), each its own gzip member.
//
// The pieces cu-warc puts together: SHA-1 digests spelled `sha1:<base32>` (as Heritrix
// and wget write them), record ids `<urn:uuid:...>` (version 4, from an injectable
// random source), header blocks, and a gzip writer that closes a member after every
// record, so a reader can seek to any record's offset (the WARC "record at a time"
// compression, section D.2 of the standard). THREADS: one thread per object.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lcc/byte_sink.h"
#include "lcc/status.h"

namespace lcc::plugins::cu_warc {

// RFC 4648 base32 (A-Z2-7) with '=' padding to a multiple of 8 characters; a SHA-1
// (20 bytes) gives 32 characters and no padding.
std::string base32(std::string_view bytes);

// Incremental SHA-1 (OpenSSL libcrypto).
class Sha1 {
 public:
  Sha1();
  ~Sha1();
  Sha1(const Sha1&) = delete;
  Sha1& operator=(const Sha1&) = delete;
  void update(std::string_view bytes);
  // "sha1:<base32 of the 20-byte digest>"; ends the digest (call once).
  std::string warcDigest();

 private:
  void* ctx_;  // EVP_MD_CTX
};

// Fills `n` bytes with random bytes.
using RandomSource = std::function<void(unsigned char* out, std::size_t n)>;
// libsodium's randombytes_buf.
RandomSource systemRandom();
// "<urn:uuid:xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx>" from 16 random bytes (version 4).
std::string newRecordId(const RandomSource& random);

// WARC-Date: "YYYY-MM-DDThh:mm:ssZ".
std::string warcDate(std::int64_t unix_seconds);

// A WARC-Target-URI value that cannot break the header: bytes outside printable
// ASCII, space, '<', '>' and '"' are percent-encoded.
std::string warcUri(std::string_view url);

using WarcFields = std::vector<std::pair<std::string, std::string>>;
// "WARC/1.1\r\n" + "Name: value\r\n"... + "\r\n". Values are written as given (the
// caller passes only values that hold no CR or LF).
std::string warcHeader(const WarcFields& fields);
// Ends a record's block.
inline constexpr std::string_view kRecordEnd = "\r\n\r\n";

// Writes gzip members to a sink: begin(), write()..., end() makes one member.
// Compressed bytes go to the sink in writes of about `out_block` bytes.
class GzipMemberWriter {
 public:
  GzipMemberWriter(ByteSink& sink, int level, std::size_t out_block);
  ~GzipMemberWriter();
  GzipMemberWriter(const GzipMemberWriter&) = delete;
  GzipMemberWriter& operator=(const GzipMemberWriter&) = delete;

  Status init();
  Status write(std::string_view bytes);
  // Closes the member (Z_FINISH) and starts the next one.
  Status endMember();
  // Hands what is buffered to the sink and flushes it.
  Status finish();

 private:
  Status deflateIn(std::string_view bytes, int flush);
  Status drainOut();

  ByteSink& sink_;
  const int level_;
  const std::size_t out_block_;
  z_stream zs_{};
  bool ready_ = false;
  std::string out_;
};

}  // namespace lcc::plugins::cu_warc
