// rgw_env.h — the test's object store: the Ceph RADOS Gateway the ctest fixture
// lcc_rgw_server started (tests/s3/CMakeLists.txt), as S3Options. A test without one
// skips with one line.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "s3/s3_options.h"

namespace lcc::testing {

// The fixture's S3 user (tests/CMakeLists.txt passes them to rgw_cluster.sh).
inline constexpr const char* kRgwAccessKey = "lcctest-access";
inline constexpr const char* kRgwSecretKey = "lcctest-secret-0123456789";

// Options for the fixture's gateway and `bucket`; nullopt-like empty endpoint when
// there is none (the caller skips: LCC_SKIP_WITHOUT_RGW).
inline s3::S3Options rgwOptions(const std::string& bucket) {
  s3::S3Options o;
  const char* e = std::getenv("LCC_TEST_S3_ENDPOINT");
  if (e == nullptr) return o;
  o.endpoint = e;
  o.bucket = bucket;
  o.region = "us-east-1";
  o.access_key = kRgwAccessKey;
  o.secret_key = kRgwSecretKey;
  o.connect_timeout = Millis(5000);
  o.timeout = Millis(30000);
  o.upload_threads = 4;
  return o;
}

inline std::string rgwMissing() {
  if (const char* m = std::getenv("LCC_TEST_S3_MISSING")) return m;
  if (std::getenv("LCC_TEST_S3_ENDPOINT") == nullptr) return "no object store (run through ctest: fixture lcc_rgw_server)";
  return {};
}

}  // namespace lcc::testing

#define LCC_SKIP_WITHOUT_RGW()                                              \
  do {                                                                      \
    std::string lcc_rgw_missing_ = ::lcc::testing::rgwMissing();           \
    if (!lcc_rgw_missing_.empty()) GTEST_SKIP() << lcc_rgw_missing_;        \
  } while (0)
