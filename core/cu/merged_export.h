// merged_export.h — a merged CU answer (merged_query.h) written in any format by the
// same exporter plugins a single LCC uses (cu-xml, cu-tar, cu-warc; docs/protocol.md
// §3.4): the bytes look like one LCC's answer, with the cursor token as last_seq, each
// <url> with source="<store id>", and the sources left out in the root's `unreachable`.
//
// Content (format=xml&content=yes, tar.gz, warc.gz) is read from the LCC that holds
// the record, as it streams:
//  - this node's own records: the store's record under that seq (QueryEngine::recordAt),
//    opened as a single LCC opens it (file, other machine, object store);
//  - a peer's records: GET <peer>/cu/content/<store id>/<seq>/<key> (cu_http.h), through a
//    RemoteContentReader, one keep-alive connection per peer with requests pipelined
//    cu.remote_pipeline deep, the answer exactly the record's size (X-LCC-Size) and of
//    its MD5 (X-LCC-MD5).
// A record whose content cannot be read, or whose record changed since the list was
// made (another seq, size or MD5), is given as a single LCC gives unreadable content:
// missing="unreadable" (missing="other-machine" for this node's record of a machine
// whose URL it does not know), never with a wrong body. A body that stalls mid-way is
// zero-filled to the size, as for one LCC.
// MEMORY: the merged list (≤ sources × cu.peer_max_records records); content streams.
// THREADS: one thread (an HTTP stream thread, or the CLI); stream() blocks.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "cu/merged_query.h"
#include "cu/remote_content.h"
#include "lcc/exporter.h"

namespace lcc::cu {

class QueryEngine;

struct MergedExportOptions {
  std::string machine_id;  // the exporter's host machine: records without content are shown as its own (unreadable)
  std::string temp_dir;    // ExportHeader::temp_dir (cu-tar and cu-warc spool there)
  RemoteOptions remote;    // how peers' content is read (timeouts, pipelining, TLS)
  Counter* content_bytes = nullptr;    // may be null (the CLI)
  Counter* content_missing = nullptr;  // may be null
};

class MergedExport {
 public:
  // `local` answers for "this node" (null in the CLI); it must outlive the export.
  MergedExport(MergedResult result, Exporter& exporter, bool content_asked, QueryEngine* local,
               MergedExportOptions options);
  ~MergedExport();

  const ExportHeader& header() const { return header_; }
  const MergedResult& result() const { return result_; }
  // Writes the answer into `sink`; a failed sink write ends it with that error.
  Status stream(ByteSink& sink);

 private:
  // The content of record i, or null with the record as the exporter should show it.
  std::unique_ptr<ContentSource> open(std::size_t i, ContentRecord* shown);
  std::unique_ptr<ContentSource> openLocal(const ContentRecord& r, ContentRecord* shown);
  std::unique_ptr<ContentSource> openPeer(const ContentRecord& r, const std::string& url);
  // Asks ahead for the content of the records up to i + cu.remote_pipeline.
  void prefetch(std::size_t i);
  // The URL content of `source` is read from; empty for this node (or an unknown source).
  const std::string* peerUrlOf(const std::string& source) const;
  bool wantsContent(const ContentRecord& r) const { return header_.with_content && !r.deleted; }
  void missing(const ContentRecord& r, const std::string& why);

  MergedResult result_;
  Exporter& exporter_;
  QueryEngine* const local_;
  const MergedExportOptions options_;
  ExportHeader header_;
  std::map<std::string, std::string> peer_urls_;  // store id -> peer URL (not this node)
  RemoteContentReader reader_;                    // peers' /cu/content
  std::unique_ptr<RemoteContentReader> local_remote_;  // this node's records on other machines
  std::size_t prefetched_ = 0;                    // records [0, prefetched_) were considered for prefetch
};

// The path below `<peer>/cu/content/` that serves the content of `r` (seq r.seq) of
// store `source`: `<source>/<seq>/<the record's encoded key, percent-encoded>`, so the
// peer reads it with one point read; without the key when that would be over 8 KiB.
std::string recordContentFile(const std::string& source, const ContentRecord& r);

}  // namespace lcc::cu
