#include "resourcesync/zip_writer.h"

#include <archive.h>
#include <archive_entry.h>

#include <cerrno>
#include <memory>

namespace lcc::resourcesync {
namespace {

constexpr int kBlock = 64 * 1024;  // what libarchive hands the sink at a time

struct EntryDeleter {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};

}  // namespace

ZipWriter::ZipWriter(ByteSink& sink) : sink_(sink), a_(archive_write_new()) {}

ZipWriter::~ZipWriter() {
  // archive_write_free() closes an open archive, which would write the central
  // directory: an unfinished package must stay invalid, so nothing more reaches the sink.
  sealed_ = true;
  if (a_ != nullptr) archive_write_free(a_);
}

long ZipWriter::onWrite(struct archive* a, void* self, const void* buf, std::size_t n) {
  auto* w = static_cast<ZipWriter*>(self);
  if (w->sealed_) {
    archive_set_error(a, EIO, "the package was abandoned");
    return -1;
  }
  Status s = w->sink_.write(std::string_view(static_cast<const char*>(buf), n));
  if (s.isOk()) return static_cast<long>(n);
  w->sink_error_ = s;
  archive_set_error(a, EIO, "%s", s.message().c_str());
  return -1;
}

Status ZipWriter::failure(const char* what) {
  if (!sink_error_.isOk()) return sink_error_;
  const char* why = a_ != nullptr ? archive_error_string(a_) : nullptr;
  return Status::ioError(std::string("zip: ") + what + ": " + (why != nullptr ? why : "libarchive failed"));
}

Status ZipWriter::open() {
  if (a_ == nullptr) return Status::internal("zip: libarchive could not allocate a writer");
  if (archive_write_set_format_zip(a_) != ARCHIVE_OK || archive_write_set_bytes_per_block(a_, kBlock) != ARCHIVE_OK ||
      archive_write_set_bytes_in_last_block(a_, 1) != ARCHIVE_OK) {
    return failure("setting up");
  }
  if (archive_write_open(a_, this, nullptr, &ZipWriter::onWrite, nullptr) != ARCHIVE_OK) return failure("opening");
  return Status::ok();
}

Status ZipWriter::begin(const std::string& name, WallTime mtime, std::optional<std::uint64_t> size) {
  std::unique_ptr<archive_entry, EntryDeleter> e(archive_entry_new());
  if (!e) return Status::internal("zip: libarchive could not allocate an entry");
  archive_entry_set_pathname(e.get(), name.c_str());
  archive_entry_set_filetype(e.get(), AE_IFREG);
  archive_entry_set_perm(e.get(), 0644);
  archive_entry_set_mtime(e.get(), toUnixMillis(mtime) / 1000, 0);
  if (size) archive_entry_set_size(e.get(), static_cast<la_int64_t>(*size));
  if (archive_write_header(a_, e.get()) < ARCHIVE_WARN) return failure(("starting " + name).c_str());
  return Status::ok();
}

Status ZipWriter::write(std::string_view bytes) {
  while (!bytes.empty()) {
    la_ssize_t n = archive_write_data(a_, bytes.data(), bytes.size());
    if (n <= 0) return failure("writing");
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status::ok();
}

Status ZipWriter::finish() {
  if (archive_write_close(a_) != ARCHIVE_OK) return failure("closing");
  sealed_ = true;
  return Status::ok();
}

}  // namespace lcc::resourcesync
