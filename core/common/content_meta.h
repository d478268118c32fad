// content_meta.h — meta keys the core keeps in the ContentStore (the LCC DB), read by
// more than one role.
#pragma once

#include <optional>

#include "lcc/content_store.h"

namespace lcc {

// The highest change sequence of a tombstone the QM's ageing erased (qm.tombstone_keep),
// as a decimal. A content user asking for changes `since seq` S < this value would miss
// those removals: the CU refuses the query with 150 (docs/protocol.md §2, §3.2), the
// ResourceSync Change List answers 410 (§9).
// Absent: nothing was ever purged.
inline constexpr const char* kContentMetaPurgedSeq = "lcc.purged_seq";

// lcc.purged_seq of `store`: nullopt when nothing was ever purged; Corruption when the
// value is not a number; the store's error (a NotFound becomes Internal, so that it is
// never taken for "purged") when it cannot be read.
Result<std::optional<ChangeSeq>> readPurgedSeq(ContentStore& store);

}  // namespace lcc
