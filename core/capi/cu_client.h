// cu_client.h — the client side of the CU query (docs/protocol.md §3), in C++: connect to
// a CU port, send a query, and read the answer as raw bytes or as records.
//
// WHO: liblcc_client.so (the C API, lcc_client.h) and `lcc cu query`.
// AnswerReader is a pull parser over the XML answer: it feeds Expat (through
// lcc::proto::XmlReader) at most 16 KiB at a time, so memory stays bounded whatever
// the answer's size, and content (base64) is decoded as it is read.
// THREADS: one object, one thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "lcc/status.h"
#include "net/tls.h"
#include "proto/cu_query.h"
#include "lcc/support/cu_xml_format.h"
#include "proto/xml_reader.h"

namespace lcc::capi {

struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
  bool tls = false;  // written tls://host:port
  std::string text() const { return (tls ? "tls://" : "") + host + ":" + std::to_string(port); }
};

// "host:port", "[v6]:port", or either after "tls://".
Result<Endpoint> parseEndpoint(std::string_view text);

// A non-blocking TCP connection, plain or TLS, with a per-operation timeout for the
// blocking calls (writeAll, read).
class Socket {
 public:
  // A TLS endpoint needs `tls` (net::makeClientContext); the server's certificate is
  // checked for the endpoint's host.
  static Result<std::unique_ptr<Socket>> connect(const Endpoint& ep, int timeout_ms,
                                                 const net::TlsContextPtr& tls = nullptr);
  ~Socket();
  Status writeAll(std::string_view bytes);
  Result<std::size_t> read(char* buf, std::size_t n);  // 0: the server closed
  Status shutdownSend();  // no more bytes from us (the server still answers)

  // For a caller's own poll loop: what one non-blocking send or receive did (bytes,
  // or what to wait for, or the end); pending(): bytes to receive without waiting.
  int fd() const { return fd_; }
  Result<net::FdTls::Io> sendSome(const char* data, std::size_t n);
  Result<net::FdTls::Io> recvSome(char* buf, std::size_t n);
  bool pending() const { return tls_ && tls_->pending(); }

 private:
  Socket(int fd, int timeout_ms) : fd_(fd), timeout_ms_(timeout_ms) {}
  int fd_;
  int timeout_ms_;
  std::unique_ptr<net::FdTls> tls_;
};

// Sends `query` and hands every answer byte to `fn` (any format).
Status rawQuery(const Endpoint& ep, const proto::CuQuery& query, int timeout_ms,
                const std::function<Status(std::string_view)>& fn, const net::TlsContextPtr& tls = nullptr);

// One <url> of an XML answer.
struct AnswerRecord {
  std::uint64_t seq = 0;
  std::uint32_t pid = 0;
  std::string url, mime, browse, fetch, view_tag, md5, stored_text, mtime_text, content_missing;
  std::optional<std::int64_t> mtime, stored;
  std::uint64_t size = 0;
  bool deleted = false;
  bool has_content = false;  // a <content encoding="base64"> element is there
};

class AnswerReader final : private proto::XmlHandler {
 public:
  // `socket` holds an answer to a query already sent.
  explicit AnswerReader(std::unique_ptr<Socket> socket);
  ~AnswerReader() override;

  // Reads up to the answer's root element: count and last_seq, or the rejection.
  Status start();
  std::uint64_t count() const { return count_; }
  std::uint64_t lastSeq() const { return last_seq_; }
  bool rejected() const { return rejected_; }
  int rejectCode() const { return reject_code_; }
  const std::string& rejectMessage() const { return reject_message_; }

  // The next record (its content, if any, through readContent()); nullptr at the end.
  Result<const AnswerRecord*> next();
  // Decoded content bytes of the current record; 0 at its end.
  Result<std::size_t> readContent(char* buf, std::size_t n);

 private:
  struct Rec {
    AnswerRecord rec;
    std::string content;  // decoded, not yet read
    bool complete = false;
    // Its <content> began or the record ended: has_content and content_missing are
    // final. next() hands a record out only then (they come after the <url> tag).
    bool head_known = false;
  };

  Status feedMore();  // reads and parses up to 16 KiB; error at a truncated answer
  void onStart(int depth, const proto::XmlName& name, const proto::XmlAttrs& attrs) override;
  void onEnd(int depth, const proto::XmlName& name) override;
  void onText(int depth, std::string_view text) override;

  std::unique_ptr<Socket> socket_;
  proto::XmlReader reader_;
  bool root_seen_ = false;
  bool done_ = false;
  std::uint64_t count_ = 0;
  std::uint64_t last_seq_ = 0;
  bool rejected_ = false;
  int reject_code_ = 0;
  std::string reject_message_;
  std::deque<Rec> recs_;      // front: the current record once next() returned it
  bool current_ = false;      // the front is the record next() returned
  bool skipping_ = false;     // dropping the rest of a record next() moved past
  bool in_content_ = false;
  proto::Base64Decoder decoder_;
  std::string parse_error_;
};

}  // namespace lcc::capi
