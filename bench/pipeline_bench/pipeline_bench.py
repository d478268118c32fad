#!/usr/bin/env python3
"""The whole path of a provider's URL, against curl in the same run (issue 13).

A local nginx serves PROVIDERS folders of FILES files of 10 KiB. Each folder is one
provider of an all-roles lccd on storage-kyoto (`lcc provider add --prefix`); its set is
made by `lcc cp scan` beforehand. Timed: PROVIDERS concurrent `lcc cp send`, started
beforehand and waiting to read their sets from pipes (as CPs on their own machines would
be), from the moment the sets are written until the QM has stored every URL (`/status`
qm.fetched). The path: UNS, QM journal
and dispatch, BOT-M, robot, fetch-curl, content file, LCC DB.

Baseline, in the same run: `curl --parallel --parallel-max 64` fetching the same URLs into
one file each, on the same file system. The ratio is lcc files/s over curl files/s
(>= 1.0 is the goal). lccd's peak RSS (VmHWM), CPU seconds and CPU per URL are printed.

--links (issue 28): how the QM and the BOT-M of the one lccd link, node.in_process_links:
`in-process`, `tcp` (XML over loopback, as between machines), or `both` (the default:
each run times curl, then lcc over TCP, then lcc in process, so the two forms are
compared in the same run). Over TCP (issue 28, compact frames): `tcp-xml` is TCP with
node.link_frames: false, `frames` runs tcp-xml then tcp (frames, the build's default) in
each run, and `--before BIN_DIR` adds a TCP run of another build (its plugins beside its
bin/), e.g. main's, in the same run.

    python3 bench/pipeline_bench/pipeline_bench.py --bin build/bin --plugins build/plugins \
        [--providers 64] [--files 313] [--runs 3] [--slots 64] [--robots 1] [--head 16KiB] [--perf FILE] [--keep]
        [--links both|in-process|tcp|tcp-xml|frames] [--before /work/main/build/bin]

--perf FILE records lccd (perf record -g) during the last lcc run.
Results go to docs/benchmarks.md ("pipeline_bench").
"""
import argparse
import copy
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e"))
from pipeline_test import Node, free_port, wait_for  # noqa: E402

FILE_SIZE = 10240


def make_site(root, providers, files):
    body = b"x" * FILE_SIZE
    for p in range(providers):
        d = os.path.join(root, f"p{p:02d}")
        os.makedirs(d)
        for f in range(files):
            head = f"<html>{p}-{f}</html>\n".encode()
            with open(os.path.join(d, f"f{f:04d}.html"), "wb") as out:
                out.write((head + body)[:FILE_SIZE])


def start_nginx(work, root, port):
    conf_dir = os.path.join(work, "nginx")
    os.makedirs(os.path.join(conf_dir, "logs"))
    conf = os.path.join(conf_dir, "nginx.conf")
    temps = "".join(f"  {k}_temp_path {conf_dir}/{k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    with open(conf, "w") as f:
        f.write(f"""worker_processes 1;
daemon off;
pid {conf_dir}/nginx.pid;
error_log {conf_dir}/logs/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  sendfile on;
  open_file_cache max=500;
  keepalive_requests 1000000;
  types {{ text/html html; }}
{temps}  server {{ listen 127.0.0.1:{port}; root {root}; }}
}}
""")
    proc = subprocess.Popen(["nginx", "-p", conf_dir, "-c", conf, "-e", f"{conf_dir}/logs/error.log"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def up():
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    wait_for("nginx", up, timeout=10)
    return proc


def run_curl(work, urls, out_dir, parallel):
    cfg = os.path.join(work, "curl.cfg")
    with open(cfg, "w") as f:
        for i, u in enumerate(urls):
            f.write(f'url = "{u}"\noutput = "{out_dir}/{i // 1000:03d}/{i}"\n')
    t0 = time.monotonic()
    subprocess.run(["curl", "-s", "--no-progress-meter", "--parallel", "--parallel-max", str(parallel),
                    "--create-dirs", "-K", cfg], check=True, timeout=600)
    seconds = time.monotonic() - t0
    got = sum(len(fs) for _, _, fs in os.walk(out_dir))
    assert got == len(urls), f"curl wrote {got} of {len(urls)} files"
    return seconds


def proc_stat(pid):
    with open(f"/proc/{pid}/status") as f:
        hwm = int(re.search(r"VmHWM:\s+(\d+) kB", f.read()).group(1))
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return hwm, cpu


def thread_cpu(pid):
    """lccd's CPU seconds per thread name (comm), from /proc/PID/task/*/stat."""
    by_name = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                text = f.read()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        by_name[name] = by_name.get(name, 0.0) + cpu
    return by_name


def reading_stdin(pid):
    """True when the process waits in read(0, ...) (its first syscall field is 0, fd 0)."""
    try:
        with open(f"/proc/{pid}/syscall") as f:
            fields = f.read().split()
    except OSError:
        return False
    return len(fields) > 1 and fields[0] == "0" and int(fields[1], 16) == 0


def run_lcc(args, work, site_root, web_port, providers, total, perf, links):
    # The providers stand for sites on as many hosts; here they share one web server,
    # whose host would otherwise allow one fetch at a time (qm.host_inflight).
    args = copy.copy(args)
    args.in_process_links = "true" if links == "in-process" else "false"
    args.link_frames = "false" if links == "tcp-xml" else None
    if links == "tcp-before":
        args.bin = args.before
        args.plugins = os.path.join(os.path.dirname(args.before), "plugins")
    node = Node(args, work, extra=f"""bot:
  robots: {args.robots}
  slots: {args.slots}
  max_response_head: {args.head}
qm:
  host_inflight: {max(1, min(providers, 1000))}
""")
    node.start()
    sends = []
    for p in range(providers):
        base = f"http://127.0.0.1:{web_port}/p{p:02d}/"
        out = node.lcc("provider", "add", "--prefix", base).stdout.decode()
        pid, password = re.fullmatch(r"id=(\d+) password=(\S+)\n", out).groups()
        scan = node.lcc("cp", "scan", os.path.join(site_root, f"p{p:02d}"), "--base-url", base).stdout
        set_file = os.path.join(node.work, f"set{p}.xml")
        with open(set_file, "wb") as f:
            f.write(scan)
        sends.append([os.path.join(node.bin, "lcc"), "cp", "send", "--uns", f"127.0.0.1:{node.ports['uns']}",
                      "--id", pid, "--password", password, "--full", set_file])
    # The 64 CPs stand for 64 machines: each `lcc cp send` is started before the clock
    # and waits reading its set from a pipe, which the harness fills at t0; timed from
    # there: its connection, init, set, and every URL's way to the LCC DB. Started inside
    # the timed window (as before 2026-11-29), the harness's serial forks and 64 process
    # starts (about 7.5 ms of CPU each, mostly the dynamic loader with libcurl's
    # dependencies; curl's own start costs the same, once) took 0.5-1 s of the two
    # cores' time: no work of the LCC's, and no part of a URL's path.
    procs = [subprocess.Popen(cmd[:-1] + ["-"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) for cmd in sends]
    wait_for("every sender reading its set", lambda: all(reading_stdin(p.pid) for p in procs), timeout=60)
    perf_proc = None
    if perf:
        perf_proc = subprocess.Popen(["perf", "record", "-g", "-F", "999", "-o", perf, "-p", str(node.proc.pid)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    for p, cmd in zip(procs, sends):
        with open(cmd[-1], "rb") as f:
            p.stdin.write(f.read())
        p.stdin.close()
    for p in procs:
        p.wait(timeout=600)
        assert p.returncode == 0, f"lcc cp send failed: {p.stderr.read().decode()}"
        p.stderr.close()
    accepted = time.monotonic() - t0
    wait_for("every URL stored", lambda: node.status()["qm"]["fetched"] >= total, timeout=900)
    seconds = time.monotonic() - t0
    if perf_proc:
        perf_proc.send_signal(2)
        perf_proc.wait()
    hwm, cpu = proc_stat(node.proc.pid)
    threads = thread_cpu(node.proc.pid)
    print("  lccd threads, share of a core over the run: " +
          ", ".join(f"{n} {c / seconds:.2f}" for n, c in sorted(threads.items(), key=lambda kv: -kv[1]) if c > 0),
          flush=True)
    errors = node.status()["qm"]["fetch_errors"]
    node.stop()
    return seconds, accepted, hwm, cpu, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--plugins", default="build/plugins")
    ap.add_argument("--providers", type=int, default=64)
    ap.add_argument("--files", type=int, default=313)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--robots", type=int, default=1)
    ap.add_argument("--slots", type=int, default=64)
    ap.add_argument("--curl-parallel", type=int, default=64)
    ap.add_argument("--head", default="16KiB", help="bot.max_response_head (0: no response-head side files)")
    ap.add_argument("--perf", default="")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder (lccd logs) and print it")
    ap.add_argument("--links", default="both", choices=("both", "in-process", "tcp", "tcp-xml", "frames"),
                    help="node.in_process_links of the lccd; both: one lcc run of each per run; tcp-xml: TCP "
                         "with node.link_frames false; frames: tcp-xml and tcp per run")
    ap.add_argument("--before", default="", help="a bin/ folder of another build, timed over TCP in each run too")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    args.plugins = os.path.abspath(args.plugins)
    for tool in ("nginx", "curl"):
        if shutil.which(tool) is None:
            sys.exit(f"pipeline_bench: needs {tool}")
    work = tempfile.mkdtemp(prefix="lcc-pipeline-bench-")
    os.chmod(work, 0o755)
    nginx = None
    try:
        site = os.path.join(work, "www")
        make_site(site, args.providers, args.files)
        web_port = free_port()
        nginx = start_nginx(work, site, web_port)
        urls = [f"http://127.0.0.1:{web_port}/p{p:02d}/f{f:04d}.html"
                for f in range(args.files) for p in range(args.providers)]
        total = len(urls)
        forms = {"both": ["tcp", "in-process"], "frames": ["tcp-xml", "tcp"]}.get(args.links, [args.links])
        if args.before:
            args.before = os.path.abspath(args.before)
            forms.insert(0, "tcp-before")
        curl_rates = []
        by_form = {f: {"ratios": [], "rates": [], "cpu_us": []} for f in forms}
        for run in range(1, args.runs + 1):
            out = os.path.join(work, f"curl-{run}")
            # Nothing is deleted until every run is done: on ext4 without a journal each
            # file creation skips the inodes freed in the last minutes, so whichever side
            # ran right after the other's deletions paid for them (curl 749 files/s one
            # run, 7,879 the next, on this machine).
            cs = run_curl(work, urls, out, args.curl_parallel)
            curl_rates.append(total / cs)
            print(f"run {run}: curl {total} files {cs:.2f} s ({total / cs:.0f}/s); load {os.getloadavg()[0]:.2f}",
                  flush=True)
            for form in forms:
                perf = args.perf if run == args.runs and form == forms[-1] else ""
                ls, acc, hwm, cpu, errors = run_lcc(args, os.path.join(work, f"lcc-{run}-{form}"), site, web_port,
                                                    args.providers, total, perf, form)
                r = by_form[form]
                r["rates"].append(total / ls)
                r["ratios"].append(cs / ls)
                r["cpu_us"].append(cpu / total * 1e6)
                print(f"run {run}: lcc links {form}: {ls:.2f} s ({total / ls:.0f}/s, all sets accepted after "
                      f"{acc:.2f} s, fetch errors {errors}, lccd VmHWM {hwm / 1024:.1f} MB, CPU {cpu:.2f} s = "
                      f"{cpu / total * 1e6:.0f} us per URL); ratio {cs / ls:.2f}; load {os.getloadavg()[0]:.2f}",
                      flush=True)
        print(f"median: curl --parallel-max {args.curl_parallel} {statistics.median(curl_rates):.0f} files/s")
        for form in forms:
            r = by_form[form]
            print(f"median: lcc links {form} ({args.providers} providers, robots={args.robots} x slots={args.slots}) "
                  f"{statistics.median(r['rates']):.0f} files/s, ratio {statistics.median(r['ratios']):.2f}, "
                  f"lccd CPU {statistics.median(r['cpu_us']):.0f} us per URL")
    finally:
        if nginx:
            nginx.terminate()
            nginx.wait()
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
