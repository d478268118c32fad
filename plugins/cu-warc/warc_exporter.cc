#include "warc_exporter.h"

#include <algorithm>
#include <cctype>

#include "block_spool.h"
#include "lcc/support/cu_xml_format.h"

namespace lcc::plugins::cu_warc {
namespace {

constexpr std::size_t kReadChunk = 128 * 1024;
constexpr std::string_view kManifestUri = "metadata://lococa.org/lcc/MANIFEST.xml";

bool namedLine(std::string_view line, std::string_view name) {
  if (line.size() <= name.size() || line[name.size()] != ':') return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  }
  return true;
}

// A header value from stored text: control bytes and non-ASCII become '?', so a
// hostile MIME type cannot end the WARC header.
std::string fieldText(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) c = '?';
  }
  return out.empty() ? std::string("application/octet-stream") : out;
}

std::int64_t unixSeconds(WallTime t) { return toUnixMillis(t) / 1000; }

class WarcExportStream final : public ExportStream {
 public:
  WarcExportStream(ByteSink& sink, const ExportHeader& header, const HostContext& host, const WarcOptions& options,
                   const RandomSource& random)
      : writer_(sink, options.level, options.out_block),
        header_(header),
        host_(host),
        random_(random),
        body_(*host.env, header.temp_dir, options.spool_memory),
        manifest_(*host.env, header.temp_dir, options.manifest_memory),
        chunk_(kReadChunk, '\0') {}

  Status init() {
    LCC_RETURN_IF_ERROR(writer_.init());
    info_id_ = newRecordId(random_);
    return writeInfo();
  }

  Status add(const ContentRecord& r, ContentSource* content) override {
    LCC_PLUGIN_GUARD(return addImpl(r, content);)
  }

  Status finish() override { LCC_PLUGIN_GUARD(return finishImpl();) }

 private:
  std::int64_t now() const { return host_.clock ? unixSeconds(host_.clock->now()) : 0; }

  Status addImpl(const ContentRecord& r, ContentSource* content) {
    if (failed_) return Status::aborted("the export stream failed before");
    std::string line;
    proto::appendUrlOpen(line, r);
    if (!r.deleted && content != nullptr) {
      auto id = writeContent(r, content);
      if (!id.isOk()) {
        failed_ = true;
        return id.status().withContext("exporting " + r.key.url);
      }
      line += " record=\"";
      proto::appendXmlText(line, *id);
      line += "\"/>\n";
    } else if (!r.deleted) {
      line += r.machine != host_.machine_id ? " missing=\"other-machine\"/>\n" : " missing=\"unreadable\"/>\n";
    } else {
      line += "/>\n";  // a removal: listed in the manifest only (docs/design-decisions.md)
    }
    ++added_;
    Status s = manifest_.append(line);
    if (!s.isOk()) failed_ = true;
    return s;
  }

  // Reads the content once into the spool, hashing it, then writes the record.
  Result<std::string> writeContent(const ContentRecord& r, ContentSource* content) {
    const std::string head = archivedHead(content->responseHead());
    Sha1 payload, block;
    block.update(head);
    body_.clear();
    LCC_RETURN_IF_ERROR(spoolContent(r, content, payload, block));
    const std::string id = newRecordId(random_);
    WarcFields f = {
        {"WARC-Type", head.empty() ? "resource" : "response"},
        {"WARC-Record-ID", id},
        {"WARC-Warcinfo-ID", info_id_},
        {"WARC-Target-URI", warcUri(r.fetch.empty() ? r.key.url : r.fetch)},
        {"WARC-Date", warcDate(unixSeconds(r.stored))},
        {"WARC-Block-Digest", block.warcDigest()},
        {"WARC-Payload-Digest", payload.warcDigest()},
        {"Content-Type", head.empty() ? fieldText(r.key.mime) : std::string("application/http; msgtype=response")},
        {"Content-Length", std::to_string(head.size() + body_.size())},
    };
    LCC_RETURN_IF_ERROR(writer_.write(warcHeader(f)));
    LCC_RETURN_IF_ERROR(writer_.write(head));
    LCC_RETURN_IF_ERROR(body_.forEach(kReadChunk, [this](std::string_view b) { return writer_.write(b); }));
    body_.clear();
    LCC_RETURN_IF_ERROR(writer_.write(kRecordEnd));
    LCC_RETURN_IF_ERROR(writer_.endMember());
    return id;
  }

  Status spoolContent(const ContentRecord& r, ContentSource* content, Sha1& payload, Sha1& block) {
    std::uint64_t left = content->size();
    bool short_source = false;
    while (left > 0) {
      const std::size_t want = left < chunk_.size() ? static_cast<std::size_t>(left) : chunk_.size();
      std::size_t got = want;
      if (!short_source) {
        auto n = content->read(chunk_.data(), want);
        if (!n.isOk()) return n.status();
        got = *n;
        if (got == 0) {
          // The source ended before its size: keep the record's announced length.
          short_source = true;
          std::fill(chunk_.begin(), chunk_.end(), '\0');
          got = want;
          if (host_.logger) host_.logger->warn("cu-warc: content of " + r.key.url + " ended before its size; zero-filled");
        }
      }
      const std::string_view piece(chunk_.data(), got);
      payload.update(piece);
      block.update(piece);
      LCC_RETURN_IF_ERROR(body_.append(piece));
      left -= got;
    }
    return Status::ok();
  }

  // A record whose block is already known (warcinfo).
  Status writeSmallRecord(WarcFields fields, std::string_view block_bytes) {
    Sha1 block;
    block.update(block_bytes);
    fields.emplace_back("WARC-Block-Digest", block.warcDigest());
    fields.emplace_back("Content-Length", std::to_string(block_bytes.size()));
    LCC_RETURN_IF_ERROR(writer_.write(warcHeader(fields)));
    LCC_RETURN_IF_ERROR(writer_.write(block_bytes));
    LCC_RETURN_IF_ERROR(writer_.write(kRecordEnd));
    return writer_.endMember();
  }

  Status writeInfo() {
    std::string fields = "software: LCC cu-warc/1.0\r\n";
    fields += "format: WARC File Format 1.1\r\n";
    fields += "conformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n";
    fields += "lcc-machine: " + fieldText(host_.machine_id) + "\r\n";
    fields += "lcc-count: " + std::to_string(header_.count) + "\r\n";
    fields += "lcc-last-seq: " + lastSeqText(header_) + "\r\n";
    // Fields in the order wget writes them.
    return writeSmallRecord({{"WARC-Type", "warcinfo"},
                             {"Content-Type", "application/warc-fields"},
                             {"WARC-Date", warcDate(now())},
                             {"WARC-Record-ID", info_id_}},
                            fields);
  }

  // The manifest: the XML answer without content, as cu-tar's MANIFEST.xml, each record
  // with content naming its WARC-Record-ID. Read twice from its spool: digest, then bytes.
  Status writeManifest() {
    const std::string start = proto::resultStartTag(added_, header_);
    Sha1 block;
    block.update(start);
    LCC_RETURN_IF_ERROR(manifest_.forEach(kReadChunk, [&block](std::string_view b) {
      block.update(b);
      return Status::ok();
    }));
    block.update(proto::kResultEndTag);
    const std::uint64_t length = start.size() + manifest_.size() + proto::kResultEndTag.size();
    WarcFields f = {
        {"WARC-Type", "metadata"},
        {"WARC-Record-ID", newRecordId(random_)},
        {"WARC-Warcinfo-ID", info_id_},
        {"WARC-Target-URI", std::string(kManifestUri)},
        {"WARC-Date", warcDate(now())},
        {"WARC-Block-Digest", block.warcDigest()},
        {"Content-Type", "application/xml"},
        {"Content-Length", std::to_string(length)},
    };
    LCC_RETURN_IF_ERROR(writer_.write(warcHeader(f)));
    LCC_RETURN_IF_ERROR(writer_.write(start));
    LCC_RETURN_IF_ERROR(manifest_.forEach(kReadChunk, [this](std::string_view b) { return writer_.write(b); }));
    LCC_RETURN_IF_ERROR(writer_.write(proto::kResultEndTag));
    LCC_RETURN_IF_ERROR(writer_.write(kRecordEnd));
    return writer_.endMember();
  }

  Status finishImpl() {
    if (failed_) return Status::aborted("the export stream failed before");
    Status s = writeManifest();
    if (s.isOk()) s = writer_.finish();
    manifest_.clear();
    if (!s.isOk()) failed_ = true;
    return s;
  }

  GzipMemberWriter writer_;
  const ExportHeader header_;
  const HostContext& host_;
  const RandomSource& random_;
  BlockSpool body_;
  BlockSpool manifest_;
  std::string chunk_;
  std::string info_id_;
  std::uint64_t added_ = 0;
  bool failed_ = false;
};

const OptionSpec kOptions[] = {
    {"compression_level", OptionType::kInt, "6", 0, 9, "gzip level: 1 fastest, 9 smallest, 0 stored"},
    {"buffer", OptionType::kSize, "64KiB", 4096, 64 * 1024 * 1024, "compressed bytes per write to the client"},
    {"spool_memory", OptionType::kSize, "1MiB", 4096, 1024 * 1024 * 1024,
     "content bytes of one record kept in memory while its digests are computed; beyond, a file in temp_dir"},
    {"manifest_memory", OptionType::kSize, "1MiB", 4096, 1024 * 1024 * 1024,
     "MANIFEST.xml bytes kept in memory; beyond, it is spooled to a file in the CU's temp_dir"},
};

Result<Exporter*> makeExporter(const HostContext& host, const OptionsView& options) {
  LCC_PLUGIN_GUARD({
    if (host.env == nullptr) return Status::invalidArgument("cu-warc needs the host's Env");
    RandomSource random = systemRandom();
    if (!random) return Status::internal("cu-warc: libsodium could not be initialised");
    WarcOptions o;
    o.level = static_cast<int>(options.getInt("compression_level", 6));
    o.out_block = static_cast<std::size_t>(options.getInt("buffer", 64 * 1024));
    o.spool_memory = static_cast<std::size_t>(options.getInt("spool_memory", 1 << 20));
    o.manifest_memory = static_cast<std::size_t>(options.getInt("manifest_memory", 1 << 20));
    return static_cast<Exporter*>(new WarcExporter(host, o, std::move(random)));
  })
}

}  // namespace

bool wellFormedHead(std::string_view head) {
  if (head.size() < 9 || head.substr(0, 5) != "HTTP/" || head.find("\r\n\r\n") != head.size() - 4) return false;
  for (std::size_t i = 0; i < head.size(); ++i) {
    if (head[i] == '\n' && (i == 0 || head[i - 1] != '\r')) return false;  // a bare LF
    if (head[i] == '\r' && (i + 1 == head.size() || head[i + 1] != '\n')) return false;  // a bare CR
  }
  return true;
}

std::string archivedHead(std::string_view head) {
  if (!wellFormedHead(head)) return {};
  std::string out;
  out.reserve(head.size() + 16);
  std::size_t start = 0;
  while (start < head.size()) {
    std::size_t nl = head.find('\n', start);
    const std::size_t end = nl == std::string_view::npos ? head.size() : nl + 1;
    const std::string_view line = head.substr(start, end - start);
    if (namedLine(line, "transfer-encoding")) out += "X-LCC-Original-";
    out.append(line);
    start = end;
  }
  return out;
}

Result<std::unique_ptr<ExportStream>> WarcExporter::begin(ByteSink& sink, const ExportHeader& header) {
  LCC_PLUGIN_GUARD({
    auto stream = std::make_unique<WarcExportStream>(sink, header, host_, options_, random_);
    LCC_RETURN_IF_ERROR(stream->init());
    return std::unique_ptr<ExportStream>(std::move(stream));
  })
}

const PluginDescriptor* describe() {
  static const PluginDescriptor kDescriptor = {
      LCC_PLUGIN_VERSION_FIELDS,
      .name = "cu-warc",
      .version = "1.0",
      .provides = kProvidesExporter,
      .options = kOptions,
      .option_count = sizeof kOptions / sizeof kOptions[0],
      .make_exporter = &makeExporter,
  };
  return &kDescriptor;
}

}  // namespace lcc::plugins::cu_warc
