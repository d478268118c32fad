#include "common/config/suggest.h"

#include <algorithm>

namespace lcc {

std::size_t editDistance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  // Three rows: the one before the previous one is needed for a swap.
  std::vector<std::size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j) prev[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

namespace {
std::string lastPart(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}
}  // namespace

std::optional<std::string> closestName(const std::string& word, const std::vector<std::string>& candidates) {
  const std::size_t allowed = std::min<std::size_t>(3, std::max<std::size_t>(1, word.size() / 3));
  std::optional<std::string> best;
  std::size_t best_distance = allowed + 1;
  for (const auto& c : candidates) {
    if (c == word) continue;
    const std::size_t d = editDistance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  if (best) return best;
  if (word.find('.') == std::string::npos) return std::nullopt;
  const std::string last = lastPart(word);
  std::optional<std::string> same_last;
  for (const auto& c : candidates) {
    if (c == word || c.find('.') == std::string::npos || lastPart(c) != last) continue;
    if (same_last) return std::nullopt;  // two sections have it: no guess
    same_last = c;
  }
  return same_last;
}

std::string didYouMean(const std::string& word, const std::vector<std::string>& candidates) {
  auto c = closestName(word, candidates);
  return c ? "; did you mean " + *c + "?" : std::string();
}

}  // namespace lcc
