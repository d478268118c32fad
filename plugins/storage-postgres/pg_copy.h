// pg_copy.h — rows in PostgreSQL's binary COPY format, for `COPY … FROM STDIN (FORMAT
// binary)` (PgConn::beginCopy): the fast way to insert rows that are new (a multi-row
// heap insert on the server, no conflict check per row).
//
// Format (PostgreSQL's "Binary Format" of COPY): an 11-byte signature, a 32-bit flags
// field and a 32-bit header-extension length (both 0), then per row a 16-bit field
// count and per field a 32-bit length (-1 = NULL) and its bytes, then a 16-bit -1.
// Integers are big-endian; a bigint field is 8 bytes, a bytea field its raw bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lcc::plugins::postgres {

class PgCopyRows {
 public:
  // Writes into `*out` (cleared; its capacity is kept, so a buffer reused from batch
  // to batch is not allocated and faulted in again), reserving `reserve` bytes.
  PgCopyRows(std::string* out, std::size_t reserve);
  // Starts a row of `fields` fields; the caller then adds exactly that many.
  PgCopyRows& row(int fields);
  PgCopyRows& bytes(std::string_view v);  // bytea
  PgCopyRows& i64(std::int64_t v);        // bigint
  PgCopyRows& optBytes(const std::optional<std::string>& v) { return v ? bytes(*v) : null(); }
  PgCopyRows& optI64(const std::optional<std::int64_t>& v) { return v ? i64(*v) : null(); }
  PgCopyRows& null();

  std::uint64_t rows() const { return rows_; }
  // Appends the trailer: *out is the whole stream. The builder is spent.
  void finish();

  // Bytes a field takes in the stream (its length word and its bytes).
  static std::size_t fieldBytes(std::size_t value_bytes) { return 4 + value_bytes; }
  static constexpr std::size_t kRowBytes = 2;       // a row's field count
  static constexpr std::size_t kStreamBytes = 21;   // header and trailer

 private:
  void be(std::uint64_t v, int bytes);
  std::string& buf_;
  std::uint64_t rows_ = 0;
};

}  // namespace lcc::plugins::postgres
