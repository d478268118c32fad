#include "tar_exporter.h"

#include <unistd.h>

#include <atomic>
#include <chrono>

#include "member_path.h"
#include "lcc/support/cu_xml_format.h"
#include "tar_writer.h"

namespace lcc::plugins::cu_tar {
namespace {

constexpr std::size_t kReadChunk = 128 * 1024;
std::atomic<std::uint64_t> g_manifest_counter{0};

class TarExportStream final : public ExportStream {
 public:
  TarExportStream(ByteSink& sink, const ExportHeader& header, const HostContext& host, const TarOptions& options)
      : writer_(sink, options.level, options.out_block, options.threads),
        header_(header),
        host_(host),
        options_(options),
        chunk_(kReadChunk, '\0') {}

  ~TarExportStream() override { dropSpool(); }

  Status init() { return writer_.init(); }

  Status add(const ContentRecord& r, ContentSource* content) override {
    LCC_PLUGIN_GUARD(return addImpl(r, content);)
  }

  Status finish() override { LCC_PLUGIN_GUARD(return finishImpl();) }

 private:
  Status addImpl(const ContentRecord& r, ContentSource* content) {
    if (failed_) return Status::aborted("the export stream failed before");
    proto::appendUrlOpen(manifest_, r);
    if (!r.deleted && content != nullptr) {
      const std::string path = memberPath(r.key.pid, r.key.url, r.key.mime);
      Status s = writeMember(path, content, r.mtime ? *r.mtime : toUnixMillis(r.stored) / 1000);
      if (!s.isOk()) {
        failed_ = true;
        return s.withContext("exporting " + r.key.url);
      }
      manifest_ += " path=\"";
      proto::appendXmlText(manifest_, path);
      manifest_ += "\"/>\n";
    } else if (!r.deleted) {
      manifest_ += r.machine != host_.machine_id ? " missing=\"other-machine\"/>\n" : " missing=\"unreadable\"/>\n";
    } else {
      manifest_ += "/>\n";
    }
    ++added_;
    if (manifest_.size() >= options_.manifest_memory) return spool();
    return Status::ok();
  }

  Status writeMember(const std::string& path, ContentSource* content, std::int64_t mtime) {
    const std::uint64_t size = content->size();
    LCC_RETURN_IF_ERROR(writer_.beginFile(path, size, mtime));
    std::uint64_t left = size;
    while (left > 0) {
      const std::size_t want = left < chunk_.size() ? static_cast<std::size_t>(left) : chunk_.size();
      auto n = content->read(chunk_.data(), want);
      if (!n.isOk()) return n.status();
      if (*n == 0) {
        // The source ended early: keep the archive readable (size was announced).
        std::fill(chunk_.begin(), chunk_.end(), '\0');
        while (left > 0) {
          const std::size_t part = left < chunk_.size() ? static_cast<std::size_t>(left) : chunk_.size();
          LCC_RETURN_IF_ERROR(writer_.write(chunk_.data(), part));
          left -= part;
        }
        if (host_.logger) host_.logger->warn("cu-tar: content of " + path + " ended before its size; zero-filled");
        break;
      }
      LCC_RETURN_IF_ERROR(writer_.write(chunk_.data(), *n));
      left -= *n;
    }
    return writer_.endFile();
  }

  // Moves the manifest gathered in memory to the spool file.
  Status spool() {
    if (!spool_file_) {
      std::string dir = header_.temp_dir.empty() ? std::string("/tmp") : header_.temp_dir;
      spool_path_ = dir + "/cu-tar-manifest-" + std::to_string(::getpid()) + "-" +
                    std::to_string(g_manifest_counter.fetch_add(1)) + "-" +
                    std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ".xml";
      auto f = host_.env->openWritable(spool_path_, OpenMode::kCreateNew);
      if (!f.isOk()) {
        failed_ = true;
        spool_path_.clear();
        return f.status().withContext("cu-tar: cannot make the manifest spool file");
      }
      spool_file_ = std::move(f).value();
    }
    Status s = spool_file_->append(manifest_);
    if (!s.isOk()) {
      failed_ = true;
      return s.withContext("cu-tar: writing the manifest spool file");
    }
    spooled_ += manifest_.size();
    manifest_.clear();
    return Status::ok();
  }

  void dropSpool() {
    if (spool_file_) {
      (void)spool_file_->close();
      spool_file_.reset();
    }
    if (!spool_path_.empty()) {
      (void)host_.env->removeFile(spool_path_);
      spool_path_.clear();
    }
  }

  Status finishImpl() {
    if (failed_) return Status::aborted("the export stream failed before");
    // The manifest counts what this archive holds.
    const std::string start = proto::resultStartTag(added_, header_);
    const std::uint64_t size = start.size() + spooled_ + manifest_.size() + proto::kResultEndTag.size();
    const std::int64_t now = host_.clock ? toUnixMillis(host_.clock->now()) / 1000 : 0;
    Status s = writer_.beginFile("MANIFEST.xml", size, now);
    if (s.isOk()) s = writer_.write(start.data(), start.size());
    if (s.isOk() && spool_file_) {
      if (Status c = spool_file_->close(); !c.isOk()) s = c;
      spool_file_.reset();
      std::unique_ptr<ReadableFile> in;
      if (s.isOk()) {
        auto r = host_.env->openReadable(spool_path_);
        if (r.isOk()) {
          in = std::move(r).value();
        } else {
          s = r.status();
        }
      }
      std::uint64_t off = 0;
      while (s.isOk() && off < spooled_) {
        const std::size_t want = spooled_ - off < chunk_.size() ? static_cast<std::size_t>(spooled_ - off) : chunk_.size();
        auto n = in->read(off, want, chunk_.data());
        if (!n.isOk()) {
          s = n.status();
        } else if (*n == 0) {
          s = Status::ioError("manifest spool file shrank: " + spool_path_);
        } else {
          s = writer_.write(chunk_.data(), *n);
          off += *n;
        }
      }
    }
    if (s.isOk()) s = writer_.write(manifest_.data(), manifest_.size());
    if (s.isOk()) s = writer_.write(proto::kResultEndTag.data(), proto::kResultEndTag.size());
    if (s.isOk()) s = writer_.endFile();
    if (s.isOk()) s = writer_.finish();
    dropSpool();
    if (!s.isOk()) failed_ = true;
    return s;
  }

  GzipTarWriter writer_;
  const ExportHeader header_;
  const HostContext& host_;
  const TarOptions& options_;
  std::string chunk_;
  std::string manifest_;
  std::uint64_t added_ = 0;
  std::uint64_t spooled_ = 0;
  std::string spool_path_;
  std::unique_ptr<WritableFile> spool_file_;
  bool failed_ = false;
};

const OptionSpec kOptions[] = {
    {"compression_level", OptionType::kInt, "6", 0, 9, "gzip level: 1 fastest, 9 smallest, 0 stored"},
    {"buffer", OptionType::kSize, "64KiB", 4096, 64 * 1024 * 1024, "compressed bytes per write to the client"},
    {"compression_threads", OptionType::kInt, "2", 1, 64,
     "threads compressing one answer (pigz-style blocks); 1 leaves the other cores to ingest"},
    {"manifest_memory", OptionType::kSize, "1MiB", 4096, 1024 * 1024 * 1024,
     "MANIFEST.xml bytes kept in memory; beyond, it is spooled to a file in the CU's temp_dir"},
};

Result<Exporter*> makeExporter(const HostContext& host, const OptionsView& options) {
  LCC_PLUGIN_GUARD({
    if (host.env == nullptr) return Status::invalidArgument("cu-tar needs the host's Env");
    TarOptions o;
    o.level = static_cast<int>(options.getInt("compression_level", 6));
    o.out_block = static_cast<std::size_t>(options.getInt("buffer", 64 * 1024));
    o.manifest_memory = static_cast<std::size_t>(options.getInt("manifest_memory", 1 << 20));
    o.threads = static_cast<int>(options.getInt("compression_threads", 2));
    return static_cast<Exporter*>(new TarExporter(host, o));
  })
}

}  // namespace

Result<std::unique_ptr<ExportStream>> TarExporter::begin(ByteSink& sink, const ExportHeader& header) {
  LCC_PLUGIN_GUARD({
    auto stream = std::make_unique<TarExportStream>(sink, header, host_, options_);
    LCC_RETURN_IF_ERROR(stream->init());
    return std::unique_ptr<ExportStream>(std::move(stream));
  })
}

const PluginDescriptor* describe() {
  static const PluginDescriptor kDescriptor = {
      LCC_PLUGIN_VERSION_FIELDS,
      .name = "cu-tar",
      .version = "1.0",
      .provides = kProvidesExporter,
      .options = kOptions,
      .option_count = sizeof kOptions / sizeof kOptions[0],
      .make_exporter = &makeExporter,
  };
  return &kDescriptor;
}

}  // namespace lcc::plugins::cu_tar
