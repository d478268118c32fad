// block_spool.h — bytes gathered before they are written, in memory up to a bound and
// in a temporary file past it.
//
// A WARC record states its length and digests before its block, so cu-warc reads a
// record's content once (hashing it) into a spool and then writes the spool out. Memory
// stays O(memory_limit) whatever the content's size. THREADS: one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "lcc/env.h"
#include "lcc/status.h"

namespace lcc::plugins::cu_warc {

class BlockSpool {
 public:
  // `dir` holds the file (created only when memory_limit is passed).
  BlockSpool(Env& env, std::string dir, std::size_t memory_limit);
  ~BlockSpool();
  BlockSpool(const BlockSpool&) = delete;
  BlockSpool& operator=(const BlockSpool&) = delete;

  Status append(std::string_view bytes);
  std::uint64_t size() const { return size_; }
  bool spilled() const { return !path_.empty(); }
  // Calls `fn` on the gathered bytes in order, in pieces of at most `chunk` bytes.
  // It may be read several times; clear() it before the next append().
  Status forEach(std::size_t chunk, const std::function<Status(std::string_view)>& fn);
  // Empties the spool (and removes its file).
  void clear();

 private:
  Status spill();

  Env& env_;
  const std::string dir_;
  const std::size_t memory_limit_;
  std::string memory_;
  std::string path_;
  std::unique_ptr<WritableFile> file_;
  std::uint64_t size_ = 0;
  std::uint64_t in_file_ = 0;
  bool read_ = false;
};

}  // namespace lcc::plugins::cu_warc
