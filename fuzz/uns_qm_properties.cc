// checkUnsQmProperties (parser_properties.h): the UNS <-> QM link codec, XML and the
// compact frames it may switch to (proto/uns_qm_frames.h).
#include <string>
#include <vector>

#include "parser_properties.h"
#include "proto/link_frames.h"
#include "proto/uns_qm.h"
#include "proto/uns_qm_frames.h"

namespace lcc::fuzz {
namespace {

proto::UnsQmLimits limits() {
  proto::UnsQmLimits l;
  l.max_attribute_length = 1024;
  l.max_set_urls = 1000;
  return l;
}

struct UnsSide : proto::UnsStreamHandler {
  std::vector<proto::UnsQmSet> sets;
  void onUnsOpen(std::string_view, std::uint32_t) override {}
  void onSet(proto::UnsQmSet&& set) override { sets.push_back(std::move(set)); }
};

struct QmSide : proto::QmStreamHandler {
  std::vector<proto::UnsQmAck> acks;
  void onQmOpen(std::uint32_t) override {}
  void onAck(const proto::UnsQmAck& ack) override { acks.push_back(ack); }
};

std::string checkSet(const proto::UnsQmSet& received, const char* how) {
  if (received.urls.size() > limits().max_set_urls) return std::string(how) + ": a set past max_set_urls";
  // encodeSet() writes one whole set (count in its header, no <end/>): a set that came
  // streamed is whole once its end was read, and goes back as such.
  proto::UnsQmSet set = received;
  set.header.streamed = false;
  set.header.count = set.urls.size();
  auto again = proto::decodeSet(proto::encodeSet(set), limits());
  if (!again.isOk()) return std::string(how) + ": an encoded set is refused: " + again.status().toString();
  if (!(*again == set)) return std::string(how) + ": a set encoded and decoded again changed";
  if (proto::peekSetId(proto::encodeSet(set)) != set.header.id) return std::string(how) + ": peekSetId disagrees";
  // The same set as frames comes back the same.
  std::string framed = proto::encodeUnsOpen("f/uns", 1) + proto::encodeFramesSwitch();
  proto::UnsQmSetHeader h = set.header;
  h.count = set.urls.size();
  h.streamed = false;
  proto::appendSetBeginFrame(framed, h);
  proto::appendUrlsFrames(framed, set.urls);
  proto::appendSetEndFrame(framed, set.urls.size());
  UnsSide back;
  proto::UnsStreamDecoder dec(back, limits(), true);
  dec.feed(framed);
  if (dec.failed()) return std::string(how) + ": a set as frames is refused: " + dec.errorMessage();
  if (back.sets.size() != 1 || !(back.sets[0].urls == set.urls) || back.sets[0].header.id != set.header.id) {
    return std::string(how) + ": a set as frames came back changed";
  }
  return "";
}

std::string checkQmStream(std::string_view data) {
  QmSide side;
  proto::QmStreamDecoder dec(side, limits(), true);
  dec.feed(data);
  if (dec.failed() && dec.errorMessage().empty()) return "QM stream refused without a message";
  for (const auto& ack : side.acks) {
    std::string framed = proto::encodeQmOpen(1) + proto::encodeFramesSwitch();
    proto::appendAckFrame(framed, ack);
    QmSide fback;
    proto::QmStreamDecoder fagain(fback, limits(), true);
    fagain.feed(framed);
    if (fagain.failed() || fback.acks.size() != 1 || !(fback.acks[0] == ack)) {
      return "an ack as a frame came back changed (" + fagain.errorMessage() + ")";
    }
    if (!proto::xmlCanCarry(ack.reason)) continue;  // read from a frame: XML would replace those bytes
    QmSide back;
    proto::QmStreamDecoder again(back, limits());
    again.feed(proto::encodeQmOpen() + proto::encodeAck(ack) + proto::encodeQmClose());
    if (again.failed() || back.acks.size() != 1 || !(back.acks[0] == ack)) {
      return "an ack encoded and decoded again changed (" + again.errorMessage() + ")";
    }
  }
  return "";
}

}  // namespace

std::string checkUnsQmProperties(std::string_view data) {
  UnsSide uns;
  proto::UnsStreamDecoder dec(uns, limits(), true);
  for (std::size_t at = 0; at < data.size() && dec.feed(data.substr(at, 11));) at += 11;
  if (dec.failed() && dec.errorMessage().empty()) return "UNS stream refused without a message";
  for (const auto& set : uns.sets) {
    if (std::string why = checkSet(set, "stream"); !why.empty()) return why;
  }
  auto one = proto::decodeSet(data, limits());
  if (one.isOk()) {
    if (std::string why = checkSet(*one, "decodeSet"); !why.empty()) return why;
  } else if (one.status().toString().empty()) {
    return "decodeSet refused without a message";
  }
  (void)proto::peekSetId(data);
  return checkQmStream(data);
}

}  // namespace lcc::fuzz
