// lcc/exporter.h — a CU output format (cu-xml, cu-tar): docs/protocol.md §3.
//
// WHO CALLS IT: the CU query engine, once per query: begin(), add() per record in
// change-sequence order, finish(). The same exporter serves TCP, HTTP and files
// because it only sees a ByteSink.
// THREADS: an Exporter is thread-safe (several queries run at once); each
// ExportStream is used by one thread. A stream must not outlive its Exporter.
// MEMORY: a stream keeps O(1) state per record at most for bounded manifests; it
// streams content through, never holding a whole record's content in memory.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "lcc/byte_sink.h"
#include "lcc/env.h"
#include "lcc/status.h"
#include "lcc/types.h"

namespace lcc {

// What is known before the first record (a counting pass runs first).
struct ExportHeader {
  std::uint64_t count = 0;    // records that add() will receive
  ChangeSeq last_seq = 0;     // what to pass as `since seq` next time
  bool with_content = false;  // content="yes" (tar.gz always includes content)
  std::string temp_dir;       // where a stream may keep temporary files
  // A merged answer of several LCCs (docs/protocol.md §3.4): not empty, it is written as
  // last_seq instead of the number (the cursor token c1.…).
  std::string cursor;
  // A merged answer: the sources left out ("url: why; …"), the root's `unreachable`.
  std::string unreachable;
};

// What the answer writes as last_seq: the cursor token of a merged answer, else the seq.
inline std::string lastSeqText(const ExportHeader& h) {
  return h.cursor.empty() ? std::to_string(h.last_seq) : h.cursor;
}

class ExportStream {
 public:
  virtual ~ExportStream() = default;
  // `content` is null for tombstones and when content is not wanted or not readable.
  virtual Status add(const ContentRecord& record, ContentSource* content) = 0;
  // Writes whatever closes the format and flushes the sink.
  virtual Status finish() = 0;
};

class Exporter {
 public:
  virtual ~Exporter() = default;
  Exporter() = default;
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  // The `format` value of a query that selects this exporter ("xml", "tar.gz").
  virtual std::string_view format() const = 0;
  // HTTP Content-Type of the output.
  virtual std::string_view contentType() const = 0;
  // True when the format always carries content (tar.gz).
  virtual bool alwaysContent() const = 0;
  virtual Result<std::unique_ptr<ExportStream>> begin(ByteSink& sink, const ExportHeader& header) = 0;
};

}  // namespace lcc
