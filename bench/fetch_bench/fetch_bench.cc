// fetch_bench — a url source (what the QM is to a BOT-M) that drives a running BOT-M
// and its robots as fast as they go, for the end-to-end fetch benchmark
// (bench/fetch_bench/fetch_bench.sh, docs/benchmarks.md "Fetching").
//
//   fetch_bench --listen 127.0.0.1:PORT --urls FILE [--count N] [--overload-pct 150] [--frames 1]
//
// --frames 1: answer the BOT-M's offer of compact frames (proto/link_frames.h) and
// send the fetches as frames (the BOT-M then writes its results as frames too).
// Waits for one BOT-M, waits until it reports a capacity, then keeps
// capacity x overload fetches outstanding (as the QM does), cycling through the URLs
// of FILE (one per line) until N results came back. Prints one line of results.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "proto/botm_link.h"
#include "proto/link_frames.h"

using namespace lcc;

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:17702", urls_file;
  std::uint64_t count = 20000, overload = 150, frames = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--listen") listen = v;
    else if (k == "--urls") urls_file = v;
    else if (k == "--count") count = std::stoull(v);
    else if (k == "--overload-pct") overload = std::stoull(v);
    else if (k == "--frames") frames = std::stoull(v);
    else {
      std::cerr << "fetch_bench: unknown option " << k << "\n";
      return 2;
    }
  }
  std::vector<std::string> urls;
  {
    std::ifstream in(urls_file);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty()) urls.push_back(line);
    }
  }
  if (urls.empty()) {
    std::cerr << "fetch_bench: no URLs in " << urls_file << "\n";
    return 2;
  }
  auto colon = listen.rfind(':');
  int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(std::stoi(listen.substr(colon + 1))));
  ::inet_pton(AF_INET, listen.substr(0, colon).c_str(), &a.sin_addr);
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(lfd, 4) != 0) {
    std::perror("fetch_bench: listen");
    return 1;
  }
  int fd = ::accept(lfd, nullptr, nullptr);
  if (fd < 0) return 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  auto sendAll = [&](const std::string& s) {
    std::size_t off = 0;
    while (off < s.size()) {
      ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<std::size_t>(n);
    }
    return true;
  };
  const proto::LinkForm form = frames != 0 ? proto::LinkForm::kFrames : proto::LinkForm::kXml;
  sendAll(proto::encodeSourceOpen({"fetch_bench", frames != 0 ? proto::kFramesVersion : 0}) +
          (frames != 0 ? proto::encodeFramesSwitch() : ""));
  proto::BotmStreamDecoder dec;
  std::uint64_t capacity = 0, sent = 0, done = 0, ok = 0, bytes = 0;
  std::map<int, std::uint64_t> codes;
  char buf[1 << 16];
  std::chrono::steady_clock::time_point start;
  bool started = false;
  while (done < count) {
    const std::uint64_t window = capacity * overload / 100;
    if (capacity > 0) {
      if (!started) {
        started = true;
        start = std::chrono::steady_clock::now();
      }
      std::vector<FetchRequest> fetches;
      while (sent < count && sent - done < window) {
        FetchRequest f;
        f.id = ++sent;
        f.url = urls[(sent - 1) % urls.size()];
        f.expected_mime = "text/html";
        fetches.push_back(std::move(f));
      }
      std::string batch;
      proto::appendFetches(batch, fetches, proto::detail::FetchWire::kLink, form);
      if (!batch.empty() && !sendAll(batch)) break;
    }
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      std::cerr << "fetch_bench: the BOT-M went away\n";
      break;
    }
    std::vector<proto::BotmMessage> msgs;
    if (!dec.feed(std::string_view(buf, static_cast<std::size_t>(n)), &msgs)) {
      std::cerr << "fetch_bench: protocol error: " << dec.errorMessage() << "\n";
      return 1;
    }
    for (const auto& m : msgs) {
      if (const auto* h = std::get_if<proto::LinkBotmHello>(&m)) capacity = h->capacity;
      if (const auto* c = std::get_if<proto::LinkCapacity>(&m)) capacity = c->slots;
      if (const auto* r = std::get_if<FetchResult>(&m)) {
        ++done;
        if (r->ok()) {
          ++ok;
          bytes += r->size;
        } else {
          codes[static_cast<int>(r->code)]++;
        }
      }
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("lcc fetches=%llu ok=%llu bytes=%llu capacity=%llu window=%llu seconds=%.3f rate=%.0f/s",
              static_cast<unsigned long long>(done), static_cast<unsigned long long>(ok),
              static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(capacity),
              static_cast<unsigned long long>(capacity * overload / 100), secs, done / secs);
  for (auto [c, n] : codes) std::printf(" code%d=%llu", c, static_cast<unsigned long long>(n));
  std::printf("\n");
  std::string close = proto::encodeMessage(proto::SourceMessage{proto::LinkEnd{}}, form);
  sendAll(close);
  ::close(fd);
  ::close(lfd);
  return ok == count ? 0 : 1;
}
