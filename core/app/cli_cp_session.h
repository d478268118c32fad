// cli_cp_session.h — one CP session with a UNS (docs/protocol.md §1), shared by
// `lcc cp send` and `lcc cp sync`: connect, init, then one set streamed from a source
// while the answer is read. What to send is decided after init_accepted, so a caller
// can act on what the UNS answered there (the MIME list, the quota, a full set wanted).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "app/cli.h"
#include "proto/cp_uns.h"

namespace lcc::cli {

// Exit codes of `lcc cp send` and `lcc cp sync` (docs/commands.md).
inline constexpr int kCpExitOk = 0;           // everything sent was taken
inline constexpr int kCpExitRejected = 1;     // init_rejected or set_rejected: nothing taken
inline constexpr int kCpExitUsage = 2;        // usage, input, connection, a bad answer
inline constexpr int kCpExitLocked = 3;       // sync: another run holds the lock
inline constexpr int kCpExitRefused = 4;      // the set was taken, but URLs were refused (or held back)
inline constexpr int kCpExitTryLater = 5;     // sync: the UNS said "try later" on every try

struct CpSetPlan {
  bool send = true;  // false: close after init (nothing to send)
  bool full = false;
  std::string urlprefix;
};

struct CpExchange {
  std::string tool = "lcc cp send";  // names the messages on standard error
  std::string uns, id, password;
  TlsArgs tls;
  // Called with init_accepted; says what set follows.
  std::function<CpSetPlan(const proto::CpReply& init)> on_init;
  // Appends encoded <url> elements to `out` (adding their number to `count`); sets
  // `done` after the last. False: the input is bad (the source said why): exit 2.
  std::function<bool(std::string& out, std::uint64_t& count, bool& done)> next;
  // Each URL the UNS refused, as its answer streams in.
  std::function<void(const proto::UrlError&)> on_refused;
};

struct CpOutcome {
  enum class Kind { kAccepted, kInitRejected, kSetRejected, kNoSet, kFailed } kind = Kind::kFailed;
  ErrorCode code = ErrorCode::kNone;  // of a rejection
  std::string message;                // of a rejection, or why it failed
  std::uint64_t sent = 0, received = 0;
  // Refused URLs per code.
  std::map<unsigned, std::uint64_t> refused;
};

// Runs the session; prints the connection line and init's fetch errors (as `cp send`
// always did). Failures are printed on standard error.
CpOutcome runCpExchange(const CpExchange& x);

// --password or --password-file (its first line), exactly one: false with *err otherwise.
bool cpPassword(const std::string& password, const std::string& file, std::string& out, std::string* err);
// Adds --password and --password-file to a command.
void addPasswordOptions(CLI::App* command, std::string& password, std::string& file);

// "error CODE URL (MIME): message".
std::string describeUrl(const proto::UrlError& e);
// The counts per code, as "202: 3, 203: 1".
std::string codeSummary(const std::map<unsigned, std::uint64_t>& by_code);
// True for the rejections that mean "try again later" (120 too many connections, 130
// offline: docs/protocol.md §2).
bool isTryLater(ErrorCode code);

}  // namespace lcc::cli
