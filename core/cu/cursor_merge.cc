#include "cu/cursor_merge.h"

#include <algorithm>
#include <numeric>

namespace lcc::cu {

std::vector<std::size_t> CursorMerge::shares(const std::vector<std::size_t>& available, std::uint64_t limit) {
  std::vector<std::size_t> take(available.size(), 0);
  if (limit == 0) return available;
  // Smallest first: each takes min(what it has, an equal part of what is left), so
  // what a quiet source leaves goes to the busier ones.
  std::vector<std::size_t> order(available.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return available[a] < available[b]; });
  std::uint64_t left = limit;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::uint64_t sources_left = order.size() - k;
    const std::uint64_t part = (left + sources_left - 1) / sources_left;  // rounded up: the budget is used
    take[order[k]] = static_cast<std::size_t>(std::min<std::uint64_t>(available[order[k]], part));
    left -= take[order[k]];
  }
  return take;
}

std::string CursorMerge::refusal(const SourceAnswer& a, const std::vector<std::string>& seen) const {
  if (!a.reachable) return a.why.empty() ? "not reachable" : a.why;
  if (!proto::validCuSourceId(a.source)) return "its answer names no valid source id";
  if (std::find(seen.begin(), seen.end(), a.source) != seen.end()) {
    return "its store " + a.source + " is answered by another source already (listed twice?)";
  }
  if (a.since != since_.seqOf(a.source)) return "it was asked from another seq than its part of the cursor";
  if (a.last_seq < a.since) return "its last_seq " + std::to_string(a.last_seq) + " is below the since asked";
  ChangeSeq prev = a.since;
  for (const auto& r : a.records) {
    if (r.seq <= prev || r.seq > a.last_seq) {
      return "its record seq " + std::to_string(r.seq) + " is out of order or outside (since, last_seq]";
    }
    prev = r.seq;
  }
  return "";
}

MergedAnswer CursorMerge::merge(std::vector<SourceAnswer> answers) const {
  MergedAnswer out;
  out.cursor = since_;
  std::vector<SourceAnswer*> good;
  std::vector<std::string> seen;
  for (auto& a : answers) {
    if (std::string why = refusal(a, seen); !why.empty()) {
      out.unreachable.push_back(a.where + ": " + why);
      continue;
    }
    seen.push_back(a.source);
    good.push_back(&a);
    out.sources.emplace_back(a.source, a.where);
  }
  std::sort(good.begin(), good.end(), [](const SourceAnswer* x, const SourceAnswer* y) { return x->source < y->source; });
  std::vector<std::size_t> available;
  for (const SourceAnswer* a : good) available.push_back(a->records.size());
  const std::vector<std::size_t> take = shares(available, limit_);
  for (std::size_t i = 0; i < good.size(); ++i) {
    SourceAnswer& a = *good[i];
    const ChangeSeq reached =
        take[i] == a.records.size() ? a.last_seq : (take[i] == 0 ? a.since : a.records[take[i] - 1].seq);
    // Checked above: reached >= since, so a part never goes back.
    if (Status s = out.cursor.set(a.source, std::max(reached, a.since)); !s.isOk()) {
      out.unreachable.push_back(a.where + ": " + s.message());
      continue;
    }
    for (std::size_t k = 0; k < take[i]; ++k) out.records.push_back({a.source, std::move(a.records[k])});
  }
  return out;
}

}  // namespace lcc::cu
