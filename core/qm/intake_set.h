// intake_set.h — a set as the QM takes it in, and its intake-journal records.
//
// The journal payloads are a compact binary form (a record type byte first) so replay
// at start is fast; the decoders refuse anything they did not write (Corruption).
// A set is journaled either whole (kWhole: a set small enough to be held until its
// end) or streamed: one kBegin record (the header), kPart records (some of its URLs,
// in order, naming the kBegin's position), and one kEnd record (naming the kBegin's
// position and the URL count). A streamed set without its kEnd record was cut off:
// replay and apply ignore it (docs/internal-protocols.md §1, docs/design-decisions.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lcc/status.h"
#include "lcc/types.h"

namespace lcc::qm {

// What a set is before its URLs: who sent it and what kind it is.
struct IntakeHeader {
  std::string uns;        // the sending UNS's durable name ("m1/uns"); empty: local
  std::uint64_t id = 0;   // the UNS's set number (0: no dedup)
  ProviderId pid = 0;
  SetKind kind = SetKind::kPartial;

  friend bool operator==(const IntakeHeader&, const IntakeHeader&) = default;
};

struct IntakeSet {
  std::string uns;        // the sending UNS's durable name ("m1/uns"); empty: local
  std::uint64_t id = 0;   // the UNS's set number (0: no dedup)
  ProviderId pid = 0;
  SetKind kind = SetKind::kPartial;
  std::vector<UrlNotice> urls;

  friend bool operator==(const IntakeSet&, const IntakeSet&) = default;
};

enum class IntakeRecord : std::uint8_t { kWhole = 1, kBegin = 2, kPart = 3, kEnd = 4 };

// The type of a record (its first byte); nullopt when it is none of the above.
std::optional<IntakeRecord> intakeRecordType(std::string_view payload);

// The kBegin position a kPart or kEnd record names, read without decoding the rest;
// 0 for any other record.
std::uint64_t intakeRecordBegin(std::string_view payload);

// kWhole: a whole set.
std::string encodeIntakeSet(const IntakeSet& set);
Result<IntakeSet> decodeIntakeSet(std::string_view payload);

// kBegin: the header of a streamed set.
std::string encodeIntakeBegin(const IntakeHeader& header);
Result<IntakeHeader> decodeIntakeBegin(std::string_view payload);

// kPart: URLs of the streamed set whose kBegin is at `begin`. `pid` is the set's.
std::string encodeIntakePart(std::uint64_t begin, const std::vector<UrlNotice>& urls);
struct IntakePart {
  std::uint64_t begin = 0;
  std::vector<UrlNotice> urls;
};
Result<IntakePart> decodeIntakePart(std::string_view payload, ProviderId pid);

// kEnd: the streamed set whose kBegin is at `begin` is complete with `count` URLs.
struct IntakeEnd {
  std::uint64_t begin = 0;
  std::uint64_t count = 0;
};
std::string encodeIntakeEnd(const IntakeEnd& end);
Result<IntakeEnd> decodeIntakeEnd(std::string_view payload);

}  // namespace lcc::qm
