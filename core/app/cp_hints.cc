#include "app/cp_hints.h"

#include "lcc/error_codes.h"
#include "net/host_port.h"

namespace lcc::cli {
namespace {

// "http://HOST:<its web port>/register": the LCC's page for providers, on the UNS's host.
std::string registerPage(const std::string& uns) {
  auto hp = net::HostPort::parse(net::splitLinkAddress(uns).host_port);
  const std::string host = hp.isOk() ? hp->reachable().toString() : "THE-LCC";
  return "the LCC's registration page (http://" + host.substr(0, host.rfind(':')) + ":WEB-PORT/register)";
}

const char* const kAdmin = "the LCC's administrator";

// The hints that are the same for an init and a set.
std::string commonHint(unsigned code) {
  switch (static_cast<ErrorCode>(code)) {
    case ErrorCode::kMalformed:
      return std::string("the UNS could not read what lcc sent; try again, and if it stays, send the line above to ") +
             kAdmin + " (it is a bug of lcc or of the UNS)";
    case ErrorCode::kLimitExceeded:
      return "something sent was over the UNS's size limits (an id or password that long, a URL or attribute too "
             "long): check the input and --id/--password";
    case ErrorCode::kOffline:
      return std::string("the LCC takes nothing for now (its spool is full, its queue is overloaded or "
                         "out of reach); nothing was stored: send again later, and tell ") + kAdmin + " if it lasts";
    case ErrorCode::kTimeout:
      return "the UNS waited too long for lcc (uns.idle_timeout, uns.session_timeout): check the network to it and "
             "send again; split a set that takes longer than the session allows";
    case ErrorCode::kInternal:
      return std::string("the UNS failed on its side (a store or file); nothing was stored: send again later and tell ") +
             kAdmin;
    default:
      return "code " + std::to_string(code) + " is not one this lcc knows (docs/protocol.md §2): tell " + kAdmin;
  }
}

}  // namespace

std::string initRejectionHint(unsigned code, const std::string& message, const std::string& uns) {
  switch (static_cast<ErrorCode>(code)) {
    case ErrorCode::kAuthFailed:
      return "the UNS knows no provider with this --id and --password (an unknown id and a wrong password look "
             "alike): use the id and password " + registerPage(uns) + " or " + kAdmin +
             " gave you; a lost password can only be replaced by " + kAdmin + " (lcc provider set ID --password)";
    case ErrorCode::kNotActive:
      if (message.find("not verified") != std::string::npos || message.find("suspended:") != std::string::npos) {
        return "put the secret file on your site (where the registration said), then verify it at " +
               registerPage(uns) + " (POST /register/verify with your id and password)";
      }
      return std::string("an administrator suspended or is removing this provider: ask ") + kAdmin +
             " (lcc provider resume ID on their side)";
    case ErrorCode::kTooManyConnections:
      return "over a connection limit: of this provider, of your address, or of the whole UNS, or your address "
             "failed to log in too often (the message says how long to wait); close other sessions of this "
             "provider, wait, and send again";
    default:
      return commonHint(code);
  }
}

std::string setRejectionHint(unsigned code) {
  switch (static_cast<ErrorCode>(code)) {
    case ErrorCode::kFullSetNotAllowed:
      return "a full set is not allowed now (the connection line says how many are): send it without --full, or "
             "wait until the LCC asks for a full set";
    case ErrorCode::kSetTooLarge:
      return "the set has more URLs than the UNS takes at once (uns.max_set_urls, or your quota_files): split the "
             "input and send it in parts";
    default:
      return commonHint(code);
  }
}

}  // namespace lcc::cli
