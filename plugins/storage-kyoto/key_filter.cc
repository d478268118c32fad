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

// A probe's bit: the 64-bit hash scaled onto [0, bits_) by a multiply (no power-of-two
// rounding, so the filter is the size asked for: a power of two would double it just past
// each boundary, 64 MiB instead of 32 for a queue of 16M buckets).
std::uint64_t KeyFilter::bitOf(std::uint64_t h) const {
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(h) * bits_) >> 64);
}

void KeyFilter::reset(std::uint64_t bits) {
  words_.clear();
  words_.shrink_to_fit();
  bits_ = 0;
  if (bits == 0) return;
  bits = std::min<std::uint64_t>(bits, 1ull << 40);
  words_.assign((bits + 63) / 64, 0);
  bits_ = words_.size() * 64;
}

void KeyFilter::add(std::string_view key) {
  if (words_.empty()) return;
  const std::uint64_t h1 = std::hash<std::string_view>{}(key);
  const std::uint64_t h2 = mix(h1) | 1;
  for (int i = 0; i < kProbes; ++i) {
    const std::uint64_t bit = bitOf(h1 + static_cast<std::uint64_t>(i) * h2);
    words_[bit >> 6] |= 1ull << (bit & 63);
  }
}

bool KeyFilter::mayContain(std::string_view key) const {
  if (words_.empty()) return true;
  const std::uint64_t h1 = std::hash<std::string_view>{}(key);
  const std::uint64_t h2 = mix(h1) | 1;
  for (int i = 0; i < kProbes; ++i) {
    const std::uint64_t bit = bitOf(h1 + static_cast<std::uint64_t>(i) * h2);
    if ((words_[bit >> 6] & (1ull << (bit & 63))) == 0) return false;
  }
  return true;
}

}  // namespace lcc::plugins::kyoto
