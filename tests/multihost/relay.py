#!/usr/bin/env python3
"""A TCP relay that adds latency and loss between two hosts of the bed (issue 27 §4).

`tc netem` does not exist on these machines, so a host that should be "far" or "lossy"
is reached through this relay: it listens on --listen, connects each accepted client
to --target, and forwards both ways. Every chunk it reads is written --delay-ms later
(a latency, not a bandwidth cap: chunks in flight overlap, order is kept); with
probability --drop a chunk is dropped and the connection closed on both sides (TCP
cannot lose a chunk and go on: what a lossy path does to a TCP peer is a stall and a
reset, which is what the relay shows). --seed makes the drops repeatable.

Bounded: at most --max-conns connections in all, the relay exits after --lifetime
seconds, each connection ends after --lifetime too, and a chunk is at most 64 KiB.
It prints `relay listening on HOST:PORT` once it accepts, and one line per drop.
"""
import argparse
import asyncio
import random
import socket
import sys
import time

CHUNK = 65536


def parse_addr(text):
    host, _, port = text.rpartition(":")
    return host, int(port)


class Relay:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.accepted = 0
        self.deadline = time.monotonic() + args.lifetime

    def remaining(self):
        return max(0.0, self.deadline - time.monotonic())

    async def pump(self, reader, writer, label, closer):
        """reader -> writer, each chunk written delay later; a drop closes both sides."""
        delay = self.args.delay_ms / 1000.0
        queue = asyncio.Queue(maxsize=256)

        async def read_side():
            while True:
                data = await reader.read(CHUNK)
                if not data:
                    await queue.put(None)
                    return
                if self.args.drop > 0 and self.rng.random() < self.args.drop:
                    print(f"relay: dropped {len(data)} bytes {label}; closing", flush=True)
                    await queue.put(False)
                    return
                await queue.put((time.monotonic() + delay, data))

        async def write_side():
            while True:
                item = await queue.get()
                if item is None:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                if item is False:
                    closer()
                    return
                due, data = item
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()

        await asyncio.gather(read_side(), write_side())

    async def handle(self, c_reader, c_writer):
        self.accepted += 1
        if self.accepted > self.args.max_conns:
            c_writer.close()
            return
        try:
            t_reader, t_writer = await asyncio.wait_for(
                asyncio.open_connection(*parse_addr(self.args.target)), timeout=5)
        except (OSError, asyncio.TimeoutError) as e:
            print(f"relay: cannot reach {self.args.target}: {e!r}", flush=True)
            c_writer.close()
            return

        for w in (c_writer, t_writer):  # the relay's own delay only: no Nagle / delayed-ACK stalls
            sock = w.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def close_both():
            for w in (c_writer, t_writer):
                try:
                    w.transport.abort()
                except Exception:  # noqa: BLE001 - already closed
                    pass

        try:
            await asyncio.wait_for(asyncio.gather(
                self.pump(c_reader, t_writer, "client->target", close_both),
                self.pump(t_reader, c_writer, "target->client", close_both)), timeout=self.remaining())
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            close_both()

    async def serve(self):
        host, port = parse_addr(self.args.listen)
        server = await asyncio.start_server(self.handle, host, port, reuse_address=True)
        print(f"relay listening on {host}:{port}", flush=True)
        async with server:
            await asyncio.sleep(self.remaining())
        print("relay: lifetime over", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", required=True, help="HOST:PORT to accept on")
    ap.add_argument("--target", required=True, help="HOST:PORT to forward to")
    ap.add_argument("--delay-ms", type=float, default=0.0, help="added one-way delay per chunk")
    ap.add_argument("--drop", type=float, default=0.0, help="probability that a chunk is dropped (0..1)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lifetime", type=float, default=120.0, help="seconds before the relay exits")
    ap.add_argument("--max-conns", type=int, default=1000)
    args = ap.parse_args()
    if not (0.0 <= args.drop <= 1.0) or not (0 <= args.delay_ms <= 60000) or args.lifetime <= 0:
        ap.error("--drop must be in 0..1, --delay-ms in 0..60000, --lifetime > 0")
    try:
        asyncio.run(Relay(args).serve())
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
