#include "mail/mail_message.h"

#include <cctype>
#include <ctime>

namespace lcc::mail {
namespace {

constexpr std::size_t kMaxAddress = 254;
constexpr std::size_t kMaxLocal = 64;
constexpr std::size_t kMaxSubject = 200;

bool atext(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-/=?^_`{|}~").find(static_cast<char>(c)) != std::string_view::npos;
}

Status checkDomain(std::string_view d) {
  if (d.empty()) return Status::invalidArgument("no domain after '@'");
  if (d.front() == '[') {
    if (d.size() < 3 || d.back() != ']') return Status::invalidArgument("an address literal must end with ']'");
    for (unsigned char c : d.substr(1, d.size() - 2)) {
      if (!std::isxdigit(c) && c != ':' && c != '.') return Status::invalidArgument("a bad character in the address literal");
    }
    return Status::ok();
  }
  if (d.front() == '.' || d.back() == '.' || d.find("..") != std::string_view::npos) {
    return Status::invalidArgument("the domain has an empty label");
  }
  for (unsigned char c : d) {
    if (!std::isalnum(c) && c != '-' && c != '.') return Status::invalidArgument("the domain may hold letters, digits, '-' and '.' only");
  }
  return Status::ok();
}

// One header line's text: control characters (CR, LF, TAB...) become spaces.
std::string oneLine(std::string_view s, std::size_t max) {
  std::string out;
  for (unsigned char c : s.substr(0, max)) out += (c < 0x20 || c == 0x7f) ? ' ' : static_cast<char>(c);
  return out;
}

}  // namespace

Status checkAddress(std::string_view a) {
  if (a.empty()) return Status::invalidArgument("no e-mail address");
  if (a.size() > kMaxAddress) return Status::invalidArgument("an e-mail address is at most 254 characters");
  for (unsigned char c : a) {
    if (c < 0x20 || c == 0x7f) return Status::invalidArgument("the e-mail address contains a control character (CR, LF, ...)");
  }
  const auto at = a.rfind('@');
  if (at == std::string_view::npos || at == 0) return Status::invalidArgument("an e-mail address is local-part@domain");
  std::string_view local = a.substr(0, at);
  if (local.size() > kMaxLocal) return Status::invalidArgument("the part before '@' is at most 64 characters");
  if (local.front() == '.' || local.back() == '.' || local.find("..") != std::string_view::npos) {
    return Status::invalidArgument("the part before '@' has an empty dot-separated part");
  }
  for (unsigned char c : local) {
    if (!atext(c) && c != '.') {
      return Status::invalidArgument("the part before '@' may not hold spaces, quotes, '<', '>', ',', ';', ':' or '@'");
    }
  }
  return checkDomain(a.substr(at + 1));
}

std::string formatMailDate(WallTime t) {
  const std::time_t secs = static_cast<std::time_t>(toUnixMillis(t) / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  const std::size_t n = std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S +0000", &tm);
  return std::string(buf, n);
}

std::string formatMessage(const MailMessage& msg, std::string_view from, WallTime date, std::string_view message_id) {
  std::string out;
  out.reserve(msg.body.size() + 512);
  out += "Date: " + formatMailDate(date) + "\r\n";
  out += "From: " + oneLine(from, kMaxAddress) + "\r\n";
  out += "To: " + oneLine(msg.to, kMaxAddress) + "\r\n";
  out += "Subject: " + oneLine(msg.subject, kMaxSubject) + "\r\n";
  out += "Message-ID: <" + oneLine(message_id, kMaxAddress) + ">\r\n";
  out += "MIME-Version: 1.0\r\n";
  out += "Content-Type: text/plain; charset=utf-8\r\n";
  out += "Content-Transfer-Encoding: 8bit\r\n";
  out += "Auto-Submitted: auto-generated\r\n";
  out += "\r\n";
  // Body lines end in CRLF; a lone CR or LF is a line end too. libcurl dot-stuffs.
  for (std::size_t i = 0; i < msg.body.size(); ++i) {
    const char c = msg.body[i];
    if (c == '\r') {
      if (i + 1 < msg.body.size() && msg.body[i + 1] == '\n') ++i;
      out += "\r\n";
    } else if (c == '\n') {
      out += "\r\n";
    } else {
      out += c;
    }
  }
  if (out.size() < 2 || out.compare(out.size() - 2, 2, "\r\n") != 0) out += "\r\n";
  return out;
}

}  // namespace lcc::mail
