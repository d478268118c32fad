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

// The LCC DB's identity: 32 random hex digits the QM writes when it first opens a store
// that has none (QueueManager::open). It names the store's change-sequence space in a
// merged CU cursor (proto/cu_cursor.h), so it survives restarts and address changes,
// and a store that is replaced (a new seq space) gets a new one.
inline constexpr const char* kContentMetaStoreId = "lcc.store_id";

// lcc.store_id of `store`: nullopt when none was written yet; the store's error
// (as Internal when NotFound) when it cannot be read.
Result<std::optional<std::string>> readStoreId(ContentStore& store);
// A new random store id (32 lowercase hex digits, from std::random_device).
std::string newStoreId();

}  // namespace lcc
