// object_content.h — a record's content read from the object store (issue 31 §1):
// a GET streamed piece by piece (s3/s3_reader.h), as exactly the record's size.
#pragma once

#include <memory>
#include <string>

#include "common/metrics.h"
#include "lcc/byte_sink.h"
#include "lcc/types.h"
#include "s3/s3_options.h"

namespace lcc::cu {

// Opens `key` for `r`. Not OK: the object is missing (NotFound), the store refused or
// is unreachable, or the object's size is not the record's (replaced underneath). A
// transfer that fails mid-way is zero-filled to the size (warned), as a file that
// shrinks; the record's md5 tells the difference. Its responseHead() is the robot's
// head kept as the object's metadata, when it names the record's MD5.
Result<std::unique_ptr<ContentSource>> openObjectContent(const s3::S3Options& options, const std::string& key,
                                                         const ContentRecord& r, Counter& bytes);

}  // namespace lcc::cu
