// resource_dump.h — one ZIP package of a provider's Resource Dump (ANSI/NISO
// Z39.99-2017, Resource Dump and Resource Dump Manifest), written front to back into
// the HTTP body as it is read from the stores.
//
// Package n holds the provider's stored URLs at positions (n-1)·page_size … n·page_size-1
// in key order, among those whose seq is at most the store's maxSeq() when the package
// began (M). Its first entry is manifest.xml, the Resource Dump Manifest: one <url> per
// resource with md5, length, type and path="/resources/<seq>[.ext]"; then one entry
// per resource at that path, its content read file by file through DumpContent (this
// machine's files, other machines' over HTTP: the CU's path).
//
// Two scans of the provider: the manifest, then the files. A record unchanged since
// M is seen by both; the files scan takes those with seq <= M between the first and
// the last key the manifest listed, so it can only lose entries (a URL changed or
// removed meanwhile), never gain one. Each file is checked against the manifest as it
// streams (length, md5). A package whose files do not match its manifest exactly is
// abandoned: no central directory, and the HTTP body is cut, so a reader sees a broken
// download, never a package that lies; asking again gives a package of the new state.
// MEMORY: one manifest line and one 64 KiB read buffer at a time, plus libarchive's
// block and deflate state; nothing grows with the number or size of the files.
#pragma once

#include "lcc/byte_sink.h"
#include "lcc/content_store.h"
#include "resourcesync/resourcesync.h"

namespace lcc::resourcesync {

// Stored (not deleted) records of `pid`.
Result<std::uint64_t> storedCount(ContentStore& store, ProviderId pid);
// Packages of a provider with `stored` stored records (at least 1, an empty one).
std::uint64_t packagesFor(const Options& o, std::uint64_t stored);

// Writes package `n` (1-based) of `pid` into `sink`; `at` is the manifest's time.
Status writeDumpPackage(ByteSink& sink, ContentStore& store, DumpContent& content, const Options& o, ProviderId pid,
                        std::uint64_t n, WallTime at);

// "/resources/<seq>" with the extension of the URL's last path segment when it is 1-8
// letters or digits ("/resources/42.html"): unique in the store, safe in any file system.
std::string resourcePath(const ContentRecord& r);

}  // namespace lcc::resourcesync
