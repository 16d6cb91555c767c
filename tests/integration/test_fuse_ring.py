"""FUSE over io_uring (src/fuse/ring.c): a mount serves the kernel's requests through ring
entries where the kernel offers them (checked against a /dev/fuse mount of the same file
system), falls back to /dev/fuse where it does not, grows its entries for requests that wait,
refuses an upgrade it cannot hand over, and a subset of the suite passes on the transport the
rest of this run does not use."""
import errno
import fcntl
import mmap
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import (FUSE_RING_PARAM, binary, free_port, fuse_ring, session_ring_mode,
                      wait_for)

pytestmark = pytest.mark.skipif(not FUSE_RING_PARAM.exists(),
                                reason="this kernel has no FUSE over io_uring (Linux 6.14+)")

HERE = Path(__file__).resolve().parent
# What the subset covers: data through striping and write-behind, POSIX semantics, locks,
# the tools (cp, tar, rsync, dd...).
SUBSET = ["test_data.py", "test_posix.py", "test_locks.py", "test_writeback.py", "test_tools.py"]


def metric(port, name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    m = re.search(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M)
    assert m, f"{name} missing from the mount's metrics"
    return float(m.group(1))


def ring_mount(c, name=None, opts=()):
    """A mount made while the kernel offers the ring, with its metrics port."""
    port = free_port()
    with fuse_ring(True):
        m = c.mount(opts=[f"metrics_addr=127.0.0.1:{port}", *opts], name=name)
    # the line is written once the kernel's INIT was answered, which may come after the
    # mount point appeared (a loaded machine)
    wait_for(lambda: "FUSE transport: " in m.proc.text(), 10, "the FUSE transport line")
    assert "FUSE transport: io_uring" in m.proc.text(), m.proc.text()
    return m, port


def drop_caches():
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3")


def test_ring_serves_what_a_dev_fuse_mount_sees(make_cluster, nacre_cli):
    c = make_cluster(osts=4)
    m, port = ring_mount(c)
    with fuse_ring(True):
        other = c.mount(opts=["io_uring=off"], name="mnt-devfuse")
    assert "FUSE transport: /dev/fuse (-o io_uring=off)" in other.proc.text()
    assert metric(port, "nacre_client_fuse_ring_entries") >= 2
    before = metric(port, "nacre_client_fuse_ring_requests_total")

    # data: a striped file written in odd sizes, overwritten inside, extended with a hole
    d = m.path / "striped"
    os.mkdir(d)
    nacre_cli("setstripe", "-c", 4, "-S", "64K", d, check=True)
    data = bytearray(os.urandom((24 << 20) + 123))
    sizes = [1, 4095, 65536, 1 << 20, 3 << 20, 777]
    with open(d / "f", "wb") as f:
        off, i = 0, 0
        while off < len(data):
            n = sizes[i % len(sizes)]
            f.write(data[off:off + n])
            off, i = off + n, i + 1
    patch = os.urandom(300 << 10)
    fd = os.open(d / "f", os.O_RDWR)
    os.pwrite(fd, patch, (5 << 20) + 17)
    data[(5 << 20) + 17:(5 << 20) + 17 + len(patch)] = patch
    os.ftruncate(fd, len(data) + (2 << 20))
    data += bytes(2 << 20)
    mm = mmap.mmap(fd, 1 << 20)  # shared writes through the page cache, written back
    mm[4096:8192] = b"m" * 4096
    mm.flush()
    mm.close()
    data[4096:8192] = b"m" * 4096
    os.fsync(fd)
    os.close(fd)
    assert (other.path / "striped" / "f").read_bytes() == bytes(data)
    drop_caches()
    assert (d / "f").read_bytes() == bytes(data)

    # names: more entries than one readdir reply holds, renames, links, xattrs
    t = m.path / "tree"
    os.mkdir(t)
    for i in range(1500):
        (t / f"n{i:04d}").write_bytes(b"%d" % i)
    for i in range(0, 1500, 2):
        os.rename(t / f"n{i:04d}", t / f"r{i:04d}")
    for i in range(0, 1500, 3):
        os.unlink(t / (f"r{i:04d}" if i % 2 == 0 else f"n{i:04d}"))
    os.symlink("r0002", t / "sym")
    os.link(t / "r0002", t / "hard")
    os.setxattr(t / "r0002", "user.k", b"v" * 300)
    seen = sorted(os.listdir(t))
    assert sorted(os.listdir(other.path / "tree")) == seen
    assert len(seen) == 1500 - 500 + 2
    assert os.readlink(other.path / "tree" / "sym") == "r0002"
    assert os.stat(other.path / "tree" / "hard").st_nlink == 2
    assert os.getxattr(other.path / "tree" / "r0002", "user.k") == b"v" * 300
    assert (other.path / "tree" / "n1499").read_bytes() == b"1499"
    with pytest.raises(FileNotFoundError):
        os.stat(m.path / "tree" / "n0003")
    with pytest.raises(OSError) as e:
        os.rmdir(m.path / "tree")
    assert e.value.errno == errno.ENOTEMPTY

    served = metric(port, "nacre_client_fuse_ring_requests_total") - before
    assert served >= 1500 * 2, f"only {served} requests went through the ring"


@pytest.fixture
def max_pages_1024():
    """fs.fuse.max_pages_limit at 1024 (4 MiB requests) for mounts made meanwhile."""
    limit = Path("/proc/sys/fs/fuse/max_pages_limit")
    if not limit.exists():
        pytest.skip("this kernel has no fs.fuse.max_pages_limit")
    old = limit.read_text().strip()
    limit.write_text("1024")
    yield
    limit.write_text(old)


def test_requests_above_1mib_on_the_ring(make_cluster, max_pages_1024):
    c = make_cluster(osts=2)
    m, port = ring_mount(c)
    assert "requests up to 4096 KiB" in m.proc.text(), m.proc.text()
    with fuse_ring(True):
        other = c.mount(opts=["io_uring=off"], name="mnt-devfuse")  # libfuse's 1 MiB
    data = os.urandom(16 << 20)
    with open(m.path / "big", "wb") as f:
        for off in range(0, len(data), 4 << 20):
            f.write(data[off:off + (4 << 20)])
    assert metric(port, "nacre_client_write_max_bytes") == 4 << 20
    assert (other.path / "big").read_bytes() == data
    (other.path / "back").write_bytes(data[::-1])
    drop_caches()
    with open(m.path / "back", "rb", buffering=0) as f:
        assert f.read() == data[::-1]
    assert metric(port, "nacre_client_read_max_bytes") > 1 << 20


def test_stopped_and_continued_mount_keeps_serving_4mib_requests(make_cluster, max_pages_1024):
    """libfuse's /dev/fuse readers wait with a buffer made before INIT raised max_write to
    4 MiB; SIGSTOP and SIGCONT restart their read, which the kernel then refuses (EINVAL):
    the mount must read again with a buffer it takes, not end its loop and unmount."""
    c = make_cluster(osts=1)
    m, _ = ring_mount(c)
    assert "requests up to 4096 KiB" in m.proc.text(), m.proc.text()
    (m.path / "d").mkdir()
    (m.path / "d" / "f").write_bytes(b"before")
    time.sleep(0.5)  # every /dev/fuse reader waits in the kernel
    for _ in range(3):
        os.kill(m.proc.p.pid, signal.SIGSTOP)
        time.sleep(0.3)
        os.kill(m.proc.p.pid, signal.SIGCONT)
        time.sleep(0.3)
    assert m.proc.p.poll() is None, m.proc.text()
    assert (m.path / "d" / "f").read_bytes() == b"before"
    (m.path / "d" / "g").write_bytes(os.urandom(8 << 20))
    assert os.stat(m.path / "d" / "g").st_size == 8 << 20
    assert "reading device" not in m.proc.text(), m.proc.text()


def test_dev_fuse_where_the_kernel_offers_no_ring(make_cluster):
    c = make_cluster(osts=1)
    port = free_port()
    with fuse_ring(False):
        m = c.mount(opts=[f"metrics_addr=127.0.0.1:{port}"])
    assert "FUSE transport: /dev/fuse (the kernel offers no io_uring" in m.proc.text()
    data = os.urandom(3 << 20)
    (m.path / "f").write_bytes(data)
    drop_caches()
    assert (m.path / "f").read_bytes() == data
    assert metric(port, "nacre_client_fuse_ring_requests_total") == 0
    assert metric(port, "nacre_client_fuse_ring_entries") == 0


def test_bad_io_uring_option_is_refused(make_cluster):
    c = make_cluster(osts=1)
    mnt = c.dir / "bad"
    mnt.mkdir()
    r = subprocess.run([binary("nacre-mount"), c.spec, str(mnt), "-o",
                        f"key_file={c.key},io_uring=maybe", "-f"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert "io_uring=maybe: use on" in r.stderr


WAITER = r"""
import fcntl, os, sys, time
path, n = sys.argv[1], int(sys.argv[2])
os.sched_setaffinity(0, {0})  # every request on queue 0
fd = os.open(path, os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX)  # the parent's lock
print("holding", flush=True)
kids = []
for i in range(n):
    pid = os.fork()
    if pid == 0:
        fd = os.open(path, os.O_RDWR)
        fcntl.lockf(fd, fcntl.LOCK_EX)  # waits in the mount, on a ring entry
        text = os.pread(fd, 1 << 16, 0)
        time.sleep(0.01)
        os.pwrite(fd, text + b"%d\n" % i, 0)  # read-modify-write: loses lines without the lock
        fcntl.lockf(fd, fcntl.LOCK_UN)
        os._exit(0)
    kids.append(pid)
sys.stdin.readline()
fcntl.lockf(fd, fcntl.LOCK_UN)
bad = sum(os.waitpid(k, 0)[1] != 0 for k in kids)
print("done", bad, flush=True)
"""


def test_lock_waiters_get_entries_beyond_the_first(make_cluster):
    c = make_cluster(osts=1)
    m, port = ring_mount(c)
    start = metric(port, "nacre_client_fuse_ring_entries")
    f = m.path / "locked"
    f.write_bytes(b"")
    n = 20
    p = subprocess.Popen([sys.executable, "-c", WAITER, str(f), str(n)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "holding"
        # each waiter holds an entry of queue 0, which grows past its first 4 and keeps one
        # free; a waiter the kernel queued while none was free is handed one by the watcher
        wait_for(lambda: metric(port, "nacre_client_fuse_ring_entries") >= start + n - 3, 30,
                 "queue 0 to grow an entry per lock waiter")
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.stdout.readline().split() == ["done", "0"]
        assert p.wait(60) == 0
    finally:
        if p.poll() is None:
            p.kill()
    assert sorted(int(x) for x in f.read_text().split()) == list(range(n))


def test_upgrade_is_refused_on_the_ring(make_cluster):
    c = make_cluster(osts=1)
    m, _ = ring_mount(c)
    r = subprocess.run([binary("nacre-mount"), "--upgrade", str(m.path), "-f"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "io_uring" in r.stderr and "io_uring=off" in r.stderr, r.stderr
    assert m.proc.alive()
    (m.path / "after").write_bytes(b"still served")
    drop_caches()
    assert (m.path / "after").read_bytes() == b"still served"


def test_killed_mount_fails_calls_instead_of_hanging(make_cluster):
    """kill -9: calls fail at once (ENOTCONN or ECONNABORTED), none hangs."""
    c = make_cluster(osts=1)
    m, _ = ring_mount(c)
    (m.path / "f").write_bytes(b"x")
    m.proc.kill(signal.SIGKILL)
    t = time.monotonic()
    r = subprocess.run(["stat", str(m.path / "f")], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    # ENOTCONN, or ECONNABORTED for a request the ring held when the connection went
    assert ("Transport endpoint is not connected" in r.stderr or
            "Software caused connection abort" in r.stderr), r.stderr
    assert time.monotonic() - t < 10


def test_subset_on_the_other_transport():
    """The rest of this run uses one transport; this runs SUBSET on the other."""
    other = "off" if session_ring_mode() == "on" else "on"
    env = dict(os.environ, NACRE_TEST_FUSE_RING=other)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        *[str(HERE / t) for t in SUBSET]],
                       env=env, capture_output=True, text=True, timeout=1200)
    tail = r.stdout[-6000:] + r.stderr[-2000:]
    assert r.returncode == 0, f"the subset failed with NACRE_TEST_FUSE_RING={other}:\n{tail}"
    assert re.search(r"\d+ passed", r.stdout), tail
