// cli_cp.cc — the content provider's tools (docs/commands.md):
//   lcc cp send  — sends <url/> lines (or a whole <lococa:set>) to a UNS, prints the result
//   lcc cp scan  — <url/> lines for the files under a folder, optionally only the changes
//   (lcc cp sitemap is in cli_sitemap.cc, lcc cp sync in cli_cp_sync.cc; the session
//   is cli_cp_session.cc, the folder walk cli_cp_scan.cc)
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "app/cli.h"
#include "app/cp_hints.h"
#include "app/cli_cp_session.h"
#include "app/cli_cp_sources.h"
#include "proto/cp_uns.h"
#include "proto/xml_reader.h"

namespace lcc::cli {

namespace {

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

struct SendArgs {
  std::string uns, id, password, password_file, urlprefix, file = "-";
  bool full = false;
  TlsArgs tls;
};

// Prints the end of `cp send` and gives its exit code.
int sendResult(const CpOutcome& o, bool partial_but_wanted, const std::string& wanted_reason) {
  switch (o.kind) {
    case CpOutcome::Kind::kFailed:
      return kCpExitUsage;
    case CpOutcome::Kind::kInitRejected:
      return kCpExitRejected;
    case CpOutcome::Kind::kSetRejected:
      std::cout << "rejected " << static_cast<unsigned>(o.code) << ": " << o.message << "\n";
      std::cerr << "lcc cp send: " << setRejectionHint(static_cast<unsigned>(o.code)) << "\n";
      return kCpExitRejected;
    default:
      break;
  }
  std::cout << "accepted " << o.received << " of " << o.sent << " urls\n";
  if (!o.refused.empty()) {
    std::uint64_t n = 0;
    for (const auto& [code, count] : o.refused) n += count;
    std::cout << "refused " << n << " urls (" << codeSummary(o.refused) << ")\n";
  }
  if (partial_but_wanted) {
    std::cout << "full set wanted (" << wanted_reason
              << "): this set was partial; send everything with --full (lcc cp sync does it by itself)\n";
  }
  return o.refused.empty() ? kCpExitOk : kCpExitRefused;
}

// The whole exchange. Returns the exit code (docs/commands.md, cli_cp_session.h).
int runSend(const SendArgs& a) {
  std::string password, err;
  if (!cpPassword(a.password, a.password_file, password, &err)) {
    std::cerr << "lcc cp send: " << err << "\n";
    return kCpExitUsage;
  }
  std::istream* in = &std::cin;
  std::ifstream file;
  if (a.file != "-") {
    file.open(a.file, std::ios::binary);
    if (!file) {
      std::cerr << "lcc cp send: cannot read " << a.file << ": " << std::strerror(errno) << "\n";
      return kCpExitUsage;
    }
    in = &file;
  }
  InputReader input;
  std::string urls;  // <url> elements read and encoded, not yet handed on
  std::uint64_t url_count = 0;
  bool input_done = false;
  char buf[65536];
  auto readInput = [&]() {
    in->read(buf, sizeof buf);
    std::streamsize n = in->gcount();
    bool ok = input.feed(std::string_view(buf, static_cast<std::size_t>(n)), urls, url_count);
    if (ok && (n == 0 || in->eof())) {
      ok = input.finish(urls, url_count);
      input_done = true;
    }
    if (!ok) std::cerr << "lcc cp send: input is not <url/> lines or a <lococa:set>: " << input.error() << "\n";
    return ok;
  };
  // The set's head needs the input's head (full/urlprefix of a <lococa:set>): read the
  // first chunk now.
  if (!readInput()) return kCpExitUsage;

  bool full = a.full, wanted = false;
  std::string wanted_reason;
  CpExchange x;
  x.uns = a.uns;
  x.id = a.id;
  x.password = password;
  x.tls = a.tls;
  x.on_init = [&](const proto::CpReply& r) {
    full = a.full || input.full().value_or(false);
    wanted = r.init.fullset_wanted;
    wanted_reason = r.init.fullset_reason;
    return CpSetPlan{true, full, !a.urlprefix.empty() ? a.urlprefix : input.urlprefix()};
  };
  x.next = [&](std::string& out, std::uint64_t& count, bool& done) {
    if (urls.empty() && !input_done && !readInput()) return false;
    out.append(urls);
    count += url_count;
    urls.clear();
    url_count = 0;
    done = input_done && urls.empty();
    return true;
  };
  x.on_refused = [](const proto::UrlError& e) { std::cout << describeUrl(e) << "\n"; };
  const CpOutcome o = runCpExchange(x);  // sets `full` and `wanted`
  return sendResult(o, wanted && !full, wanted_reason);
}

// ---------------------------------------------------------------------------
// cp scan

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
  const std::string base = scanBaseUrl(a.base_url);
  if (base.empty()) {
    std::cerr << "lcc cp scan: --base-url must be an http or https URL (got " << a.base_url << ")\n";
    return 2;
  }
  ScanState old_state, new_state;
  bool found = false;
  if (!a.state_file.empty() && !loadScanState(a.state_file, old_state, &found, &err)) {
    std::cerr << "lcc cp scan: " << err << "\n";
    return 2;
  }
  std::vector<ScannedFile> files;
  TtyProgress progress;
  if (!scanTree(a.dir, {a.state_file}, mime, old_state, files, progress, &err)) {
    std::cerr << "lcc cp scan: " << err << "\n";
    return 2;
  }
  std::string out;
  for (const auto& f : files) {
    new_state[f.key] = f.state;
    if (f.changed) out += proto::encodeUrlElement(scanUpdateAttrs(base, f));
  }
  for (const auto& [key, s] : old_state) {
    if (!new_state.count(key)) out += proto::encodeUrlElement(scanDeleteAttrs(base, key, s));
  }
  std::cout << out << std::flush;
  if (!a.state_file.empty()) {
    if (Status st = saveScanState(a.state_file, new_state); !st.isOk()) {
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
  addPasswordOptions(send, send_args->password, send_args->password_file);
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
  addCpSyncCommand(*cp, g);
}

}  // namespace lcc::cli
