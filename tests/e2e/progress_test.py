#!/usr/bin/env python3
"""`lcc cp scan` shows its progress on a terminal, and only there.

The scan runs with stderr on a pseudo-terminal made by the test, with
LCC_PROGRESS_INTERVAL_MS=0 so that every file repaints the line (the default, 250 ms,
would make what is seen depend on the machine's speed). Checked:
  - each repaint starts with a carriage return and counts the files scanned so far;
  - the last state is painted once more and ends the line;
  - a second scan with the state file reports 0 new or changed;
  - with stderr on a pipe (a script), nothing at all is written there;
  - stdout carries the same <url/> lines either way.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading

FILES = 40


def run_on_tty(cmd, env):
    """Runs cmd with stderr on a pseudo-terminal; returns (exit code, stdout bytes,
    what the terminal showed, "\r\n" read back as "\n")."""
    master, slave = os.openpty()
    seen = bytearray()

    def drain():
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO once the last writer has closed the terminal
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    out, _ = p.communicate(timeout=60)
    reader.join(timeout=10)
    os.close(master)
    # The terminal turns "\n" into "\r\n" on output.
    return p.returncode, out, seen.decode(errors="replace").replace("\r\n", "\n")


def run_scan(lcc, root, state, on_tty):
    """Runs `lcc cp scan`; returns (stdout bytes, stderr text)."""
    cmd = [lcc, "cp", "scan", root, "--base-url", "http://127.0.0.1:1/site/", "--state", state]
    env = dict(os.environ, LCC_PROGRESS_INTERVAL_MS="0")
    if not on_tty:
        p = subprocess.run(cmd, env=env, capture_output=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stdout, p.stderr.decode()
    rc, out, err = run_on_tty(cmd, env)
    assert rc == 0, err
    return out, err


def painted_states(err):
    """The lines painted over each other: text between carriage returns, trimmed."""
    return [part.rstrip(" \n") for part in err.split("\r") if part.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    lcc = os.path.join(args.bin, "lcc")
    with tempfile.TemporaryDirectory(prefix="lcc-progress-") as work:
        root = os.path.join(work, "site")
        os.makedirs(os.path.join(root, "docs"))
        for i in range(FILES):
            with open(os.path.join(root, "docs", f"page{i:02}.html"), "w") as f:
                f.write(f"<p>page {i}</p>\n")
        state = os.path.join(work, "scan.state")

        out, err = run_scan(lcc, root, state, on_tty=True)
        assert out.count(b"<url ") == FILES, out
        states = painted_states(err)
        want = [f"scanned {i} of {FILES} files, {i - 1} new or changed" for i in range(1, FILES + 1)]
        assert states[:FILES] == want, f"repaints differ:\n{states}"
        last = f"scanned {FILES} of {FILES} files, {FILES} new or changed"
        assert states[FILES:] == [last], f"last state not painted once: {states[FILES:]}"
        assert err.endswith(last + "\n"), repr(err[-120:])
        assert re.fullmatch(r"(\r[^\r\n]*)+\n", err), f"not one repainted line: {err!r}"

        out2, err2 = run_scan(lcc, root, state, on_tty=True)
        assert out2 == b"", out2
        assert painted_states(err2)[-1] == f"scanned {FILES} of {FILES} files, 0 new or changed", err2

        os.remove(state)
        out3, err3 = run_scan(lcc, root, state, on_tty=False)
        assert err3 == "", f"progress written to a pipe: {err3!r}"
        assert out3 == out, "stdout differs between a terminal and a pipe"
    print("progress: ok")


if __name__ == "__main__":
    sys.exit(main())
