// fuzz/url_properties.h — the properties of the URL normal form (core/support/url_norm.cc), checked
// by the libFuzzer target url_fuzz and, over the seed corpus, by url_corpus_test.
#pragma once

#include <string>
#include <string_view>

namespace lcc::url {

// `data` is a URL, or "PREFIX\nURL". Returns "" when every property holds, else which
// one failed:
//  - normalising a normal form changes nothing;
//  - a normal form parses (splitNormalUrl) into parts that join back into it, with a
//    path that starts with '/' and holds no dot segment;
//  - a URL that underPrefix() puts under a prefix really lies under it: same scheme,
//    host and port, and its path starts with the prefix's path, which ends with '/'
//    (and underPrefix() says so whenever that holds).
std::string checkUrlProperties(std::string_view data);

}  // namespace lcc::url
