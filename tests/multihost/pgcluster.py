#!/usr/bin/env python3
"""etcd + Patroni + PostgreSQL 15 on hosts of the bed (issue 27 §4), and a plain
PostgreSQL 15 per host without them (PgServer, for scenarios whose hosts each hold a
database of their own).

One etcd (Debian `etcd-server`, /usr/bin/etcd, v3 API) on its host, and one Patroni
3.0.2 (/usr/bin/patroni) per database host, each running PostgreSQL 15
(/usr/lib/postgresql/15/bin) with `synchronous_mode: true`: a commit returns once the
sync standby has it. PostgreSQL refuses to run as root, so Patroni runs as the user
`postgres` (the data folders are chowned to it). Every address is a bed address;
each server listens on its host's address only, and trusts the bed's /24 (a test
cluster: no password).

Timing (ttl 12 s, loop_wait 2 s, retry_timeout 5 s): a leader cut off from etcd
loses its lock within about 12 s and the sync standby takes over.

Run alone, `pgcluster.py` starts the cluster in a bed, prints the leader, cuts it,
prints the new leader and tears everything down: a check of this file by hand.
"""
import json
import os
import pwd
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bed as bedlib  # noqa: E402

PG_BIN = os.environ.get("LCC_MULTIHOST_PG_BIN", "/usr/lib/postgresql/15/bin")
ETCD = "/usr/bin/etcd"
PATRONI = "/usr/bin/patroni"
SCOPE = "lccmh"
TTL, LOOP_WAIT, RETRY_TIMEOUT = 12, 2, 5


def missing():
    """Why the cluster cannot run here (one line), or None."""
    for path in (ETCD, PATRONI):
        if not os.access(path, os.X_OK):
            return f"{path} missing (apt install etcd-server patroni postgresql-15)"
    return missing_postgres()


def missing_postgres():
    """Why a plain PostgreSQL 15 (PgServer) cannot run here (one line), or None."""
    for path in (os.path.join(PG_BIN, "postgres"), os.path.join(PG_BIN, "initdb")):
        if not os.access(path, os.X_OK):
            return f"{path} missing (apt install postgresql-15)"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "no user postgres (apt install postgresql-15 makes it)"
    return None


class PgServer:
    """One plain PostgreSQL 15 on one bed host, no Patroni: initdb and postgres as the
    user `postgres`, data in `<bed>/pg/<host>/data`, listening on the host's address
    only, trust for the bed's /24 only (and the unix socket in `<bed>/pg/<host>/`, mode
    0700). What a scenario needs when each host has a database of its own (a shard) and
    none fails over. fsync=False: commits are not flushed (nothing here outlives the
    bed, and a test that does not cut the server is spared the disk's waits on a busy
    machine). start() returns once it answers."""

    def __init__(self, bed, host, fsync=True):
        self.bed, self.host, self.fsync = bed, host, fsync
        self.dir = os.path.join(bed.workdir, "pg", host.name)
        self.data = os.path.join(self.dir, "data")
        self.proc = None

    def initdb(self, timeout=120):
        """Makes the data folder (slow: run the servers' initdb at once, in threads); 1 MiB WAL
        segments, so that a server takes a few MB of the bed's folder, not 16 for its first."""
        os.makedirs(os.path.dirname(self.dir), exist_ok=True)
        os.chmod(os.path.dirname(self.dir), 0o755)
        os.makedirs(self.dir)
        os.chown(self.dir, pwd.getpwnam("postgres").pw_uid, -1)
        self.host.run([os.path.join(PG_BIN, "initdb"), "-D", self.data, "-E", "UTF8", "--no-locale", "--no-sync",
                       "--auth=trust", "-U", "postgres", "--wal-segsize=1"], user="postgres", timeout=timeout)
        with open(os.path.join(self.data, "pg_hba.conf"), "w") as f:
            f.write(f"local all all trust\nhost all all {bedlib.NETWORK} trust\n")

    def start(self, timeout=60):
        self.proc = self.host.spawn("postgres", [
            os.path.join(PG_BIN, "postgres"), "-D", self.data, "-c", f"listen_addresses={self.host.addr}",
            "-c", f"unix_socket_directories={self.dir}", "-c", "unix_socket_permissions=0700",
            "-c", "max_connections=100", "-c", "shared_buffers=32MB", "-c", f"fsync={'on' if self.fsync else 'off'}"],
            user="postgres", cwd=self.dir)

        def ready():
            if not self.proc.alive():
                raise AssertionError(f"postgres on {self.host.name} exited:\n{self.proc.log_tail()}")
            return self.host.run([os.path.join(PG_BIN, "pg_isready"), "-q", "-h", self.host.addr, "-U", "postgres",
                                  "-t", "2"],
                                 check=False, timeout=10).returncode == 0
        bedlib.wait_until(f"postgres on {self.host.name}", ready, timeout=timeout, interval=0.2)

    def conninfo(self, dbname="postgres"):
        return f"host={self.host.addr} port=5432 user=postgres dbname={dbname} connect_timeout=3"


def patroni_yaml(host, etcd_addr, data, pgpass):
    return f"""scope: {SCOPE}
name: {host.name}
log:
  level: INFO
restapi:
  listen: {host.addr}:8008
  connect_address: {host.addr}:8008
etcd3:
  hosts: {etcd_addr}:2379
bootstrap:
  dcs:
    ttl: {TTL}
    loop_wait: {LOOP_WAIT}
    retry_timeout: {RETRY_TIMEOUT}
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: false
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: "on"
        max_wal_senders: 5
        max_replication_slots: 5
        max_connections: 100
        shared_buffers: 32MB
        fsync: "on"
  initdb:
    - encoding: UTF8
    - no-locale
    - no-sync
    - auth: trust
  pg_hba:
    - local all all trust
    - host replication replicator {bedlib.NETWORK} trust
    - host all all {bedlib.NETWORK} trust
postgresql:
  listen: {host.addr}:5432
  connect_address: {host.addr}:5432
  data_dir: {data}
  bin_dir: {PG_BIN}
  pgpass: {pgpass}
  authentication:
    replication:
      username: replicator
      password: replicator
    superuser:
      username: postgres
      password: postgres
  parameters:
    unix_socket_directories: {os.path.dirname(data)}
    unix_socket_permissions: '0700'  # the owner (postgres) and root only, not every local user
tags:
  nofailover: false
  noloadbalance: false
"""


class PgCluster:
    def __init__(self, bed, etcd_host, db_hosts):
        self.bed, self.etcd_host, self.db_hosts = bed, etcd_host, list(db_hosts)
        self.dir = os.path.join(bed.workdir, "pg")
        self.etcd = None
        self.patroni = {}

    @classmethod
    def in_bed(cls, bed, addr):
        """The cluster on new hosts etcd, db1 and db2 of `bed`, at addr[name]."""
        return cls(bed, bed.add_host("etcd", addr["etcd"]), [bed.add_host(n, addr[n]) for n in ("db1", "db2")])

    def start(self, timeout=60):
        os.makedirs(self.dir, exist_ok=True)
        os.chmod(self.dir, 0o755)
        e = self.etcd_host
        self.etcd = e.spawn("etcd", [
            ETCD, "--name", "etcd", "--data-dir", os.path.join(self.dir, "etcd"),
            "--listen-client-urls", f"http://{e.addr}:2379", "--advertise-client-urls", f"http://{e.addr}:2379",
            "--listen-peer-urls", f"http://{e.addr}:2380", "--initial-advertise-peer-urls", f"http://{e.addr}:2380",
            "--initial-cluster", f"etcd=http://{e.addr}:2380", "--listen-metrics-urls", f"http://{e.addr}:2381"])
        bedlib.wait_until("etcd healthy", lambda: self.etcd.alive() and
                          e.http_get(f"http://{e.addr}:2379/health")[0] == 200, timeout=20)
        uid = pwd.getpwnam("postgres").pw_uid
        for h in self.db_hosts:  # started together: one bootstraps (etcd's initialize key), the others clone
            d = os.path.join(self.dir, h.name)
            os.makedirs(d)
            os.chown(d, uid, -1)
            cfg = os.path.join(d, "patroni.yml")
            with open(cfg, "w") as f:
                f.write(patroni_yaml(h, e.addr, os.path.join(d, "data"), os.path.join(d, "pgpass")))
            self.patroni[h.name] = h.spawn("patroni", [PATRONI, cfg], user="postgres", cwd=d)
        self.wait_leader(timeout)
        self.wait_sync_standby(timeout)

    def member_role(self, h):
        """Patroni's view of itself on host h: 'primary', 'replica', ... or None."""
        code, body = h.http_get(f"http://{h.addr}:8008/patroni", timeout=2)
        if code not in (200, 503) or not body:
            return None
        return json.loads(body).get("role")

    def leader(self, among=None):
        """The host whose /leader answers 200 (Patroni holds the lock and runs a primary)."""
        for h in among or self.db_hosts:
            if h.http_get(f"http://{h.addr}:8008/leader", timeout=2)[0] == 200:
                return h
        return None

    def wait_leader(self, timeout, among=None, not_host=None):
        def found():
            h = self.leader(among)
            return h if h is not None and h is not not_host else None
        return bedlib.wait_until("a Patroni leader", found, timeout=timeout, interval=0.3)

    def wait_sync_standby(self, timeout):
        def ready():
            leader = self.leader()
            if leader is None:
                return None
            code, body = leader.http_get(f"http://{leader.addr}:8008/cluster", timeout=2)
            members = json.loads(body).get("members", []) if code == 200 else []
            return any(m.get("role") == "sync_standby" and m.get("state") in ("streaming", "running")
                       for m in members)
        bedlib.wait_until("a streaming sync standby", ready, timeout=timeout, interval=0.3)

    def conninfo(self, dbname="postgres"):
        hosts = ",".join(h.addr for h in self.db_hosts)
        return f"host={hosts} port=5432 user=postgres dbname={dbname} connect_timeout=3 target_session_attrs=read-write"

    def psql(self, host, sql, timeout=15, conninfo=None):
        """psql run on `host`, against the cluster's read-write node; returns stdout."""
        r = host.run(["psql", "-X", "-A", "-t", "-q", conninfo or self.conninfo(), "-c", sql],
                     timeout=timeout, check=False)
        if r.returncode != 0:
            raise AssertionError(f"psql on {host.name}: {r.stderr.decode().strip()}")
        return r.stdout.decode().strip()


def main():
    """By hand: start, cut the leader, see the new one; everything torn down."""
    bedlib.require_namespaces()
    why = missing()
    if why:
        print("skipped:", why)
        sys.exit(bedlib.SKIP)
    with bedlib.Bed() as bed:
        try:
            cl = PgCluster(bed, bed.add_host("etcd", "10.231.0.10"),
                           [bed.add_host("db1", "10.231.0.21"), bed.add_host("db2", "10.231.0.22")])
            t0 = time.monotonic()
            cl.start()
            old = cl.leader()
            print(f"leader {old.name} after {time.monotonic() - t0:.1f} s")
            client = bed.add_host("client", "10.231.0.30")
            cl.psql(client, "CREATE TABLE t (x int); INSERT INTO t VALUES (1)")
            old.cut()
            t1 = time.monotonic()
            new = cl.wait_leader(60, not_host=old)
            print(f"new leader {new.name} {time.monotonic() - t1:.1f} s after the cut")
            print("rows:", cl.psql(client, "SELECT count(*) FROM t"))
        except BaseException:
            bed.dump_logs()
            raise
    shutil.rmtree(bed.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
