#include "xml_exporter.h"

#include "lcc/support/cu_xml_format.h"

namespace lcc::plugins::cu_xml {
namespace {

constexpr std::size_t kReadChunk = 48 * 1024;  // a multiple of 3: base64 without carry

class XmlExportStream final : public ExportStream {
 public:
  XmlExportStream(ByteSink& sink, const ExportHeader& header, const std::string& machine_id, std::size_t buffer)
      : sink_(sink), with_content_(header.with_content), machine_id_(machine_id), buffer_(buffer) {
    out_ = proto::resultStartTag(header.count, header);
  }

  Status add(const ContentRecord& r, ContentSource* content) override {
    LCC_PLUGIN_GUARD(return addImpl(r, content);)
  }

  Status finish() override { LCC_PLUGIN_GUARD(return finishImpl();) }

 private:
  Status addImpl(const ContentRecord& r, ContentSource* content) {
    if (failed_) return Status::aborted("the export stream failed before");
    proto::appendUrlOpen(out_, r);
    if (!with_content_ || r.deleted) {
      out_ += "/>\n";
    } else if (content == nullptr) {
      out_ += r.machine != machine_id_ ? "><content missing=\"other-machine\"/></url>\n"
                                       : "><content missing=\"unreadable\"/></url>\n";
    } else {
      out_ += "><content encoding=\"base64\">";
      proto::Base64Encoder enc;
      std::string chunk(kReadChunk, '\0');
      for (;;) {
        auto n = content->read(chunk.data(), chunk.size());
        if (!n.isOk()) return fail(n.status().withContext("reading content of " + r.key.url));
        if (*n == 0) break;
        enc.update(chunk.data(), *n, out_);
        LCC_RETURN_IF_ERROR(maybeFlush());
      }
      enc.finish(out_);
      out_ += "</content></url>\n";
    }
    return maybeFlush();
  }

  Status finishImpl() {
    if (failed_) return Status::aborted("the export stream failed before");
    out_ += proto::kResultEndTag;
    LCC_RETURN_IF_ERROR(flushAll());
    Status s = sink_.flush();
    return s.isOk() ? s : fail(s);
  }

  Status fail(Status s) {
    failed_ = true;
    return s;
  }
  Status maybeFlush() { return out_.size() >= buffer_ ? flushAll() : Status::ok(); }
  Status flushAll() {
    if (out_.empty()) return Status::ok();
    Status s = sink_.write(out_);
    out_.clear();
    return s.isOk() ? s : fail(s);
  }

  ByteSink& sink_;
  const bool with_content_;
  const std::string& machine_id_;
  const std::size_t buffer_;
  std::string out_;
  bool failed_ = false;
};

const OptionSpec kOptions[] = {
    {"buffer", OptionType::kSize, "64KiB", 512, 64 * 1024 * 1024, "answer bytes gathered before each write"},
};

Result<Exporter*> makeExporter(const HostContext& host, const OptionsView& options) {
  LCC_PLUGIN_GUARD(return static_cast<Exporter*>(new XmlExporter(
                       host.machine_id, static_cast<std::size_t>(options.getInt("buffer", 64 * 1024))));)
}

}  // namespace

Result<std::unique_ptr<ExportStream>> XmlExporter::begin(ByteSink& sink, const ExportHeader& header) {
  LCC_PLUGIN_GUARD(return std::unique_ptr<ExportStream>(new XmlExportStream(sink, header, machine_id_, buffer_));)
}

const PluginDescriptor* describe() {
  static const PluginDescriptor kDescriptor = {
      LCC_PLUGIN_VERSION_FIELDS,
      .name = "cu-xml",
      .version = "1.0",
      .provides = kProvidesExporter,
      .options = kOptions,
      .option_count = sizeof kOptions / sizeof kOptions[0],
      .make_exporter = &makeExporter,
  };
  return &kDescriptor;
}

}  // namespace lcc::plugins::cu_xml
