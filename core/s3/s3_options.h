// s3_options.h — where content lives when it is kept in an S3-compatible object store
// (issue 31 §1): the s3.* keys, and the object key of a content file.
//
// Content of every machine then goes to one bucket: the object key of the file a
// BOT-M named <d1>/<d2>/<n> is <s3.key_prefix><machine>/<d1>/<d2>/<n>. The machine is
// the namespace of the FilenameStore that issued the name (node.machine_id of that
// BOT-M), not the host that fetched or reads it, so any host reaches any record's bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lcc/status.h"
#include "lcc/types.h"

namespace lcc {
class Config;
}

namespace lcc::s3 {

// Members with a config key carry no default: fromConfig() reads the schema's.
struct S3Options {
  std::string endpoint;    // s3.endpoint: http(s)://host:port; empty: content stays in files
  std::string bucket;      // s3.bucket
  std::string region;      // s3.region (the SigV4 scope)
  std::string access_key;  // s3.access_key
  std::string secret_key;  // the contents of s3.secret_key_file (never logged)
  std::string key_prefix;  // s3.key_prefix
  Millis connect_timeout{0};  // s3.connect_timeout
  Millis timeout{0};          // s3.timeout: one whole request
  std::uint32_t upload_threads = 0;  // s3.upload_threads: PUTs at once of one node's robots (0: the caller's choice)

  bool enabled() const { return !endpoint.empty(); }
  // The object key of `file` (a FilenameStore name) of `machine`.
  std::string objectKey(std::string_view machine, std::string_view file) const;
  // The key prefix under which `machine`'s objects lie ("<key_prefix><machine>/").
  std::string machinePrefix(std::string_view machine) const;

  // Reads the s3.* keys; the secret from s3.secret_key_file (relative to data_dir),
  // which must not be readable by group or others. Not OK: a configuration problem.
  static Result<S3Options> fromConfig(const Config& config, const std::string& data_dir);
};

}  // namespace lcc::s3
