// suggest.h — "did you mean …?" for a misspelt configuration key or plugin option.
// The closest of a set of names by edit distance (insertions, deletions, substitutions
// and swaps of two neighbouring characters each count one).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace lcc {

// Edits between `a` and `b` (optimal string alignment distance).
std::size_t editDistance(const std::string& a, const std::string& b);

// The candidate closest to `word`, when it is close enough to be a typo of it: at most
// one edit per three characters of `word`, and at most three. Ties: the first candidate.
// Failing that, for a dotted key ("uns.data_dir"), the one candidate that has the same
// last part in another section ("node.data_dir"). nullopt when nothing fits.
std::optional<std::string> closestName(const std::string& word, const std::vector<std::string>& candidates);

// "; did you mean X?" for closestName(), or "".
std::string didYouMean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace lcc
