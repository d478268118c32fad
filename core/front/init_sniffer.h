// init_sniffer.h — reads a CP's first message (docs/protocol.md §1.1, `init`) far
// enough to learn its provider id, within a byte bound, and nothing more: the rest of
// the session is relayed as bytes (relay.h). Pure (no sockets, no clock).
// Refusals carry the protocol's codes: 100 (malformed XML, a `set` or other document
// before `init`), 101 (more than `max_bytes` before the init ended, or a value past the
// XML limits), 110 (an id that is not a provider number: as the UNS answers it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lcc/error_codes.h"
#include "proto/cp_uns.h"

namespace lcc::front {

class InitSniffer {
 public:
  enum class State { kNeedMore, kInit, kRefused };
  explicit InitSniffer(std::size_t max_bytes);
  ~InitSniffer();

  // Feeds the CP's bytes. Once kInit: id(), password(), and rest() (what followed the
  // init in the bytes fed: the start of the set, passed on as it came).
  State feed(std::string_view bytes);
  State state() const { return state_; }
  std::uint64_t id() const { return id_; }
  const std::string& password() const { return password_; }
  const std::string& rest() const { return rest_; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The CP closed before the init ended: 100.
  void onEof();

 private:
  class Handler;
  void refuse(ErrorCode code, std::string message);
  std::size_t max_bytes_;
  std::size_t seen_ = 0;
  State state_ = State::kNeedMore;
  std::uint64_t id_ = 0;
  std::string id_text_, password_, rest_, message_;
  ErrorCode code_ = ErrorCode::kNone;
  bool got_init_ = false;
  std::unique_ptr<Handler> handler_;
  std::unique_ptr<proto::CpRequestDecoder> decoder_;
};

}  // namespace lcc::front
