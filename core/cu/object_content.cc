#include "cu/object_content.h"

#include "common/response_head.h"
#include "cu/exact_size_source.h"
#include "lcc/support/cu_xml_format.h"
#include "s3/s3_reader.h"

namespace lcc::cu {
namespace {

class ObjectContentSource final : public ExactSizeSource {
 public:
  ObjectContentSource(std::unique_ptr<s3::S3Reader> reader, const std::string& key, const ContentRecord& r,
                      Counter& bytes)
      : ExactSizeSource(r.size, std::string("object ").append(key), bytes), reader_(std::move(reader)), md5_(r.md5) {}

  std::string responseHead() override {
    const std::string& b64 = reader_->responseHeadBase64();
    if (b64.empty()) return {};
    std::string stored;
    proto::Base64Decoder dec;
    if (!dec.update(b64, stored) || !dec.finish()) return {};
    return decodeResponseHead(stored, md5_);
  }

 protected:
  // The GET is read in order: `offset` is where it stands.
  Result<std::size_t> readAt(std::uint64_t, char* buf, std::size_t n) override { return reader_->read(buf, n); }

 private:
  std::unique_ptr<s3::S3Reader> reader_;
  const std::string md5_;
};

}  // namespace

Result<std::unique_ptr<ContentSource>> openObjectContent(const s3::S3Options& options, const std::string& key,
                                                         const ContentRecord& r, Counter& bytes) {
  auto reader = s3::S3Reader::open(options, key);
  if (!reader.isOk()) return reader.status();
  if ((*reader)->size() != r.size) {
    return Status::corruption("object " + key + " has " + std::to_string((*reader)->size()) +
                              " bytes, its record says " + std::to_string(r.size));
  }
  return std::unique_ptr<ContentSource>(new ObjectContentSource(std::move(reader).value(), key, r, bytes));
}

}  // namespace lcc::cu
