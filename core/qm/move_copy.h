// move_copy.h — a stored URL of a moved provider taken by its new QM from its old one
// (a front end's slot move, core/front/slot_move.h): the queued notice's fetch URL is
// the source's `GET /cu/content/<store>/<seq>/<key>` with what the body must be and the
// URL's own fetch URL after it. The robot fetches it like any URL (no site is read); the
// QM stores the body only when its size and MD5 are the source's, under the URL's own
// fetch URL, and fetches the site instead when the source cannot give it (any failure,
// another size or MD5). Only the admin import route makes such notices (qm_move_routes).
// Pure functions, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace lcc::qm {

struct CopyFetch {
  std::string content_url;  // the source's /cu/content/… URL
  std::string md5;          // 32 lower-case hex digits
  std::uint64_t size = 0;
  std::string original;     // the URL's own fetch URL ("f"; empty: the URL itself)
};

// The fetch URL of a copy: content_url?lcc_copy=<md5>-<size>&lcc_of=<original, percent-encoded>.
std::string makeCopyFetch(const CopyFetch& c);
// The copy a fetch URL names, or nullopt for every other URL.
std::optional<CopyFetch> parseCopyFetch(const std::string& fetch);
// The fetch URL a record keeps: a copy's original, else `fetch` itself.
std::string storedFetch(const std::string& fetch);

}  // namespace lcc::qm
