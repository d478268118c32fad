// FetchLease (qm/fetch_lease.h), the QM's lease policy, on plain monotonic times.
#include <gtest/gtest.h>

#include "qm/fetch_lease.h"

namespace lcc::qm {
namespace {

constexpr Millis kLease{30000};
const MonoTime t0{};

TEST(FetchLease, ALocalStoreGivesTheWholeLeaseAlwaysAndNeverWaits) {
  FetchLease l(kLease, false);
  l.opened(t0, kLease);  // a lease recorded by an earlier run changes nothing here
  EXPECT_EQ(l.grant(t0), kLease);
  EXPECT_EQ(l.grant(t0 + Millis(24 * 3600 * 1000)), kLease);
  EXPECT_FALSE(l.heldUntil(t0));
  EXPECT_EQ(l.renewEvery(), Millis(10000));
}

TEST(FetchLease, ASharedStoreGivesWhatIsLeftFromTheLastProofAndNothingPastHalf) {
  FetchLease l(kLease, true);
  l.opened(t0, std::nullopt);
  EXPECT_FALSE(l.grant(t0)) << "no proof yet: nothing";
  l.proven(t0);
  EXPECT_EQ(l.grant(t0 + Millis(1000)), Millis(29000)) << "ends where the proof's lease ends";
  EXPECT_EQ(l.grant(t0 + Millis(15000)), Millis(15000));
  EXPECT_FALSE(l.grant(t0 + Millis(15001))) << "less than half left: wait for the next proof";
  l.proven(t0 + Millis(20000));
  l.proven(t0 + Millis(5000));  // an older proof that committed late moves nothing back
  EXPECT_EQ(l.grant(t0 + Millis(21000)), Millis(29000));
}

TEST(FetchLease, AQmThatOpensASharedStoreWaitsOutTheRecordedLeaseAndTheMargin) {
  FetchLease l(Millis(10000), true);
  l.opened(t0, kLease);  // the QM before gave 30 s leases
  l.proven(t0);
  EXPECT_EQ(l.heldUntil(t0), t0 + kLease + FetchLease::kMargin);
  EXPECT_FALSE(l.grant(t0 + kLease + FetchLease::kMargin - Millis(1)));
  l.proven(t0 + kLease + FetchLease::kMargin - Millis(1));
  EXPECT_EQ(l.grant(t0 + kLease + FetchLease::kMargin), Millis(9999));
  EXPECT_FALSE(l.heldUntil(t0 + kLease + FetchLease::kMargin));
}

}  // namespace
}  // namespace lcc::qm
