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

// The HTTP head as the block of a response record: a `Transfer-Encoding` line is
// renamed `X-LCC-Original-Transfer-Encoding`, because the stored body is not in that
// coding any more (libcurl removed it). Anything else is kept byte for byte.
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
