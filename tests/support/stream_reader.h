// stream_reader.h — feeds a link stream's bytes to its decoder in tests: from a
// blocking test socket, or in pieces of a given size.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <string>
#include <string_view>
#include <vector>

namespace lcc::testing {

// Reads from `fd` through `dec` (a proto link decoder) until `out` holds `n` messages,
// the peer closes, or a read times out (connectLoopback's 20 s).
template <typename Decoder, typename Message>
void readMessages(int fd, Decoder& dec, std::vector<Message>* out, std::size_t n) {
  char buf[65536];
  while (out->size() < n) {
    ssize_t k = ::recv(fd, buf, sizeof buf, 0);
    if (k <= 0) break;
    EXPECT_TRUE(dec.feed(std::string_view(buf, static_cast<std::size_t>(k)), out)) << dec.errorMessage();
  }
}

// Feeds `bytes` to `dec` in pieces of `chunk`, expecting each piece to be accepted; the
// messages decoded.
template <typename Decoder, typename Message>
std::vector<Message> feedAll(Decoder& dec, const std::string& bytes, std::size_t chunk) {
  std::vector<Message> out;
  for (std::size_t i = 0; i < bytes.size(); i += chunk) {
    EXPECT_TRUE(dec.feed(std::string_view(bytes).substr(i, chunk), &out)) << dec.errorMessage();
  }
  return out;
}

}  // namespace lcc::testing
