// s3_list.h — reading a ListObjectsV2 answer (the keys, their sizes, the next token).
#pragma once

#include <string_view>

#include "lcc/status.h"
#include "s3/s3_client.h"

namespace lcc::s3 {

// Corruption when the document is not a ListBucketResult.
Result<S3ListPage> parseListPage(std::string_view xml);

}  // namespace lcc::s3
