// warc_exporter.h — cu-warc: the CU answer as WARC/1.1, gzip member per record
// (docs/protocol.md §3; README.md).
#pragma once

#include <string>

#include "lcc/plugin.h"
#include "warc_writer.h"

namespace lcc::plugins::cu_warc {

struct WarcOptions {
  int level = 6;                          // gzip level 0..9
  std::size_t out_block = 64 * 1024;      // compressed bytes per sink write
  std::size_t spool_memory = 1 << 20;     // a record's content kept in memory before a spool file
  std::size_t manifest_memory = 1 << 20;  // MANIFEST.xml bytes kept in memory before a spool file
};

// True when `head` starts with "HTTP/", ends its lines with CRLF and its only empty line
// is its last: then a reader that splits the block at the first empty line finds the
// payload exactly where cu-warc's WARC-Payload-Digest put it.
bool wellFormedHead(std::string_view head);

// The HTTP head as the block of a response record: a `Transfer-Encoding` line is
// renamed `X-LCC-Original-Transfer-Encoding`, because the stored body is not in that
// coding any more (libcurl removed it). Anything else is kept byte for byte. Empty
// (a resource record) when the head is not well formed.
std::string archivedHead(std::string_view head);

class WarcExporter final : public Exporter {
 public:
  WarcExporter(const HostContext& host, WarcOptions options, RandomSource random)
      : host_(host), options_(options), random_(std::move(random)) {}
  std::string_view format() const override { return "warc.gz"; }
  std::string_view contentType() const override { return "application/gzip"; }
  bool alwaysContent() const override { return true; }
  Result<std::unique_ptr<ExportStream>> begin(ByteSink& sink, const ExportHeader& header) override;

 private:
  const HostContext host_;
  const WarcOptions options_;
  const RandomSource random_;
};

const PluginDescriptor* describe();

}  // namespace lcc::plugins::cu_warc
