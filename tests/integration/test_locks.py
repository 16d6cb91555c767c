"""Cluster-wide locks: fcntl byte-range locks and flock across two mounts and several
processes, blocking waits (queued on the MDS in arrival order, woken at once, EDEADLK,
interrupted by a signal), release on close, exit and client death (eviction)."""
import errno
import os
import re
import select
import signal
import struct
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import Cluster, finish, free_port, mounted_dirs, wait_for

EVICT_S = 2  # the MDS's --lock-evict-timeout in these tests

# A lock-holding process: reads one command per line, answers one line ("ok ..." or
# "err ERRNO"). Each Locker is its own process, so its own POSIX lock owner.
LOCKER = r"""
import fcntl, os, signal, struct, sys
fds = {}
def alarm(sig, frame):
    raise InterruptedError(4, "interrupted")
signal.signal(signal.SIGALRM, alarm)
FL = "hhqqi4x"  # struct flock on x86-64 and aarch64 Linux
T = {"R": fcntl.F_RDLCK, "W": fcntl.F_WRLCK, "U": fcntl.F_UNLCK}
for line in sys.stdin:
    a = line.split()
    try:
        if a[0] == "open":
            fds[a[1]] = os.open(a[2], os.O_RDWR | os.O_CREAT, 0o644)
            out = "ok"
        elif a[0] == "close":
            os.close(fds.pop(a[1]))
            out = "ok"
        elif a[0] == "dup":
            # dup FD NEW: another descriptor of the same open file
            fds[a[2]] = os.dup(fds[a[1]])
            out = "ok"
        elif a[0] in ("setlk", "setlkw"):
            # setlk FD TYPE START LEN [ALARM_SECS]
            if len(a) > 5:
                signal.alarm(int(a[5]))
            cmd = fcntl.F_SETLK if a[0] == "setlk" else fcntl.F_SETLKW
            fcntl.fcntl(fds[a[1]], cmd, struct.pack(FL, T[a[2]], 0, int(a[3]), int(a[4]), 0))
            signal.alarm(0)
            out = "ok"
        elif a[0] in ("ofdlk", "ofdlkw"):
            # ofdlk FD TYPE START LEN: an open file description lock (its owner: the file)
            cmd = fcntl.F_OFD_SETLK if a[0] == "ofdlk" else fcntl.F_OFD_SETLKW
            fcntl.fcntl(fds[a[1]], cmd, struct.pack(FL, T[a[2]], 0, int(a[3]), int(a[4]), 0))
            signal.alarm(0)
            out = "ok"
        elif a[0] == "getlk":
            r = fcntl.fcntl(fds[a[1]], fcntl.F_GETLK,
                            struct.pack(FL, T[a[2]], 0, int(a[3]), int(a[4]), 0))
            t, _, start, length, pid = struct.unpack(FL, r)
            name = {fcntl.F_RDLCK: "R", fcntl.F_WRLCK: "W", fcntl.F_UNLCK: "U"}[t]
            out = f"ok {name} {start} {length} {pid}"
        elif a[0] == "flock":
            # flock FD SH|EX|UN [nb | ALARM_SECS]
            op = {"SH": fcntl.LOCK_SH, "EX": fcntl.LOCK_EX, "UN": fcntl.LOCK_UN}[a[2]]
            if len(a) > 3 and a[3] == "nb":
                op |= fcntl.LOCK_NB
            elif len(a) > 3:
                signal.alarm(int(a[3]))
            fcntl.flock(fds[a[1]], op)
            signal.alarm(0)
            out = "ok"
        else:
            out = "err bad-command"
    except OSError as e:
        signal.alarm(0)
        out = f"err {e.errno}"
    print(out, flush=True)
"""


class Locker:
    def __init__(self, path=None):
        self.p = subprocess.Popen([sys.executable, "-c", LOCKER], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, bufsize=1)
        self.pid = self.p.pid
        if path is not None:
            self.do(f"open f {path}")

    def send(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()

    def recv(self, timeout=30):
        # a lock that never comes fails the test instead of hanging it
        assert self.answered(timeout), f"locker {self.pid}: no answer within {timeout} s"
        return self.p.stdout.readline().strip()

    def answered(self, timeout):
        """Whether an answer is waiting (without reading it), after up to timeout seconds."""
        return bool(select.select([self.p.stdout], [], [], timeout)[0])

    def do(self, cmd, expect="ok"):
        self.send(cmd)
        r = self.recv()
        if expect is not None:
            assert r.startswith(expect), f"{cmd!r}: got {r!r}, expected {expect!r}"
        return r

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(10)

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(10)


EAGAIN = f"err {errno.EAGAIN}"


@pytest.fixture(scope="module")
def lc():
    c = Cluster(osts=2)
    base = c.mds_argv
    c.metrics_port = free_port()
    c.mds_argv = lambda fmt: base(fmt) + ["--lock-evict-timeout", str(EVICT_S), "--metrics-addr",
                                          f"127.0.0.1:{c.metrics_port}"]
    try:
        c.start()
        c.mount(name="a")
        c.mount(name="b")
        c.wait_osts_up()
    except BaseException:
        print(c.logs())
        c.stop()
        raise
    yield c
    finish(c)


@pytest.fixture
def lockers():
    made = []

    def make(path=None):
        lk = Locker(path)
        made.append(lk)
        return lk
    yield make
    for lk in made:
        lk.kill()


def mds_requests(lc, op):
    """How many requests of opcode op (its name) the MDS has answered at once."""
    pat = re.compile(r'^nacre_rpc_server_requests_total\{[^}]*op="%s"[^}]*\}\s+(\S+)$' % op)
    with urllib.request.urlopen(f"http://127.0.0.1:{lc.metrics_port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            m = pat.match(line)
            if m:
                return int(float(m.group(1)))
    return 0


def paths(lc, name):
    a, b = lc.mounts[0], lc.mounts[1]
    (a / name).write_bytes(b"x" * 4096)
    return a / name, b / name


def test_conflicting_and_compatible_ranges(lc, lockers):
    pa, pb = paths(lc, "ranges")
    x, y, x2 = lockers(pa), lockers(pb), lockers(pa)
    x.do("setlk f W 0 100")
    y.do("setlk f W 50 100", EAGAIN)      # overlaps x's write lock, other mount
    x2.do("setlk f R 99 1", EAGAIN)       # another process on the same mount
    y.do("setlk f W 100 100")             # adjacent: no overlap
    x.do("setlk f R 1000 100")
    y.do("setlk f R 1050 100")            # readers share
    x2.do("setlk f W 1099 1", EAGAIN)
    x.do("setlk f W 0 50")                # the same owner re-locks freely
    x.do("setlk f U 0 0")                 # x unlocks all it holds
    y.do("setlk f W 0 100")
    x2.do("setlk f W 1099 1", EAGAIN)     # y's read lock [1050,1150) remains
    y.do("setlk f U 0 0")
    x2.do("setlk f W 1099 1")
    assert y.do("getlk f W 0 0") == f"ok W 1099 1 {x2.pid}"


def test_upgrade_downgrade_and_split(lc, lockers):
    pa, pb = paths(lc, "updown")
    x, y = lockers(pa), lockers(pb)
    x.do("setlk f R 0 100")
    y.do("setlk f R 0 100")
    x.do("setlk f W 0 100", EAGAIN)       # upgrade blocked by y's read lock
    assert y.do("getlk f W 0 100") == f"ok R 0 100 {x.pid}"  # x still reads
    y.do("setlk f U 0 100")
    x.do("setlk f W 0 100")               # upgrade
    y.do("setlk f R 10 1", EAGAIN)
    x.do("setlk f R 40 20")               # downgrade the middle: split into W, R, W
    y.do("setlk f R 45 10")
    y.do("setlk f R 30 20", EAGAIN)       # [30,40) is still written
    assert y.do("getlk f R 0 100") == f"ok W 0 40 {x.pid}"
    y.do("setlk f U 0 0")
    x.do("setlk f W 40 20")               # upgrade the middle back: merged into one
    assert y.do("getlk f R 70 1") == f"ok W 0 100 {x.pid}"
    x.do("setlk f U 40 20")               # unlock the middle: a hole
    y.do("setlk f W 40 20")
    assert y.do("getlk f W 0 0") == f"ok W 0 40 {x.pid}"


def test_getlk_reports_holder(lc, lockers):
    pa, pb = paths(lc, "getlk")
    x, y = lockers(pa), lockers(pb)
    assert y.do("getlk f W 0 0") == "ok U 0 0 0"
    x.do("setlk f W 10 10")
    assert y.do("getlk f R 0 100") == f"ok W 10 10 {x.pid}"
    assert y.do("getlk f W 20 5") == "ok U 20 5 0"
    x.do("setlk f R 100 0")               # to EOF
    assert y.do("getlk f W 5000 1") == f"ok R 100 0 {x.pid}"
    assert y.do("getlk f R 5000 1").startswith("ok U")


def test_blocking_wait_woken_on_unlock(lc, lockers):
    pa, pb = paths(lc, "wait")
    x, y = lockers(pa), lockers(pb)
    x.do("setlk f W 0 10")
    y.send("setlkw f W 5 10")
    time.sleep(0.7)
    x.do("setlk f R 1000 1")              # x is responsive; y still waits
    t0 = time.monotonic()
    x.do("setlk f U 0 10")
    assert y.recv() == "ok"
    assert time.monotonic() - t0 < 2.0
    x.do("setlk f W 5 1", EAGAIN)


def test_blocking_wait_interrupted(lc, lockers):
    pa, pb = paths(lc, "intr")
    x, y = lockers(pa), lockers(pb)
    x.do("setlk f W 0 10")
    t0 = time.monotonic()
    y.do("setlkw f W 0 10 1", f"err {errno.EINTR}")
    assert time.monotonic() - t0 < 5
    x.do("setlk f U 0 0")
    y.do("setlk f W 0 10")                # the interrupted wait left nothing behind


def test_wait_is_woken_by_the_mds_not_polling(lc, lockers):
    pa, pb = paths(lc, "woken")
    x, y = lockers(pa), lockers(pb)
    lat = []
    for _ in range(3):
        x.do("setlk f W 0 10")
        y.send("setlkw f W 0 10")
        time.sleep(0.3)                   # y is parked on the MDS now
        sets = mds_requests(lc, "MDS_LOCK_SET")
        time.sleep(1.0)
        assert mds_requests(lc, "MDS_LOCK_SET") == sets, "a waiting lock asked again"
        assert not y.answered(0)
        t0 = time.monotonic()
        x.do("setlk f U 0 10")
        assert y.recv() == "ok"
        lat.append(time.monotonic() - t0)
        y.do("setlk f U 0 0")
    lat.sort()
    assert lat[1] < 0.1, f"woken {lat} s after the unlock"


def test_waiters_granted_in_arrival_order(lc, lockers):
    pa, pb = paths(lc, "fifo")
    x = lockers(pa)
    w = [lockers(pb), lockers(pa), lockers(pb)]  # both mounts, in turn
    x.do("setlk f R 0 0")
    for lk in w:
        lk.send("setlkw f W 0 0")
        time.sleep(0.3)                   # fixes the arrival order at the MDS
    z = lockers(pa)
    z.do("setlk f R 0 0", EAGAIN)         # a reader fits with x but does not jump the queue
    x.do("setlk f U 0 0")
    for i, lk in enumerate(w):
        assert lk.answered(5), f"waiter {i} was not granted"
        assert lk.recv() == "ok"
        for later in w[i + 1:]:
            assert not later.answered(0.3), "a later waiter overtook an earlier one"
        z.do("setlk f R 0 0", EAGAIN)
        lk.do("setlk f U 0 0")
    z.do("setlk f R 0 0")


def test_wait_for_each_other_is_edeadlk(lc, lockers):
    pa, pb = paths(lc, "deadlock")
    x, y = lockers(pa), lockers(pb)
    x.do("setlk f W 0 10")
    y.do("setlk f W 10 10")
    x.send("setlkw f W 10 10")            # x waits for y
    time.sleep(0.3)
    y.do("setlkw f W 0 10", f"err {errno.EDEADLK}")  # y would wait for x: a cycle of two
    assert not x.answered(0.2)
    y.do("setlk f U 0 0")
    assert x.answered(5) and x.recv() == "ok"
    y.do("setlk f W 15 1", EAGAIN)


def test_interrupted_wait_leaves_no_waiter(lc, lockers):
    pa, pb = paths(lc, "intrq")
    x, y, z = lockers(pa), lockers(pb), lockers(pa)
    cancels = mds_requests(lc, "MDS_LOCK_CANCEL")
    x.do("setlk f W 0 10")
    x.do("flock f EX nb")
    y.do("setlkw f W 0 10 1", f"err {errno.EINTR}")
    y.do("flock f EX 1", f"err {errno.EINTR}")
    wait_for(lambda: mds_requests(lc, "MDS_LOCK_CANCEL") >= cancels + 2, 5, "two cancels")
    # had y's waits stayed on the MDS, they would be served first and z would wait on
    z.send("setlkw f W 0 10")
    time.sleep(0.3)
    x.do("setlk f U 0 0")
    assert z.answered(5) and z.recv() == "ok"
    z.send("flock f EX")
    time.sleep(0.3)
    x.do("flock f UN")
    assert z.answered(5) and z.recv() == "ok"
    y.do("setlk f W 0 10", EAGAIN)        # z holds them, not y
    y.do("flock f EX nb", EAGAIN)


def test_release_on_close_and_exit(lc, lockers):
    pa, pb = paths(lc, "close")
    x, y = lockers(pa), lockers(pb)
    x.do(f"open g {pa}")
    x.do("setlk f W 0 10")
    y.do("setlk f W 0 10", EAGAIN)
    x.do("close g")                       # POSIX: any close drops the process's locks
    y.do("setlk f W 0 10")
    y.do("setlk f U 0 0")
    x.do("setlk f W 0 10")
    y.do("setlk f W 0 10", EAGAIN)
    x.kill()                              # exit closes the files: locks go at once
    wait_for(lambda: y.do("setlk f W 0 10", None) == "ok", 3, "the dead holder's lock to go")


def test_ofd_locks_go_with_the_last_close(lc, lockers):
    # generic/478: the kernel sends no unlock for OFD locks; a waiter on another mount must
    # be granted once the open file holding them is closed for the last time
    pa, pb = paths(lc, "ofd")
    x, y = lockers(pa), lockers(pb)
    x.do("dup f f2")
    x.do("ofdlk f W 0 10")
    y.do("ofdlk f W 0 10", EAGAIN)
    x.do(f"open g {pa}")
    x.do("ofdlk g W 0 10", EAGAIN)        # another open file: another owner, same process
    x.do("close g")
    x.do("close f")                       # f2 still holds the open file: the lock stays
    y.do("ofdlk f W 5 1", EAGAIN)
    y.send("ofdlkw f W 0 10")
    assert not y.answered(0.5)
    x.do("close f2")                      # the last close
    assert y.recv() == "ok"
    x.do(f"open f {pa}")
    x.do("ofdlk f R 0 10", EAGAIN)
    y.do("close f")                       # RELEASE follows close(2) without its waiting
    wait_for(lambda: x.do("ofdlk f R 0 10", None) == "ok", 3, "the OFD lock to go")
    x.do("setlk f W 20 10")
    x.do(f"open h {pa}")
    x.do("close h")                       # drops x's POSIX locks, not f's OFD lock
    y.do(f"open f {pb}")
    y.do("setlk f W 20 1")
    y.do("ofdlk f W 0 1", EAGAIN)


def test_flock_across_mounts(lc, lockers):
    pa, pb = paths(lc, "flock")
    x, y = lockers(pa), lockers(pb)
    x.do("flock f EX nb")
    y.do("flock f EX nb", EAGAIN)
    y.do("flock f SH nb", EAGAIN)
    y.do("setlk f W 0 0")                 # flock and POSIX locks are separate
    x.do("flock f SH nb")                 # downgrade
    y.do("flock f SH nb")
    x.do("flock f EX nb", EAGAIN)
    y.do("flock f UN")
    x.do("flock f EX nb")
    y.send("flock f EX")                  # blocking: woken when x closes the file
    time.sleep(0.5)
    x.do("close f")
    assert y.recv() == "ok"
    z = lockers(pa)
    z.do("flock f SH nb", EAGAIN)
    y.kill()
    wait_for(lambda: z.do("flock f SH nb", None) == "ok", 3, "flock to go with its process")


def test_locks_of_dead_client_are_evicted(lc, lockers):
    c = lc.mount(name="doomed")
    pa = c / "evict"
    pa.write_bytes(b"y" * 100)
    pb = lc.mounts[1] / "evict"
    x, y, z = lockers(pa), lockers(pb), lockers(pb)
    x.do("setlk f W 0 0")
    x.do(f"open g {pa}")
    x.do("flock g EX")
    y.do("setlk f W 0 1", EAGAIN)
    z.send("setlkw f W 0 1")              # parked on the MDS behind the doomed lock
    c.proc.kill(signal.SIGKILL)           # the client dies with its locks held
    t0 = time.monotonic()
    assert not z.answered(EVICT_S - 0.5)  # kept for the eviction timeout...
    assert z.recv(EVICT_S + 5) == "ok"    # ...then given to the waiter, with nobody asking
    assert time.monotonic() - t0 >= EVICT_S - 0.5
    y.do("setlk f W 0 1", EAGAIN)
    z.do("setlk f U 0 0")
    y.do("setlk f W 0 1")
    y.do("flock f EX nb")
    assert "evicted client" in lc.mds.text()
    x.kill()
    subprocess.run(["umount", "-l", str(c.path)], capture_output=True)
    lc.mounts.remove(c)


def test_noflock_and_localflock(lc, lockers):
    n = lc.mount(opts=["noflock"], name="noflock")
    loc = lc.mount(opts=["localflock"], name="localflock")
    try:
        (n / "modes").write_bytes(b"z")
        x = lockers(n / "modes")
        x.do("setlk f W 0 0", f"err {errno.ENOSYS}")
        x.do("flock f EX nb", f"err {errno.ENOSYS}")
        x.do("getlk f W 0 0", f"err {errno.ENOSYS}")
        # localflock: this client's processes exclude each other, other clients don't see it
        p, q, r = lockers(loc / "modes"), lockers(loc / "modes"), lockers(lc.mounts[0] / "modes")
        p.do("setlk f W 0 0")
        q.do("setlk f W 0 0", EAGAIN)
        r.do("setlk f W 0 0")
        p.do("flock f EX nb")
        q.do("flock f EX nb", EAGAIN)
    finally:
        for m in (n, loc):
            m.unmount()
            lc.mounts.remove(m)
