"""Recovery: a server restart, crash, hang or dropped connection is invisible to applications
(docs/recovery.md). Each test runs a real workload in child processes (their calls must all
succeed) while the test kills, stops or cuts a server, then checks what the workload was
told against what the file system holds, through another mount where it matters."""
import errno
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from conftest import Cluster, free_port, sanitized_build, wait_for

MIB = 1 << 20


class RecoveryCluster(Cluster):
    """An MDS with a short recovery window (clients that are gone for good are evicted
    soon) and fault injection allowed; extra MDS arguments per test."""
    mds_extra = ("--recovery-window", "20", "--allow-fault-injection")

    def mds_argv(self, fmt):
        return super().mds_argv(fmt) + list(self.mds_extra)


def restart_mds(c, down=0.3):
    c.mds.kill(signal.SIGKILL)
    time.sleep(down)
    c.start_mds(fmt=False)


def run_script(code, *args, timeout=600):
    """Starts a python child running code with args in sys.argv[1:]: it prints one JSON
    line with its result and exits non-zero (printing the failed call) on any error."""
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p, timeout=600):
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, f"workload failed ({p.returncode}):\n{err}\n{out}"
    return json.loads(out.strip().splitlines()[-1]) if out.strip() else None


LOOP = r"""
import json, os, sys, time
kind, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = time.monotonic()
for i in range(n):
    try:
        if kind == "create":
            os.close(os.open(f"{d}/f{i}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        elif kind == "mkdir":
            os.mkdir(f"{d}/d{i}")
        elif kind == "rename":
            os.rename(f"{d}/f{i}", f"{d}/g{i}")
        elif kind == "unlink":
            os.unlink(f"{d}/f{i}")
    except OSError as e:
        print(f"{kind} #{i} in {d}: {e}", file=sys.stderr)
        sys.exit(1)
    if i == n // 4:
        open(f"{d}.quarter", "w").close()
print(json.dumps({"ops": n, "secs": time.monotonic() - t0}))
"""


def loop_through_restart(c, kind, d, n):
    """Runs a LOOP of kind over n names in d and kills -9 and restarts the MDS a quarter
    of the way through."""
    marker = f"{d}.quarter"
    p = run_script(LOOP, kind, d, n)
    wait_for(lambda: os.path.exists(marker) or p.poll() is not None, 120,
             f"the {kind} loop to get a quarter through")
    os.unlink(marker)
    restart_mds(c)
    return finish(p)


def test_mds_kill9_during_create_rename_unlink_loops(make_cluster):
    c = make_cluster(cls=RecoveryCluster, osts=2)
    m = c.mounts[0].path
    n = 1500
    d = m / "loop"
    d.mkdir()
    loop_through_restart(c, "create", d, n)
    assert sorted(os.listdir(d)) == sorted(f"f{i}" for i in range(n))
    loop_through_restart(c, "rename", d, n)
    assert sorted(os.listdir(d)) == sorted(f"g{i}" for i in range(n))
    for i in range(n):
        os.rename(d / f"g{i}", d / f"f{i}")
    loop_through_restart(c, "unlink", d, n)
    assert os.listdir(d) == []
    dd = m / "dirs"
    dd.mkdir()
    loop_through_restart(c, "mkdir", dd, 500)
    assert sorted(os.listdir(dd)) == sorted(f"d{i}" for i in range(500))
    # another mount sees the same
    other = c.mount().path
    assert sorted(os.listdir(other / "dirs")) == sorted(f"d{i}" for i in range(500))


HOLDER = r"""
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.readline()
fcntl.lockf(fd, fcntl.LOCK_UN)
print("unlocked", flush=True)
sys.stdin.readline()
"""

TRYLOCK = r"""
import errno, fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("got")
except OSError as e:
    print(errno.errorcode[e.errno])
"""


def trylock(path):
    r = subprocess.run([sys.executable, "-c", TRYLOCK, str(path)], capture_output=True,
                       text=True, timeout=120)
    return r.stdout.strip()


def test_lock_held_across_mds_kill9(make_cluster):
    c = make_cluster(cls=RecoveryCluster, osts=1)
    a = c.mounts[0].path
    b = c.mount().path
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(a / "locked")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert trylock(b / "locked") in ("EAGAIN", "EACCES")
        restart_mds(c)
        # after the restart the holder's mount has re-asserted its lock: still taken
        assert trylock(b / "locked") in ("EAGAIN", "EACCES")
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "unlocked"
        assert trylock(b / "locked") == "got"
    finally:
        holder.kill()
        holder.wait()


WRITER = r"""
import hashlib, json, os, random, sys
path, mib, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
h = hashlib.sha256()
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(mib):
    block = rng.randbytes(1 << 20)
    h.update(block)
    mv = memoryview(block)
    while mv:
        mv = mv[os.write(fd, mv):]
    if i == mib // 4:
        open(path + ".quarter", "w").close()
os.fsync(fd)
os.close(fd)
print(json.dumps({"sha256": h.hexdigest()}))
"""


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(4 * MIB)
            if not b:
                return h.hexdigest()
            h.update(b)


def test_oss_kill9_during_striped_write(make_cluster, nacre_cli):
    mib = int(os.environ.get("NACRE_TEST_BIG_MB", "2048"))
    c = make_cluster(cls=RecoveryCluster, osts=4, oss=2)
    m = c.mounts[0].path
    path = m / "big"
    nacre_cli("setstripe", "-c", 4, "-S", "1M", path, check=True)
    p = run_script(WRITER, path, mib, 7)
    wait_for(lambda: os.path.exists(f"{path}.quarter") or p.poll() is not None, 300,
             "the writer to get a quarter through")
    c.oss[1].kill(signal.SIGKILL)
    time.sleep(1.0)
    c.start_oss(1, fmt=False)
    want = finish(p)["sha256"]
    other = c.mount().path
    assert os.path.getsize(other / "big") == mib * MIB
    assert sha256_of(other / "big") == want


WORKLOAD = r"""
import json, os, sys, time
d, secs = sys.argv[1], float(sys.argv[2])
end = time.monotonic() + secs
i = 0
while time.monotonic() < end:
    p = f"{d}/w{i}"
    try:
        with open(p, "wb") as f:
            f.write(os.urandom(4096 + i))
            f.flush()
            os.fsync(f.fileno())
        os.stat(p)
        os.listdir(d)
        if i % 3 == 0:
            os.rename(p, p + ".r")
        if i % 5 == 0:
            os.unlink(p + ".r" if i % 3 == 0 else p)
    except OSError as e:
        print(f"op #{i} on {p}: {e}", file=sys.stderr)
        sys.exit(1)
    i += 1
    time.sleep(0.05)
print(json.dumps({"ops": i}))
"""


def test_creates_queued_while_the_mds_was_stopped(make_cluster):
    """Creates sent while the MDS is stopped longer than an OST's heartbeat window run first
    after SIGCONT, before any OSS heartbeats again: they must not find "no OST up"."""
    c = make_cluster(osts=2, oss=2)
    m = c.mounts[0].path
    for k in range(4):
        os.mkdir(m / f"q{k}")  # one directory each: the kernel serializes creates in one
    c.mds.p.send_signal(signal.SIGSTOP)
    errors = []

    def create(k):
        try:
            (m / f"q{k}" / "f").write_bytes(b"queued %d" % k)
        except OSError as e:
            errors.append((k, e))
    threads = [threading.Thread(target=create, args=(k,)) for k in range(4)]
    try:
        time.sleep(0.5)
        for t in threads:
            t.start()
        time.sleep(8)  # longer than an OST counts as up without a heartbeat (6 s)
    finally:
        c.mds.p.send_signal(signal.SIGCONT)
    for t in threads:
        t.join(60)
    assert errors == [], errors
    for k in range(4):
        assert (m / f"q{k}" / "f").read_bytes() == b"queued %d" % k


def test_mds_sigstop_20s_during_workload(make_cluster):
    c = make_cluster(cls=RecoveryCluster, osts=2)
    d = c.mounts[0].path / "work"
    d.mkdir()
    p = run_script(WORKLOAD, d, 30)
    time.sleep(3)
    c.mds.p.send_signal(signal.SIGSTOP)
    time.sleep(20)
    c.mds.p.send_signal(signal.SIGCONT)
    r = finish(p)
    assert r["ops"] > 20
    # pings noticed the silence and said so, naming the server
    log = c.mounts[0].proc.text()
    assert "has not answered for 5 s" in log, log[-3000:]
    assert "answers again" in log


ORPHAN = r"""
import os, sys
path = sys.argv[1]
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, b"A" * 100000)
os.fsync(fd)
os.unlink(path)
print("unlinked", flush=True)
for step in range(2):
    sys.stdin.readline()              # the test broke the MDS meanwhile
    os.lseek(fd, 0, 0)
    data = os.pread(fd, 200000, 0)
    want = b"A" * 100000 + b"B" * 1000 * step
    if data != want:
        print(f"step {step}: read {len(data)} bytes, not the {len(want)} written", flush=True)
        sys.exit(1)
    os.pwrite(fd, b"B" * 1000, 100000 + 1000 * step)
    os.fsync(fd)
    print("ok", flush=True)
sys.stdin.readline()
os.close(fd)
print("closed", flush=True)
"""


class TcpCutter:
    """A TCP proxy between a mount and the MDS whose connections the test can cut."""

    def __init__(self, target_port):
        self.target = ("127.0.0.1", target_port)
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.pairs = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                a, _ = self.lsock.accept()
            except OSError:
                return
            try:
                b = socket.create_connection(self.target)
            except OSError:
                a.close()  # the MDS is down: the client sees a refused connection
                continue
            with self.lock:
                self.pairs.append((a, b))
            for x, y in ((a, b), (b, a)):
                threading.Thread(target=self._pump, args=(x, y), daemon=True).start()

    @staticmethod
    def _pump(x, y):
        try:
            while True:
                d = x.recv(65536)
                if not d:
                    break
                y.sendall(d)
        except OSError:
            pass
        for s in (x, y):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for a, b in pairs:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        return len(pairs)

    def close(self):
        self.lsock.close()
        self.cut()


def test_open_unlinked_file_survives_mds_restart_and_dropped_connection(make_cluster):
    c = make_cluster(cls=RecoveryCluster, osts=2)
    cutter = TcpCutter(c.mds_port)
    # a mount whose spec names the proxy, so that the test can cut its MDS connection
    real = c.mds_port
    c.mds_port = cutter.port
    try:
        m = c.mount(name="via-proxy").path
    finally:
        c.mds_port = real
    p = subprocess.Popen([sys.executable, "-c", ORPHAN, str(m / "tmpfile")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "unlinked"
        # 1: the MDS is killed and restarted
        restart_mds(c)
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "ok"
        # 2: the client's MDS connection is cut
        assert cutter.cut() >= 1
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "ok"
        # still open: the orphan's objects are on the OSTs; after the close they go
        objs = orphan_objects(c)
        assert objs, "the open unlinked file's objects are gone while it is open"
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "closed"
        wait_for(lambda: not any(os.path.exists(o) for o in objs), 20,
                 "the orphan's objects to be destroyed after its last close")
    finally:
        p.kill()
        p.wait()
        cutter.close()


def orphan_objects(c):
    """Every object file on the cluster's OSTs."""
    out = []
    for i in range(c.nosts):
        for root, _, files in os.walk(c.ost_dir(i) / "O"):
            out.extend(os.path.join(root, f) for f in files)
    return out


# A record is 4,133 bytes (no multiple of the page size, so that the kernel would cut a
# write at a page it fills in part): the writer and its sequence number, then a digest of
# both repeated. RECORD is the one definition, run by the writers and by the check.
APPEND_RECORD = 4133
RECORD = r"""
import hashlib, struct
def record(w, k):
    return (struct.pack("<II", w, k) + hashlib.sha256(b"%d:%d" % (w, k)).digest() * 130)[:4133]
"""
APPENDER = RECORD + r"""
import os, sys
path, w, n, sync = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "fsync"
fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
for k in range(n):
    if os.write(fd, record(w, k)) != 4133:
        sys.exit("short append")
    if sync:
        os.fsync(fd)
os.close(fd)
"""


def test_append_unaligned_records_from_four_mounts(make_cluster):
    """O_APPEND from four mounts, two processes each (one fsyncs after every record, one
    leaves them to write-behind): every record lands whole, once, in its writer's order,
    as a fifth mount reads every slot."""
    c = make_cluster(cls=RecoveryCluster, osts=2)
    mounts = [c.mounts[0].path] + [c.mount().path for _ in range(3)]
    log = "shared.log"
    n, per_mount = 60, ("fsync", "nosync")
    procs = []
    for mi, m in enumerate(mounts):
        for pi, sync in enumerate(per_mount):
            procs.append(subprocess.Popen([sys.executable, "-c", APPENDER, str(m / log),
                                           str(mi * len(per_mount) + pi), str(n), sync]))
    for p in procs:
        assert p.wait(300) == 0
    writers = len(procs)
    data = (c.mount().path / log).read_bytes()
    assert len(data) == writers * n * APPEND_RECORD, \
        f"{len(data)} bytes, want {writers * n * APPEND_RECORD}"
    scope = {}
    exec(RECORD, scope)
    torn, seen = [], {}
    for off in range(0, len(data), APPEND_RECORD):
        rec = data[off:off + APPEND_RECORD]
        w, k = struct.unpack("<II", rec[:8])
        if w >= writers or k >= n or rec != scope["record"](w, k):
            torn.append(off)
            continue
        seen.setdefault(w, []).append(k)
    assert not torn, f"{len(torn)} of {writers * n} records torn, the first at {torn[0]}"
    for w in range(writers):
        assert seen.get(w) == list(range(n)), \
            f"writer {w}: records missing, repeated or out of order"


ONE_OP = r"""
import errno, json, os, sys, time
what, m, tag = sys.argv[1], sys.argv[2], sys.argv[3]
d = f"{m}/{what}-{tag}"  # a directory per call: the kernel serializes calls in one directory
t0 = time.monotonic()
try:
    if what == "stat":
        os.stat(f"{d}/never-seen")
    elif what == "create":
        open(f"{d}/new", "wb").close()
    elif what == "mkdir":
        os.mkdir(f"{d}/sub")
    elif what == "readdir":
        os.listdir(d)
    elif what == "write+fsync":
        with open(f"{d}/w", "wb") as f:
            f.write(b"y" * 5000)
            f.flush()
            os.fsync(f.fileno())
    elif what == "chmod":
        os.chmod(f"{d}/existing", 0o600)
    res = "ok"
except OSError as e:
    res = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({"res": res, "took": time.monotonic() - t0}))
"""
OPS = ("stat", "create", "mkdir", "readdir", "write+fsync", "chmod")


@pytest.mark.skipif("sanitized_build()", reason="a 70 s wait that checks timing; the sanitizer "
                    "build runs the same recovery paths in the shorter MDS-down tests")
class LongerWindowCluster(RecoveryCluster):
    # longer than the 10 s a window is extended by: the client that came back made its
    # last request that long before the window ends
    mds_extra = ("--recovery-window", "12", "--allow-fault-injection")


def test_a_client_back_in_the_window_outlives_one_that_never_came(make_cluster):
    """A client that came back waits for the re-open phase, which waits for every replay:
    when the window ends, only the client that never came back is evicted, and the other
    one's open file is back (it was evicted along with the missing one)."""
    c = make_cluster(cls=LongerWindowCluster, osts=2)
    a = c.mounts[0]
    dead = c.mount(name="dead")
    os.mkdir(dead.path / "d")  # a change: the restarted MDS expects this client back
    with open(a.path / "held", "w+b") as f:
        f.write(b"x" * 100)
        f.flush()
        os.fsync(f.fileno())
        dead.proc.kill()
        subprocess.run(["fusermount3", "-u", "-z", str(dead.path)], capture_output=True)
        c.mounts.remove(dead)
        restart_mds(c)
        t0 = time.monotonic()
        f.write(b"y" * 100)
        f.flush()
        os.fsync(f.fileno())  # waits out the window for the dead client, then succeeds
        assert time.monotonic() - t0 > 10
        f.seek(0)
        assert f.read() == b"x" * 100 + b"y" * 100
    log = c.mds.text()
    assert len(re.findall(r"did not finish recovery within the window: evicted", log)) == 1, \
        log[-3000:]


def test_mds_down_70s_blocks_then_succeeds_or_fails_after_recovery_timeout(make_cluster):
    c = make_cluster(cls=RecoveryCluster, osts=2)
    # without write-back: under a lease a mount answers a lookup of a name it knows is not
    # there, and queues a mkdir, without waiting for the MDS (test_wb_lease.py)
    patient = c.mount(opts=["wb=off"]).path
    quick = c.mount(opts=["recovery_timeout=20", "wb=off"]).path
    for tag, m in (("p", patient), ("q", quick)):
        for what in OPS:
            (m / f"{what}-{tag}").mkdir()
        (m / f"chmod-{tag}" / "existing").write_bytes(b"x" * 10000)
    c.mds.kill(signal.SIGKILL)
    time.sleep(0.5)
    # each call in a process of its own (a thread's open FUSE file would be flushed by the
    # fork that starts the MDS again)
    procs = {(tag, what): run_script(ONE_OP, what, m, tag)
             for tag, m in (("p", patient), ("q", quick)) for what in OPS}
    time.sleep(70)
    c.start_mds(fmt=False)
    for (tag, what), p in procs.items():
        r = finish(p, timeout=300)
        if tag == "p":
            # a name never created answers ENOENT once the MDS is back
            want = "ENOENT" if what == "stat" else "ok"
            assert r["res"] == want and r["took"] >= 69, (tag, what, r)
        else:
            assert r["res"] == "EIO" and 18 <= r["took"] <= 22, (tag, what, r)


def write_fsync(path, data):
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


class NoSyncCluster(RecoveryCluster):
    """An MDS that never flushes on its own: only fsync makes changes durable, so a copy of
    the MDT taken right after an fsync is exactly what a power failure would leave."""
    mds_extra = RecoveryCluster.mds_extra + ("--sync-interval", "86400")


def test_acknowledged_changes_replayed_after_lost_commits(make_cluster):
    c = make_cluster(cls=NoSyncCluster, osts=2)
    port = free_port()
    w = c.mount(opts=[f"metrics_addr=127.0.0.1:{port}"])  # counts what it replays
    m = w.path
    (m / "durable").mkdir()
    write_fsync(m / "durable" / "a", b"a" * 1000)  # fsync: on disk now
    snap = c.dir / "mdt-snapshot"
    snap.mkdir()
    subprocess.run(["mdb_copy", str(c.dir / "mdt"), str(snap)], check=True, capture_output=True)
    # acknowledged but not on disk: the MDS has not flushed them
    (m / "lost").mkdir()
    for i in range(20):
        (m / "lost" / f"f{i}").write_bytes(b"z" * (i + 1))
    os.rename(m / "lost" / "f0", m / "lost" / "renamed")
    os.unlink(m / "lost" / "f1")
    fid = os.getxattr(m / "lost" / "f2", "nacre.fid")
    # the machine "loses power": the MDT goes back to the copy taken at the fsync
    c.mds.kill(signal.SIGKILL)
    shutil.copy(snap / "data.mdb", c.dir / "mdt" / "data.mdb")
    c.start_mds(fmt=False)
    names = sorted(os.listdir(m / "lost"))
    assert names == sorted(["renamed"] + [f"f{i}" for i in range(2, 20)])
    assert os.getxattr(m / "lost" / "f2", "nacre.fid") == fid  # the same FID again
    other = c.mount().path
    assert sorted(os.listdir(other / "lost")) == names
    for i in range(2, 20):
        assert (other / "lost" / f"f{i}").read_bytes() == b"z" * (i + 1)
    assert "replaying" in w.proc.text()
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    replays = re.search(rb"^nacre_rpc_client_replays_total (\d+)", text, re.M)
    assert replays and int(replays.group(1)) >= 23, text[:2000]
