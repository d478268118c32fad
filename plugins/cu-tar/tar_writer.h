// tar_writer.h — a streaming gzip-compressed POSIX (pax) tar writer over a ByteSink.
//
// Regular files only, mode 0644, uid/gid 0, empty owner names. A name that does not
// fit the ustar name/prefix fields, a size of 8 GiB or more, or an mtime outside the
// ustar range gets a pax extended header ('x') before the member. Content is
// compressed as it arrives (zlib deflate, gzip wrapper); compressed bytes go to the
// sink in blocks of `out_block` bytes. Memory is O(out_block), whatever the sizes.
// THREADS: one thread.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <deque>
#include <future>
#include <string>
#include <string_view>

#include "lcc/byte_sink.h"
#include "lcc/status.h"

namespace lcc::plugins::cu_tar {

class GzipTarWriter {
 public:
  // level: 0 (store) .. 9 (best); out_block: bytes handed to the sink per write.
  // threads > 1: the tar stream is cut into 128 KiB blocks compressed on up to
  // `threads` threads at once (each block primed with the previous 32 KiB as its
  // dictionary, ended with a sync flush, CRCs combined: one ordinary gzip member, as
  // pigz does); memory stays O(threads x block).
  GzipTarWriter(ByteSink& sink, int level, std::size_t out_block, int threads = 1);
  ~GzipTarWriter();
  GzipTarWriter(const GzipTarWriter&) = delete;
  GzipTarWriter& operator=(const GzipTarWriter&) = delete;

  Status init();
  // Starts a member of exactly `size` bytes; then write() exactly that many, then endFile().
  Status beginFile(std::string_view path, std::uint64_t size, std::int64_t mtime);
  Status write(const char* data, std::size_t n);
  Status endFile();
  // The end-of-archive blocks, the gzip trailer, and a flush of the sink.
  Status finish();

  std::uint64_t bytesIn() const { return bytes_in_; }

 private:
  Status writeHeader(std::string_view name, std::uint64_t size, std::int64_t mtime, char type);
  Status deflateIn(const char* data, std::size_t n, int flush);
  Status drain();
  struct Block {
    std::string out;
    unsigned long crc = 0;
    std::size_t len = 0;
    bool ok = true;
  };
  Status submit(bool last);
  Status collect();

  ByteSink& sink_;
  const int level_;
  const int threads_;
  std::string in_;         // parallel: the block being filled
  std::string dict_;       // parallel: the last 32 KiB before in_
  std::deque<std::future<Block>> jobs_;
  unsigned long crc_ = 0;
  std::uint64_t total_ = 0;
  std::string out_;
  z_stream zs_{};
  bool inited_ = false;
  bool failed_ = false;
  std::uint64_t remaining_ = 0;  // bytes still expected in the current member
  std::uint64_t written_ = 0;    // bytes of the current member so far
  std::uint64_t bytes_in_ = 0;   // uncompressed tar bytes
};

}  // namespace lcc::plugins::cu_tar
