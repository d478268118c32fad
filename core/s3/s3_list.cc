#include "s3/s3_list.h"

#include <charconv>

#include "proto/xml_reader.h"

namespace lcc::s3 {

namespace {
// ListBucketResult
//   Contents (Key, Size, …)*   IsTruncated   NextContinuationToken
// read with the project's Expat reader (proto/xml_reader.h): entities, CDATA and
// namespaces as XML has them, and its limits on depth, text length and element count
// bound what a store's answer can make us hold.
class ListHandler final : public proto::XmlHandler {
 public:
  void onStart(int depth, const proto::XmlName& name, const proto::XmlAttrs&) override {
    text_.clear();
    if (depth == 1) root_ok_ = name.local == "ListBucketResult";
    if (depth == 2 && name.local == "Contents") {
      in_contents_ = true;
      current_ = S3Object{};
      has_key_ = false;
    }
  }
  void onText(int, std::string_view t) override { text_.append(t); }
  void onEnd(int depth, const proto::XmlName& name) override {
    if (depth == 3 && in_contents_ && name.local == "Key") {
      current_.key = text_;
      has_key_ = true;
    } else if (depth == 3 && in_contents_ && name.local == "Size") {
      std::from_chars(text_.data(), text_.data() + text_.size(), current_.size);
    } else if (depth == 2 && name.local == "Contents") {
      in_contents_ = false;
      if (!has_key_) missing_key_ = true;
      page_.objects.push_back(std::move(current_));
    } else if (depth == 2 && name.local == "IsTruncated") {
      truncated_ = text_ == "true";
    } else if (depth == 2 && name.local == "NextContinuationToken") {
      page_.next_token = text_;
    }
    text_.clear();
  }

  Result<S3ListPage> take() {
    if (!root_ok_) return Status::corruption("s3: LIST: the answer is not a ListBucketResult");
    if (missing_key_) return Status::corruption("s3: LIST: <Contents> without <Key>");
    if (truncated_ && page_.next_token.empty()) {
      return Status::corruption("s3: LIST: truncated without a NextContinuationToken");
    }
    if (!truncated_) page_.next_token.clear();
    return std::move(page_);
  }

 private:
  S3ListPage page_;
  S3Object current_;
  std::string text_;
  bool root_ok_ = false, in_contents_ = false, has_key_ = false, missing_key_ = false, truncated_ = false;
};
}  // namespace

Result<S3ListPage> parseListPage(std::string_view xml) {
  ListHandler h;
  proto::XmlLimits limits;
  limits.max_value_length = 4096;  // a key is at most 1024 bytes; a token is opaque but short
  limits.max_depth = 4;
  limits.max_elements = 64 * 1024;  // a page holds at most 1000 keys of a few elements each
  proto::XmlReader reader(h, limits, proto::XmlFraming::kDocuments);
  const std::size_t used = reader.feed(xml.data(), xml.size());
  if (reader.failed()) return Status::corruption("s3: LIST: " + reader.errorMessage());
  const bool only_space_after = xml.substr(used).find_first_not_of(" \t\r\n") == std::string_view::npos;
  if (!reader.documentComplete() || !only_space_after) {
    if (!reader.documentComplete()) (void)reader.finish();
    return Status::corruption("s3: LIST: the answer is not one whole XML document" +
                              (reader.failed() ? ": " + reader.errorMessage() : std::string()));
  }
  return h.take();
}

}  // namespace lcc::s3
