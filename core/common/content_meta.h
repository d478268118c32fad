// content_meta.h — meta keys the core keeps in the ContentStore (the LCC DB), read by
// more than one role.
#pragma once

namespace lcc {

// The highest change sequence of a tombstone the QM's ageing erased (qm.tombstone_keep),
// as a decimal. A content user asking for changes `since seq` S < this value would miss
// those removals: the CU refuses the query with 150 (docs/protocol.md §2, §3.2).
// Absent: nothing was ever purged.
inline constexpr const char* kContentMetaPurgedSeq = "lcc.purged_seq";

}  // namespace lcc
