// parser_properties.h — what the parser fuzz targets check (fuzz/parser_fuzz.cc), one
// function per target. Each takes the fuzzer's bytes and returns "" when every
// property holds, else what broke; a crash, leak, hang or sanitizer report is a
// failure of its own. The normal build runs them over fuzz/corpus/<name>/
// (tests/fuzz/parser_corpus_test.cc).
#pragma once

#include <string>
#include <string_view>

namespace lcc::fuzz {

// cp_uns: the CP -> UNS request decoder (init, then sets, kDocuments framing) gives the
// same events and verdict whether the bytes come whole or in pieces of 1 and 7; every
// <url> it yields goes through validateUrl(); the same bytes through the CP's reply
// decoder.
std::string checkCpUnsProperties(std::string_view data);
// cu_query: the incremental parser agrees with parseCuQueryXml(); an accepted query
// passes validateCuQuery() and survives formatCuQueryXml() -> parse unchanged; the bytes
// read as GET parameters (k=v&…) do the same; a refusal has a message.
std::string checkCuQueryProperties(std::string_view data);
// cu_cursor: decodeCuCursor() on the bytes, and on "c1." + the bytes: an accepted token is
// the one encoding of what it decodes to (sorted, valid, bounded sources); a refusal is
// InvalidArgument with a message.
std::string checkCuCursorProperties(std::string_view data);
// uns_qm: the QM's UNS-stream decoder, the UNS's QM-stream decoder and decodeSet();
// every set and ack decoded is encoded and decoded back equal.
std::string checkUnsQmProperties(std::string_view data);
// botm_link: the BOT-M's source-stream decoder and the QM's BOT-M-stream decoder;
// what was decoded, encoded again and decoded, encodes to the same bytes.
std::string checkBotmLinkProperties(std::string_view data);
// link_frames: the BOT-M link's compact frames (proto/link_frames.h) after the switch,
// read by both sides: the same messages and verdict whole and in pieces of 1 and 13; a
// refusal has a message; what was decoded, as frames again, reads back the same.
std::string checkLinkFramesProperties(std::string_view data);
// robot_frames: the same for the robot protocol's frames, both sides.
std::string checkRobotFramesProperties(std::string_view data);
// config: Config::loadText() on the bytes as YAML either loads with no problem or
// refuses with problems that each read "fuzz.yaml: key: why" with a why.
std::string checkConfigProperties(std::string_view data);
// journal: the bytes as a journal segment: open() and replay() report, never crash,
// replay only whole records in order; the journal then takes an append and replays
// it after what was there.
std::string checkJournalProperties(std::string_view data);
// indexnow: parsePost() on the bytes as a JSON body: a submission has a valid key and
// at most 10,000 URLs, each under the key's folder; a refusal is 400 or 422 with a
// message.
std::string checkIndexNowProperties(std::string_view data);
// http_request: the HTTP server's request reader (core/http/request_reader.h) gives the
// same request or refusal whether the bytes come whole or in pieces of 1, 7 and 1500
// (or, for a malformed header, a refusal whole and a wait for its end, or 431, in pieces);
// an accepted request keeps max_body and has no Transfer-Encoding but a single
// `chunked`, never with Content-Length; a refusal is 400, 413 or 431; nothing throws.
std::string checkHttpRequestProperties(std::string_view data);
// proxy_header: decodeProxyV2() (proto/proxy_header.h): every prefix of the bytes is
// "need more" or the whole bytes' verdict; it never waits past kProxyV2MaxSize; a
// header's size is within the bytes and the bound; a refusal has a reason; an address
// read, written again with encodeProxyV2(), reads back the same.
std::string checkProxyHeaderProperties(std::string_view data);

}  // namespace lcc::fuzz
