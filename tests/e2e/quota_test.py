#!/usr/bin/env python3
"""End-to-end test of issue 25: the files quota holds whichever way a set comes in.

A real lccd and a site served by Python's http.server on 127.0.0.1, three providers:
  - /cp/ with quota_files 3: `lcc cp send` of a partial set of 8 new URLs is accepted
    whole, exactly 3 are stored (`lcc cu query`), and the next session reports the 5
    others with 206; at full quota a refresh of a stored URL is still taken (and
    fetched), a new URL is refused (206) again, and a delete frees room for one more;
  - /in/ with quota_files 2: an IndexNow ping of 8 URLs stores exactly 2, the 6 others
    are reported with 206 at the provider's next session;
  - /by/ with quota_bytes 250 and 100-byte pages: an IndexNow ping of 4 stores 2, the
    2 others end with 313 (the byte quota on real bytes, at the QM).
"""
import json
import os
import re
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_test import Node, Site, e2e_args, run_guarded, tar_contents, wait_for  # noqa: E402

KEY = "5b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e"


def add_provider(node, prefix, *quota):
    out = node.lcc("provider", "add", "--prefix", prefix).stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    assert m, out
    node.lcc("provider", "set", m.group(1), *quota)
    return m.group(1), m.group(2)


def send(node, pid, password, urls_xml):
    r = node.lcc("cp", "send", "--uns", f"127.0.0.1:{node.ports['uns']}", "--id", pid, "--password", password, "-",
                 stdin=urls_xml.encode(), check=False)
    return r.stdout.decode()


def stored(node, prefix):
    return {u.getAttribute("c") for u in node.query_xml().getElementsByTagNameNS("*", "url")
            if u.getAttribute("deleted") != "yes" and u.getAttribute("c").startswith(prefix)}


def settled(node):
    """Nothing queued, nothing in flight: every URL has its outcome."""
    qm = node.status()["qm"]
    return qm["queued_urls"] == 0 and qm["in_flight"] == 0


def reported(out, code):
    return sorted(line.split()[3] for line in out.splitlines() if line.startswith(f"fetch error {code} "))


def indexnow(node, urls):
    doc = json.dumps({"host": "127.0.0.1", "key": KEY, "urlList": urls}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{node.ports['http']}/indexnow", data=doc, method="POST",
                                 headers={"Content-Type": "application/json; charset=utf-8"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 202, r.status


def cp_way(node, site):
    base = f"{site.base}cp/"
    pid, password = add_provider(node, base, "--quota-files", "3")
    urls = [f"{base}p{i}.html" for i in range(1, 9)]
    out = send(node, pid, password, "".join(f'<url c="{u}" m="text/html"/>\n' for u in urls))
    assert "accepted 8 of 8" in out, out
    wait_for("3 of the CP's URLs stored", lambda: stored(node, base) == set(urls[:3]) and settled(node))
    out = send(node, pid, password, "")
    assert "fetch errors since the last connection: 5" in out, out
    assert reported(out, 206) == sorted(urls[3:]), out
    assert settled(node) and stored(node, base) == set(urls[:3])

    # At full quota: a refresh of a stored URL goes through and is fetched again; a new
    # URL is refused once more.
    site.write("cp/p1.html", b"<html>p1, changed</html>\n")
    later = time.time() + 60  # past the Last-Modified of the first fetch, which is to the second
    os.utime(os.path.join(site.root, "cp/p1.html"), (later, later))
    out = send(node, pid, password, f'<url c="{urls[0]}" m="text/html"/>\n<url c="{base}p9.html" m="text/html"/>\n')
    assert "accepted 2 of 2" in out and "error 206" not in out, out
    wait_for("the refresh fetched",
             lambda: settled(node) and tar_contents(node.query_tar()).get(urls[0]) == b"<html>p1, changed</html>\n")
    out = send(node, pid, password, "")
    assert reported(out, 206) == [f"{base}p9.html"], out
    # A delete frees room.
    out = send(node, pid, password, f'<url c="{urls[1]}" m="text/html" op="delete"/>\n'
                                    f'<url c="{base}p9.html" m="text/html"/>\n')
    assert "accepted 2 of 2" in out, out
    wait_for("p9 in p2's place", lambda: settled(node) and stored(node, base) == {urls[0], urls[2], f"{base}p9.html"})
    out = send(node, pid, password, "")
    assert "fetch error" not in out, out


def indexnow_way(node, site):
    base = f"{site.base}in/"
    pid, password = add_provider(node, base, "--quota-files", "2")
    urls = [f"{base}q{i}.html" for i in range(1, 9)]
    indexnow(node, urls)
    wait_for("2 of the pinged URLs stored", lambda: len(stored(node, base)) == 2 and settled(node))
    out = send(node, pid, password, "")
    assert "fetch errors since the last connection: 6" in out, out
    have = stored(node, base)
    assert len(have) == 2 and have <= set(urls) and settled(node), sorted(have)
    assert reported(out, 206) == sorted(set(urls) - have), out


def byte_quota_way(node, site):
    base = f"{site.base}by/"
    pid, password = add_provider(node, base, "--quota-bytes", "250")
    urls = [f"{base}b{i}.html" for i in range(1, 5)]
    indexnow(node, urls)
    def two_stored_two_refused():
        out = send(node, pid, password, "")  # errors are cleared once reported: gather them
        refused.update(reported(out, 313))
        return len(refused) == 2 and settled(node)
    refused = set()
    wait_for("2 stored, 2 ended with 313", two_stored_two_refused)
    have = stored(node, base)
    assert len(have) == 2 and refused == set(urls) - have, (sorted(have), sorted(refused))


def run(node, site):
    for i in range(1, 10):
        site.write(f"cp/p{i}.html", f"<html>p{i}</html>\n".encode())
        site.write(f"in/q{i}.html", f"<html>q{i}</html>\n".encode())
    for i in range(1, 5):
        site.write(f"by/b{i}.html", b"<html>" + b"x" * 85 + f"{i}</html>\n".encode())  # 100 bytes
    site.write(f"{KEY}.txt", (KEY + "\n").encode())
    node.start()
    cp_way(node, site)
    indexnow_way(node, site)
    byte_quota_way(node, site)
    node.stop()


def main():
    args = e2e_args()
    work = tempfile.mkdtemp(prefix="lcc-e2e-quota-")
    os.makedirs(os.path.join(work, "site"))
    site = Site(os.path.join(work, "site"))
    node = Node(args, work)
    run_guarded(node, site, work, lambda: run(node, site))


if __name__ == "__main__":
    main()
