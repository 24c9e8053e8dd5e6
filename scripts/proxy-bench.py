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

The client and server are native: a small C worker (below, built with
`cc` into a temporary directory; the same commands and answers as the
Python workers, which remain the fallback without a compiler, said so
in the output). Python's sockets capped the direct path at a few Gbit/s
and a few thousand connections a second, below what the proxy does.

Before and after: give --pep more than once (`label=path` or a path)
and --rounds N; the binaries are measured alternately (ABAB...), each
run with the direct path just before it and the load average then.

Usage (root): scripts/proxy-bench.py [--pep target/release/pep] [--gb 2] [--rounds 1]
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


NATIVE_C = r"""
/* proxy-bench's native worker: serve | bulk STREAMS BYTES | rr COUNT |
 * cps SECS WORKERS, answering the JSON the Python workers print. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *server;
static int sink_port, echo_port;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int dial(int port) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, server, &a.sin_addr);
    if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) { perror("connect"); exit(1); }
    return s;
}

static void *sink(void *p) {
    int c = (int)(long)p;
    char *b = malloc(1 << 20);
    while (read(c, b, 1 << 20) > 0) {}
    free(b);
    close(c);
    return 0;
}

static void *echo(void *p) {
    int c = (int)(long)p;
    char b;
    if (read(c, &b, 1) == 1 && write(c, &b, 1) != 1) {}
    close(c);
    return 0;
}

struct loop { int port; void *(*f)(void *); };

static void *accept_loop(void *p) {
    struct loop *l = p;
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(l->port)};
    inet_pton(AF_INET, server, &a.sin_addr);
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 4096) < 0) { perror("listen"); exit(1); }
    for (;;) {
        int c = accept(s, 0, 0);
        if (c < 0) continue;
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, 64 << 10);
        if (pthread_create(&t, &at, l->f, (void *)(long)c)) close(c);
        pthread_attr_destroy(&at);
    }
}

static long long per_stream;

static void *bulk_one(void *p) {
    (void)p;
    int s = dial(sink_port);
    char *b = calloc(1, 1 << 20);
    long long left = per_stream;
    while (left > 0) {
        ssize_t k = write(s, b, left < (1 << 20) ? left : (1 << 20));
        if (k <= 0) { perror("write"); exit(1); }
        left -= k;
    }
    shutdown(s, SHUT_WR);
    char c;
    if (read(s, &c, 1) < 0) {} /* the sink's close: everything was read */
    close(s);
    free(b);
    return 0;
}

static void exchange(void) {
    int s = dial(echo_port);
    char c = 'x';
    if (write(s, &c, 1) != 1 || read(s, &c, 1) != 1) { fprintf(stderr, "exchange failed\n"); exit(1); }
    close(s);
}

static double until;
static void *cps_one(void *p) {
    long *n = p;
    while (now() < until) { exchange(); (*n)++; }
    return 0;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 5) return 2;
    server = argv[1]; sink_port = atoi(argv[2]); echo_port = atoi(argv[3]);
    const char *kind = argv[4];
    if (!strcmp(kind, "serve")) {
        static struct loop ls = {0, sink}, le = {0, echo};
        ls.port = sink_port; le.port = echo_port;
        pthread_t t;
        pthread_create(&t, 0, accept_loop, &ls);
        usleep(100000);
        printf("ready\n");
        fflush(stdout);
        accept_loop(&le);
    } else if (!strcmp(kind, "bulk")) {
        int n = atoi(argv[5]);
        per_stream = atoll(argv[6]) / n;
        pthread_t t[64];
        double t0 = now();
        for (int i = 0; i < n && i < 64; i++) pthread_create(&t[i], 0, bulk_one, 0);
        for (int i = 0; i < n && i < 64; i++) pthread_join(t[i], 0);
        printf("{\"secs\": %.6f, \"bytes\": %lld}\n", now() - t0, per_stream * n);
    } else if (!strcmp(kind, "rr")) {
        int n = atoi(argv[5]);
        double *lat = malloc(n * sizeof *lat);
        for (int i = 0; i < n; i++) { double t0 = now(); exchange(); lat[i] = now() - t0; }
        qsort(lat, n, sizeof *lat, cmp);
        printf("{\"p50\": %.9f, \"p99\": %.9f}\n", lat[n / 2], lat[(int)(n * 0.99)]);
    } else if (!strcmp(kind, "cps")) {
        double secs = atof(argv[5]);
        int w = atoi(argv[6]);
        pthread_t t[64];
        long done[64] = {0}, sum = 0;
        until = now() + secs;
        for (int i = 0; i < w && i < 64; i++) pthread_create(&t[i], 0, cps_one, &done[i]);
        for (int i = 0; i < w && i < 64; i++) { pthread_join(t[i], 0); sum += done[i]; }
        printf("{\"per_sec\": %.1f}\n", sum / secs);
    }
    return 0;
}
"""

# The native worker's path, once built (None: the Python workers).
NATIVE = None


def build_native(dir):
    """Builds the C worker into `dir`; None without a compiler."""
    src, exe = os.path.join(dir, "worker.c"), os.path.join(dir, "worker")
    with open(src, "w") as f:
        f.write(NATIVE_C)
    try:
        subprocess.run(["cc", "-O2", "-pthread", "-o", exe, src], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"proxy-bench: no native worker ({e}): Python clients, which cap the direct path")
        return None
    return exe


def worker_cmd(*args):
    """The command line of a worker (`serve`, `bulk`, `rr`, `cps`)."""
    if NATIVE:
        return [NATIVE, SERVER, str(SINK), str(ECHO)] + [str(a) for a in args]
    return [sys.executable, os.path.abspath(__file__), "worker"] + [str(a) for a in args]


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
    # A native client opens tens of thousands of connections a second to
    # one server port: the whole port range, and TIME_WAIT ports reused.
    for n in ("c", "s"):
        sh("sysctl", "-qw", "net.ipv4.ip_local_port_range=1024 65535", ns=NS[n])
        sh("sysctl", "-qw", "net.ipv4.tcp_tw_reuse=1", ns=NS[n])


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
    out = sh(*worker_cmd(*args), ns=NS["c"])
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


def run_proxy(pep, gb):
    """One run of `pep` (and the direct path just before it)."""
    row = {"load": os.getloadavg()[0], "direct": measure(gb, None)}
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as cfg:
        # 1 MiB: splice's pipes fit the default fs.pipe-max-size (the
        # daemon keeps no CAP_SYS_RESOURCE to exceed it).
        cfg.write(f'[proxy]\nipv6 = false\nbuffer = "1MiB"\n[intercept]\ninterfaces = ["g0"]\nsubnets = ["{CLIENT}/32"]\n')
        cfg.flush()
        # Binaries from before upgrades have no --upgrade-socket.
        helps = subprocess.run([pep, "proxy", "run", "--help"], capture_output=True, text=True).stdout
        extra = ["--upgrade-socket", "none"] if "--upgrade-socket" in helps else []
        p = subprocess.Popen(["ip", "netns", "exec", NS["g"], pep, "proxy", "run", "-c", cfg.name,
                              "--install-rules", "--log-level", "warn"] + extra)
        time.sleep(1.5)
        if p.poll() is not None:
            sys.exit(f"proxy-bench: {pep} proxy run exited")
        row["proxy"] = measure(gb, p.pid)
        p.terminate()
        p.wait(timeout=60)
    row["load_after"] = os.getloadavg()[0]
    return row


def main():
    global NATIVE
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        worker(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pep", action="append", help="[label=]path, repeatable (default target/release/pep)")
    ap.add_argument("--gb", type=float, default=2.0, help="GB per bulk run")
    ap.add_argument("--rounds", type=int, default=1, help="runs of each binary, alternating")
    ap.add_argument("--python", action="store_true", help="the Python workers, not the native one")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("proxy-bench: needs root (network namespaces)")
    peps = []
    for spec in a.pep or ["target/release/pep"]:
        label, _, path = spec.rpartition("=")
        if not os.access(path, os.X_OK):
            sys.exit(f"proxy-bench: no {path}: nice cargo build --release -p pep-cli")
        peps.append((label or path, path))
    teardown()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        NATIVE = None if a.python else build_native(tmp)
        server = None
        try:
            setup()
            server = subprocess.Popen(["ip", "netns", "exec", NS["s"]] + worker_cmd("serve"),
                                      stdout=subprocess.PIPE, text=True)
            server.stdout.readline()
            for r in range(a.rounds):
                for label, path in peps:
                    runs.append((r + 1, label, run_proxy(path, a.gb)))
        finally:
            if server:
                server.kill()
            teardown()
    print(f"proxy-bench: {a.gb} GB per bulk run, {os.cpu_count()} CPUs, "
          f"{'native' if NATIVE else 'Python'} clients")
    print("| run | binary | path | load (1 min) | 1 stream Gbit/s | 8 streams Gbit/s | daemon CPU s/GB (1 / 8) "
          "| answer p50 ms | p99 ms | connections/s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for rnd, label, row in runs:
        for name in ("direct", "proxy"):
            r = row[name]
            cpu = "-" if name == "direct" else f"{r['cpu1']:.2f} / {r['cpu8']:.2f}"
            print(f"| {rnd} | {label} | {name} | {row['load']:.1f}-{row['load_after']:.1f} | {r['gbps1']:.2f} "
                  f"| {r['gbps8']:.2f} | {cpu} | {r['p50'] * 1e3:.3f} | {r['p99'] * 1e3:.3f} | {r['per_sec']:.0f} |")
    for rnd, label, row in runs:
        d, p = row["direct"], row["proxy"]
        print(f"{rnd} {label}: proxy/direct throughput {p['gbps1'] / d['gbps1']:.0%} (1), "
              f"{p['gbps8'] / d['gbps8']:.0%} (8); setup added p50 {(p['p50'] - d['p50']) * 1e3:.3f} ms, "
              f"p99 {(p['p99'] - d['p99']) * 1e3:.3f} ms; connections/s {p['per_sec'] / d['per_sec']:.0%}")


if __name__ == "__main__":
    main()
