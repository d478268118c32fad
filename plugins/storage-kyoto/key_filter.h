// key_filter.h — an in-memory Bloom filter over a hash file's keys: "certainly absent"
// without reading the file (README.md, "Row count, bucket map and absent-key filter").
//
// It holds every key of the file and of the overlay, and may hold keys removed since it
// was built (a removal cannot clear bits): it errs only towards "may be present", and a
// "may be present" is answered by Kyoto as before. It is built when the file is opened
// and when it is rebuilt (REHASH in kv_engine.h), sized `bits_per_bucket` x the file's
// buckets; a key added between rebuilds only sets bits. Four probes a key.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace lcc::plugins::kyoto {

class KeyFilter {
 public:
  // Empties the filter and sizes it for `bits` (rounded up to a multiple of 64; 0: off,
  // every key "may be present").
  void reset(std::uint64_t bits);
  bool enabled() const { return !words_.empty(); }
  void add(std::string_view key);
  // False: the key was never added since the last reset.
  bool mayContain(std::string_view key) const;
  std::uint64_t bytes() const { return words_.size() * sizeof(std::uint64_t); }

 private:
  static constexpr int kProbes = 4;
  std::uint64_t bitOf(std::uint64_t h) const;
  std::vector<std::uint64_t> words_;
  std::uint64_t bits_ = 0;  // words_.size() * 64
};

}  // namespace lcc::plugins::kyoto
