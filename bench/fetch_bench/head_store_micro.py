#!/usr/bin/env python3
"""Per-file cost of the ways a robot can keep a response head (issue 13), without lccd.

For N files in the content folder's fan-out (256 per leaf folder): a side file
(open/create + write + close of <file>.http: a new inode), setxattr of the same bytes
(user.lcc.response-head), getxattr, an unlink of an absent name (what the BOT-M's
delete and the old robot's head-less fetch pay) and of a side file. Python's own loop
and call overhead (about 1 us) is in every figure. Results: docs/benchmarks.md
(fetch_bench, "Response heads as attributes").

    python3 bench/fetch_bench/head_store_micro.py /tmp       # ext4 here
    python3 bench/fetch_bench/head_store_micro.py /dev/shm   # tmpfs
"""
import os, sys, time, tempfile
base = sys.argv[1]; N = 20000
head = b"lcc-head 1 " + b"0"*32 + b"\n" + b"HTTP/1.1 200 OK\r\n" + b"X-Header: value\r\n"*30 + b"\r\n"
def paths(d):
    out=[]
    for i in range(N):
        sub = os.path.join(d, "%02x" % (i // 256 // 256 % 256), "%02x" % (i // 256 % 256))
        out.append(os.path.join(sub, "%x" % i))
    return out
def run(label, fn, ps):
    t0=time.perf_counter(); c0=time.process_time()
    for p in ps: fn(p)
    t1=time.perf_counter(); c1=time.process_time()
    print(f"{base}: {label}: {(t1-t0)/len(ps)*1e6:.2f} us wall, {(c1-c0)/len(ps)*1e6:.2f} us CPU per file")
for rep in range(2):
    d = tempfile.mkdtemp(dir=base, prefix="lcc-heads-micro-")
    ps = paths(d)
    for p in ps:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f: f.write(b"x"*10240)
    def side(p):
        fd=os.open(p+".http", os.O_WRONLY|os.O_CREAT|os.O_TRUNC|os.O_CLOEXEC, 0o644); os.write(fd, head); os.close(fd)
    def attr(p): os.setxattr(p, "user.lcc.response-head", head)
    def noop(p): pass
    def unlink_absent(p):
        try: os.unlink(p+".nohead")
        except FileNotFoundError: pass
    def unlink_side(p): os.unlink(p+".http")
    def getattr_(p): os.getxattr(p, "user.lcc.response-head")
    run("python loop alone", noop, ps)
    run("side file: open+write+close (new inode)", side, ps)
    run("setxattr (%d B)" % len(head), attr, ps)
    run("getxattr", getattr_, ps)
    run("unlink of an absent name", unlink_absent, ps)
    run("unlink of a side file", unlink_side, ps)
    os.system("rm -rf " + d)
