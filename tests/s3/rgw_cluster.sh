#!/bin/bash
# rgw_cluster.sh start DIR MON_PORT RGW_PORT ACCESS SECRET | stop DIR
# A throw-away single-node Ceph cluster for the S3 tests (issue 31 §1): one monitor,
# one memstore OSD, one RADOS Gateway; auth none, everything on 127.0.0.1 only.
# RGW_MEMSTORE_BYTES sets the OSD's memory store (default 128 MiB; the bench takes more).
# RGW_ADDR is the address the gateway listens on (default 127.0.0.1; the multi-host bed
# gives a host's address, tests/multihost/s3_host_loss_test.py); the monitor and the OSD
# stay on 127.0.0.1.
# "start" returns once the gateway answers HTTP and the S3 user exists; "stop" kills
# the daemons whose pid files are in DIR (only those) and removes DIR.
set -u
cmd=$1; dir=$2
stop() {
  for p in "$dir"/*.pid; do
    [ -f "$p" ] || continue
    pid=$(cat "$p"); [ -n "$pid" ] && kill "$pid" 2>/dev/null
  done
  for p in "$dir"/*.pid; do
    [ -f "$p" ] || continue
    pid=$(cat "$p")
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  rm -rf "$dir"
}
if [ "$cmd" = stop ]; then stop; exit 0; fi
mon_port=$3; rgw_port=$4; access=$5; secret=$6
rgw_addr=${RGW_ADDR:-127.0.0.1}
[ -d "$dir" ] && stop  # a cluster a killed run left behind
mkdir -p "$dir/mon" "$dir/osd" "$dir/run" "$dir/log"
conf=$dir/ceph.conf
fsid=$(cat /proc/sys/kernel/random/uuid)
cat > "$conf" <<CONF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$mon_port
public addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
ms bind ipv6 = false
run dir = $dir/run
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
pid file = $dir/\$name.pid
osd objectstore = memstore
memstore device bytes = ${RGW_MEMSTORE_BYTES:-134217728}
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
mon data avail warn = 1
mon data avail crit = 0
mon max pg per osd = 1000
osd max object name len = 256
osd max object namespace len = 64
osd data = $dir/osd
mon data = $dir/mon
rgw frontends = beast endpoint=$rgw_addr:$rgw_port
rgw dns name = localhost
rgw enable usage log = false
rgw data = $dir/rgw
rgw thread pool size = 32
CONF
c="--conf $conf"
log() { echo "rgw_cluster: $*" >&2; tail -n 5 "$dir"/log/*.log >&2 2>/dev/null; stop; }
monmaptool --create --clobber --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$dir/monmap" >/dev/null || { log monmaptool failed; exit 1; }
ceph-mon $c --mkfs -i a --monmap "$dir/monmap" >"$dir/log/mkfs-mon.out" 2>&1 || { log "mon mkfs failed"; exit 1; }
ceph-mon $c -i a || { log "mon start failed"; exit 1; }
for _ in $(seq 100); do ceph $c --connect-timeout 2 mon stat >/dev/null 2>&1 && break; sleep 0.2; done
ceph $c osd create >/dev/null 2>&1 || { log "osd create failed"; exit 1; }
ceph-osd $c -i 0 --mkfs >"$dir/log/mkfs-osd.out" 2>&1 || { log "osd mkfs failed"; exit 1; }
ceph-osd $c -i 0 || { log "osd start failed"; exit 1; }
ceph $c osd crush add osd.0 1.0 host=localhost root=default >/dev/null 2>&1
for _ in $(seq 150); do ceph $c osd stat 2>/dev/null | grep -q "1 up" && break; sleep 0.2; done
radosgw $c -n client.rgw || { log "radosgw start failed"; exit 1; }
for _ in $(seq 300); do curl -s -o /dev/null "http://$rgw_addr:$rgw_port/" && break; sleep 0.2; done
curl -s -o /dev/null "http://$rgw_addr:$rgw_port/" || { log "radosgw does not answer"; exit 1; }
radosgw-admin $c -n client.admin user create --uid=lcctest --display-name=lcctest \
  --access-key="$access" --secret-key="$secret" >"$dir/log/user.out" 2>&1 || { log "user create failed"; exit 1; }
exit 0
