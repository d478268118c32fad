// cu_query.h — the CU query of docs/protocol.md §3: its value, the XML document, the
// HTTP parameters of GET /cu/query, and the query_rejected answer.
//
// WHO: the CU (parses queries from TCP and HTTP), the C API and `lcc cu query`
// (format queries). Pure functions and one incremental parser; no sockets.
// THREADS: values; a CuQueryParser is used by one connection.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lcc/error_codes.h"
#include "lcc/status.h"
#include "lcc/types.h"
#include "proto/xml_reader.h"

namespace lcc::proto {

struct CuQuery {
  std::string format = "xml";             // names an exporter: "xml", "tar.gz"
  bool content = false;                   // content="yes"
  std::vector<ProviderId> providers;      // OR-ed; empty: any
  std::optional<ChangeSeq> since_seq;     // records with seq > this
  std::optional<std::int64_t> since_time; // seconds since the epoch: stored >= this
  std::vector<std::string> mimes;         // "text/html", "text/*"
  std::vector<std::string> prefixes;      // URL prefixes
  bool deleted = false;                   // include tombstones
  std::optional<std::uint64_t> limit;     // at most this many records (0 is "no records")
  // A merged answer's last_seq passed back (`since seq="c1.…"`, cu_cursor.h): checked
  // by the parsers (a mangled one is 100), decoded where it is used. Last, so that
  // positional initialisers of the members above stay valid.
  std::optional<std::string> since_cursor;

  friend bool operator==(const CuQuery&, const CuQuery&) = default;
};

// A refusal: the code and the text that go into <reason>.
struct CuQueryError {
  ErrorCode code = ErrorCode::kMalformed;
  std::string message;
};

// Checks the values of a parsed query (MIME pattern shape, no NUL, at most one
// kind of `since`). Both parsers call it.
std::optional<CuQueryError> validateCuQuery(const CuQuery& q);

// Incremental parser of one <lococa:query> document from a socket.
class CuQueryParser {
 public:
  enum class State : std::uint8_t { kNeedMore, kDone, kFailed };

  // max_bytes bounds the whole document (cu.max_query_bytes): past it, code 101.
  explicit CuQueryParser(std::size_t max_bytes);
  ~CuQueryParser();
  CuQueryParser(const CuQueryParser&) = delete;
  CuQueryParser& operator=(const CuQueryParser&) = delete;

  // Feeds bytes; bytes after the end of the document are ignored.
  State feed(std::string_view bytes);
  // The peer closed before the document ended: turns kNeedMore into kFailed (100).
  State endOfInput();
  State state() const;
  const CuQuery& query() const;        // valid in kDone
  const CuQueryError& error() const;   // valid in kFailed

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Parses a whole document (tests, tools).
Result<CuQuery> parseCuQueryXml(std::string_view doc, CuQueryError* error = nullptr);

// GET /cu/query parameters: format, content, provider (repeatable), since_seq,
// since (RFC 3339 or seconds; alias since_time), mime, prefix (repeatable),
// deleted, limit. yes/no, true/false, 1/0 for the booleans. Unknown parameters are
// ignored (forward compatibility).
std::optional<CuQuery> parseCuQueryParams(const std::multimap<std::string, std::string>& params, CuQueryError* error);

// The query document a client sends.
std::string formatCuQueryXml(const CuQuery& q);

// <lococa:query_rejected ...><reason code="N">text</reason></lococa:query_rejected>
std::string formatQueryRejected(ErrorCode code, std::string_view message);

}  // namespace lcc::proto
