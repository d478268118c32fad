#!/usr/bin/env python3
"""A web site for the bed that answers slowly and logs when each request began and ended.

`slow_site.py --bind A --port P --root DIR --delay S --log FILE --lifetime T` serves
the files under DIR (GET only), each answer S seconds after the request came (with
`--delay-file F`: the number in F when it is there, read at each request, so a test can
slow the site down and speed it up while it runs), and
writes one line per request to FILE: `<start> <end> <client address> <status> <path>`,
times in seconds since the epoch (float), so a test can tell from the log alone which
fetches ran at the same time. Threaded (one thread a request), bounded by T seconds.
"""
import argparse
import http.server
import os
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bind", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--delay-file", default="")
    ap.add_argument("--log", required=True)
    ap.add_argument("--lifetime", type=float, default=300)
    a = ap.parse_args()
    lock = threading.Lock()
    log = open(a.log, "a", buffering=1)

    def delay():
        try:
            with open(a.delay_file) as f:
                return min(30.0, max(0.0, float(f.read().strip())))
        except (OSError, ValueError):
            return a.delay

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the library's name
            start = time.time()
            time.sleep(delay() if a.delay_file else a.delay)
            rel = os.path.normpath(self.path.split("?", 1)[0]).lstrip("/")
            path = os.path.join(a.root, rel)
            status = 404
            try:
                if rel.startswith("..") or not os.path.isfile(path):
                    self.send_error(404)
                else:
                    with open(path, "rb") as f:
                        body = f.read()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    status = 200
            except OSError:
                status = 0  # the client went away
            # The end before waiting for the log's lock: taken after it, the end of a
            # request could fall after the start of the next one its answer let begin
            # (seen: 2 ms apart, once in four botm_death runs on a loaded machine).
            end = time.time()
            with lock:
                log.write(f"{start:.4f} {end:.4f} {self.client_address[0]} {status} {self.path}\n")

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer((a.bind, a.port), Handler)
    srv.daemon_threads = True
    threading.Timer(a.lifetime, srv.shutdown).start()
    print("listening", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
