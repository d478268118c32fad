"""The crash harness's invariants, read from the QM node's stores after a clean stop
(tests/reliability/crash_harness.py). The stores are storage-sqlite files, opened
read-only with Python's sqlite3 (plugins/storage-sqlite/schema.sql):

  - acked:    every URL of a set that got set_accepted is queued (qdb) or stored (lcc)
  - refused:  no URL of a set that got set_rejected, or a URL refused on its own, is there
  - partial:  a set cut off by the kill (no answer) is there whole or not at all
  - stray:    no URL is there that no set named
  - qpsdb:    each (pset, slot) count is the number of its QDB rows, the chain from
              `first` through `next` has that many rows and ends at `last`
  - counters: the stores' own row counters (lcc_store `rows`) match the tables
  - files:    after the orphan sweep, every content file is named by a live record or a
              pending delete (fsmdb), every live record's file exists, and no robot's
              temporary file (`<file>.<pid>-<n>.tmp`) is left
  - stored:   with must_store (botm and robot mode: every URL was fetched before the
              providers were suspended), every URL of an acked set is stored, not only queued
"""
import os
import sqlite3


def key_url(key):
    """The c URL of an encodeUrlKey(): 4 bytes of provider id, c, a NUL, the MIME type."""
    return bytes(key)[4:].split(b"\0", 1)[0].decode()


def open_ro(path):
    if not os.path.exists(path):
        raise AssertionError(f"store {path} is missing")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.execute("PRAGMA query_only=1")
    return db


def store_rows(db):
    row = db.execute("SELECT value FROM lcc_store WHERE name='rows'").fetchone()
    return None if row is None else int(row[0])


def qpsdb_problems(q):
    problems = []
    entries = {bytes(k): (pset, slot, bytes(nxt)) for k, pset, slot, nxt in
               q.execute("SELECT key, pset, slot, next FROM qdb")}
    by_list = {}
    for pset, slot, _ in entries.values():
        by_list[(pset, slot)] = by_list.get((pset, slot), 0) + 1
    lists = list(q.execute("SELECT pset, slot, first, last, count FROM qpsdb"))
    for pset, slot, first, last, count in lists:
        have = by_list.pop((pset, slot), 0)
        if have != count:
            problems.append(f"qpsdb ({pset}, {slot}) says {count} rows, the QDB has {have}")
            continue
        walked, key, end = 0, bytes(first), None
        while key and walked <= count:
            row = entries.get(key)
            if row is None or row[:2] != (pset, slot):
                problems.append(f"qpsdb ({pset}, {slot}): the chain leaves the list after {walked} rows")
                break
            walked, end, key = walked + 1, key, row[2]
        else:
            if walked != count or end != bytes(last):
                problems.append(f"qpsdb ({pset}, {slot}): the chain has {walked} rows of {count}, "
                                f"ends {'at' if end == bytes(last) else 'not at'} last")
    for (pset, slot), n in by_list.items():
        problems.append(f"{n} QDB rows of ({pset}, {slot}) have no qpsdb row")
    return problems


def file_problems(c, q, content_dir):
    live = {f for (f,) in c.execute("SELECT filename FROM lcc WHERE deleted=0")}
    pending = {f for (f,) in q.execute("SELECT filename FROM fsmdb")}
    on_disk = set()
    for d, _, names in os.walk(content_dir):
        for n in names:
            rel = os.path.relpath(os.path.join(d, n), content_dir)
            if not rel.endswith(".http"):
                on_disk.add(rel)
    temp = {f for f in on_disk if f.endswith(".tmp")}
    problems = [f"content file {f} is named by no record and no pending delete (an orphan after the sweep)"
                for f in sorted(on_disk - live - pending - temp)[:10]]
    problems += [f"temporary file {f} was left by a robot (not swept)" for f in sorted(temp)[:10]]
    problems += [f"record's file {f} does not exist" for f in sorted(live - on_disk)[:10]]
    return problems, len(on_disk)


def check_stores(data_dir, content_dir, sets, must_store=False):
    """sets: list of dicts {urls, state: acked|rejected|cut|unsent, refused: set of URLs};
    must_store: every acked URL must be stored (fetched), not only queued.
    Returns (problems, figures)."""
    q = open_ro(os.path.join(data_dir, "queue.sqlite"))
    c = open_ro(os.path.join(data_dir, "content.sqlite"))
    problems = []
    queued = [key_url(k) for (k,) in q.execute("SELECT key FROM qdb WHERE op=0")]
    stored = [key_url(k) for (k,) in c.execute("SELECT key FROM lcc WHERE deleted=0")]
    nothing = q.execute("SELECT count(*) FROM qdb WHERE op<>0").fetchone()[0]
    for name, rows in (("queued", queued), ("stored", stored)):
        if len(set(rows)) != len(rows):
            problems.append(f"{len(rows) - len(set(rows))} URLs {name} twice (two rows)")
    stored_set = set(stored)
    present = set(queued) | stored_set
    named = set()
    figures = {"acked_sets": 0, "acked_urls": 0, "cut_sets": 0, "cut_applied": 0, "rejected_sets": 0}
    for k, s in enumerate(sets):
        urls = [u for u in s["urls"] if u not in s["refused"]]
        named.update(s["urls"])
        there = sum(1 for u in urls if u in present)
        refused_there = sum(1 for u in s["refused"] if u in present)
        if refused_there:
            problems.append(f"set {k} ({s['name']}): {refused_there} URLs refused one by one are there")
        if s["state"] == "acked":
            figures["acked_sets"] += 1
            figures["acked_urls"] += len(urls)
            if there != len(urls):
                problems.append(f"set {k} ({s['name']}) was acked: {len(urls) - there} of {len(urls)} URLs lost")
            elif must_store:
                unfetched = sum(1 for u in urls if u not in stored_set)
                if unfetched:
                    problems.append(f"set {k} ({s['name']}) was acked: {unfetched} of {len(urls)} URLs never fetched")
        elif s["state"] == "rejected":
            figures["rejected_sets"] += 1
            if there:
                problems.append(f"set {k} ({s['name']}) was rejected ({s['why']}): {there} URLs applied")
        elif s["state"] == "cut":
            figures["cut_sets"] += 1
            if there not in (0, len(urls)):
                problems.append(f"set {k} ({s['name']}) was cut off: {there} of {len(urls)} URLs applied (partial)")
            figures["cut_applied"] += there == len(urls) and len(urls) > 0
        elif there:
            problems.append(f"set {k} ({s['name']}) was never sent: {there} URLs there")
    stray = present - named
    if stray:
        problems.append(f"{len(stray)} URLs there that no set named, e.g. {sorted(stray)[0]}")
    if nothing:
        problems.append(f"{nothing} QDB rows with op 'nothing' (no removal was sent)")
    problems += qpsdb_problems(q)
    for name, db, table in (("queue", q, "qdb"), ("content", c, "lcc")):
        rows, real = store_rows(db), db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        if rows is not None and rows != real:
            problems.append(f"{name} store counter rows={rows}, table {table} has {real}")
    fp, n_files = file_problems(c, q, content_dir)
    problems += fp
    both = len(set(queued) & set(stored))
    figures.update(queued=len(queued), stored=len(stored), queued_and_stored=both, files=n_files)
    q.close()
    c.close()
    return problems, figures
