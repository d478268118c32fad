// resource_dump.cc — a Resource Dump package: manifest scan, files scan (resource_dump.h).
#include "resourcesync/resource_dump.h"

#include <cctype>
#include <optional>

#include "common/md5.h"
#include "resourcesync/zip_writer.h"

namespace lcc::resourcesync {
namespace {

constexpr std::size_t kReadBuffer = 64 * 1024;

// What the manifest listed: the first and last key, and how many.
struct Listed {
  std::optional<UrlKey> first;
  std::optional<UrlKey> last;
  std::uint64_t count = 0;
};

// The file's time in the package: the resource's own time, as in its <lastmod>.
WallTime fileTime(const ContentRecord& r) { return r.mtime ? fromUnixMillis(*r.mtime * 1000) : r.stored; }

class Package {
 public:
  Package(ByteSink& sink, ContentStore& store, DumpContent& content, const Options& o, ProviderId pid)
      : zip_(sink), store_(store), content_(content), o_(o), pid_(pid) {}

  Status write(std::uint64_t n, WallTime at) {
    auto top = store_.maxSeq();
    if (!top.isOk()) return top.status().withContext("reading the LCC DB");
    top_ = top.value();
    LCC_RETURN_IF_ERROR(zip_.open());
    LCC_RETURN_IF_ERROR(manifest((n - 1) * o_.page_size, at));
    if (listed_.count > 0) LCC_RETURN_IF_ERROR(files());
    return zip_.finish();
  }

 private:
  bool dumped(const ContentRecord& r) const { return !r.deleted && r.seq <= top_; }

  // manifest.xml: the page_size dumped records after the first `skip`.
  Status manifest(std::uint64_t skip, WallTime at) {
    LCC_RETURN_IF_ERROR(zip_.begin("manifest.xml", at, std::nullopt));
    LCC_RETURN_IF_ERROR(zip_.write(manifestHead(o_, pid_, at)));
    std::uint64_t position = 0;
    Status err;
    Status s = store_.scanProvider(pid_, [&](const ContentRecord& r) {
      if (!dumped(r) || position++ < skip) return true;
      if (!listed_.first) listed_.first = r.key;
      listed_.last = r.key;
      ++listed_.count;
      err = zip_.write(manifestEntry(r, resourcePath(r)));
      return err.isOk() && listed_.count < o_.page_size;
    });
    LCC_RETURN_IF_ERROR(err);
    LCC_RETURN_IF_ERROR(s.withContext("reading the LCC DB"));
    return zip_.write(manifestTail());
  }

  // The files, in the manifest's order: the dumped records from its first key to its last.
  Status files() {
    bool inside = false;
    std::uint64_t written = 0;
    Status err;
    Status s = store_.scanProvider(pid_, [&](const ContentRecord& r) {
      if (!inside && !(r.key == *listed_.first)) return true;
      inside = true;
      if (dumped(r)) {
        err = file(r);
        if (!err.isOk()) return false;
        ++written;
      }
      return !(r.key == *listed_.last);
    });
    LCC_RETURN_IF_ERROR(err);
    LCC_RETURN_IF_ERROR(s.withContext("reading the LCC DB"));
    if (written != listed_.count) {
      return Status::aborted("the provider's content changed while the package was written (" +
                             std::to_string(written) + " of the " + std::to_string(listed_.count) +
                             " files of its manifest are still stored as listed); ask again");
    }
    return Status::ok();
  }

  Status file(const ContentRecord& r) {
    std::string why;
    auto src = content_.open(r, &why);
    if (!src) return Status::ioError("the content of " + r.key.url + " cannot be read: " + why);
    const std::string path = resourcePath(r);
    LCC_RETURN_IF_ERROR(zip_.begin(path.substr(1), fileTime(r), r.size));
    std::string buf(kReadBuffer, '\0');
    std::uint64_t total = 0;
    for (;;) {
      LCC_ASSIGN_OR_RETURN(std::size_t got, src->read(buf.data(), buf.size()));
      if (got == 0) break;
      total += got;
      md5_.update(std::string_view(buf.data(), got));
      LCC_RETURN_IF_ERROR(zip_.write(std::string_view(buf.data(), got)));
    }
    const std::string digest = md5_.hexDigest();
    if (total != r.size || (!r.md5.empty() && digest != r.md5)) {
      return Status::aborted("the content of " + r.key.url + " changed while the package was written (" +
                             std::to_string(total) + " bytes, md5 " + digest + "; the manifest says " +
                             std::to_string(r.size) + ", " + r.md5 + "); ask again");
    }
    return Status::ok();
  }

  ZipWriter zip_;
  ContentStore& store_;
  DumpContent& content_;
  const Options& o_;
  const ProviderId pid_;
  ChangeSeq top_ = 0;
  Listed listed_;
  Md5 md5_;
};

}  // namespace

Result<std::uint64_t> storedCount(ContentStore& store, ProviderId pid) {
  std::uint64_t n = 0;
  Status s = store.scanProvider(pid, [&](const ContentRecord& r) {
    if (!r.deleted) ++n;
    return true;
  });
  if (!s.isOk()) return s.withContext("reading the LCC DB");
  return n;
}

std::uint64_t packagesFor(const Options& o, std::uint64_t stored) {
  return stored == 0 ? 1 : (stored + o.page_size - 1) / o.page_size;
}

Status writeDumpPackage(ByteSink& sink, ContentStore& store, DumpContent& content, const Options& o, ProviderId pid,
                        std::uint64_t n, WallTime at) {
  if (n == 0 || o.page_size == 0) return Status::invalidArgument("no such Resource Dump package");
  Package p(sink, store, content, o, pid);
  return p.write(n, at);
}

std::string resourcePath(const ContentRecord& r) {
  std::string_view url = r.key.url;
  url = url.substr(0, url.find_first_of("?#"));
  const auto scheme = url.find("://");
  if (scheme != std::string_view::npos) url.remove_prefix(scheme + 3);
  const auto slash = url.rfind('/');
  const std::string_view segment = slash == std::string_view::npos ? std::string_view() : url.substr(slash + 1);
  const auto dot = segment.rfind('.');
  std::string ext;
  if (dot != std::string_view::npos && dot + 1 < segment.size() && segment.size() - dot - 1 <= 8) {
    for (char c : segment.substr(dot + 1)) {
      if (!std::isalnum(static_cast<unsigned char>(c))) return "/resources/" + std::to_string(r.seq);
      ext.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    ext.insert(0, ".");
  }
  return "/resources/" + std::to_string(r.seq) + ext;
}

}  // namespace lcc::resourcesync
