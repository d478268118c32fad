// remote_content.h — reading content that lives on another machine: GET
// <url>/content/<file> from the HTTP port of that machine's BOT-M node
// (core/botm/content_route.h), streamed, with timeouts. An https:// URL is read over
// TLS with the context of RemoteOptions::tls (docs/security.md §3): the server's
// certificate must chain to its CAs and name the URL's host; the handshake counts in
// the connect timeout, and a refused certificate is a transport failure like a refused
// connection (the URL is down for this export, the warning says why).
//
// One RemoteContentReader per export (PreparedExport owns it): at most one
// keep-alive connection per machine URL, reused record after record. A connection
// the server closed while idle is re-opened once, transparently. After a transport
// failure (connect refused or timed out, read timeout, reset) the URL is taken as
// down for the rest of this export: its later records are unreadable at once, not
// after another timeout each (one warning per URL per export).
// A body must announce its size (X-LCC-Size, else Content-Length) and it must equal
// the record's size, else the record is unreadable. A body that ends or stalls
// early is zero-filled to the announced size (warned), like a local file that
// shrinks, so an archive that announced the size stays readable.
// Blocking: the calls run the Asio operations on a private io_context on the calling
// thread (a CU export worker, never an io thread), each bounded by its timeout.
// THREADS: one thread at a time (the export's).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/metrics.h"
#include "lcc/byte_sink.h"
#include "lcc/status.h"
#include "lcc/types.h"

namespace lcc {
class Config;
}

namespace lcc::net {
class TlsContextSlot;
}

namespace lcc::cu {

// Members with a config key carry no default: fromConfig() (cu_options.cc) reads the
// schema's. Tests start from RemoteOptions::fromConfig(Config::defaults()).
struct RemoteOptions {
  Millis remote_connect_timeout{};  // cu.remote_connect_timeout (resolve + connect)
  Millis remote_read_timeout{};     // cu.remote_read_timeout (each write, header read and body read)
  std::size_t remote_pipeline = 0;  // cu.remote_pipeline: requests sent ahead per connection (1: none)
  // No config key:
  std::size_t max_header = 64 * 1024;  // room for X-LCC-Response-Head (24 KiB side file, base64)
  // The client context of https:// URLs (NodeTls::contentClient(): tls.peer_ca_file or
  // the system's CAs, and tls.cert_file shown); taken anew for each connection, so a
  // SIGHUP reload applies to the next one. Null: https:// URLs are unreadable.
  std::shared_ptr<net::TlsContextSlot> tls;

  static RemoteOptions fromConfig(const Config& config);
};

class RemoteContentReader {
 public:
  RemoteContentReader(RemoteOptions options, Counter* bytes = nullptr);
  ~RemoteContentReader();
  RemoteContentReader(const RemoteContentReader&) = delete;
  RemoteContentReader& operator=(const RemoteContentReader&) = delete;

  // Opens the content `file` of size `size` at `base_url` (normalised, see
  // common/content_locator.h). When `machine` is given, an answer whose X-LCC-Machine
  // names another machine is refused (a URL pointing at the wrong node must not give
  // another machine's file of the same name). NotFound: the server answered 404 (a
  // whole short one keeps the connection, and the requests prefetched behind it);
  // IOError: unreachable, timed out, or the URL is down for this export; Corruption:
  // another size, status or machine, or an X-LCC-MD5 header that is not `md5`. The source must be destroyed before the next
  // open() for the same URL can reuse its connection.
  // The source's responseHead() is the side file the answer carried in
  // X-LCC-Response-Head, if it names `md5` (common/response_head.h), else empty.
  Result<std::unique_ptr<ContentSource>> open(const std::string& base_url, const std::string& file, std::uint64_t size,
                                              const std::string& machine = "", const std::string& md5 = "");

  // Says that open(base_url, file, …) comes soon, after the open()s announced before
  // it: its request may go out now on the machine's connection, behind the others
  // (HTTP/1.1 pipelining, at most pipeline_depth unanswered), so the answers flow while
  // the export writes. Failures are left to open(). An open() that is not the next
  // announced file on that connection drops the connection and asks afresh.
  void prefetch(const std::string& base_url, const std::string& file);

  // True when `base_url` is taken as down in this export.
  bool isDown(const std::string& base_url) const;
  // Connections made so far (keep-alive reuse shows as fewer connections than reads).
  std::size_t connectionsOpened() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace lcc::cu
