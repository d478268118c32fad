// cli_cp_session.cc — one CP session with a UNS (cli_cp_session.h).
#include "app/cli_cp_session.h"

#include <poll.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>

#include "app/cp_hints.h"
#include "app/progress.h"
#include "capi/cu_client.h"

namespace lcc::cli {

namespace {

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

void printInit(const proto::CpReply& r) {
  const auto& i = r.init;
  std::cerr << "connected: seq " << i.seq << ", " << i.processing << " urls still queued, " << i.fullset_allowed
            << " full sets allowed";
  if (i.fullset_wanted) std::cerr << ", FULL SET WANTED (" << i.fullset_reason << ")";
  std::cerr << "\n";
  if (i.error_total > 0) {
    std::cout << "fetch errors since the last connection: " << i.error_total << "\n";
    for (const auto& e : r.init_errors) std::cout << "fetch " << describeUrl(e) << "\n";
  }
}

// The session's state while bytes go both ways.
class Exchange {
 public:
  explicit Exchange(const CpExchange& x) : x_(x) {}

  CpOutcome run() {
    std::string err;
    sock_ = connectUns(x_.uns, x_.tls, &err);
    if (!sock_) return fail(err);
    out_ = proto::encodeInit(x_.id, x_.password);
    while (!result_ && !stop_) {
      if (!fillOutput()) return outcome_;
      if (peer_closed_) break;
      if (!pump()) return outcome_;
    }
    sock_.reset();
    progress_.done(progressLine());
    if (stop_) return outcome_;
    if (!result_) return fail("the UNS closed the connection without a result");
    outcome_.sent = sent_;
    outcome_.received = result_->received;
    if (result_->accepted) {
      outcome_.kind = CpOutcome::Kind::kAccepted;
    } else {
      outcome_.kind = CpOutcome::Kind::kSetRejected;
      outcome_.code = result_->code;
      outcome_.message = result_->message;
    }
    return outcome_;
  }

 private:
  CpOutcome fail(const std::string& why) {
    std::cerr << x_.tool << ": " << why << "\n";
    outcome_.kind = CpOutcome::Kind::kFailed;
    outcome_.message = why;
    return outcome_;
  }
  std::string progressLine() const { return "sent " + std::to_string(sent_) + " urls"; }

  // Puts the set's pieces into the output buffer, keeping it bounded. False: stop.
  bool fillOutput() {
    if (!init_done_ || set_ended_) return true;
    if (!set_started_) {
      out_.append(proto::encodeSetBegin(plan_.full, plan_.urlprefix));
      set_started_ = true;
    }
    while (out_.size() - out_off_ < (1u << 20) && !input_done_) {
      std::uint64_t n = 0;
      if (!x_.next(out_, n, input_done_)) {
        outcome_ = CpOutcome{};
        outcome_.message = "bad input";
        return false;
      }
      sent_ += n;
    }
    if (input_done_) {
      out_.append(proto::encodeSetEnd());
      set_ended_ = true;
    }
    progress_.update([&] { return progressLine(); });
    return true;
  }

  // One poll round: send what waits, read what came. False: stop with outcome_.
  bool pump() {
    short revents = POLLIN;  // bytes TLS already holds are read without waiting
    if (!sock_->pending()) {
      pollfd p{sock_->fd(), static_cast<short>(POLLIN | (out_off_ < out_.size() ? POLLOUT : 0)), 0};
      int rc = ::poll(&p, 1, 60000);
      if (rc < 0 && errno == EINTR) return true;
      if (rc <= 0) {
        std::cerr << "\n";
        fail("no answer from " + x_.uns + " for 60 s");
        return false;
      }
      revents = p.revents;
    }
    if (revents & POLLOUT) {
      auto w = sock_->sendSome(out_.data() + out_off_, out_.size() - out_off_);
      if (w.isOk()) {
        out_off_ += w->n;
        if (out_off_ == out_.size() || out_off_ > (4u << 20)) {
          out_.erase(0, out_off_);
          out_off_ = 0;
        }
      } else {
        // The UNS stopped reading (it refused the set): read its answer.
        out_.clear();
        out_off_ = 0;
        set_ended_ = input_done_ = true;
      }
    }
    if (revents & (POLLIN | POLLHUP | POLLERR)) return read();
    return true;
  }

  bool read() {
    char buf[65536];
    auto got = sock_->recvSome(buf, sizeof buf);
    const std::size_t n = got.isOk() ? got->n : 0;
    if (!got.isOk() || got->eof) peer_closed_ = true;
    if (n == 0) return true;
    for (auto& r : replies_.feed(std::string_view(buf, n))) {
      if (r.kind == proto::CpReply::Kind::kInitRejected) {
        std::cout << "init rejected " << static_cast<unsigned>(r.code) << ": " << r.message << "\n";
        std::cerr << x_.tool << ": " << initRejectionHint(static_cast<unsigned>(r.code), r.message, x_.uns) << "\n";
        outcome_.kind = CpOutcome::Kind::kInitRejected;
        outcome_.code = r.code;
        outcome_.message = r.message;
        return false;
      }
      if (r.kind == proto::CpReply::Kind::kInitAccepted) {
        init_done_ = true;
        printInit(r);
        plan_ = x_.on_init(r);
        if (!plan_.send) {
          outcome_.kind = CpOutcome::Kind::kNoSet;
          stop_ = true;
        }
      }
      if (r.kind == proto::CpReply::Kind::kSetResult) result_ = r;
    }
    for (const auto& e : replies_.takeStreamedErrors()) {
      ++outcome_.refused[static_cast<unsigned>(e.code)];
      if (x_.on_refused) x_.on_refused(e);
    }
    if (replies_.failed()) {
      fail("bad answer from the UNS: " + replies_.errorMessage());
      return false;
    }
    return true;
  }

  const CpExchange& x_;
  std::unique_ptr<capi::Socket> sock_;
  proto::ReplyDecoder replies_;
  std::string out_;
  std::size_t out_off_ = 0;
  bool init_done_ = false, set_started_ = false, input_done_ = false, set_ended_ = false;
  bool peer_closed_ = false, stop_ = false;
  CpSetPlan plan_;
  std::optional<proto::CpReply> result_;
  std::uint64_t sent_ = 0;
  TtyProgress progress_;
  CpOutcome outcome_;
};

}  // namespace

CpOutcome runCpExchange(const CpExchange& x) { return Exchange(x).run(); }

bool cpPassword(const std::string& password, const std::string& file, std::string& out, std::string* err) {
  if (password.empty() == file.empty()) {
    *err = "give --password or --password-file (one of them)";
    return false;
  }
  if (file.empty()) {
    out = password;
    return true;
  }
  std::ifstream in(file);
  if (!in) {
    *err = "--password-file: cannot read " + file + ": " + std::strerror(errno);
    return false;
  }
  std::getline(in, out);
  if (!out.empty() && out.back() == '\r') out.pop_back();
  if (out.empty()) {
    *err = "--password-file: " + file + " has no password on its first line";
    return false;
  }
  return true;
}

void addPasswordOptions(CLI::App* command, std::string& password, std::string& file) {
  command->add_option("--password", password, "provider password (seen by other local users in the process list)");
  command->add_option("--password-file", file, "read the provider password from the first line of FILE");
}

std::string describeUrl(const proto::UrlError& e) {
  std::string out = "error " + std::to_string(static_cast<unsigned>(e.code));
  if (const auto* c = proto::findAttr(e.attrs, "c")) out += " " + *c;
  if (const auto* m = proto::findAttr(e.attrs, "m")) out += " (" + *m + ")";
  out += ": " + e.message;
  return out;
}

std::string codeSummary(const std::map<unsigned, std::uint64_t>& by_code) {
  std::string out;
  for (const auto& [code, n] : by_code) {
    if (!out.empty()) out += ", ";
    out += std::to_string(code) + ": " + std::to_string(n);
  }
  return out;
}

bool isTryLater(ErrorCode code) { return code == ErrorCode::kTooManyConnections || code == ErrorCode::kOffline; }

}  // namespace lcc::cli
