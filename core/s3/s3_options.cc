#include "s3/s3_options.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "common/config/config.h"

namespace lcc::s3 {

std::string S3Options::machinePrefix(std::string_view machine) const {
  std::string out = key_prefix;
  out.append(machine).append("/");
  return out;
}

std::string S3Options::objectKey(std::string_view machine, std::string_view file) const {
  std::string out = machinePrefix(machine);
  out.append(file);
  return out;
}

namespace {
Result<std::string> readSecret(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::invalidArgument("s3.secret_key_file: cannot read " + path);
  if ((st.st_mode & 077) != 0) {
    return Status::invalidArgument("s3.secret_key_file: " + path + " is readable by group or others (chmod 600)");
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  if (s.empty()) return Status::invalidArgument("s3.secret_key_file: " + path + " is empty");
  return s;
}
}  // namespace

Result<S3Options> S3Options::fromConfig(const Config& cfg, const std::string& data_dir) {
  S3Options o;
  static constexpr std::pair<std::string S3Options::*, const char*> kStrings[] = {
      {&S3Options::endpoint, "s3.endpoint"},
      {&S3Options::bucket, "s3.bucket"},
      {&S3Options::region, "s3.region"},
      {&S3Options::access_key, "s3.access_key"},
      {&S3Options::key_prefix, "s3.key_prefix"}};
  for (const auto& [member, key] : kStrings) o.*member = cfg.getString(key);
  o.connect_timeout = Millis(cfg.getInt("s3.connect_timeout"));
  o.timeout = Millis(cfg.getInt("s3.timeout"));
  o.upload_threads = static_cast<std::uint32_t>(cfg.getInt("s3.upload_threads"));
  while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
  if (!o.enabled()) return o;
  if (o.endpoint.rfind("http://", 0) != 0 && o.endpoint.rfind("https://", 0) != 0) {
    return Status::invalidArgument("s3.endpoint: must start with http:// or https:// (got " + o.endpoint + ")");
  }
  std::string file = cfg.getString("s3.secret_key_file");
  if (o.access_key.empty() || file.empty()) {
    return Status::invalidArgument("s3.endpoint is set: s3.access_key and s3.secret_key_file are needed");
  }
  if (file.front() != '/') file = data_dir + "/" + file;
  auto secret = readSecret(file);
  if (!secret.isOk()) return secret.status();
  o.secret_key = std::move(*secret);
  return o;
}

}  // namespace lcc::s3
