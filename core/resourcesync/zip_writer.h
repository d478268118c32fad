// zip_writer.h — a ZIP package written front to back into a ByteSink (libarchive's
// zip writer): entries one after the other, never a seek, so a package of any size
// streams in bounded memory (libarchive's block and deflate buffers). Entries are
// deflated; an entry whose size is not known in advance gets its sizes after its data
// (a data descriptor, Zip64), which every ZIP reader (unzip, Python's zipfile) follows.
// THREADS: one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lcc/byte_sink.h"
#include "lcc/status.h"
#include "lcc/types.h"

struct archive;

namespace lcc::resourcesync {

class ZipWriter {
 public:
  explicit ZipWriter(ByteSink& sink);
  ~ZipWriter();
  ZipWriter(const ZipWriter&) = delete;
  ZipWriter& operator=(const ZipWriter&) = delete;

  Status open();
  // Starts the entry `name` (relative, '/'-separated); the previous entry ends here.
  Status begin(const std::string& name, WallTime mtime, std::optional<std::uint64_t> size);
  Status write(std::string_view bytes);
  // Ends the last entry and writes the central directory. Without it the package is
  // not a valid ZIP (that is how a failed dump shows).
  Status finish();

 private:
  static long onWrite(struct archive* a, void* self, const void* buf, std::size_t n);
  Status failure(const char* what);

  ByteSink& sink_;
  struct archive* a_ = nullptr;
  Status sink_error_;
  bool sealed_ = false;  // finished, or being destroyed: no more bytes to the sink
};

}  // namespace lcc::resourcesync
