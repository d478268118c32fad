// lcc/provider_states.h — helpers for the PIDB states an administrator's removal adds to
// ProviderState (lcc/types.h: kPending 0, kActive 1, kSuspended 2). Stored as the same
// byte by every storage plugin; kProviderStateMax bounds what a decoder accepts.
//   kProviderRemoving: `lcc provider remove` — the QM drops the queued URLs, keeps the
//                      content, then deletes the record (core/qm/README.md);
//   kProviderPurging:  `remove --purge` — the same, and the content is removed.
// A provider in either state is not active: its sessions are refused with 111.
#pragma once

#include <cstdint>

#include "lcc/types.h"

namespace lcc {

inline constexpr ProviderState kProviderRemoving = ProviderState::kRemoving;
inline constexpr ProviderState kProviderPurging = ProviderState::kPurging;
inline constexpr std::uint8_t kProviderStateMax = 4;

inline bool isProviderRemoving(ProviderState s) { return s == kProviderRemoving || s == kProviderPurging; }

}  // namespace lcc
