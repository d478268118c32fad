// xml_exporter.h — cu-xml: the XML answer of docs/protocol.md §3 (see README.md).
#pragma once

#include <string>

#include "lcc/plugin.h"

namespace lcc::plugins::cu_xml {

class XmlExporter final : public Exporter {
 public:
  // machine_id: this node's, to say why content is missing; buffer: bytes gathered
  // before a write to the sink.
  XmlExporter(std::string machine_id, std::size_t buffer) : machine_id_(std::move(machine_id)), buffer_(buffer) {}
  std::string_view format() const override { return "xml"; }
  std::string_view contentType() const override { return "application/xml"; }
  bool alwaysContent() const override { return false; }
  Result<std::unique_ptr<ExportStream>> begin(ByteSink& sink, const ExportHeader& header) override;

 private:
  const std::string machine_id_;
  const std::size_t buffer_;
};

const PluginDescriptor* describe();

}  // namespace lcc::plugins::cu_xml
