"""Attack 5 of tests/reliability/hostile_test.py: descriptor exhaustion.

A second lccd runs with RLIMIT_NOFILE 256. One address (127.0.0.140) opens 320
connections to listen.uns_tls and 100 to each other client port (cu_tls, https, uns, cu,
http) and sends nothing. Expected: a connection past a limit (the listener's: 64 per
address on the UNS ports, cu.max_connections 64, http.max_connections 256, or what the
descriptors allow) is closed within 1 s of its connect, before any TLS handshake; no
connect hangs in a full backlog; while the connections are held a CP session from
another address is acked and its URL fetched; lccd never raises cache-crash; after the
connections close everything works again."""
import os
import select
import socket
import threading
import time

from hostile_support import HEALTH_SRC, HostileNode, bound_socket, cu_query, query_doc, url_elements, wait_for

ATTACKER = "127.0.0.140"
PLAN = [("uns_tls", 320, 64), ("cu_tls", 100, 64), ("https", 100, 256), ("uns", 100, 64), ("cu", 100, 64),
        ("http", 100, 256)]  # port, connections, the most one address may hold there
CLOSE_WITHIN = 1.0


class Watcher:
    """Watches sockets from a thread: when each was opened and when the server closed it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.new = []
        self.rows = {}  # fd -> [sock, port name, opened, closed or None]
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def add(self, sock, name):
        sock.setblocking(False)
        with self.lock:
            self.new.append([sock, name, time.monotonic(), None])

    def _run(self):
        poller = select.poll()
        end = time.monotonic() + 120
        while self.running and time.monotonic() < end:
            with self.lock:
                for row in self.new:
                    self.rows[row[0].fileno()] = row
                    poller.register(row[0].fileno(), select.POLLIN | select.POLLERR | select.POLLHUP)
                self.new.clear()
            for fd, _ in poller.poll(20):
                row = self.rows[fd]
                try:
                    while row[0].recv(65536):
                        pass
                except BlockingIOError:
                    continue
                except OSError:
                    pass
                row[3] = time.monotonic()
                poller.unregister(fd)

    def stop(self):
        self.running = False
        self.thread.join()

    def summary(self):
        with self.lock:
            rows = list(self.rows.values())
        out = {}
        for _, name, opened, closed in rows:
            s = out.setdefault(name, {"open": 0, "closed_fast": 0, "closed_late": 0})
            if closed is None:
                s["open"] += 1
            elif closed - opened <= CLOSE_WITHIN:
                s["closed_fast"] += 1
            else:
                s["closed_late"] += 1
        return out

    def close_all(self):
        with self.lock:
            for row in list(self.rows.values()) + self.new:
                row[0].close()


def open_many(node, watcher, held_open):
    """Opens the PLAN's connections; per port how many connects were refused or hung."""
    failures = {}
    for name, count, _ in PLAN:
        refused = hung = in_a_row = 0
        for _ in range(count):
            try:
                s = bound_socket(ATTACKER, node.ports[name], timeout=1.0)
            except socket.timeout:
                hung += 1
                in_a_row += 1
                if in_a_row >= 3:
                    break
                continue
            except OSError:
                refused += 1
                continue
            in_a_row = 0
            held_open.append(s)
            watcher.add(s, name)
        failures[name] = (refused, hung)
    return failures


def attack_descriptors(ctx):
    node = HostileNode(ctx.args, ctx.work, "limited", ctx.pki, ctx.cert, ctx.key, nofile=256)
    site, results = ctx.site, []
    held, watcher, pid, password = [], None, None, None
    try:
        node.start()
        for name in ("first", "during", "after"):
            site.put(f"/limited/{name}.html", f"<html>{name}</html>\n".encode())
        pid, password = node.add_provider(site.base + "limited/")
        acked, out = node.cp_send(pid, password, [(site.base + "limited/first.html", "text/html")])
        assert acked, out
        wait_for("first.html fetched", lambda: site.requested("/limited/first.html"))
        watcher = Watcher()
        failures = open_many(node, watcher, held)
        time.sleep(CLOSE_WITHIN + 0.5)  # a close due within 1 s of the last connect has come by now
        summary = watcher.summary()
        for name, count, most in PLAN:
            s = summary.get(name, {"open": 0, "closed_fast": 0, "closed_late": 0})
            refused, hung = failures[name]
            ok = s["open"] <= most and s["closed_late"] == 0 and hung == 0
            results.append((ok, f"{count} to listen.{name}: {s['open']} held (at most {most}), {s['closed_fast']} "
                                f"closed within {CLOSE_WITHIN:.0f} s, {s['closed_late']} closed later, "
                                f"{refused} refused at connect, {hung} connects hung"))
        results.extend(while_held(node, site, pid, password))
    finally:
        if watcher:
            watcher.stop()
            watcher.close_all()
    try:
        if pid is not None:
            results.extend(after_release(node, site, pid, password))
    finally:
        node.kill()
    return results


def while_held(node, site, pid, password):
    if not node.alive():
        return [(False, node.death())]
    out = []
    t0 = time.monotonic()
    acked, text = node.cp_send(pid, password, [(site.base + "limited/during.html", "text/html")], timeout=15)
    out.append((acked, f"a CP session (lcc, 127.0.0.1) while the connections are held: "
                       f"{'acked' if acked else 'not acked: ' + text[:200]} in {time.monotonic() - t0:.1f} s"))
    if acked:
        try:
            wait_for("during.html fetched", lambda: site.requested("/limited/during.html"), timeout=20)
            out.append((True, "its URL fetched while the connections are held"))
        except AssertionError:
            out.append((False, "its URL was not fetched within 20 s while the connections are held"))
    out.append((node.alive(), "lccd alive while the connections are held" if node.alive() else node.death()))
    return out


def after_release(node, site, pid, password):
    if not node.alive():
        return [(False, "after the connections closed: " + node.death())]
    out = []
    acked, text = node.cp_send(pid, password, [(site.base + "limited/after.html", "text/html")], timeout=15)
    out.append((acked, "a CP session after the connections closed: " + ("acked" if acked else text[:200])))

    def all_stored():
        got = b" ".join(url_elements(cu_query(node.ports["cu"], HEALTH_SRC, query_doc(pid))))
        return all(f"limited/{n}.html".encode() in got for n in ("first", "during", "after"))

    try:
        wait_for("first, during and after stored", all_stored, timeout=30)
        out.append((True, "first.html, during.html and after.html stored"))
    except AssertionError as e:
        out.append((False, f"not all stored: {e}"))
    qm = node.status()["qm"]
    out.append((not qm["cache_crash"] and not qm["failed"],
                f"/status qm.cache_crash {qm['cache_crash']}, qm.failed {qm['failed']}"
                + (f" ({qm.get('failure')})" if qm["failed"] else "")))
    with open(os.path.join(node.work, "lccd.log"), errors="replace") as f:
        crash = [line.strip() for line in f if "cache-crash" in line]
    out.append((not crash, "the log says no cache-crash" if not crash else f"the log: {crash[:2]}"))
    return out
