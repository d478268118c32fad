// cli_cp.cc — the content provider's tools (docs/commands.md):
//   lcc cp send  — sends <url/> lines (or a whole <lococa:set>) to a UNS, prints the result
//   lcc cp scan  — <url/> lines for the files under a folder, optionally only the changes
//   (lcc cp sitemap is in cli_sitemap.cc)
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "app/cli.h"
#include "app/cp_hints.h"
#include "common/mime_map.h"
#include "app/progress.h"
#include "common/md5.h"
#include "common/posix_env.h"
#include "lcc/support/time_util.h"
#include "http/url_codec.h"
#include "capi/cu_client.h"
#include "net/host_port.h"
#include "proto/cp_uns.h"
#include "proto/xml_reader.h"

namespace lcc::cli {

namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// Reading the input of `cp send`: <url .../> lines, or a whole <lococa:set>, parsed
// as a stream inside a synthetic root so that both shapes read the same way.

class InputReader : public proto::XmlHandler {
 public:
  InputReader() : reader_(*this, limits(), proto::XmlFraming::kStream) {
    std::string root = "<lcc-input xmlns:lococa=\"";
    root += proto::kLococaNs;
    root += "\">";
    reader_.feed(root);
  }

  // Parses a chunk; complete <url> elements are appended to `out`, encoded for the
  // UNS (proto::appendUrlElement), `count` counting them.
  bool feed(std::string_view chunk, std::string& out, std::uint64_t& count) {
    out_ = &out;
    count_ = &count;
    if (!seen_start_) {
      // Drop an XML declaration: the input is parsed inside our root.
      pending_ += chunk;
      auto first = pending_.find_first_not_of(" \t\r\n");
      if (first == std::string::npos) return true;
      if (pending_.compare(first, 5, "<?xml") == 0) {
        auto end = pending_.find("?>", first);
        if (end == std::string::npos) return pending_.size() < 4096;
        pending_.erase(0, end + 2);
      }
      seen_start_ = true;
      std::string rest = std::move(pending_);
      pending_.clear();
      reader_.feed(rest);
    } else {
      reader_.feed(chunk);
    }
    return !reader_.failed();
  }
  bool finish(std::string& out, std::uint64_t& count) {
    out_ = &out;
    count_ = &count;
    if (!seen_start_) {
      seen_start_ = true;
      reader_.feed(pending_);
    }
    reader_.feed(std::string_view("</lcc-input>"));
    return !reader_.failed();
  }
  const std::string& error() const { return reader_.errorMessage(); }
  std::optional<bool> full() const { return full_; }
  const std::string& urlprefix() const { return urlprefix_; }
  bool sawSet() const { return saw_set_; }

 private:
  static proto::XmlLimits limits() {
    proto::XmlLimits l;
    l.max_value_length = 1 << 20;
    l.max_depth = 8;
    l.max_elements = UINT64_MAX;
    return l;
  }
  void onStart(int depth, const proto::XmlName& name, const proto::XmlAttrs& a) override {
    if (name.local == "set" && depth == 2) {
      saw_set_ = true;
      if (const auto* s = a.get("set")) full_ = *s == "full";
      urlprefix_ = std::string(a.getOr("urlprefix", ""));
      return;
    }
    if (name.local == "url" && (depth == 2 || (depth == 3 && saw_set_))) {
      proto::appendUrlElement(*out_, a);
      ++*count_;
    }
  }
  void onEnd(int, const proto::XmlName&) override {}

  proto::XmlReader reader_;
  std::string* out_ = nullptr;
  std::uint64_t* count_ = nullptr;
  std::string pending_;
  bool seen_start_ = false;
  bool saw_set_ = false;
  std::optional<bool> full_;
  std::string urlprefix_;
};

// Connects to the UNS: plain, or TLS (--tls, or tls:// before --uns) with the server's
// certificate checked for the host of --uns.
std::unique_ptr<capi::Socket> connectUns(const std::string& uns, const TlsArgs& tls_args, std::string* err) {
  auto ep = capi::parseEndpoint(uns);
  if (!ep.isOk()) {
    *err = "--uns must be HOST:PORT: " + ep.status().message();
    return nullptr;
  }
  net::TlsContextPtr tls;
  if (tls_args.tls) ep->tls = true;
  if (ep->tls) {
    auto made = tlsContext(tls_args);
    if (!made.isOk()) {
      *err = made.status().message();
      return nullptr;
    }
    tls = made.value();
  }
  auto sock = capi::Socket::connect(*ep, 60000, tls);
  if (!sock.isOk()) {
    *err = sock.status().message();
    return nullptr;
  }
  return std::move(sock).value();
}

std::string describeUrl(const proto::UrlError& e) {
  std::string out = "error " + std::to_string(static_cast<unsigned>(e.code));
  if (const auto* c = proto::findAttr(e.attrs, "c")) out += " " + *c;
  if (const auto* m = proto::findAttr(e.attrs, "m")) out += " (" + *m + ")";
  out += ": " + e.message;
  return out;
}

struct SendArgs {
  std::string uns, id, password, urlprefix, file = "-";
  bool full = false;
  TlsArgs tls;
};

// The whole exchange. Returns the exit code (0 accepted, 1 rejected, 2 usage/connection).
int runSend(const SendArgs& a) {
  std::istream* in = &std::cin;
  std::ifstream file;
  if (a.file != "-") {
    file.open(a.file, std::ios::binary);
    if (!file) {
      std::cerr << "lcc cp send: cannot read " << a.file << ": " << std::strerror(errno) << "\n";
      return 2;
    }
    in = &file;
  }
  std::string err;
  std::unique_ptr<capi::Socket> sock = connectUns(a.uns, a.tls, &err);
  if (!sock) {
    std::cerr << "lcc cp send: " << err << "\n";
    return 2;
  }
  proto::ReplyDecoder replies;
  std::string out = proto::encodeInit(a.id, a.password);
  std::size_t out_off = 0;
  bool init_done = false, set_started = false, input_done = false, set_ended = false, peer_closed = false;
  std::optional<proto::CpReply> result;
  InputReader input;
  std::string urls;  // <url> elements read and encoded, not yet in `out`
  std::uint64_t url_count = 0, sent = 0;
  TtyProgress progress;
  char buf[65536];

  // Everything before the set needs the whole input head (full/urlprefix of a <lococa:set>):
  // read the first chunk now.
  auto readInput = [&]() {
    if (input_done) return;
    in->read(buf, sizeof buf);
    std::streamsize n = in->gcount();
    bool ok = input.feed(std::string_view(buf, static_cast<std::size_t>(n)), urls, url_count);
    if (ok && (n == 0 || in->eof())) {
      ok = input.finish(urls, url_count);
      input_done = true;
    }
    if (!ok) {
      std::cerr << "lcc cp send: input is not <url/> lines or a <lococa:set>: " << input.error() << "\n";
      input_done = true;
      err = "bad input";
    }
  };
  readInput();
  if (!err.empty()) return 2;

  while (!result) {
    if (init_done && !set_started) {
      bool full = a.full || input.full().value_or(false);
      std::string prefix = !a.urlprefix.empty() ? a.urlprefix : input.urlprefix();
      out.append(proto::encodeSetBegin(full, prefix));
      set_started = true;
    }
    if (set_started && !set_ended) {
      // Keep the output buffer bounded: encode input only while little waits.
      while (out.size() - out_off < (1u << 20) && !(input_done && urls.empty())) {
        if (urls.empty()) {
          readInput();
          if (!err.empty()) return 2;
          continue;
        }
        out.append(urls);
        sent += url_count;
        urls.clear();
        url_count = 0;
      }
      if (input_done && urls.empty()) {
        out.append(proto::encodeSetEnd());
        set_ended = true;
      }
      progress.update([&] { return "sent " + std::to_string(sent) + " urls"; });
    }
    if (peer_closed) break;
    short revents = POLLIN;  // bytes TLS already holds are read without waiting
    if (!sock->pending()) {
      pollfd p{sock->fd(), static_cast<short>(POLLIN | (out_off < out.size() ? POLLOUT : 0)), 0};
      int rc = ::poll(&p, 1, 60000);
      if (rc < 0 && errno == EINTR) continue;
      if (rc <= 0) {
        std::cerr << "\nlcc cp send: no answer from " << a.uns << " for 60 s\n";
        return 2;
      }
      revents = p.revents;
    }
    if (revents & POLLOUT) {
      auto w = sock->sendSome(out.data() + out_off, out.size() - out_off);
      if (w.isOk()) {
        out_off += w->n;
        if (out_off == out.size() || out_off > (4u << 20)) {
          out.erase(0, out_off);
          out_off = 0;
        }
      } else {
        // The UNS stopped reading (it refused the set): read its answer.
        out.clear();
        out_off = 0;
        set_ended = true;
        input_done = true;
        urls.clear();
        url_count = 0;
      }
    }
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
      auto got = sock->recvSome(buf, sizeof buf);
      const std::size_t n = got.isOk() ? got->n : 0;
      if (!got.isOk() || got->eof) peer_closed = true;
      if (n > 0) {
        for (auto& r : replies.feed(std::string_view(buf, n))) {
          if (r.kind == proto::CpReply::Kind::kInitRejected) {
            std::cout << "init rejected " << static_cast<unsigned>(r.code) << ": " << r.message << "\n";
            std::cerr << "lcc cp send: " << initRejectionHint(static_cast<unsigned>(r.code), r.message, a.uns) << "\n";
            return 1;
          }
          if (r.kind == proto::CpReply::Kind::kInitAccepted) {
            init_done = true;
            const auto& i = r.init;
            std::cerr << "connected: seq " << i.seq << ", " << i.processing << " urls still queued, "
                      << i.fullset_allowed << " full sets allowed";
            if (i.fullset_wanted) std::cerr << ", FULL SET WANTED (" << i.fullset_reason << ")";
            std::cerr << "\n";
            if (i.error_total > 0) {
              std::cout << "fetch errors since the last connection: " << i.error_total << "\n";
              for (const auto& e : r.init_errors) std::cout << "fetch " << describeUrl(e) << "\n";
            }
          }
          if (r.kind == proto::CpReply::Kind::kSetResult) result = r;
        }
        for (const auto& e : replies.takeStreamedErrors()) std::cout << describeUrl(e) << "\n";
        if (replies.failed()) {
          std::cerr << "lcc cp send: bad answer from the UNS: " << replies.errorMessage() << "\n";
          return 2;
        }
      }
    }
  }
  sock.reset();
  progress.done("sent " + std::to_string(sent) + " urls");
  if (!result) {
    std::cerr << "lcc cp send: the UNS closed the connection without a result\n";
    return 2;
  }
  if (result->accepted) {
    std::cout << "accepted " << result->received << " of " << sent << " urls\n";
    return 0;
  }
  std::cout << "rejected " << static_cast<unsigned>(result->code) << ": " << result->message << "\n";
  std::cerr << "lcc cp send: " << setRejectionHint(static_cast<unsigned>(result->code)) << "\n";
  return 1;
}

// ---------------------------------------------------------------------------
// cp scan

// A relative path as a URL path: percent-encoded, '/' kept.
std::string urlPath(const std::string& rel) { return http::percentEncode(rel, "/"); }

struct FileState {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::string md5;
  std::string mime;
};

// State file: one line per file, "path<TAB>size<TAB>mtime_ns<TAB>md5<TAB>mime", path
// percent-encoded (so no tabs or newlines).
bool loadState(const std::string& path, std::map<std::string, FileState>& state, std::string* err) {
  std::ifstream in(path);
  if (!in) return true;  // first scan
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::size_t start = 0;
    for (;;) {
      auto tab = line.find('\t', start);
      f.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    if (f.size() != 5) {
      *err = path + ":" + std::to_string(n) + ": not a scan state line";
      return false;
    }
    FileState s;
    try {
      s.size = std::stoull(f[1]);
      s.mtime_ns = std::stoll(f[2]);
    } catch (...) {
      *err = path + ":" + std::to_string(n) + ": bad number";
      return false;
    }
    s.md5 = f[3];
    s.mime = f[4];
    state[f[0]] = s;
  }
  return true;
}

struct ScanArgs {
  std::string dir, base_url, mime_map, state_file;
};

int runScan(const ScanArgs& a) {
  lcc::MimeMap mime;
  std::string err;
  if (!a.mime_map.empty() && !mime.load(a.mime_map, &err)) {
    std::cerr << "lcc cp scan: " << err << "\n";
    return 2;
  }
  std::error_code ec;
  if (!fs::is_directory(a.dir, ec)) {
    std::cerr << "lcc cp scan: " << a.dir << " is not a folder\n";
    return 2;
  }
  std::string base = a.base_url;
  if (base.rfind("http://", 0) != 0 && base.rfind("https://", 0) != 0) {
    std::cerr << "lcc cp scan: --base-url must be an http or https URL (got " << base << ")\n";
    return 2;
  }
  if (base.back() != '/') base.push_back('/');
  std::map<std::string, FileState> old_state, new_state;
  if (!a.state_file.empty() && !loadState(a.state_file, old_state, &err)) {
    std::cerr << "lcc cp scan: " << err << "\n";
    return 2;
  }
  const fs::path root = fs::path(a.dir);
  std::vector<std::pair<std::string, fs::path>> files;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const auto& entry = *it;
    if (!entry.is_regular_file(ec) || entry.is_symlink(ec)) continue;
    std::string rel = fs::relative(entry.path(), root, ec).generic_string();
    if (ec || rel.empty()) continue;
    if (!a.state_file.empty() && fs::equivalent(entry.path(), a.state_file, ec)) continue;
    files.emplace_back(urlPath(rel), entry.path());
  }
  if (ec) {
    std::cerr << "lcc cp scan: " << a.dir << ": " << ec.message() << "\n";
    return 2;
  }
  std::sort(files.begin(), files.end());
  std::string out;
  TtyProgress progress;
  std::uint64_t done = 0, changed = 0;
  auto progressLine = [&] {
    return "scanned " + std::to_string(done) + " of " + std::to_string(files.size()) + " files, " +
           std::to_string(changed) + " new or changed";
  };
  for (const auto& [key, path] : files) {
    ++done;
    progress.update(progressLine);
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) continue;  // vanished while scanning
    FileState s;
    s.size = static_cast<std::uint64_t>(st.st_size);
    s.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
    std::string ext = path.extension().string();
    if (!ext.empty()) ext.erase(0, 1);
    s.mime = mime.forExtension(ext);
    auto old = old_state.find(key);
    const bool unchanged = old != old_state.end() && old->second.size == s.size && old->second.mtime_ns == s.mtime_ns &&
                           old->second.mime == s.mime;
    if (unchanged) {
      s.md5 = old->second.md5;
      new_state[key] = s;
      continue;
    }
    std::ifstream f(path, std::ios::binary);
    if (!f) {
      std::cerr << "lcc cp scan: cannot read " << path << " (skipped)\n";
      continue;
    }
    Md5 md5;
    char buf[65536];
    while (f.read(buf, sizeof buf) || f.gcount() > 0) md5.update(std::string_view(buf, static_cast<std::size_t>(f.gcount())));
    s.md5 = md5.hexDigest();
    new_state[key] = s;
    ++changed;
    out += proto::encodeUrlElement({{"c", base + key},
                                    {"m", s.mime},
                                    {"sz", std::to_string(s.size)},
                                    {"md5", s.md5},
                                    {"mt", formatRfc3339(static_cast<std::int64_t>(st.st_mtim.tv_sec))}});
  }
  for (const auto& [key, s] : old_state) {
    if (!new_state.count(key)) out += proto::encodeUrlElement({{"c", base + key}, {"m", s.mime}, {"op", "delete"}});
  }
  progress.done(progressLine());
  std::cout << out << std::flush;
  if (!a.state_file.empty()) {
    std::string text = "# lcc cp scan state: path size mtime_ns md5 mime\n";
    for (const auto& [key, s] : new_state) {
      text += key + "\t" + std::to_string(s.size) + "\t" + std::to_string(s.mtime_ns) + "\t" + s.md5 + "\t" + s.mime + "\n";
    }
    std::string abs = fs::absolute(a.state_file, ec).string();
    if (Status st = posixEnv()->writeFileAtomic(abs, text); !st.isOk()) {
      std::cerr << "lcc cp scan: cannot write the state file: " << st.toString() << "\n";
      return 2;
    }
  }
  return 0;
}

}  // namespace

void addCpCommands(CLI::App& app, Globals& g) {
  auto* cp = app.add_subcommand("cp", "content provider tools: send url notifications, scan a folder, read sitemaps");
  cp->require_subcommand(1);

  auto send_args = std::make_shared<SendArgs>();
  auto* send = cp->add_subcommand("send", "send <url/> lines (or a whole <lococa:set>) to a UNS and print the result");
  send->add_option("--uns", send_args->uns, "the UNS, HOST:PORT (or tls://HOST:PORT)")->required();
  addTlsOptions(send, send_args->tls);
  send->add_option("--id", send_args->id, "provider id")->required();
  send->add_option("--password", send_args->password, "provider password")->required();
  send->add_flag("--full", send_args->full, "this is a full set (everything the provider has)");
  send->add_option("--urlprefix", send_args->urlprefix, "put before every URL that has no scheme");
  send->add_option("file", send_args->file, "input file, or - for standard input")->default_val("-");
  send->callback([&g, send_args] { g.exit_code = runSend(*send_args); });

  auto scan_args = std::make_shared<ScanArgs>();
  auto* scan = cp->add_subcommand("scan", "print <url/> lines for the files under DIR");
  scan->add_option("dir", scan_args->dir, "folder to scan")->required();
  scan->add_option("--base-url", scan_args->base_url, "URL of DIR on the provider's site")->required();
  scan->add_option("--mime-map", scan_args->mime_map, "mime.types-style file: 'type/subtype ext ...'");
  scan->add_option("--state", scan_args->state_file, "remember this scan; print only what changed since the last one");
  scan->callback([&g, scan_args] { g.exit_code = runScan(*scan_args); });

  addCpSitemapCommand(*cp, g);
}

}  // namespace lcc::cli
