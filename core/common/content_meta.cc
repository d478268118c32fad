#include "common/content_meta.h"

#include <charconv>
#include <random>

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

Result<std::optional<std::string>> readStoreId(ContentStore& store) {
  auto meta = store.getMeta(kContentMetaStoreId);
  if (!meta.isOk()) {
    Status s = meta.status().withContext("reading the LCC DB's store id");
    return s.isNotFound() ? Status::internal(s.message()) : s;
  }
  return std::move(meta).value();
}

std::string newStoreId() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device rd;
  std::string id;
  for (int i = 0; i < 4; ++i) {
    std::uint32_t v = rd();
    for (int j = 0; j < 8; ++j, v >>= 4) id.push_back(kHex[v & 15]);
  }
  return id;
}

}  // namespace lcc
