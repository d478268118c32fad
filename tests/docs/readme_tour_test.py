#!/usr/bin/env python3
"""README's tour, run as written.

Takes the code blocks of README's "A tour in a few commands" section and runs every
command line in them with bash, in a scratch folder that holds a copy of etc/lcc.yaml
and a `build` link to the build folder. What is changed, and only this:
  - `./run.sh` (install, build, start) becomes the exec at its end,
    `./build/bin/lccd -c etc/lcc.yaml`, started in the background;
  - `/tmp/` becomes the scratch folder, so that runs do not meet;
  - the password placeholder `Xk4...` becomes the password `provider add` printed;
  - a line ending in `&` is started in the background and stopped at the end;
  - before `lcc status`, the test waits until the three pages are fetched ("Watch it
    fetch").
Every command must exit 0; `tar tzf` must list the three pages, and the XML answer
must be a CU answer that has nothing after seq 3. The tour uses the fixed ports of etc/lcc.yaml (7700-7704, 7780)
and 8000, so this test runs alone (RUN_SERIAL) and says so when a port is taken.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from pipeline_test import wait_for  # noqa: E402

PORTS = (7700, 7701, 7702, 7703, 7704, 7780, 8000)
DEADLINE = 60  # seconds for one command


def tour_commands(readme):
    text = open(readme, encoding="utf-8").read()
    section = text.split("## A tour in a few commands", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```\n(.*?)```", section, re.S)
    lines = [ln for b in blocks for ln in b.splitlines()]
    return [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def port_taken(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class Tour:
    def __init__(self, work, build):
        self.work = work
        self.env = dict(os.environ, PATH=os.environ["PATH"])
        self.background = []
        self.password = None
        os.makedirs(os.path.join(work, "etc"))
        os.makedirs(os.path.join(work, "tmp"))
        os.symlink(build, os.path.join(work, "build"))

    def spell(self, line):
        line = line.replace("/tmp/", os.path.join(self.work, "tmp") + "/")
        if self.password is not None:
            line = line.replace("Xk4...", self.password)
        return line

    def start(self, line):
        self.background.append(subprocess.Popen(["bash", "-c", "exec " + line], cwd=self.work,
                                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def run(self, line):
        p = subprocess.run(["bash", "-c", line], cwd=self.work, capture_output=True, timeout=DEADLINE)
        assert p.returncode == 0, f"`{line}` exited {p.returncode}:\n{p.stderr.decode()}"
        return p.stdout.decode()

    def status(self):
        return json.loads(self.run("./build/bin/lcc status --json"))

    def step(self, raw):
        line = self.spell(raw)
        if line.strip() == "./run.sh":
            self.start("./build/bin/lccd -c etc/lcc.yaml")
            wait_for("lccd to answer", lambda: self.status()["roles"])
        elif line.rstrip().endswith("&"):
            self.start(line.rstrip()[:-1])
            wait_for("the site to listen", lambda: port_taken(8000))
        elif " provider add " in line:
            out = self.run(line)
            m = re.fullmatch(r"id=1 password=(\S+)\n", out)
            assert m, f"provider add printed {out!r}"
            self.password = m.group(1)
        elif line.endswith("lcc status"):
            wait_for("the three pages to be fetched",
                     lambda: self.status()["qm"]["fetched"] == 3 and self.status()["qm"]["queued_urls"] == 0)
            out = self.run(line)
            assert "no problems" in out, out
        elif "tar tzf" in line:
            names = self.run(line).split()
            pages = [f"1/127.0.0.1+8000/docs/p{i}.html" for i in (1, 2, 3)]
            assert sorted(names) == sorted(["MANIFEST.xml", *pages]), names
        elif "--format xml" in line:
            out = self.run(line)
            # Nothing changed since seq 3, the last of the three pages.
            assert out.startswith("<?xml") and re.search(r'<lococa:result [^>]*count="0" last_seq="3"', out), out[:300]
        else:
            self.run(line)

    def stop(self):
        for p in reversed(self.background):
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    taken = [p for p in PORTS if port_taken(p)]
    if taken:
        print(f"readme tour: ports {taken} are in use on 127.0.0.1; the tour needs them free")
        return 1
    commands = tour_commands(os.path.join(args.source, "README.md"))
    assert commands[0] == "./run.sh", commands
    with tempfile.TemporaryDirectory(prefix="lcc-tour-") as work:
        tour = Tour(work, os.path.abspath(args.build))
        shutil.copy(os.path.join(args.source, "etc", "lcc.yaml"), os.path.join(work, "etc", "lcc.yaml"))
        try:
            for line in commands:
                tour.step(line)
        finally:
            tour.stop()
    print(f"readme tour: {len(commands)} commands ran as written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
