"""What a caller who does not own a file may do to it (write a setuid file, set times,
truncate), and open files whose name went away (rename over an open file, closes of an
unlinked file after an MDS restart and from several threads at once)."""
import ctypes
import errno
import os
import sys
import subprocess
import signal
import stat
import threading
import time

from conftest import wait_for
from test_posix import _as_user


def test_write_by_non_owner_drops_setuid(mnt):
    """A writer who is not the owner may write a setuid file; the write drops setuid (the
    kernel sends that as a chmod with the writer's credentials)."""
    d = os.path.join(mnt, "suidw")
    os.mkdir(d)
    os.chmod(d, 0o777)
    p = os.path.join(d, "f")
    with open(p, "wb") as f:
        f.write(b"x")
    os.chmod(p, 0o6777)

    def w():
        fd = os.open(p, os.O_WRONLY)
        try:
            os.write(fd, b"y")
        finally:
            os.close(fd)
    assert _as_user(w) == 0
    assert stat.S_IMODE(os.stat(p).st_mode) & 0o4000 == 0


def test_times_by_non_owner(mnt):
    """UTIME_NOW needs write permission, any explicit time ownership; O_TRUNC and truncate
    need write permission only."""
    d = os.path.join(mnt, "mixt")
    os.mkdir(d)
    p = os.path.join(d, "f")
    with open(p, "wb") as f:
        f.write(b"x")
    os.chmod(p, 0o666)
    # UTIME_NOW for both: allowed with write permission
    assert _as_user(lambda: os.utime(p)) == 0
    # one explicit time: owner only
    libc = ctypes.CDLL(None, use_errno=True)

    class TS(ctypes.Structure):
        _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]
    UTIME_NOW = (1 << 30) - 1

    def mixed():
        ts = (TS * 2)(TS(1000, 0), TS(0, UTIME_NOW))
        if libc.utimensat(-100, os.fsencode(p), ts, 0) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
    assert _as_user(mixed) == errno.EPERM
    assert _as_user(lambda: os.truncate(p, 0)) == 0

    def otrunc():
        fd = os.open(p, os.O_WRONLY | os.O_TRUNC)
        os.close(fd)
    assert _as_user(otrunc) == 0


def test_rename_over_open_file_keeps_its_data(mnt):
    d = os.path.join(mnt, "rnv")
    os.mkdir(d)
    a, b = os.path.join(d, "a"), os.path.join(d, "b")
    with open(b, "wb") as f:
        f.write(b"victim" * 100000)
    with open(a, "wb") as f:
        f.write(b"new")
    fd = os.open(b, os.O_RDONLY)
    os.rename(a, b)
    time.sleep(1.0)  # time for the destroy thread, if it wrongly had the objects
    assert os.pread(fd, 6, 599994) == b"victim"
    os.close(fd)
    with open(b, "rb") as f:
        assert f.read() == b"new"


ORPHAN_HOLDER = r"""
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"data")
os.fsync(fd)
os.unlink(sys.argv[1])
os.write(fd, b"more")
print("ready", flush=True)
sys.stdin.readline()
data = os.pread(fd, 100, 0)
os.close(fd)
print(data.decode(), flush=True)
"""


def test_close_of_orphan_after_mds_restart(make_cluster):
    """An open unlinked file outlives an MDS restart (its mount re-opens it during recovery):
    its data reads back through the fd, and close(2) succeeds. The file is held by a child:
    a process forking the MDS while it holds a FUSE file would flush it from the fork."""
    c = make_cluster(osts=1, oss=1)
    m = c.mounts[0].path
    p = subprocess.Popen([sys.executable, "-c", ORPHAN_HOLDER, str(m / "orphan")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        c.mds.kill(signal.SIGKILL)
        c.start_mds(fmt=False)
        p.stdin.write("\n")
        p.stdin.flush()
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "datamore", out
    finally:
        if p.poll() is None:
            p.kill()
    assert "close of" not in c.logs()


def test_concurrent_last_closes_of_orphan(cluster, mnt):
    """Handles of an unlinked file closed at once: the close that finds the inode already
    destroyed by another succeeds."""
    d = os.path.join(mnt, "cco")
    os.mkdir(d)
    errs = []
    for i in range(30):
        p = os.path.join(d, f"f{i}")
        fds = [os.open(p, os.O_RDWR | os.O_CREAT, 0o644) for _ in range(4)]
        for fd in fds:
            os.write(fd, b"x")
        os.unlink(p)
        bar = threading.Barrier(len(fds))

        def closer(fd):
            bar.wait()
            try:
                os.close(fd)
            except OSError as e:
                errs.append(e)
        ts = [threading.Thread(target=closer, args=(fd,)) for fd in fds]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errs
    log = (cluster.dir / "mnt0.log").read_text()
    assert "close of" not in log, log[-2000:]
