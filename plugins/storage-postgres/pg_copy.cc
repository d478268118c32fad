#include "pg_copy.h"

namespace lcc::plugins::postgres {

PgCopyRows::PgCopyRows(std::string* out, std::size_t reserve) : buf_(*out) {
  buf_.clear();
  buf_.reserve(reserve);
  static constexpr char kSignature[] = "PGCOPY\n\377\r\n";  // + its terminating NUL: 11 bytes
  buf_.append(kSignature, sizeof kSignature);
  be(0, 4);  // flags: no OIDs
  be(0, 4);  // no header extension
}

void PgCopyRows::be(std::uint64_t v, int bytes) {
  char b[8];
  for (int i = bytes - 1; i >= 0; --i, v >>= 8) b[i] = static_cast<char>(v & 0xff);
  buf_.append(b, static_cast<std::size_t>(bytes));
}

PgCopyRows& PgCopyRows::row(int fields) {
  ++rows_;
  be(static_cast<std::uint64_t>(fields), 2);
  return *this;
}

PgCopyRows& PgCopyRows::bytes(std::string_view v) {
  be(v.size(), 4);
  buf_.append(v.data(), v.size());
  return *this;
}

PgCopyRows& PgCopyRows::i64(std::int64_t v) {
  be(8, 4);
  be(static_cast<std::uint64_t>(v), 8);
  return *this;
}

PgCopyRows& PgCopyRows::null() {
  be(0xffffffffu, 4);  // length -1
  return *this;
}

void PgCopyRows::finish() {
  be(0xffff, 2);  // field count -1: the end
}

}  // namespace lcc::plugins::postgres
