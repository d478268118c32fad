// peer_source.h — where a merged CU answer's parts come from (docs/protocol.md §3.4):
// another LCC's GET /cu/query (a peer), or this node's own query engine. Both give a
// SourceAnswer (cursor_merge.h) parsed from the same XML answer, so a peer and this
// node are read by one code path.
//
// A peer is asked `GET <url>/cu/query?format=xml&peers=no&since_seq=<the whole
// cursor>&limit=N&…` (the query's filters): it takes its own part of the cursor
// (QueryEngine::prepare), answers for its own store only (peers=no), and says which
// store and which since in X-LCC-Source and X-LCC-Since. Bounds: PeerOptions.
// THREADS: free functions; each blocks (run them off the io threads).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cu/cursor_merge.h"
#include "common/config/config.h"
#include "lcc/status.h"
#include "net/tls.h"
#include "proto/cu_query.h"

namespace lcc::cu {

class QueryEngine;

// Members with a config key carry no default: fromConfig() (cu_options.cc) reads the
// schema's. The CLI (`lcc cu query --cu URL …`) fills them from its options.
struct PeerOptions {
  std::vector<std::string> peers;          // cu.peers: normalised http(s)://host:port[/prefix]
  int timeout_ms = 0;                      // cu.peer_timeout: each step (connect, TLS, send, read)
  std::uint64_t max_answer_bytes = 0;      // cu.peer_max_answer_bytes: a longer answer is a failure
  std::uint64_t max_records = 0;           // cu.peer_max_records: records asked of one source at most
  // https:// peers: the client context (the node's NodeTls::contentClient(), or the
  // CLI's --tls options); null: https peers fail.
  std::shared_ptr<net::TlsContextSlot> tls;

  static PeerOptions fromConfig(const Config& config);
};

// SourceAnswer::where of this node's own part (askLocal); a peer's is its URL.
inline constexpr std::string_view kThisNode = "this node";

// At most this many peers (cu.peers; the config check refuses more).
inline constexpr std::size_t kMaxCuPeers = 16;

// Normalises cu.peers / --cu URLs; every problem goes to *problems ("why (got URL)").
std::vector<std::string> parsePeerUrls(const std::vector<std::string>& urls, std::vector<std::string>* problems);

// An XML answer (no content) read with the project's XML reader: its last_seq (a
// decimal: an answer that is itself merged is refused) and records. Corruption with
// the reason when it is not one, or holds more than `max_records` records.
struct ParsedAnswer {
  ChangeSeq last_seq = 0;
  std::vector<ContentRecord> records;
};
Result<ParsedAnswer> parseXmlAnswer(std::string_view body, std::uint64_t max_records);

// The query a source is asked: format xml, no content, `limit` records at most.
proto::CuQuery sourceQuery(const proto::CuQuery& merged, std::uint64_t limit);

// Asks one peer. A peer that is down, slow, too large, or answers 5xx or nonsense is
// an answer with reachable=false and the reason; a peer that refuses the query (4xx:
// a bad query, changes purged) is that refusal as an error (InvalidArgument, or
// NotFound for 410), since skipping it would be silent.
Result<SourceAnswer> askPeer(const std::string& url, const proto::CuQuery& q, const PeerOptions& options);
// This node's own store, through its query engine; a refused query is the engine's
// error; an answer over `max_answer_bytes` is left out like a peer's.
Result<SourceAnswer> askLocal(QueryEngine& engine, const proto::CuQuery& q, std::uint64_t max_answer_bytes);

}  // namespace lcc::cu
