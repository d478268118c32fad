// cli_cp_scan.cc — a folder tree as <url/> lines, and its state (cli_cp_sources.h).
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "app/cli_cp_sources.h"
#include "common/md5.h"
#include "common/posix_env.h"
#include "http/url_codec.h"
#include "lcc/support/time_util.h"

namespace lcc::cli {

namespace fs = std::filesystem;

namespace {

bool parseStateLine(const std::string& line, std::string& key, FileState& s) {
  std::vector<std::string> f;
  std::size_t start = 0;
  for (;;) {
    auto tab = line.find('\t', start);
    f.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) break;
    start = tab + 1;
  }
  if (f.size() != 5) return false;
  try {
    s.size = std::stoull(f[1]);
    s.mtime_ns = std::stoll(f[2]);
  } catch (...) {
    return false;
  }
  key = f[0];
  s.md5 = f[3];
  s.mime = f[4];
  return true;
}

bool hashFile(const fs::path& path, std::string& hex) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  Md5 md5;
  char buf[65536];
  while (f.read(buf, sizeof buf) || f.gcount() > 0) md5.update(std::string_view(buf, static_cast<std::size_t>(f.gcount())));
  if (f.bad()) return false;
  hex = md5.hexDigest();
  return true;
}

// Whole seconds, rounded down (as st_mtim.tv_sec).
std::int64_t mtimeSeconds(std::int64_t ns) {
  std::int64_t s = ns / 1000000000LL;
  return ns % 1000000000LL < 0 ? s - 1 : s;
}

}  // namespace

bool loadScanState(const std::string& path, ScanState& state, bool* found, std::string* err) {
  std::ifstream in(path);
  *found = static_cast<bool>(in);
  if (!in) return true;  // first scan
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::string key;
    FileState s;
    if (!parseStateLine(line, key, s)) {
      *err = path + ":" + std::to_string(n) + ": not a scan state line";
      return false;
    }
    state[key] = s;
  }
  return true;
}

Status saveScanState(const std::string& path, const ScanState& state) {
  std::string text = "# lcc cp scan state: path size mtime_ns md5 mime\n";
  for (const auto& [key, s] : state) {
    text += key + "\t" + std::to_string(s.size) + "\t" + std::to_string(s.mtime_ns) + "\t" + s.md5 + "\t" + s.mime + "\n";
  }
  std::error_code ec;
  return posixEnv()->writeFileAtomic(fs::absolute(path, ec).string(), text);
}

bool scanTree(const std::string& dir, const std::vector<std::string>& skip, const MimeMap& mime,
              const ScanState& old_state, std::vector<ScannedFile>& out, TtyProgress& progress, std::string* err) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    *err = dir + " is not a folder";
    return false;
  }
  const fs::path root = fs::path(dir);
  std::vector<std::pair<std::string, fs::path>> files;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const auto& entry = *it;
    if (!entry.is_regular_file(ec) || entry.is_symlink(ec)) continue;
    std::string rel = fs::relative(entry.path(), root, ec).generic_string();
    if (ec || rel.empty()) continue;
    std::error_code eq;
    if (std::any_of(skip.begin(), skip.end(), [&](const std::string& s) { return !s.empty() && fs::equivalent(entry.path(), s, eq); })) continue;
    files.emplace_back(http::percentEncode(rel, "/"), entry.path());
  }
  if (ec) {
    *err = dir + ": " + ec.message();
    return false;
  }
  std::sort(files.begin(), files.end());
  std::uint64_t done = 0, changed = 0;
  auto line = [&] {
    return "scanned " + std::to_string(done) + " of " + std::to_string(files.size()) + " files, " +
           std::to_string(changed) + " new or changed";
  };
  for (const auto& [key, path] : files) {
    ++done;
    progress.update(line);
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) continue;  // vanished while scanning
    ScannedFile f;
    f.key = key;
    f.state.size = static_cast<std::uint64_t>(st.st_size);
    f.state.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
    std::string ext = path.extension().string();
    if (!ext.empty()) ext.erase(0, 1);
    f.state.mime = mime.forExtension(ext);
    auto old = old_state.find(key);
    if (old != old_state.end() && old->second.size == f.state.size && old->second.mtime_ns == f.state.mtime_ns &&
        old->second.mime == f.state.mime) {
      f.state.md5 = old->second.md5;
    } else if (hashFile(path, f.state.md5)) {
      f.changed = true;
      ++changed;
    } else {
      std::fprintf(stderr, "lcc cp: cannot read %s (skipped)\n", path.c_str());
      continue;
    }
    out.push_back(std::move(f));
  }
  progress.done(line());
  return true;
}

proto::UrlAttrs scanUpdateAttrs(const std::string& base_url, const ScannedFile& f) {
  return {{"c", base_url + f.key},
          {"m", f.state.mime},
          {"sz", std::to_string(f.state.size)},
          {"md5", f.state.md5},
          {"mt", formatRfc3339(mtimeSeconds(f.state.mtime_ns))}};
}

proto::UrlAttrs scanDeleteAttrs(const std::string& base_url, const std::string& key, const FileState& s) {
  return {{"c", base_url + key}, {"m", s.mime}, {"op", "delete"}};
}

std::string scanBaseUrl(std::string base) {
  if (base.rfind("http://", 0) != 0 && base.rfind("https://", 0) != 0) return "";
  if (base.back() != '/') base.push_back('/');
  return base;
}

}  // namespace lcc::cli
