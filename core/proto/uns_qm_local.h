// uns_qm_local.h — the in-process form of the UNS → QM link (issue 28; net/local_link.h,
// docs/internal-protocols.md §1 "In process").
//
// When the UNS and the QM run in one lccd (and node.in_process_links is on), the UNS
// hands the QM the notices it parsed and validated, as records, instead of encoding
// them as XML for the QM to parse again. The records follow the stream of the network
// form one for one: the opening with the UNS name, a set's header, its URLs in parts,
// its end (with the count) or abort; the QM answers with its opening, the acks (sent
// after its journal sync, in order, as on TCP) and, per part, `QmLocalTaken`: the
// part left the link, which is what the window of the network form (bytes queued on
// the connection, the QM reading or not) measures there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "lcc/types.h"
#include "net/local_link.h"
#include "proto/uns_qm.h"

namespace lcc::proto {

// UNS → QM.
struct UnsLocalOpen {
  std::string uns_name;  // <machine_id>/uns, as name="…" of the opening
};
struct UnsLocalUrls {
  std::vector<UrlNotice> urls;  // the next URLs of the open set, in order
  std::uint64_t bytes = 0;      // their weight in the window (urlSizeHint, summed)
};
struct UnsLocalEnd {
  std::uint64_t count = 0;  // URLs in the set
};
struct UnsLocalAbort {};  // the open set is dropped (its CP stopped); no ack
struct UnsLocalClose {};  // the stream ends (</lcc:uns>)
using UnsLocalRecord = std::variant<UnsLocalOpen, UnsQmSetHeader, UnsLocalUrls, UnsLocalEnd, UnsLocalAbort, UnsLocalClose>;

// QM → UNS.
struct QmLocalOpen {};
struct QmLocalTaken {
  std::uint64_t bytes = 0;  // an UnsLocalUrls of this weight was taken by the QM
};
struct QmLocalClose {};  // </lcc:qm>
using QmLocalRecord = std::variant<QmLocalOpen, UnsQmAck, QmLocalTaken, QmLocalClose>;

using LocalUnsEnd = net::LocalEnd<UnsLocalRecord, QmLocalRecord>;  // the UNS's end
using LocalQmEnd = net::LocalEnd<QmLocalRecord, UnsLocalRecord>;   // the QM's end

// About the bytes of the notice's <url/> element (without escaping): what it weighs in
// the window and in a session's parts, so both forms hold the same amount in flight.
inline std::size_t urlSizeHint(const UrlNotice& n) {
  std::size_t s = 24 + n.key.url.size() + n.key.mime.size() + n.view_tag.size() + n.fetch.size() + n.md5.size() +
                  n.tod.size();
  if (n.browse) s += 5 + n.browse->size();
  if (n.mtime) s += 26;
  if (n.size) s += 8;
  if (n.op != UrlOp::kUpdate) s += 12;
  return s;
}

}  // namespace lcc::proto
