// mail_message.h — one plain-text e-mail to a site owner, and the checks that keep a
// registrant's input out of its header (README.md in this folder).
#pragma once

#include <string>
#include <string_view>

#include "lcc/status.h"
#include "lcc/types.h"

namespace lcc::mail {

struct MailMessage {
  std::string to;       // one address, checked by checkAddress()
  std::string subject;  // one line; control characters become spaces
  std::string body;     // text; lines end in CRLF on the wire
};

// OK for a plain address fit for the envelope and the To: field: local@domain, at
// most 254 bytes, the local part of RFC 5321 "atext" and dots, the domain of letters,
// digits, '-' and dots (or an address literal "[...]" of hex digits, ':' and '.').
// No spaces, quotes, angle brackets, commas or control characters (CR, LF): nothing
// that could add a header or a recipient. InvalidArgument with the reason otherwise.
Status checkAddress(std::string_view address);

// "Sat, 28 Nov 2026 04:45:18 +0000" (RFC 5322 §3.3).
std::string formatMailDate(WallTime t);

// The message as sent: Date, From, To, Subject, Message-ID, MIME-Version,
// Content-Type (text/plain; charset=utf-8), Content-Transfer-Encoding (8bit), an
// empty line and the body, every line ending in CRLF. `from` and `msg.to` must pass
// checkAddress(); the subject is one line of at most 200 bytes.
std::string formatMessage(const MailMessage& msg, std::string_view from, WallTime date, std::string_view message_id);

}  // namespace lcc::mail
