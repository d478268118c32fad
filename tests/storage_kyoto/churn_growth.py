#!/usr/bin/env python3
"""churn_growth.py - reproduces issue 15 (content.kct grows under churn) on Kyoto alone.

Re-puts a fixed set of rows the way the content store does (an R row and an S+seq
index entry per store, the old S entry removed), with no sync at all, and after every
--scan puts reads the newest seqs through a Kyoto cursor, as exports and mirrors do.
Kyoto 1.2.79's TreeDB cursor writes a changed page when it reads it, and the holes that
page rewrites leave are never merged: with --scan the file grows every round while the
rows stay the same; with --scan 0 nothing is written before close. Prints the logical
size (Kyoto's own) after each round. Bounded: --rounds x --keys puts.

  tests/storage_kyoto/churn_growth.py --scan 40    # grows
  tests/storage_kyoto/churn_growth.py --scan 0     # flat
"""
import argparse, ctypes, os, random, struct, tempfile

kc = ctypes.CDLL("libkyotocabinet.so.16")
P, S = ctypes.c_void_p, ctypes.c_size_t
for name, args, res in [("kcdbnew", [], P), ("kcdbopen", [P, ctypes.c_char_p, ctypes.c_uint32], ctypes.c_int32),
                        ("kcdbclose", [P], ctypes.c_int32), ("kcdbdel", [P], None),
                        ("kcdbset", [P, ctypes.c_char_p, S, ctypes.c_char_p, S], ctypes.c_int32),
                        ("kcdbremove", [P, ctypes.c_char_p, S], ctypes.c_int32),
                        ("kcdbcount", [P], ctypes.c_int64), ("kcdbsize", [P], ctypes.c_int64),
                        ("kcdbcursor", [P], P), ("kccurdel", [P], None),
                        ("kccurjumpkey", [P, ctypes.c_char_p, S], ctypes.c_int32),
                        ("kccurget", [P, ctypes.POINTER(S), ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(S),
                                      ctypes.c_int32], P), ("kcfree", [P], None)]:
    getattr(kc, name).argtypes = args
    getattr(kc, name).restype = res


def scan_from(db, key):
    cur, n = kc.kcdbcursor(db), 0
    if kc.kccurjumpkey(cur, key, len(key)):
        ks, vp, vs = S(), ctypes.c_char_p(), S()
        while n < 1000:
            p = kc.kccurget(cur, ctypes.byref(ks), ctypes.byref(vp), ctypes.byref(vs), 1)
            if not p:
                break
            kc.kcfree(p)
            n += 1
    kc.kccurdel(cur)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=2400)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--scan", type=int, default=40, help="puts between cursor reads (0: no reads)")
    a = ap.parse_args()
    rnd = random.Random(1)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "content.kct")
        db = kc.kcdbnew()
        assert kc.kcdbopen(db, (path + "#msiz=32m#pccap=64m#bnum=31250").encode(), 2 | 4)
        keys = [b"R" + struct.pack(">I", 1 + i % 4) + b"http://127.0.0.1/site/page-%05d.html" % i
                for i in range(a.keys)]
        seq_of, seq = {}, 0
        for r in range(a.rounds):
            for k in rnd.sample(keys, len(keys)):
                seq += 1
                if k in seq_of:
                    old = b"S" + struct.pack(">Q", seq_of[k])
                    kc.kcdbremove(db, old, len(old))
                v = struct.pack(">Q", seq) + bytes(rnd.randrange(256) for _ in range(40 + rnd.randrange(60)))
                kc.kcdbset(db, k, len(k), v, len(v))
                sk = b"S" + struct.pack(">Q", seq)
                kc.kcdbset(db, sk, len(sk), k, len(k))
                seq_of[k] = seq
                if a.scan and seq % a.scan == 0:
                    scan_from(db, b"S" + struct.pack(">Q", seq - a.scan))
            print(f"round {r + 1}: {kc.kcdbcount(db)} records, Kyoto size {kc.kcdbsize(db)} bytes", flush=True)
        kc.kcdbclose(db)
        print(f"after close: file {os.path.getsize(path)} bytes")
        kc.kcdbdel(db)


if __name__ == "__main__":
    main()
