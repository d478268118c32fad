#!/usr/bin/env python3
"""Search engines as content users (issue 29): SWISH++ and ht://Dig fed by `lcc cu mirror`.

A real lccd fetches a site served on 127.0.0.1; `lcc cu mirror DIR` keeps a folder equal
to what it holds; the engine (the Debian programs) indexes DIR and must find:
  - a word only one page has, on that page;
  - after the page changed at the site, was pushed, mirrored and re-indexed: the new
    word, and not the old one;
  - after a page was deleted at the site, pushed, mirrored and re-indexed: not its word.
The recipes are docs/content-users.md's. Exit 77 (skipped, one line) when the engine's
package is not installed.
"""
import argparse
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from pipeline_test import Node, Site, run_guarded, wait_for  # noqa: E402

HTSEARCH = "/usr/lib/cgi-bin/htsearch"


class Swish:
    """SWISH++: index++ makes an index of DIR's files, search++ reads it. index++ has no
    update that forgets a changed file's old words, so each update re-indexes (into a
    new file, renamed over the old one)."""
    programs = ["index++", "search++"]
    package = "swish++"

    def __init__(self, work, mirror_dir, site):
        self.index = os.path.join(work, "mirror.swish++")
        self.dir = mirror_dir
        self.site_dir = f"1/127.0.0.1+{site.port}/"  # provider 1's pages from this site

    def before_sync(self):
        pass

    def reindex(self):
        new = self.index + ".new"
        subprocess.run(["index++", "-e", "html:*.html", "-e", "html:*(text%2Fhtml)", "-e", "text:*.txt",
                        "-e", "text:*(text%2Fplain)", "-i", new, self.dir], check=True, capture_output=True,
                       timeout=120)
        os.replace(new, self.index)

    def search(self, word):
        """The pages (paths relative to the site's folder in DIR) search++ finds for `word`."""
        r = subprocess.run(["search++", "-i", self.index, word], check=True, capture_output=True, timeout=60)
        found = []
        for line in r.stdout.decode().splitlines():
            if line.startswith("#"):
                continue
            path = line.split(" ")[1]  # rank path size title
            rel = os.path.relpath(path, self.dir)
            found.append(rel[len(self.site_dir):] if rel.startswith(self.site_dir) else rel)
        return sorted(found)


class Htdig:
    """ht://Dig: htdig walks DIR through file:// URLs (a first run with -i, later runs
    re-read only files whose time changed and forget those that are gone), htpurge
    drops the forgotten ones, htsearch answers; url_part_aliases shows the site's
    URLs instead of file:// ones."""
    programs = ["htdig", "htpurge", HTSEARCH]
    package = "htdig"

    def __init__(self, work, mirror_dir, site):
        self.db = os.path.join(work, "htdig-db")
        os.makedirs(self.db)
        host = f"127.0.0.1%2B{site.port}"  # the mirror's folder 127.0.0.1+PORT, as a URL
        root = f"file://{mirror_dir}/1/{host}/"
        self.site_base = site.base
        common = (f"database_dir: {self.db}\ncommon_dir: /usr/share/htdig\n"
                  f"start_url: {root}\nlimit_urls_to: {root}\n")
        self.dig_conf = os.path.join(work, "htdig.conf")
        self.search_conf = os.path.join(work, "htsearch.conf")
        with open(self.dig_conf, "w") as f:
            f.write(common + f"url_part_aliases: {root} *site\n")
        with open(self.search_conf, "w") as f:
            f.write(common + f"url_part_aliases: {site.base} *site\n")
        self.initial = True
        self.indexed_at = 0

    def before_sync(self):
        # htdig sees a change by the file's time in seconds: a file the mirror rewrites
        # in the second it was last written looks unchanged. (Runs minutes apart never
        # meet that; the test waits for the clock to pass the last index.)
        wait_for("the clock past the last index", lambda: int(time.time()) > self.indexed_at, timeout=5)

    def reindex(self):
        args = ["htdig", "-c", self.dig_conf] + (["-i"] if self.initial else [])
        subprocess.run(args, check=True, capture_output=True, timeout=120)
        subprocess.run(["htpurge", "-c", self.dig_conf], check=True, capture_output=True, timeout=120)
        self.initial = False
        self.indexed_at = int(time.time())

    def search(self, word):
        """The site URLs (relative to the site's base) htsearch finds for `word`."""
        r = subprocess.run([HTSEARCH, "-c", self.search_conf, f"words={word};format=short;matchesperpage=100"],
                           check=True, capture_output=True, timeout=60)
        urls = set(re.findall(r'<a href="([^"]+)"', r.stdout.decode()))
        return sorted(u[len(self.site_base):] if u.startswith(self.site_base) else u for u in urls)


ENGINES = {"swish": Swish, "htdig": Htdig}


def page(title, words):
    return f"<html><head><title>{title}</title></head><body><p>{words}</p></body></html>\n".encode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    ap.add_argument("--engine", required=True, choices=sorted(ENGINES))
    args = ap.parse_args()
    engine_class = ENGINES[args.engine]
    missing = [p for p in engine_class.programs if shutil.which(p) is None]
    if missing:
        print(f"skipped: {' '.join(missing)} not installed (apt install {engine_class.package})")
        return 77
    work = tempfile.mkdtemp(prefix=f"lcc-engine-{args.engine}-")
    site = Site(os.path.join(work, "site"))
    node = Node(args, work)
    run_guarded(node, site, work, lambda: run(node, site, work, engine_class))
    print(f"cu engines {args.engine}: 1 passed, 0 failed")
    return 0


def run(node, site, work, engine_class):
    site.write("index.html", page("Home", 'home <a href="docs/a.html">a</a> <a href="docs/b.html">b</a> '
                                  '<a href="docs/c.html">c</a> <a href="docs/notes.txt">notes</a>'))
    site.write("docs/a.html", page("Aardvarks", "common words and aardvark"))
    site.write("docs/b.html", page("Bisons", "common words and bison"))
    site.write("docs/c.html", page("Cheetahs", "common words and cheetah"))
    site.write("docs/notes.txt", b"plain notes about the quokka\n")
    node.start()
    out = node.lcc("provider", "add", "--prefix", site.base).stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    assert m, out
    pid, password = m.group(1), m.group(2)
    state = os.path.join(work, "scan.state")
    mirror_dir = os.path.join(work, "mirror")
    engine = engine_class(work, mirror_dir, site)

    def push(full=False):
        scan = node.lcc("cp", "scan", site.root, "--base-url", site.base, "--state", state).stdout
        node.lcc("cp", "send", "--uns", f"127.0.0.1:{node.ports['uns']}", "--id", pid, "--password", password,
                 *(["--full"] if full else []), "-", stdin=scan)

    def last_seq():
        return int(node.query_xml().getAttribute("last_seq"))

    def changed_since(seq, url, deleted):
        root = node.query_xml("--since-seq", str(seq), "--deleted")
        return any(u.getAttribute("c") == site.base + url and (u.getAttribute("deleted") == "yes") == deleted
                   for u in root.getElementsByTagName("url"))

    def mirror():
        engine.before_sync()
        r = node.lcc("cu", "mirror", mirror_dir, "--cu", f"127.0.0.1:{node.ports['cu']}", "--provider", pid)
        assert r.stdout == b"" and r.stderr == b"", f"mirror is not quiet: {r.stdout!r} {r.stderr!r}"

    push(full=True)
    wait_for("5 pages stored", lambda: int(node.query_xml().getAttribute("count")) == 5)
    mirror()
    # For cron: a run while another holds the lock exits 3 at once; -v says what it did.
    cu = ["cu", "mirror", mirror_dir, "--cu", f"127.0.0.1:{node.ports['cu']}", "--provider", pid]
    with open(os.path.join(mirror_dir, ".lcc-mirror.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        r = node.lcc(*cu, check=False)
        assert r.returncode == 3 and b"lock" in r.stderr, (r.returncode, r.stderr)
    r = node.lcc(*cu, "-v")
    assert re.fullmatch(rb".*: seq (\d+) -> \1, 0 changes, 0 written, 0 removed\n", r.stdout), r.stdout
    engine.reindex()
    assert engine.search("bison") == ["docs/b.html"], engine.search("bison")
    found_common = engine.search("common")
    assert len(found_common) == 3, found_common
    assert engine.search("quokka") == ["docs/notes.txt"], engine.search("quokka")

    # A page changes at the site: the old word goes, the new one comes.
    seq = last_seq()
    site.write("docs/b.html", page("Bisons", "common words and buffalo"))
    push()
    wait_for("the change stored", lambda: changed_since(seq, "docs/b.html", False))
    mirror()
    engine.reindex()
    assert engine.search("bison") == [], engine.search("bison")
    assert engine.search("buffalo") == ["docs/b.html"], engine.search("buffalo")
    assert engine.search("aardvark") == ["docs/a.html"], "an unchanged page was lost"

    # A page is deleted at the site: it is no longer found.
    seq = last_seq()
    os.remove(os.path.join(site.root, "docs/c.html"))
    push()
    wait_for("the removal stored", lambda: changed_since(seq, "docs/c.html", True))
    mirror()
    engine.reindex()
    assert engine.search("cheetah") == [], engine.search("cheetah")
    assert len(engine.search("common")) == 2, engine.search("common")
    node.stop()


if __name__ == "__main__":
    sys.exit(main())
