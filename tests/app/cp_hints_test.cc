// Every code a UNS may refuse an `init` or a `set` with (docs/protocol.md §1, §2) has a
// next step for the content provider, not the "unknown code" fallback.
#include "app/cp_hints.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lcc::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(CpHints, EveryInitRejectionCodeHasANextStep) {
  for (unsigned code : {100u, 101u, 110u, 111u, 120u, 130u, 133u, 140u}) {
    const std::string hint = initRejectionHint(code, "", "127.0.0.1:7700");
    EXPECT_THAT(hint, Not(HasSubstr("not one this lcc knows"))) << code;
    EXPECT_GT(hint.size(), 40u) << code;
  }
  EXPECT_THAT(initRejectionHint(199, "", "x:1"), HasSubstr("code 199 is not one this lcc knows"));
}

TEST(CpHints, EverySetRejectionCodeHasANextStep) {
  for (unsigned code : {100u, 101u, 130u, 131u, 132u, 133u, 140u}) {
    EXPECT_THAT(setRejectionHint(code), Not(HasSubstr("not one this lcc knows"))) << code;
  }
}

// 110 points to the registration page on the UNS's host and to the administrator; 111
// tells a pending or re-verification-suspended provider to verify, and one an
// administrator suspended to ask the administrator.
TEST(CpHints, AuthAndNotActiveSayWhereToGo) {
  const std::string h110 = initRejectionHint(110, "authentication failed", "tls://lcc.example.org:7701");
  EXPECT_THAT(h110, HasSubstr("http://lcc.example.org:WEB-PORT/register"));
  EXPECT_THAT(h110, HasSubstr("the LCC's administrator"));
  EXPECT_THAT(initRejectionHint(111, "provider not active (registration not verified)", "[::1]:7700"),
              HasSubstr("verify it at the LCC's registration page (http://[::1]:WEB-PORT/register)"));
  EXPECT_THAT(initRejectionHint(111, "provider not active (suspended: re-verification on T: gone)", "h:1"),
              HasSubstr("POST /register/verify"));
  EXPECT_THAT(initRejectionHint(111, "provider not active (suspended)", "h:1"),
              HasSubstr("ask the LCC's administrator"));
}

}  // namespace
}  // namespace lcc::cli
