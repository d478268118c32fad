#include "key_filter.h"

#include <algorithm>
#include <functional>

namespace lcc::plugins::kyoto {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

void KeyFilter::reset(std::uint64_t bits) {
  words_.clear();
  words_.shrink_to_fit();
  mask_ = 0;
  if (bits == 0) return;
  std::uint64_t n = 64;
  while (n < bits && n < (1ull << 40)) n <<= 1;
  words_.assign(n / 64, 0);
  mask_ = n - 1;
}

void KeyFilter::add(std::string_view key) {
  if (words_.empty()) return;
  const std::uint64_t h1 = std::hash<std::string_view>{}(key);
  const std::uint64_t h2 = mix(h1) | 1;
  for (int i = 0; i < kProbes; ++i) {
    const std::uint64_t bit = (h1 + static_cast<std::uint64_t>(i) * h2) & mask_;
    words_[bit >> 6] |= 1ull << (bit & 63);
  }
}

bool KeyFilter::mayContain(std::string_view key) const {
  if (words_.empty()) return true;
  const std::uint64_t h1 = std::hash<std::string_view>{}(key);
  const std::uint64_t h2 = mix(h1) | 1;
  for (int i = 0; i < kProbes; ++i) {
    const std::uint64_t bit = (h1 + static_cast<std::uint64_t>(i) * h2) & mask_;
    if ((words_[bit >> 6] & (1ull << (bit & 63))) == 0) return false;
  }
  return true;
}

}  // namespace lcc::plugins::kyoto
