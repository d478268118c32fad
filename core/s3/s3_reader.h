// s3_reader.h — one object read piece by piece (a pull), for a CU export's ContentSource.
//
// The GET runs on libcurl's multi interface: read() drives it until some bytes are
// there, and the transfer pauses once kHighWater bytes wait unread, so memory stays
// bounded whatever the object's size and however slowly the export's client reads.
// open() waits for the answer's header block: a missing object is NotFound, a refusal
// (403) an IOError, before any byte is read. A transfer that moves less than 1 byte/s
// for s3.timeout (not counting the time it is paused) fails.
// THREADS: one thread at a time.
#pragma once

#include <memory>
#include <string>

#include "lcc/status.h"
#include "s3/s3_options.h"

namespace lcc::s3 {

class S3Reader {
 public:
  static constexpr std::size_t kHighWater = 256 * 1024;

  static Result<std::unique_ptr<S3Reader>> open(const S3Options& options, const std::string& key);
  ~S3Reader();
  S3Reader(const S3Reader&) = delete;
  S3Reader& operator=(const S3Reader&) = delete;

  std::uint64_t size() const;  // Content-Length of the answer
  // x-amz-meta-lcc-head of the object: the robot's stored head, base64; empty if none.
  const std::string& responseHeadBase64() const;
  // Up to n bytes; 0 at the end; IOError when the transfer fails mid-way.
  Result<std::size_t> read(char* buf, std::size_t n);

 private:
  struct Impl;
  explicit S3Reader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace lcc::s3
