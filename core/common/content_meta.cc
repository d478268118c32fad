#include "common/content_meta.h"

#include <charconv>

namespace lcc {

Result<std::optional<ChangeSeq>> readPurgedSeq(ContentStore& store) {
  auto meta = store.getMeta(kContentMetaPurgedSeq);
  if (!meta.isOk()) {
    Status s = meta.status().withContext("reading the LCC DB's purge horizon");
    return s.isNotFound() ? Status::internal(s.message()) : s;
  }
  if (!meta.value()) return std::optional<ChangeSeq>();
  ChangeSeq purged = 0;
  const std::string& v = *meta.value();
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), purged);
  if (ec != std::errc() || end != v.data() + v.size()) {
    return Status::corruption("the LCC DB's purge horizon is not a number: " + v);
  }
  return std::optional<ChangeSeq>(purged);
}

}  // namespace lcc
