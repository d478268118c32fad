"""What tests/reliability/hostile_test.py needs around its attacks: an lccd with every role
and TLS ports, a web site that records every request, clients bound to a chosen loopback
source address (raw HTTP, HTTP(S) requests, CU queries), RSS sampling and the health
check that follows every attack.

Every socket goes to 127.0.0.1; source addresses are picked in 127.0.0.0/8 (Linux routes
the whole /8 to lo). Every loop is bounded in count and in time."""
import http.client
import http.server
import json
import os
import re
import resource
import select
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "tls"))
from pipeline_test import free_port, wait_for  # noqa: E402
from tls_test import Pki, TlsNode  # noqa: E402

NS = "http://www.lococa.org/1.0"
HEALTH_SRC = "127.0.0.2"  # the well-behaved client's address; attackers use 127.0.0.10 and up
STEP = 10.0  # seconds for any one request of the health check


class RecordingSite:
    """A provider's web site: files from a dict (path -> bytes), every request path logged."""

    TYPES = {".html": "text/html", ".txt": "text/plain", ".pdf": "application/pdf", ".xml": "application/xml",
             ".png": "image/png", ".exe": "application/octet-stream"}

    def __init__(self):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}/"
        self.files = {}
        self.seen = []
        self.lock = threading.Lock()
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                path = self.path.split("?", 1)[0]
                with site.lock:
                    site.seen.append(path)
                    body = site.files.get(path)
                self.send_response(200 if body is not None else 404)
                ext = os.path.splitext(path)[1]
                self.send_header("Content-Type", site.TYPES.get(ext, "text/html"))
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
                    super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def put(self, path, body):
        with self.lock:
            self.files[path] = body

    def requested(self, fragment):
        with self.lock:
            return [p for p in self.seen if fragment in p]

    def stop(self):
        self.server.shutdown()


class HostileNode(TlsNode):
    """One lccd with every role, listen.uns_tls, listen.cu_tls and listen.https; /status
    is read from HEALTH_SRC; stderr goes to a file; an optional RLIMIT_NOFILE."""

    def __init__(self, args, work, name, pki, cert, key, extra="", nofile=None):
        listen = {"uns_tls": "127.0.0.1:{uns_tls}", "cu_tls": "127.0.0.1:{cu_tls}", "https": "127.0.0.1:{https}"}
        super().__init__(args, work, name, listen, {"cert_file": cert, "key_file": key})
        with open(self.config, "a") as f:
            f.write(extra)
        self.pki = pki
        self.ctx = ssl.create_default_context(cafile=pki.ca)
        self.nofile = nofile
        self.stderr_path = os.path.join(self.work, "stderr")
        self.restarts = 0

    def start(self):
        limit = self.nofile

        def pre():
            if limit:
                resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        self.stderr_from = os.path.getsize(self.stderr_path) if os.path.exists(self.stderr_path) else 0
        with open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen([os.path.join(self.bin, "lccd"), "-c", self.config],
                                         stdout=subprocess.DEVNULL, stderr=err, preexec_fn=pre)
        wait_for(f"{self.name} /status", lambda: self.status() is not None)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def death(self):
        """Why lccd is gone: its exit (a signal is negative) and the stderr tail."""
        rc = self.proc.poll()
        how = f"signal {signal.Signals(-rc).name}" if rc is not None and rc < 0 else f"exit {rc}"
        with open(self.stderr_path, "rb") as f:
            f.seek(self.stderr_from)
            tail = f.read()[-600:].decode(errors="replace").strip().replace("\n", " | ")
        return f"lccd died ({how}); stderr: {tail}"

    def ensure_running(self):
        """Starts lccd again after an attack killed it, so that the next attack has one."""
        if not self.alive():
            self.restarts += 1
            self.start()

    def status(self, tls=False):
        if self.proc.poll() is not None:
            raise AssertionError(self.death())
        code, _, body = request("GET", self.ports["https" if tls else "http"], "/status", HEALTH_SRC,
                                ctx=self.ctx if tls else None, timeout=5)
        assert code == 200, (code, body[:200])
        return json.loads(body)

    def run_lcc(self, *argv, stdin=None, timeout=30):
        cmd = [os.path.join(self.bin, "lcc"), "--config", self.config, *argv]
        try:
            return subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(cmd, -1, b"", f"timed out after {timeout} s".encode())

    def add_provider(self, prefix, *more):
        r = self.run_lcc("provider", "add", "--prefix", prefix)
        m = re.fullmatch(rb"id=(\d+) password=(\S+)\n", r.stdout)
        assert m, (r.stdout, r.stderr)
        pid, password = m.group(1).decode(), m.group(2).decode()
        if more:
            r = self.run_lcc("provider", "set", pid, *more)
            assert r.returncode == 0, (r.stdout, r.stderr)
        return pid, password

    def cp_send(self, pid, password, urls, timeout=STEP):
        """`lcc cp send` of a partial set; returns (acked, output)."""
        text = "".join(f'<url c="{u}" m="{m}"/>\n' for u, m in urls).encode()
        r = self.run_lcc("cp", "send", "--uns", f"127.0.0.1:{self.ports['uns']}", "--id", pid, "--password",
                         password, "-", stdin=text, timeout=timeout)
        out = (r.stdout + r.stderr).decode(errors="replace")
        return f"accepted {len(urls)} of {len(urls)} urls" in out, out.strip()


def bound_socket(src, port, timeout=5.0, rcvbuf=None):
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def request(method, port, path, src, body=None, headers=None, ctx=None, timeout=STEP):
    """One HTTP(S) request from `src`: (status, headers dict, body bytes)."""
    if ctx is None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(src, 0))
    else:
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout, source_address=(src, 0), context=ctx)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def form(**fields):
    from urllib.parse import urlencode
    return urlencode(fields).encode(), {"Content-Type": "application/x-www-form-urlencoded"}


class Exchange:
    """What a raw exchange gave: the bytes, the status codes of every response in them,
    whether the server closed, and what happened while sending."""

    def __init__(self, data, closed, send_note, seconds):
        self.data = bytes(data)
        # Anywhere, not only after CRLF: a body need not end with one (lccd's JSON ends
        # "}\n"), and a smuggled request's answer follows the body at once.
        self.codes = [int(c) for c in re.findall(rb"HTTP/1\.[01] (\d{3}) [^\r\n]*\r\n", self.data)]
        self.closed = closed
        self.send_note = send_note
        self.seconds = seconds

    def first(self):
        return self.codes[0] if self.codes else None

    def __str__(self):
        head = self.data[:80].decode(errors="replace").replace("\r\n", " / ")
        return (f"answers {self.codes or 'none'}, {'closed' if self.closed else 'left open'}"
                f"{', ' + self.send_note if self.send_note else ''}, {self.seconds:.1f} s, first bytes {head!r}")


def _response_complete(data):
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return False
    m = re.search(rb"\r\ncontent-length: *(\d+)", data[:end].lower())
    return m is not None and len(data) - end - 4 >= int(m.group(1))


def exchange(port, pieces, src, ctx=None, read_timeout=4.0, want_close=True, total=60.0):
    """Sends `pieces` (an iterable of bytes) from `src`, stopping early when the server
    answers, stops reading (2 s) or closes; then reads until the server closes, or (with
    want_close False) until one whole response is in, or read_timeout passes."""
    t0 = time.monotonic()
    try:
        s = bound_socket(src, port)
        if ctx is not None:
            s = ctx.wrap_socket(s, server_hostname="localhost")
    except (OSError, ssl.SSLError) as e:
        return Exchange(b"", True, f"connect failed: {e.__class__.__name__}", time.monotonic() - t0)
    s.settimeout(2.0)
    got, closed, note = bytearray(), False, ""

    def readable():
        # Over TLS the socket turns readable with the server's session tickets: only
        # decrypted bytes count there (read once the sending stops).
        return s.pending() > 0 if ctx is not None else bool(select.select([s], [], [], 0)[0])

    try:
        for piece in pieces:
            if readable():
                note = "answered while sending"
                break
            if time.monotonic() - t0 > total:
                note = "sending stopped at the time bound"
                break
            s.sendall(piece)
    except socket.timeout:
        note = "the server stopped reading"
    except (OSError, ssl.SSLError) as e:
        note = f"send failed: {e.__class__.__name__}"
    end = time.monotonic() + read_timeout
    try:
        while time.monotonic() < end:
            s.settimeout(max(0.05, end - time.monotonic()))
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                closed = True
                break
            got += chunk
            if not want_close and _response_complete(got):
                break
    except (ConnectionResetError, BrokenPipeError, ssl.SSLError, OSError):
        closed = True
    s.close()
    return Exchange(got, closed, note, time.monotonic() - t0)


def cu_query(port, src, query, ctx=None, timeout=STEP):
    """A CU query document on the CU port (plain or TLS) from `src`; the whole answer."""
    s = bound_socket(src, port, timeout=timeout)
    if ctx is not None:
        s = ctx.wrap_socket(s, server_hostname="localhost")
    end = time.monotonic() + timeout
    out = bytearray()
    try:
        s.sendall(query.encode())
        while time.monotonic() < end:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    finally:
        s.close()
    return bytes(out)


def query_doc(pid=None, fmt="xml", limit=None):
    inner = (f'<provider id="{pid}"/>' if pid else "") + (f"<limit>{limit}</limit>" if limit is not None else "")
    return f'<lococa:query xmlns:lococa="{NS}" format="{fmt}">{inner}</lococa:query>'


def url_elements(xml_bytes):
    """The <url .../> elements of an XML answer (its root's count and last_seq move with
    every other provider's changes; the records must not)."""
    return re.findall(rb"<url [^>]*/>", xml_bytes)


def attribute_diff(a, b):
    """The attributes two <url/> elements differ in, 'name: old -> new'."""
    pa = dict(re.findall(rb'(\w+)="([^"]*)"', a))
    pb = dict(re.findall(rb'(\w+)="([^"]*)"', b))
    return ", ".join(f"{k.decode()}: {pa.get(k, b'-').decode()} -> {pb.get(k, b'-').decode()}"
                     for k in sorted(set(pa) | set(pb)) if pa.get(k) != pb.get(k))


def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


class RssWatch:
    """Samples VmRSS every 10 ms from start to stop; growth() is the largest rise above
    the RSS at the start (or of VmHWM, which catches a peak between two samples)."""

    def __init__(self, pid):
        self.pid = pid
        self.base = proc_status(pid, "VmRSS")
        self.hwm0 = proc_status(pid, "VmHWM")
        self.peak = self.base
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        end = time.monotonic() + 300
        while self.running and time.monotonic() < end:
            try:
                self.peak = max(self.peak, proc_status(self.pid, "VmRSS"))
            except OSError:
                return
            time.sleep(0.01)

    def stop(self):
        self.running = False
        self.thread.join()
        try:
            hwm = proc_status(self.pid, "VmHWM") - self.hwm0
        except OSError:
            hwm = 0
        return max(self.peak - self.base, hwm)


class Health:
    """The check after every attack, from HEALTH_SRC (and `lcc`, from 127.0.0.1): lccd is
    alive, answers /status over HTTP and HTTPS, takes a CP session (acked), answers a CU
    query on the CU port, its TLS variant and /cu/query, and the victim provider's records
    are those from before the attacks."""

    def __init__(self, node, site):
        self.node = node
        self.site = site
        self.checks = 0

    def setup(self):
        node, site = self.node, self.site
        site.put("/health/page.html", b"<html>health</html>\n")
        self.pid, self.password = node.add_provider(site.base + "health/")
        self.victim, victim_password = node.add_provider(site.base + "victim/")
        urls = []
        for i in range(6):  # 6 MB that does not compress: exports that fill socket buffers
            site.put(f"/victim/doc{i}.pdf", os.urandom(1 << 20))
            urls.append((f"{site.base}victim/doc{i}.pdf", "application/pdf"))
        for i in range(4):
            site.put(f"/victim/p{i}.html", f"<html>victim {i}</html>\n".encode())
            urls.append((f"{site.base}victim/p{i}.html", "text/html"))
        acked, out = node.cp_send(self.victim, victim_password, urls)
        assert acked, out
        wait_for("the victim's 10 records stored", lambda: len(self.victim_records()[0]) == 10)
        self.before = self.victim_records()

    def victim_records(self):
        n = self.node
        tcp = url_elements(cu_query(n.ports["cu"], HEALTH_SRC, query_doc(self.victim)))
        code, _, body = request("GET", n.ports["http"], f"/cu/query?format=xml&provider={self.victim}", HEALTH_SRC)
        assert code == 200, (code, body[:200])
        return tcp, url_elements(body)

    def problems(self):
        """Every way the node is not healthy now (empty: healthy)."""
        n = self.node
        if not n.alive():
            return [n.death()]
        self.checks += 1
        out = []

        def step(what, fn):
            t0 = time.monotonic()
            try:
                why = fn()
            except Exception as e:  # noqa: BLE001 - each step's failure is reported
                why = f"{e.__class__.__name__}: {e}"
            if why:
                out.append(f"{what}: {why} ({time.monotonic() - t0:.1f} s)")

        step("/status over HTTP", lambda: None if n.status()["machine_id"] else "no machine_id")
        step("/status over HTTPS", lambda: None if n.status(tls=True)["machine_id"] else "no machine_id")
        url = f"{self.site.base}health/page.html"

        def cp():
            acked, text = n.cp_send(self.pid, self.password, [(url, "text/html")])
            return None if acked else f"not acked: {text[:300]}"

        step("CP session (lcc cp send)", cp)

        def cu_tls():
            got = cu_query(n.ports["cu_tls"], HEALTH_SRC, query_doc(limit=1), ctx=n.ctx)
            return None if b"<lococa:result" in got else f"answer {got[:200]!r}"

        step("CU query on listen.cu_tls", cu_tls)

        def victim():
            now = self.victim_records()
            if now == self.before:
                return None
            was, before = now, self.before
            self.before = now  # the next attack is judged from here
            diff = [attribute_diff(a, b) for a, b in zip(before[0], was[0]) if a != b]
            return (f"records changed: {len(before[0])} before, {len(was[0])}/{len(was[1])} now (CU port / HTTP)"
                    + (f"; {len(diff)} differ, the first in {diff[0]}" if diff else ""))

        step("the victim's records (CU port and /cu/query)", victim)
        if not n.alive():
            out.append(n.death())
        return out
