// warc_reader.h — an independent reader of cu-warc answers for the CU tests: every
// gzip member inflated on its own (one record per member is part of the format), the
// WARC/1.1 header parsed, and WARC-Block-Digest / WARC-Payload-Digest checked against
// SHA-1 computed here (base32 decoded here, not with the plugin's encoder).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cu_test_util.h"

namespace lcc::cutest {

struct WarcRecordOut {
  std::vector<std::pair<std::string, std::string>> fields;  // in header order
  std::string block;
  std::string field(const std::string& name) const;
  // The payload: the block after the HTTP head for a response, else the block.
  std::string payload() const;
};

struct WarcAnswer {
  bool ok = false;
  std::string error;
  std::vector<WarcRecordOut> records;  // warcinfo first, the manifest last
  XmlAnswer manifest;                  // the metadata record MANIFEST.xml
};

// Each gzip member of `gz`, inflated separately.
std::vector<std::string> gunzipMembers(const std::string& gz, std::string* error);
// RFC 4648 base32 decoding (A-Z2-7, '=' padding); false on a bad character.
bool base32Decode(std::string_view in, std::string& out);
WarcAnswer parseWarcAnswer(const std::string& gz);

}  // namespace lcc::cutest
