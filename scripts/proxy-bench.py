#!/usr/bin/env python3
"""Benchmark of the one-node proxy against the direct path (docs/daemon.md,
"Benchmark"). Not a test: it prints a table and asserts nothing.

client -- gateway -- server, three network namespaces on veth pairs (no
link emulation). "direct": the gateway forwards; "proxy": `pep proxy run
--install-rules` relays every connection. Measured per mode:

* bulk upload, 1 and 8 streams: Gbit/s, and the daemon's CPU seconds
  (user + system, from /proc/PID/stat) per GB relayed;
* request/response: connect, send 1 byte, get 1 byte back, close; the
  time to the answer, p50 and p99 over sequential exchanges;
* connections/s: 8 workers doing the same back to back.

A quick table next to crates/pep-daemon/examples/bench.rs, which measures
more (an htb bottleneck, socat, the tunnel) but not connections/s, and
needs the examples built too.

Usage (root): scripts/proxy-bench.py [--pep target/release/pep] [--gb 2]
Build first: nice cargo build --release -p pep-cli
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

NS = {"c": f"pb-c-{os.getpid()}", "g": f"pb-g-{os.getpid()}", "s": f"pb-s-{os.getpid()}"}
CLIENT, GW_C, GW_S, SERVER = "10.77.1.2", "10.77.1.1", "10.77.2.1", "10.77.2.2"
SINK, ECHO = 5001, 5002


def sh(*args, ns=None, check=True):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def setup():
    for n in NS.values():
        sh("ip", "netns", "add", n)
        sh("ip", "link", "set", "lo", "up", ns=n)
    sh("ip", "link", "add", "c0", "netns", NS["c"], "type", "veth", "peer", "name", "g0", "netns", NS["g"])
    sh("ip", "link", "add", "g1", "netns", NS["g"], "type", "veth", "peer", "name", "s0", "netns", NS["s"])
    for ns, dev, addr in [("c", "c0", CLIENT), ("g", "g0", GW_C), ("g", "g1", GW_S), ("s", "s0", SERVER)]:
        sh("ip", "addr", "add", f"{addr}/24", "dev", dev, ns=NS[ns])
        sh("ip", "link", "set", dev, "up", ns=NS[ns])
    sh("ip", "route", "add", "default", "via", GW_C, ns=NS["c"])
    sh("ip", "route", "add", "default", "via", GW_S, ns=NS["s"])
    sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=NS["g"])


def teardown():
    for n in NS.values():
        sh("ip", "netns", "del", n, check=False)


# ---- workers, run inside a namespace as `proxy-bench.py worker ...` ----

def serve():
    """Sink on SINK (read to EOF, then close), echo on ECHO (one byte)."""
    def sink(c):
        while c.recv(1 << 20):
            pass
        c.close()

    def echo(c):
        b = c.recv(1)
        if b:
            c.sendall(b)
        c.close()

    def loop(port, f):
        l = socket.socket()
        l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        l.bind((SERVER, port))
        l.listen(4096)
        while True:
            c, _ = l.accept()
            threading.Thread(target=f, args=(c,), daemon=True).start()

    threading.Thread(target=loop, args=(SINK, sink), daemon=True).start()
    print("ready", flush=True)
    loop(ECHO, echo)


def bulk(streams, total):
    per = total // streams
    buf = memoryview(bytearray(1 << 20))

    def one():
        s = socket.create_connection((SERVER, SINK))
        left = per
        while left > 0:
            left -= s.send(buf[: min(left, len(buf))])
        s.shutdown(socket.SHUT_WR)
        s.recv(1)  # the sink's close: everything was read
        s.close()

    t0 = time.perf_counter()
    th = [threading.Thread(target=one) for _ in range(streams)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return {"secs": time.perf_counter() - t0, "bytes": per * streams}


def exchange():
    s = socket.create_connection((SERVER, ECHO))
    s.sendall(b"x")
    s.recv(1)
    s.close()


def rr(count):
    lat = []
    for _ in range(count):
        t0 = time.perf_counter()
        exchange()
        lat.append(time.perf_counter() - t0)
    lat.sort()
    return {"p50": lat[len(lat) // 2], "p99": lat[int(len(lat) * 0.99)]}


def cps(secs, workers):
    done = [0] * workers
    end = time.perf_counter() + secs

    def w(i):
        while time.perf_counter() < end:
            exchange()
            done[i] += 1

    th = [threading.Thread(target=w, args=(i,)) for i in range(workers)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return {"per_sec": sum(done) / secs}


def worker(argv):
    kind = argv[0]
    if kind == "serve":
        serve()
        return
    r = {"bulk": lambda: bulk(int(argv[1]), int(argv[2])),
         "rr": lambda: rr(int(argv[1])),
         "cps": lambda: cps(float(argv[1]), int(argv[2]))}[kind]()
    print(json.dumps(r))


# ---- the orchestration ----

def client(*args):
    out = sh(sys.executable, os.path.abspath(__file__), "worker", *map(str, args), ns=NS["c"])
    return json.loads(out.stdout)


def cpu_secs(pid):
    if pid is None:
        return 0.0
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def measure(gb, pid):
    total = int(gb * 1e9)
    row = {}
    for streams in (1, 8):
        c0 = cpu_secs(pid)
        r = client("bulk", streams, total)
        row[f"gbps{streams}"] = r["bytes"] * 8 / r["secs"] / 1e9
        row[f"cpu{streams}"] = (cpu_secs(pid) - c0) / (r["bytes"] / 1e9)
    row.update(client("rr", 2000))
    row.update(client("cps", 5, 8))
    return row


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        worker(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pep", default="target/release/pep")
    ap.add_argument("--gb", type=float, default=2.0, help="GB per bulk run")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("proxy-bench: needs root (network namespaces)")
    if not os.access(a.pep, os.X_OK):
        sys.exit(f"proxy-bench: no {a.pep}: nice cargo build --release -p pep-cli")
    teardown()
    rows = {}
    try:
        setup()
        server = subprocess.Popen(["ip", "netns", "exec", NS["s"], sys.executable,
                                   os.path.abspath(__file__), "worker", "serve"],
                                  stdout=subprocess.PIPE, text=True)
        server.stdout.readline()
        rows["direct"] = measure(a.gb, None)
        with tempfile.NamedTemporaryFile("w", suffix=".toml") as cfg:
            # 1 MiB: splice's pipes fit the default fs.pipe-max-size (the
            # daemon keeps no CAP_SYS_RESOURCE to exceed it).
            cfg.write(f'[proxy]\nipv6 = false\nbuffer = "1MiB"\n[intercept]\ninterfaces = ["g0"]\nsubnets = ["{CLIENT}/32"]\n')
            cfg.flush()
            pep = subprocess.Popen(["ip", "netns", "exec", NS["g"], a.pep, "proxy", "run", "-c", cfg.name,
                                    "--install-rules", "--upgrade-socket", "none", "--log-level", "warn"])
            time.sleep(1.5)
            if pep.poll() is not None:
                sys.exit("proxy-bench: pep proxy run exited")
            rows["proxy"] = measure(a.gb, pep.pid)
            pep.terminate()
            pep.wait(timeout=60)
        server.kill()
    finally:
        teardown()
    print(f"proxy-bench: {a.gb} GB per bulk run, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print("| | 1 stream Gbit/s | 8 streams Gbit/s | daemon CPU s/GB (1 / 8) | answer p50 ms | p99 ms | connections/s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, r in rows.items():
        cpu = "-" if name == "direct" else f"{r['cpu1']:.2f} / {r['cpu8']:.2f}"
        print(f"| {name} | {r['gbps1']:.2f} | {r['gbps8']:.2f} | {cpu} | {r['p50'] * 1e3:.3f} | "
              f"{r['p99'] * 1e3:.3f} | {r['per_sec']:.0f} |")
    d, p = rows["direct"], rows["proxy"]
    print(f"proxy/direct: throughput {p['gbps1'] / d['gbps1']:.0%} (1), {p['gbps8'] / d['gbps8']:.0%} (8); "
          f"setup added p50 {(p['p50'] - d['p50']) * 1e3:.3f} ms, p99 {(p['p99'] - d['p99']) * 1e3:.3f} ms; "
          f"connections/s {p['per_sec'] / d['per_sec']:.0%}")


if __name__ == "__main__":
    main()
