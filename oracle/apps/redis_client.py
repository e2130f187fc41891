#!/usr/bin/env python3
"""The client of oracle/apps/redis.sh: loads and reads a Redis server on a
unix socket, reproducibly, in pipelined batches of 512 commands (bounded:
redis-cli --pipe's reply buffer grew without bound here and took 100 s of
CPU for 300,000 GETs).

  redis_client.py SOCK load KEYS SIZE  SET key:I to SIZE printable bytes
                                       from a PRNG seeded with 1, I in
                                       0..KEYS-1
  redis_client.py SOCK get KEYS N      N GETs of keys drawn uniformly by
                                       x = (69069 x + 1) mod 2^32 (the LCG
                                       of sqlite.sh); every reply checked
"""
import random
import socket
import sys

BATCH = 512


def cmd(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def exchange(s, cmds, reply_len, check):
    s.sendall(b"".join(cmds))
    want = reply_len * len(cmds)
    got = bytearray()
    while len(got) < want:
        chunk = s.recv(want - len(got))
        if not chunk:
            sys.exit("redis_client: the server closed the connection")
        got += chunk
    if not check(bytes(got)):
        sys.exit("redis_client: unexpected reply %r" % bytes(got[:64]))


def load(s, keys, size):
    rng = random.Random(1)
    batch = []
    ok = lambda r: r == b"+OK\r\n" * (len(r) // 5)
    for i in range(keys):
        v = rng.randbytes((size + 1) // 2).hex().encode()[:size]
        batch.append(cmd(b"SET", b"key:%d" % i, v))
        if len(batch) == BATCH:
            exchange(s, batch, 5, ok)
            batch = []
    if batch:
        exchange(s, batch, 5, ok)


def get(s, keys, n, size):
    head = b"$%d\r\n" % size
    each = len(head) + size + 2
    ok = lambda r: all(r[i : i + len(head)] == head for i in range(0, len(r), each))
    x = 1
    batch = []
    for _ in range(n):
        x = (69069 * x + 1) % 4294967296
        batch.append(cmd(b"GET", b"key:%d" % (x % keys)))
        if len(batch) == BATCH:
            exchange(s, batch, each, ok)
            batch = []
    if batch:
        exchange(s, batch, each, ok)


def main():
    if len(sys.argv) < 5 or sys.argv[2] not in ("load", "get"):
        sys.stderr.write(__doc__)
        sys.exit(2)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    a, b = int(sys.argv[3]), int(sys.argv[4])
    if sys.argv[2] == "load":
        load(s, a, b)
    else:
        get(s, a, b, int(sys.argv[5]) if len(sys.argv) > 5 else 300)


if __name__ == "__main__":
    main()
