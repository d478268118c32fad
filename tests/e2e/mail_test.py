#!/usr/bin/env python3
"""End-to-end test of the mail to site owners (issue 29).

One real lccd (role rs) whose mail.relay is a real SMTP server started here on
127.0.0.1 (aiosmtpd; scripts/deps.sh installs python3-aiosmtpd for this test), and a
real HTTP site for the secret file.

  step one:     the credentials are mailed only when the registrant asks (mail=1):
                envelope, headers (From, To, Subject, Date, Message-ID), the body holds
                the password and the secret; a registration without mail=1 sends none;
  injection:    a contact with CR/LF, or a "Name <addr>" form, is refused with 400 and
                a clear reason when mail is asked for; nothing is sent;
  events:       an administrator's suspension is mailed to the owner once; `lcc
                provider show` says when each last mail went and that it was sent;
  restart:      after a restart the suspension is not mailed again (a later event of
                another provider is, and comes alone);
  unreachable:  with a relay that never answers, registration answers at once (the
                mail is queued), and the mailer retries, then gives up and logs.
"""
import argparse
import email
import email.policy
import email.utils
import functools
import http.server
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_test import Node, free_port, wait_for  # noqa: E402

try:
    from aiosmtpd.controller import Controller
except ImportError:
    # scripts/deps.sh installs python3-aiosmtpd for the system's python3; a python3 of
    # the same version elsewhere (pyenv) may use it from there.
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        from aiosmtpd.controller import Controller
    except ImportError:
        print("mail_test: python3 module aiosmtpd is missing (scripts/deps.sh installs python3-aiosmtpd)",
              file=sys.stderr)
        sys.exit(77)


class Inbox:
    """What the SMTP server received: (mail_from, rcpt_tos, raw bytes) per message."""

    def __init__(self):
        self.lock = threading.Lock()
        self.messages = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's name
        with self.lock:
            self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content))
        return "250 OK"

    def all(self):
        with self.lock:
            return list(self.messages)

    def parsed(self):
        return [(f, r, email.message_from_bytes(raw, policy=email.policy.default)) for f, r, raw in self.all()]


def post(node, path, fields):
    data = urllib.parse.urlencode(fields).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{node.ports['http']}{path}", data=data,
                                 headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def node_config(relay, retries=3):
    return (f"mail:\n  relay: {relay}\n  from: lcc@lcc.example\n  check_interval: 1s\n"
            f"  retry_delay: 1s\n  timeout: 2s\n  retries: {retries}\n")


def check_step_one(node, inbox, site_base):
    status, quiet = post(node, "/register", {"prefix": site_base + "a/", "contact": "quiet@example.org"})
    assert status == 200 and "mail" not in quiet, (status, quiet)
    status, reg = post(node, "/register", {"prefix": site_base + "b/", "contact": "owner@example.org", "mail": "1"})
    assert status == 200 and reg["mail"] == "queued", (status, reg)
    wait_for("the credentials mail", lambda: len(inbox.all()) >= 1)
    msgs = inbox.parsed()
    assert len(msgs) == 1, [m[2]["Subject"] for m in msgs]
    mail_from, rcpt, msg = msgs[0]
    assert mail_from == "lcc@lcc.example" and rcpt == ["owner@example.org"], (mail_from, rcpt)
    assert msg["From"] == "lcc@lcc.example" and msg["To"] == "owner@example.org", dict(msg)
    assert msg["Subject"] == f"LCC registration of provider {reg['id']}", msg["Subject"]
    assert email.utils.parsedate_to_datetime(msg["Date"]) is not None
    assert msg["Message-ID"].startswith("<") and msg["Message-ID"].endswith("@lcc.example>"), msg["Message-ID"]
    assert set(k.lower() for k in msg.keys()) == {"date", "from", "to", "subject", "message-id", "mime-version",
                                                   "content-type", "content-transfer-encoding", "auto-submitted"}
    body = msg.get_content()
    assert reg["password"] in body and reg["secret"] in body and reg["secret_url"] in body, body
    assert quiet["password"] not in inbox.all()[0][2].decode(), "a password mailed that was not asked for"
    return quiet, reg


def check_injection(node, inbox, site_base):
    before = len(inbox.all())
    for contact, why in [("x@example.org\r\nBcc: evil@example.org", "control character"),
                         ("x@example.org\nBcc: evil@example.org", "control character"),
                         ("Evil <x@example.org>", "e-mail address"),
                         ("x@example.org, evil@example.org", "e-mail address")]:
        status, body = post(node, "/register", {"prefix": site_base + "c/", "contact": contact, "mail": "1"})
        assert status == 400 and why in body["error"], (contact, status, body)
    return before


def verify(node, site_root, reg, folder):
    os.makedirs(os.path.join(site_root, folder), exist_ok=True)
    with open(os.path.join(site_root, folder, "lococa-secret.txt"), "w") as f:
        f.write(reg["secret"] + "\n")
    status, v = post(node, "/register/verify", {"id": reg["id"], "password": reg["password"]})
    assert status == 200 and v["ok"], (status, v)


def subjects(inbox):
    return [m[2]["Subject"] for m in inbox.parsed()]


def check_events_and_restart(node, inbox, site_root, quiet, reg):
    verify(node, site_root, quiet, "a")
    verify(node, site_root, reg, "b")
    node.lcc("provider", "suspend", str(reg["id"]))
    suspended = f"LCC provider {reg['id']}: suspended"
    wait_for("the suspension mail", lambda: suspended in subjects(inbox))
    _, rcpt, msg = [m for m in inbox.parsed() if m[2]["Subject"] == suspended][0]
    assert rcpt == ["owner@example.org"] and "suspended by an administrator" in msg.get_content(), msg.get_content()
    show = json.loads(node.lcc("provider", "show", str(reg["id"])).stdout)
    assert show["mail"]["registration"]["result"] == "sent", show
    assert show["mail"]["suspended"]["result"] == "sent" and show["mail"]["suspended"]["at"], show
    node.stop()
    node.start()
    # The provider is still suspended; a new event of another provider is mailed.
    node.lcc("provider", "want-full-set", str(quiet["id"]))
    wanted = f"LCC provider {quiet['id']}: a full set is wanted (admin)"
    wait_for("the full-set mail", lambda: wanted in subjects(inbox))
    assert subjects(inbox).count(suspended) == 1, subjects(inbox)
    show = json.loads(node.lcc("provider", "show", str(reg["id"])).stdout)
    assert show["mail"]["suspended"]["result"] == "sent", show


def check_unreachable_relay(args, work, site_base):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # accepts (the backlog) and never says a word
    node = Node(args, work, name="silent", roles=["rs"],
                extra=node_config(f"smtp://127.0.0.1:{silent.getsockname()[1]}", retries=1))
    try:
        node.start()
        status, reg = post(node, "/register", {"prefix": site_base + "d/", "contact": "owner@example.org", "mail": "1"})
        assert status == 200 and reg["mail"] == "queued", (status, reg)
        assert "gave up" not in node.log_tail(), "registration waited for the relay"
        status, _ = post(node, "/register", {"prefix": site_base + "e/", "contact": "other@example.org"})
        assert status == 200
        wait_for("the retry, then giving up", lambda: "gave up on the mail to owner@example.org" in node.log_tail())
        tail = node.log_tail()
        assert "attempt 1 to owner@example.org" in tail and "after 2 attempt(s)" in tail, tail
        show = json.loads(node.lcc("provider", "show", str(reg["id"])).stdout)
        assert show["mail"]["registration"]["result"] == "failed" and show["mail"]["registration"]["error"], show
    finally:
        node.kill()
        silent.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="lcc-e2e-mail-")
    site_root = os.path.join(work, "site")
    os.makedirs(site_root)
    site_port = free_port()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=site_root)
    site = http.server.ThreadingHTTPServer(("127.0.0.1", site_port), handler)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    site_base = f"http://127.0.0.1:{site_port}/"
    inbox = Inbox()
    smtp = Controller(inbox, hostname="127.0.0.1", port=free_port())
    smtp.start()
    node = Node(args, work, roles=["rs"], extra=node_config(f"smtp://127.0.0.1:{smtp.port}"))
    try:
        node.start()
        quiet, reg = check_step_one(node, inbox, site_base)
        before = check_injection(node, inbox, site_base)
        check_events_and_restart(node, inbox, site_root, quiet, reg)
        assert not any("evil@example.org" in r for _, rs, _ in inbox.all() for r in rs), inbox.all()
        assert before >= 1
        check_unreachable_relay(args, work, site_base)
    except BaseException:
        print(node.log_tail(), file=sys.stderr)
        raise
    finally:
        node.kill()
        smtp.stop()
        site.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    print("mail_test: OK")


if __name__ == "__main__":
    main()
