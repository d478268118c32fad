// fetch_lease.h — the QM's side of the fetch leases (issue 27 §3; docs/reliability.md,
// "Fetch leases"): what lease a fetch or a renewal sent now may carry, and when a QM
// that just opened a shared store may hand fetches out at all. Pure policy: no store,
// no clock, no I/O; the QueueManager passes the monotonic time and does the writes
// (queue_manager_lease.cc).
//
// A robot measures a lease from when it received it and starts nothing after it. So a
// QM may give one only while it knows that no other QM can be active yet, and a QM that
// opens a shared store waits until every lease its predecessor gave has run out:
// - On a shared store (storage-postgres, StoreOpenInfo::remote: another QM may take the
//   store over) a lease is given only from a *proof*: a write checked against the
//   fencing epoch that began at P and committed. Another QM took over after P, so a
//   lease given at `now` is P + lease - now, and every lease this QM gave ends before
//   its successor's takeover + lease. None is given when less than half a lease is
//   left (the next proof comes every lease/3). A QM paused past its takeover finds,
//   when it is continued, its proof too old and gives nothing.
// - A QM that opens a shared store on which a QM gave leases (the length it recorded)
//   hands nothing out until that length plus kMargin after its open (which came after
//   the takeover): the fetches the old QM had out may still be running until then.
// - On a local store (Kyoto, SQLite: one lccd holds it, through the data folder's lock)
//   no other QM can take over: every fetch gets the whole lease, no proof, no wait.
#pragma once

#include <optional>

#include "lcc/clock.h"

namespace lcc::qm {

class FetchLease {
 public:
  // What the new QM waits beyond the old one's lease: the lease travels (a queue, the
  // network) before the robot starts counting, and the hosts' clocks run at slightly
  // different rates.
  static constexpr Millis kMargin{2000};

  // lease: qm.fetch_lease. shared: the queue store may be taken over by another QM.
  FetchLease(Millis lease, bool shared) : lease_(lease), shared_(shared) {}

  // The QM opened its stores at `now`; `previous`: the lease length a QM recorded in
  // the store (none: no QM gave leases on it). Only a shared store waits.
  void opened(MonoTime now, std::optional<Millis> previous);
  // A write checked against the fencing epoch began at `began` and committed.
  void proven(MonoTime began);
  // The lease a fetch or renewal sent at `now` carries; none: send nothing now.
  std::optional<Millis> grant(MonoTime now) const;
  // Until when nothing is handed out after the open (none: no wait, or over).
  std::optional<MonoTime> heldUntil(MonoTime now) const;
  // How often the leases are renewed (and, on a shared store, proven).
  Millis renewEvery() const { return std::max(Millis(1), lease_ / 3); }
  Millis lease() const { return lease_; }
  bool shared() const { return shared_; }

 private:
  Millis lease_;
  bool shared_;
  std::optional<MonoTime> held_until_;
  std::optional<MonoTime> proof_;
};

}  // namespace lcc::qm
