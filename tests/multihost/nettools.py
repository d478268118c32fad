#!/usr/bin/env python3
"""Small network probes the bed's tests run inside a host (`ip netns exec`), each bounded.

  nettools.py ping ADDR [--count N]      ICMP echo (raw socket, as root); prints the RTTs in ms
  nettools.py connect ADDR PORT          one TCP connect; prints `ok MS` or `errno NAME MS`
  nettools.py echo-server ADDR PORT      echoes every connection (exits after --lifetime s)
  nettools.py rtt ADDR PORT [--count N]  N one-byte round trips on one connection; prints the median ms
  nettools.py sink ADDR PORT             reads and counts bytes until EOF (exits after --lifetime s)
  nettools.py blast ADDR PORT BYTES      sends BYTES bytes, prints the seconds it took
"""
import argparse
import errno
import os
import socket
import statistics
import struct
import sys
import threading
import time


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def ping(addr, count, timeout):
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    sock.settimeout(timeout)
    ident = os.getpid() & 0xFFFF
    rtts = []
    for seq in range(count):
        header = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
        payload = b"lcc-bed"
        packet = struct.pack("!BBHHH", 8, 0, checksum(header + payload), ident, seq) + payload
        start = time.monotonic()
        sock.sendto(packet, (addr, 0))
        end = start + timeout
        while time.monotonic() < end:  # bounded: until this echo's timeout
            try:
                data, src = sock.recvfrom(2048)
            except socket.timeout:
                break
            ihl = (data[0] & 0x0F) * 4
            typ, _, _, rid, rseq = struct.unpack("!BBHHH", data[ihl:ihl + 8])
            if typ == 0 and rid == ident and rseq == seq and src[0] == addr:
                rtts.append((time.monotonic() - start) * 1000)
                break
    print(" ".join(f"{r:.2f}" for r in rtts) if rtts else "no reply")
    return 0 if len(rtts) == count else 1


def connect(addr, port, timeout):
    start = time.monotonic()
    try:
        with socket.create_connection((addr, port), timeout=timeout):
            print(f"ok {(time.monotonic() - start) * 1000:.1f}")
            return 0
    except socket.timeout:
        print(f"errno ETIMEDOUT {(time.monotonic() - start) * 1000:.1f}")
    except OSError as e:
        print(f"errno {errno.errorcode.get(e.errno, e.errno)} {(time.monotonic() - start) * 1000:.1f}")
    return 1


def serve(addr, port, lifetime, handler):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, port))
    srv.listen(64)
    srv.settimeout(0.5)
    print(f"listening on {addr}:{port}", flush=True)
    end = time.monotonic() + lifetime
    while time.monotonic() < end:
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        conn.settimeout(max(1.0, end - time.monotonic()))
        threading.Thread(target=handler, args=(conn,), daemon=True).start()
    return 0


def echo(conn):
    with conn:
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                conn.sendall(data)
        except OSError:
            return


def sink(conn):
    total = 0
    with conn:
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                total += len(data)
            conn.sendall(f"{total}\n".encode())
        except OSError:
            return


def rtt(addr, port, count, timeout):
    with socket.create_connection((addr, port), timeout=timeout) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        times = []
        for _ in range(count):
            start = time.monotonic()
            s.sendall(b"x")
            if s.recv(1) != b"x":
                print("closed")
                return 1
            times.append((time.monotonic() - start) * 1000)
    print(f"{statistics.median(times):.2f}")
    return 0


def blast(addr, port, nbytes, timeout):
    start = time.monotonic()
    with socket.create_connection((addr, port), timeout=timeout) as s:
        chunk = b"b" * 16384
        left = nbytes
        while left > 0:
            n = min(left, len(chunk))
            s.sendall(chunk[:n])
            left -= n
        s.shutdown(socket.SHUT_WR)
        got = s.recv(64).decode().strip()
    took = time.monotonic() - start
    print(f"{took:.3f} {got}")
    return 0 if got == str(nbytes) else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["ping", "connect", "echo-server", "rtt", "sink", "blast"])
    ap.add_argument("addr")
    ap.add_argument("port", nargs="?", type=int, default=0)
    ap.add_argument("nbytes", nargs="?", type=int, default=0)
    ap.add_argument("--count", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=3.0)
    ap.add_argument("--lifetime", type=float, default=60.0)
    a = ap.parse_args()
    if a.what == "ping":
        return ping(a.addr, a.count, a.timeout)
    if a.what == "connect":
        return connect(a.addr, a.port, a.timeout)
    if a.what == "echo-server":
        return serve(a.addr, a.port, a.lifetime, echo)
    if a.what == "sink":
        return serve(a.addr, a.port, a.lifetime, sink)
    if a.what == "rtt":
        return rtt(a.addr, a.port, a.count, a.timeout)
    return blast(a.addr, a.port, a.nbytes, a.timeout)


if __name__ == "__main__":
    sys.exit(main())
