// tar_exporter.h — cu-tar: gzip-compressed POSIX tar answers (docs/protocol.md §3; README.md).
#pragma once

#include <string>

#include "lcc/plugin.h"

namespace lcc::plugins::cu_tar {

struct TarOptions {
  int level = 6;                          // gzip level 0..9
  std::size_t out_block = 64 * 1024;      // compressed bytes per sink write
  std::size_t manifest_memory = 1 << 20;  // manifest bytes kept in memory before spooling to a file
  int threads = 2;                        // compression threads (1: in the exporting thread)
};

class TarExporter final : public Exporter {
 public:
  TarExporter(const HostContext& host, TarOptions options) : host_(host), options_(options) {}
  std::string_view format() const override { return "tar.gz"; }
  std::string_view contentType() const override { return "application/gzip"; }
  bool alwaysContent() const override { return true; }
  Result<std::unique_ptr<ExportStream>> begin(ByteSink& sink, const ExportHeader& header) override;

 private:
  const HostContext host_;
  const TarOptions options_;
};

const PluginDescriptor* describe();

}  // namespace lcc::plugins::cu_tar
