// sanitizer.h — whether this test executable was built under a sanitizer.
#pragma once

namespace lcc::testing {

// Under ASan or TSan the process's memory is not the program's: shadow memory, the
// quarantine of freed blocks and the race detector's history count in its RSS, so a
// test of a memory bound skips there (it runs in the normal build).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kUnderSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kUnderSanitizer = true;
#else
inline constexpr bool kUnderSanitizer = false;
#endif
#else
inline constexpr bool kUnderSanitizer = false;
#endif

}  // namespace lcc::testing
