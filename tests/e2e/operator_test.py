#!/usr/bin/env python3
"""What an operator sees of a running lccd that has fetched something.

One real lccd (the Node of pipeline_test.py) fetches a small site, with one URL that
fails (404). Then:
  - `lcc status` prints the compact summary, problems first, with the figures of
    `lcc status --json` (the full document, the daemon's real key names);
  - GET /metrics passes `promtool check metrics` without a single warning, counters
    end in _total and fetch errors carry a code label;
  - headless Chromium renders GET /: the figures in the DOM equal /admin/status, the
    charts are SVGs with drawn lines and time ticks; a screenshot is kept in the build folder;
  - issue 30 §4: a provider's sitemap that answers 404 is polled at once when set (and
    again when set again), shows in `lcc provider show` and in the page's problem list
    as "HTTP 404"; the page's provider table links to the provider's page, which Chromium
    renders with its recent errors, fetch rate and the failing sitemap (screenshot too);
  - `lcc botm sweep` deletes a content file nothing references and reports its bytes.
A tool that is not installed (promtool from Debian `prometheus`, Debian `chromium`)
makes its part fail: scripts/deps.sh installs both.
"""
import argparse
import html
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_test import run_with_site_and_node, wait_for  # noqa: E402
from response_heads import stored_head  # noqa: E402


def fetch_site(lcc, site, work):
    for i in range(6):
        site.write(f"docs/page{i}.html", f"<html><body>page {i}</body></html>\n".encode())
    lcc.start()
    out = lcc.lcc("provider", "add", "--prefix", site.base, "--priority", "5").stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    assert m, out
    scan = lcc.lcc("cp", "scan", site.root, "--base-url", site.base,
                   "--state", os.path.join(work, "scan.state")).stdout
    scan += f'<url c="{site.base}docs/missing.html" m="text/html"/>\n'.encode()
    lcc.lcc("cp", "send", "--uns", f"127.0.0.1:{lcc.ports['uns']}", "--id", m.group(1),
            "--password", m.group(2), "--full", "-", stdin=scan)

    def settled():
        qm = lcc.status()["qm"]
        return qm["fetched"] == 6 and qm["fetch_errors"] >= 1 and qm["queued_urls"] == 0 and qm["in_flight"] == 0
    wait_for("6 pages stored and the 404 failed", settled)


def check_status_cli(lcc):
    full = json.loads(lcc.lcc("status", "--json").stdout)
    for key in ("machine_id", "roles", "qm", "uns", "botm", "bot", "cu", "providers", "counters"):
        assert key in full, f"lcc status --json lacks {key}: {sorted(full)}"
    text = lcc.lcc("status").stdout.decode()
    lines = text.splitlines()
    assert len(lines) <= 24, f"more than a screen:\n{text}"
    assert lines[0] == "lccd m1  roles: uns, qm, botm, bot, cu, rs", text
    assert lines[1] == "no problems", text
    qm = full["qm"]
    for want in (f"queue      {qm['queued_urls']} URLs queued, {qm['in_flight']} fetching",
                 f"fetches    {qm['fetched']} stored, {qm['unchanged']} unchanged, {qm['fetch_errors']} failed (301: ",
                 "providers  1 total: 1 active, 0 pending, 0 suspended",
                 f"robots     {full['bot']['connected']}/{full['bot']['robots']} connected, "
                 f"{full['bot']['slots_per_robot']} slots each",
                 f"spool      {full['uns']['forwarder']['spool_sets']} sets"):
        assert want in text, f"{want!r} not in:\n{text}"
    return full


def check_metrics(lcc):
    with urllib.request.urlopen(f"http://127.0.0.1:{lcc.ports['http']}/metrics", timeout=5) as r:
        body = r.read()
    promtool = shutil.which("promtool")
    assert promtool, "promtool is not installed (Debian package prometheus; scripts/deps.sh)"
    p = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, timeout=60)
    report = (p.stdout + p.stderr).decode()
    assert p.returncode == 0 and not report.strip(), f"promtool check metrics:\n{report}"
    text = body.decode()
    assert re.search(r'^lcc_qm_fetch_errors_total\{code="301"\} [1-9]', text, re.M), text
    for m in re.finditer(r"^# TYPE (\S+) counter$", text, re.M):
        assert m.group(1).endswith("_total"), m.group(1)
    assert "# TYPE lcc_botm_fetches_total counter" in text


class Dom(html.parser.HTMLParser):
    """The figures (data-key/data-value), error rows and charts of the rendered page."""

    def __init__(self):
        super().__init__()
        self.figures, self.codes, self.charts = {}, {}, []
        self.in_code = None
        self.problems, self.links, self.titled = [], {}, 0
        self.in_problems, self.in_li, self.in_link = False, False, None

    def handle_endtag(self, tag):
        if tag == "li" and self.in_li:
            self.in_li = False
        if tag == "div":
            self.in_problems = False
        if tag == "a":
            self.in_link = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id") == "problems":
            self.in_problems = True
        if tag == "li" and self.in_problems:
            self.in_li = True
            self.problems.append("")
        if tag == "a" and a.get("href", "").startswith("/provider/"):
            self.in_link = a["href"]
            self.links[self.in_link] = ""
        if a.get("class") == "fig" and a.get("title"):
            self.titled += 1
        if "data-key" in a and "data-value" in a:
            self.figures[a["data-key"]] = a["data-value"]
        if "data-code" in a:
            self.in_code = a["data-code"]
        if tag == "svg":
            self.charts.append({"points": int(a.get("data-points", "0")), "lines": []})
        if tag == "polyline" and self.charts:
            self.charts[-1]["lines"].append(a.get("points", ""))

    def handle_data(self, data):
        if self.in_li:
            self.problems[-1] += data
        if self.in_link is not None:
            self.links[self.in_link] += data
        if self.in_code is not None:
            self.codes[self.in_code] = int(data)
            self.in_code = None


def chromium(args_list, url):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "chromium is not installed (Debian package chromium; scripts/deps.sh)"
    profile = tempfile.mkdtemp(prefix="lcc-chromium-")
    try:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
               f"--user-data-dir={profile}", *args_list, url]
        return subprocess.run(cmd, capture_output=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def sitemap_poll(lcc):
    return json.loads(lcc.lcc("provider", "show", "1").stdout).get("sitemap_poll") or {}


def set_failing_sitemap(lcc, site):
    """The provider's sitemap answers 404: `set` polls it at once (sitemap.check_interval
    and sitemap.retry_min are a minute: only the poll-now reaches it within 20 s), the
    failure says "HTTP 404", and setting the same URL again polls again."""
    sitemap = f"{site.base}docs/sitemap.xml"
    lcc.lcc("provider", "set", "1", "--sitemap", sitemap)
    wait_for("the sitemap polled at once", lambda: sitemap_poll(lcc).get("failures", 0) >= 1, timeout=20)
    poll = sitemap_poll(lcc)
    assert poll["ok"] is False and poll["http_status"] == 404, poll
    assert poll["error"] == f"{sitemap}: HTTP 404", poll
    lcc.lcc("provider", "set", "1", "--sitemap", sitemap)
    wait_for("the same sitemap polled again at once", lambda: sitemap_poll(lcc).get("failures", 0) >= 2, timeout=20)
    problems = lcc.status()["uns"]["sitemap"]
    assert problems["failing"] == 1 and problems["failures"][0]["id"] == 1, problems
    return sitemap


def check_provider_page(lcc, site, dom, sitemap, artifacts):
    href = [h for h, text in dom.links.items() if text.startswith("#1 ")]
    assert href == ["/provider/1"] and dom.links[href[0]] == f"#1 {site.base}", dom.links
    url = f"http://127.0.0.1:{lcc.ports['http']}{href[0]}"
    r = chromium(["--dump-dom"], url)
    page = r.stdout.decode()
    assert r.returncode == 0 and "<h1>Provider 1</h1>" in page, f"{r.returncode}\n{r.stderr.decode()}\n{page}"
    assert f"Failing: {sitemap}: HTTP 404" in page, page
    assert re.search(r'id="rate">[0-9.]+<', page) and re.search(r'id="queued">0<', page), page
    p = json.loads(lcc.lcc("provider", "show", "1").stdout)
    for e in p["errors"]:
        assert html.escape(e["url"], quote=False) in page, (e, page)
    shot = os.path.join(artifacts, "provider_page.png")
    r = chromium([f"--screenshot={shot}", "--window-size=1280,1000", "--hide-scrollbars"], url)
    assert r.returncode == 0 and os.path.getsize(shot) > 10000, f"screenshot: {r.stderr.decode()}"


def check_page(lcc, site, sitemap, artifacts):
    url = f"http://127.0.0.1:{lcc.ports['http']}/"
    r = chromium(["--dump-dom"], url)
    dom_text = r.stdout.decode()
    assert r.returncode == 0 and "<html" in dom_text, f"chromium --dump-dom: {r.returncode}\n{r.stderr.decode()}"
    status = json.loads(lcc.lcc("status", "--json").stdout)
    dom = Dom()
    dom.feed(dom_text)
    assert len(dom.figures) >= 15, dom.figures
    for key, shown in dom.figures.items():
        value = status
        for part in key.split("/"):
            value = value.get(part) if isinstance(value, dict) else None
        want = "yes" if value is True else "no" if value is False else "–" if value is None else str(value)
        assert shown == want, f"{key}: the page shows {shown}, /admin/status has {value}"
    errors = {k[len('lcc_qm_fetch_errors_total{code="'):-2]: v for k, v in status["counters"].items()
              if k.startswith("lcc_qm_fetch_errors_total{")}
    assert dom.codes == errors and "301" in errors, (dom.codes, errors)
    assert len(dom.charts) == 4, dom.charts
    for c in dom.charts:
        assert c["points"] >= 1, dom.charts
    assert any(c["lines"] and len(c["lines"][0].split()) >= 2 for c in dom.charts), dom.charts
    assert re.search(r'<line class="tick"[^>]*>(</line>)?<text[^>]*>\d\d:\d0</text>', dom_text), "no time ticks"
    assert "start again at each restart" in dom_text
    assert dom.titled == len(dom.figures) and 'title="updates not fetched' in dom_text, dom.titled
    want = f"Provider 1: its sitemap cannot be read: {sitemap}: HTTP 404"
    assert any(p.startswith(want) for p in dom.problems), dom.problems
    assert not any("fetch code" in p for p in dom.problems), dom.problems
    check_provider_page(lcc, site, dom, sitemap, artifacts)
    shot = os.path.join(artifacts, "status_page.png")
    r = chromium([f"--screenshot={shot}", "--window-size=1280,1500", "--hide-scrollbars"], url)
    assert r.returncode == 0 and os.path.getsize(shot) > 10000, f"screenshot: {r.stderr.decode()}"
    with open(os.path.join(artifacts, "status_page.html"), "w") as f:
        f.write(dom_text)


def check_botm_sweep(lcc):
    """`lcc botm sweep`: a file nothing references (a crash lost its record) is deleted
    and its bytes reported; the stored pages stay, and their content still reads."""
    content = os.path.join(lcc.work, "var", "content")
    stored = sorted(os.path.join(d, f) for d, _, fs in os.walk(content) for f in fs)
    bodies = [p for p in stored if not p.endswith(".http")]  # .http: response heads the attribute could not take
    assert len(bodies) == 6 and all(stored_head(p) for p in bodies), stored
    orphan = os.path.join(content, "0a", "0b", "a0bff")  # name 0xa0bff of the fan-out, never handed out
    os.makedirs(os.path.dirname(orphan), exist_ok=True)
    with open(orphan, "wb") as f:
        f.write(b"x" * 4321)
    with open(orphan + ".http", "wb") as f:  # a response-head side file goes with it
        f.write(b"0123456789abcdef0123456789abcdef\nHTTP/1.1 200 OK\r\n\r\n")
    out = lcc.lcc("botm", "sweep", "--wait", "30").stdout.decode()
    assert re.search(r"7 file\(s\) listed, 1 orphan\(s\) of 4321 bytes; reclaimed 1 file\(s\), 4321 bytes", out), out
    assert not os.path.exists(orphan), "the orphan is still there"
    assert not os.path.exists(orphan + ".http"), "the orphan's response head is still there"
    assert sorted(os.path.join(d, f) for d, _, fs in os.walk(content) for f in fs) == stored
    assert lcc.status()["qm"]["sweep"]["reclaimed_bytes"] == 4321


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    ap.add_argument("--artifacts", required=True, help="folder for the screenshot")
    args = ap.parse_args()
    os.makedirs(args.artifacts, exist_ok=True)

    def body(lcc, site, work):
        fetch_site(lcc, site, work)
        check_status_cli(lcc)
        check_metrics(lcc)
        sitemap = set_failing_sitemap(lcc, site)
        check_page(lcc, site, sitemap, args.artifacts)
        check_botm_sweep(lcc)
        lcc.stop()
    run_with_site_and_node(args, "operator", body)

if __name__ == "__main__":
    main()
