#include "front/init_sniffer.h"

#include "http/url_codec.h"

namespace lcc::front {

class InitSniffer::Handler final : public proto::CpRequestHandler {
 public:
  explicit Handler(InitSniffer& s) : s_(s) {}
  void onInit(std::string_view id, std::string_view password) override {
    s_.got_init_ = true;
    s_.id_text_ = id;
    s_.password_ = password;
  }
  void onSetBegin(std::string_view, std::string_view) override { refuse("set before init"); }
  void onUrl(const proto::UrlAttrs&) override {}
  void onSetEnd() override {}
  void onUnknownDocument(std::string_view, std::string_view local) override {
    refuse("expected init, got " + std::string(local));
  }
  proto::CpRequestDecoder* decoder = nullptr;

 private:
  void refuse(std::string why) {
    if (decoder) decoder->fail(ErrorCode::kMalformed, std::move(why));
  }
  InitSniffer& s_;
};

namespace {

// The XML limits of an init: its values fit in max_bytes; depth and counts are small.
proto::XmlLimits initLimits(std::size_t max_bytes) {
  proto::XmlLimits l;
  l.max_value_length = max_bytes;
  l.max_depth = 4;
  l.max_elements = 64;
  l.max_attributes = 16;
  return l;
}

}  // namespace

InitSniffer::InitSniffer(std::size_t max_bytes)
    : max_bytes_(max_bytes), handler_(std::make_unique<Handler>(*this)),
      decoder_(std::make_unique<proto::CpRequestDecoder>(*handler_, initLimits(max_bytes))) {
  handler_->decoder = decoder_.get();
}

InitSniffer::~InitSniffer() = default;

void InitSniffer::refuse(ErrorCode code, std::string message) {
  state_ = State::kRefused;
  code_ = code;
  message_ = std::move(message);
}

InitSniffer::State InitSniffer::feed(std::string_view bytes) {
  if (state_ != State::kNeedMore) return state_;
  // Only what fits in the bound is parsed; a byte past it is a refusal.
  const std::size_t room = max_bytes_ - seen_;
  const std::size_t take = std::min(room, bytes.size());
  const std::size_t used = decoder_->feed(bytes.data(), take);
  seen_ += used;
  if (decoder_->failed()) {
    refuse(decoder_->error(), decoder_->errorMessage());
  } else if (got_init_) {
    auto id = http::parseUnsigned(id_text_, 0xffffffffull);
    if (!id || *id == 0) {
      refuse(ErrorCode::kAuthFailed, std::string(errorCodeMessage(ErrorCode::kAuthFailed)));
    } else {
      id_ = *id;
      rest_.assign(bytes.substr(used));
      state_ = State::kInit;
    }
  } else if (take < bytes.size() || seen_ >= max_bytes_) {
    refuse(ErrorCode::kLimitExceeded, "init longer than " + std::to_string(max_bytes_) + " bytes");
  }
  return state_;
}

void InitSniffer::onEof() {
  if (state_ == State::kNeedMore) refuse(ErrorCode::kMalformed, "connection closed before the init ended");
}

}  // namespace lcc::front
