#include "sitemap_properties.h"

#include <vector>

#include "sitemap/sitemap.h"

namespace lcc::sitemap {
namespace {

struct Outcome {
  bool ok = false;
  std::string error;
  SitemapKind kind = SitemapKind::kUnknown;
  std::vector<std::string> entries;  // loc and lastmod, joined
};

Outcome readInPieces(std::string_view data, std::size_t piece, const SitemapLimits& limits) {
  Outcome o;
  SitemapReader reader(
      [&](const SitemapEntry& e) {
        o.entries.push_back(e.loc + "\n" + (e.lastmod ? std::to_string(*e.lastmod) : std::string("-")));
      },
      limits);
  bool fed = true;
  for (std::size_t at = 0; fed && at < data.size(); at += piece) fed = reader.feed(data.substr(at, piece));
  o.ok = fed && reader.finish();
  o.error = reader.error();
  o.kind = reader.kind();
  return o;
}

}  // namespace

std::string checkSitemapProperties(std::string_view data) {
  SitemapLimits limits;
  limits.max_entries = 200;
  limits.max_bytes = 1 << 20;
  limits.max_loc_length = 256;
  const Outcome whole = readInPieces(data, data.size() == 0 ? 1 : data.size(), limits);
  if (!whole.ok && whole.error.empty()) return "refused without a message";
  if (whole.ok && whole.kind == SitemapKind::kUnknown) return "accepted without a kind";
  if (whole.entries.size() > limits.max_entries) return "more entries than the limit came out";
  for (const auto& e : whole.entries) {
    const std::size_t loc = e.find('\n');
    if (loc == 0 || loc > limits.max_loc_length) return "an empty or over-long <loc> came out";
  }
  for (std::size_t piece : {1, 3, 7}) {
    const Outcome split = readInPieces(data, piece, limits);
    // The verdict and what came out must not depend on the split; the wording of a
    // refusal may (Expat reports a bad token when it is complete, which a split moves).
    if (split.ok != whole.ok || split.entries != whole.entries || split.kind != whole.kind) {
      return "read in pieces of " + std::to_string(piece) + " differs from read whole (" + whole.error + " / " +
             split.error + ")";
    }
  }
  return "";
}

}  // namespace lcc::sitemap
