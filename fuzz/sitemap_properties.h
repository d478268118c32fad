// fuzz/sitemap_properties.h — the properties of the sitemap reader (core/sitemap/sitemap.h),
// checked by the libFuzzer target sitemap_fuzz and, over the seed corpus, by
// sitemap_corpus_test.
#pragma once

#include <string>
#include <string_view>

namespace lcc::sitemap {

// `data` is the bytes of a sitemap file (plain or gzip). Returns "" when every
// property holds, else which one failed:
//  - the file read whole and read in pieces (1, 3 and 7 bytes at a time) gives the same
//    entries, the same kind and the same verdict;
//  - a refused file has a message; an accepted one has a kind;
//  - no more entries come out than the limit, no <loc> is empty or longer than its limit.
std::string checkSitemapProperties(std::string_view data);

}  // namespace lcc::sitemap
