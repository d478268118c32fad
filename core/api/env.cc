// env.cc — the helpers Env builds on its primitives (lcc/env.h).
#include "lcc/env.h"

namespace lcc {

Result<std::string> Env::readFile(const std::string& path) {
  LCC_ASSIGN_OR_RETURN(auto file, openReadable(path));
  std::string out;
  char buf[65536];
  std::uint64_t off = 0;
  for (;;) {
    LCC_ASSIGN_OR_RETURN(std::size_t n, file->read(off, sizeof buf, buf));
    if (n == 0) break;
    out.append(buf, n);
    off += n;
  }
  return out;
}

Status Env::writeFileAtomic(const std::string& path, std::string_view data) {
  const std::string tmp = path + ".tmp";
  {
    LCC_ASSIGN_OR_RETURN(auto file, openWritable(tmp, OpenMode::kTruncate));
    LCC_RETURN_IF_ERROR(file->append(data));
    LCC_RETURN_IF_ERROR(file->sync());
    LCC_RETURN_IF_ERROR(file->close());
  }
  LCC_RETURN_IF_ERROR(rename(tmp, path));
  auto slash = path.rfind('/');
  return syncDir(slash == std::string::npos ? std::string(".") : path.substr(0, slash == 0 ? 1 : slash));
}

}  // namespace lcc
