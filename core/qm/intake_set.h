// intake_set.h — a set as the QM takes it in, and its intake-journal record.
//
// The journal payload is a compact binary form (version byte first) so replay at
// start is fast; decodeIntakeSet() refuses anything it did not write (Corruption).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lcc/status.h"
#include "lcc/types.h"

namespace lcc::qm {

struct IntakeSet {
  std::string uns;        // the sending UNS's durable name ("m1/uns"); empty: local
  std::uint64_t id = 0;   // the UNS's set number (0: no dedup)
  ProviderId pid = 0;
  SetKind kind = SetKind::kPartial;
  std::vector<UrlNotice> urls;

  friend bool operator==(const IntakeSet&, const IntakeSet&) = default;
};

std::string encodeIntakeSet(const IntakeSet& set);
Result<IntakeSet> decodeIntakeSet(std::string_view payload);

}  // namespace lcc::qm
