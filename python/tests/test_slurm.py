"""`pep sim sweep slurm` on a real single-node Slurm cluster (Debian's
slurm-wlm and munge) that the test starts and stops itself, on loopback
only (in a network namespace of its own, which has nothing else): a job array of 4 tasks and the merge job, whose tables must equal
the local sweep's byte for byte.

Needs root and the daemons: CI installs them (.ci/run). Elsewhere the test
skips with a visible reason, but under PEP_REQUIRE_ALL=1 it fails instead."""

import os
import shutil
import socket
import subprocess
import time

import pytest

from test_shard_cli import write_experiment  # noqa: F401 (shared files)

DAEMONS = ["ip", "nsenter", "munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo"]


def require():
    missing = [d for d in DAEMONS if shutil.which(d) is None]
    why = None
    if os.geteuid() != 0:
        why = "needs root to run slurmd"
    elif missing:
        why = f"needs {', '.join(missing)} (apt-get install slurm-wlm munge)"
    if why:
        if os.environ.get("PEP_REQUIRE_ALL") == "1":
            pytest.fail(f"PEP_REQUIRE_ALL=1 but the Slurm test cannot run: {why}")
        pytest.skip(f"Slurm test not run: {why}")


def wait(what, check, timeout, logs=()):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.5)
    text = "\n".join(f"--- {p}:\n{open(p).read()[-3000:]}" for p in logs if os.path.exists(p))
    pytest.fail(f"timed out after {timeout} s waiting for {what}\n{text}")


def listening(port, ns=()):
    """The IPv4 addresses a TCP socket listens on `port` at (/proc/net/tcp),
    in network namespace `ns` (an `nsenter` prefix) or ours."""
    tcp = subprocess.run([*ns, "cat", "/proc/net/tcp"], capture_output=True, text=True).stdout
    found = set()
    for line in tcp.splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        addr, p = local.split(":")
        if state == "0A" and int(p, 16) == port:
            found.add(socket.inet_ntoa(bytes.fromhex(addr)[::-1]))
    return found


@pytest.fixture
def cluster(tmp_path):
    """A slurmctld, a slurmd and a munged of our own, all on 127.0.0.1,
    state and sockets under tmp_path; stopped (by their pids) at the end."""
    require()
    d = tmp_path / "slurm"
    d.mkdir()
    for sub in ["state", "spool"]:
        (d / sub).mkdir()
    key = d / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    sock = d / "munge.sock"
    host = socket.gethostname().split(".")[0]
    cpus = os.cpu_count() or 1
    conf = d / "slurm.conf"
    conf.write_text(f"""ClusterName=pepci
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort=26817
SlurmdPort=26818
CommunicationParameters=NoInAddrAny
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
NodeName=pepci NodeHostname={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=pep Nodes=pepci Default=YES MaxTime=INFINITE State=UP
""")
    env = dict(os.environ, SLURM_CONF=str(conf))
    procs = []
    name = f"pepslurm{os.getpid()}"
    # nsenter, not `ip netns exec`: that remounts /sys, hiding the cgroup
    # file system slurmd needs.
    ns = ["nsenter", f"--net=/run/netns/{name}"]
    subprocess.run(["ip", "netns", "add", name], check=True)

    def start(*args):
        procs.append(subprocess.Popen([*ns, *args], env=env, stdout=subprocess.DEVNULL,
                                      stderr=open(d / f"{os.path.basename(args[0])}.err", "w")))

    try:
        # lo, and a veth pair with both ends inside: an address besides
        # loopback, without which getaddrinfo(AI_ADDRCONFIG) finds no IPv4
        # host names, yet no way out of the namespace.
        for cmd in ["link set lo up", "link add pepa type veth peer name pepb",
                    "addr add 10.254.0.1/30 dev pepa", "link set pepa up", "link set pepb up"]:
            subprocess.run([*ns, "ip", *cmd.split()], check=True)
        start("munged", "--foreground", "--force", f"--socket={sock}", f"--key-file={key}",
              f"--pid-file={d}/munged.pid", f"--log-file={d}/munged.log",
              f"--seed-file={d}/munge.seed")
        wait("munged's socket", sock.exists, 30, [d / "munged.log", d / "munged.err"])
        start("slurmctld", "-D", "-i", "-f", str(conf))
        start("slurmd", "-D", "-N", "pepci", "-f", str(conf))
        logs = [d / "slurmctld.log", d / "slurmd.log", d / "slurmctld.err", d / "slurmd.err"]

        def idle():
            for p in procs:
                if p.poll() is not None:
                    pytest.fail(f"{p.args[0]} exited with {p.returncode}\n"
                                + "\n".join(open(x).read()[-2000:] for x in logs if x.exists()))
            r = subprocess.run([*ns, "sinfo", "-h", "-o", "%t"], env=env, capture_output=True, text=True)
            return r.returncode == 0 and r.stdout.strip() == "idle"

        wait("the node to be idle", idle, 60, logs)
        # Listening in the namespace (lo and the veth pair), not here.
        for port in [26817, 26818]:
            assert listening(port, ns) in ({"0.0.0.0"}, {"127.0.0.1"}), port
        assert listening(26817) == listening(26818) == set()
        yield env, ns, logs
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        subprocess.run(["ip", "netns", "del", name], check=False)


def test_a_slurm_array_and_merge_equal_the_local_sweep(pep, tmp_path, cluster):
    env, ns, logs = cluster
    exp = write_experiment(tmp_path)
    pep("sim", "sweep", exp, "-q", "-j", "2", "-o", tmp_path / "local")
    out = tmp_path / "cluster"
    said = pep("sim", "sweep", "slurm", exp, "-o", out, "--tasks-per-job", "3",
               "--partition", "pep").stdout
    assert "12 runs in 4 array tasks" in said, said
    r = subprocess.run([*ns, str(out / "submit.sh")], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "(4 tasks)" in r.stdout, r.stdout

    def finished():
        q = subprocess.run([*ns, "squeue", "-h"], env=env, capture_output=True, text=True)
        return q.returncode == 0 and q.stdout.strip() == ""

    wait("the jobs to finish", finished, 600, logs + sorted((out / "slurm").glob("*.out")))
    outs = sorted(p.name for p in (out / "slurm").glob("*.out"))
    assert len([o for o in outs if "-runs-" in o]) == 4, outs
    assert len([o for o in outs if "-merge-" in o]) == 1, outs
    for name in ["results.csv", "aggregate.csv"]:
        assert (out / name).is_file(), f"no {name}: the merge job did not run; {outs}"
        assert (out / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
