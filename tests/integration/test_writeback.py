"""Write-behind and readahead through FUSE: data written on one mount is on the OSTs when
close returns (close-to-open with buffered writes), reads of a stream see every local
write, and an OSS lost while data is buffered is reported (EIO) by write/fsync/close
without damaging anything else."""
import errno
import fcntl
import mmap
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from conftest import wait_for

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def two(cluster):
    a = cluster.mount(opts=["attr_timeout=0"], name="wb-a")
    b = cluster.mount(opts=["attr_timeout=0"], name="wb-b")
    yield a.path, b.path
    for m in (a, b):
        m.unmount()
        cluster.mounts.remove(m)


def write_pattern(path, chunks):
    """Writes (offset, bytes) pieces in order through one fd and closes it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for off, data in chunks:
            assert os.pwrite(fd, data, off) == len(data)
    finally:
        os.close(fd)


def apply(buf, chunks):
    for off, data in chunks:
        if off > len(buf):
            buf.extend(bytes(off - len(buf)))
        buf[off:off + len(data)] = data
    return buf


@pytest.mark.parametrize("stripes", [1, 4])
def test_two_mounts_see_each_others_data_after_close(two, nacre_cli, stripes):
    a, b = two
    name = f"wb-shared-{stripes}"
    pa, pb = os.path.join(a, name), os.path.join(b, name)
    nacre_cli("setstripe", "-c", stripes, pa, check=True)
    # Big sequential writes, then small unaligned ones over them and past the end.
    chunks = [(i * MIB, os.urandom(MIB)) for i in range(24)]
    chunks += [(7 * MIB + 12345, os.urandom(100)), (3, os.urandom(70000)),
               (24 * MIB + 5000, os.urandom(4096)), (11 * MIB - 10, os.urandom(20))]
    write_pattern(pa, chunks)
    want = apply(bytearray(), chunks)
    with open(pb, "rb") as f:
        got = f.read()
    assert len(got) == len(want) and got == want
    # B overwrites a middle part and appends; A sees both on its next open.
    more = [(5 * MIB + 1, os.urandom(3 * MIB)), (len(want), os.urandom(MIB + 7))]
    write_pattern(pb, more)
    want = apply(want, more)
    with open(pa, "rb") as f:
        got = f.read()
    assert len(got) == len(want) and got == want
    # Re-reading on A (page cache kept or not) gives the same bytes.
    with open(pa, "rb") as f:
        assert f.read() == want


def test_read_your_writes_while_streaming(two):
    a, _ = two
    path = os.path.join(a, "wb-ryw")
    data = bytearray(os.urandom(32 * MIB))
    with open(path, "wb") as f:
        f.write(data)
    fd = os.open(path, os.O_RDWR)
    try:
        # Start a sequential stream (readahead fills ahead), write ahead of it, read on.
        for off in range(0, 8 * MIB, MIB):
            assert os.pread(fd, MIB, off) == data[off:off + MIB]
        patch = os.urandom(5000)
        os.pwrite(fd, patch, 12 * MIB + 3)
        data[12 * MIB + 3:12 * MIB + 5003] = patch
        # A second fd on the same file sees it too (through another nacre handle).
        with open(path, "rb") as g:
            g.seek(12 * MIB)
            assert g.read(MIB) == data[12 * MIB:13 * MIB]
        for off in range(8 * MIB, 32 * MIB, MIB):
            assert os.pread(fd, MIB, off) == data[off:off + MIB], off
    finally:
        os.close(fd)


def test_oss_killed_with_dirty_data(make_cluster, nacre_cli):
    c = make_cluster(osts=2, oss=2)
    m = c.mount(opts=["timeout=3", "recovery_timeout=3"], name="mnt-wb")
    good, lost = m.path / "on-ost0", m.path / "on-ost1"
    nacre_cli("setstripe", "-c", 1, "-i", 0, good, check=True)
    nacre_cli("setstripe", "-c", 1, "-i", 1, lost, check=True)
    good_data = os.urandom(6 * MIB + 11)
    with open(good, "wb") as f:
        f.write(good_data)

    fd = os.open(lost, os.O_WRONLY)
    # 2 MiB: less than one RPC, so it stays buffered in the client.
    assert os.write(fd, os.urandom(2 * MIB)) == 2 * MIB
    c.oss[1].kill(signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(OSError) as ei:
        os.fsync(fd)
    assert ei.value.errno == errno.EIO, ei.value
    assert time.monotonic() - t0 < 30
    # The next write says so too (or is buffered and fails later), and close reports it.
    try:
        os.write(fd, b"x" * 4096)
    except OSError as e:
        assert e.errno == errno.EIO, e
    with pytest.raises(OSError) as ei:
        os.close(fd)
    assert ei.value.errno == errno.EIO, ei.value

    # Nothing else is damaged: the other OST's file reads back, new writes there work.
    with open(good, "rb") as f:
        assert f.read() == good_data
    more = os.urandom(3 * MIB)
    with open(good, "ab") as f:
        f.write(more)
    with open(good, "rb") as f:
        assert f.read() == good_data + more

    # With the OSS back, the lost file can be written and read again.
    c.start_oss(1, fmt=False)
    c.wait_osts_up()
    fresh = os.urandom(MIB + 3)

    def rewrite():
        try:
            with open(lost, "wb") as f:
                f.write(fresh)
            with open(lost, "rb") as f:
                return f.read() == fresh
        except OSError:
            return False
    wait_for(rewrite, 30, "the file on the restarted OSS to be writable again", interval=0.5)


# A writer that keeps its descriptor open: one command a line on stdin ("w OFF LEN SEED",
# "lock", "unlock", "fsync", "close"), "ok" on stdout after each. It never forks, so no
# close of an inherited descriptor flushes behind the test's back.
HOLDER = r"""
import fcntl, os, random, sys
fd = os.open(sys.argv[1], os.O_RDWR)
for line in sys.stdin:
    cmd = line.split()
    if cmd[0] == "w":
        off, n, seed = (int(x) for x in cmd[1:])
        os.pwrite(fd, random.Random(seed).randbytes(n), off)
    elif cmd[0] == "lock":
        fcntl.lockf(fd, fcntl.LOCK_EX)
    elif cmd[0] == "unlock":
        fcntl.lockf(fd, fcntl.LOCK_UN)
    elif cmd[0] == "fsync":
        os.fsync(fd)
    elif cmd[0] == "close":
        os.close(fd)
    print("ok", flush=True)
"""


class Holder:
    def __init__(self, path):
        self.want = bytearray()
        self.p = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def do(self, *cmd):
        self.p.stdin.write(" ".join(str(c) for c in cmd) + "\n")
        self.p.stdin.flush()
        assert self.p.stdout.readline() == "ok\n", f"the writer failed at {cmd}"

    def write(self, off, n, seed):
        self.do("w", off, n, seed)
        apply(self.want, [(off, random.Random(seed).randbytes(n))])

    def end(self):
        self.p.stdin.close()
        assert self.p.wait(10) == 0


def read_all(path):
    with open(path, "rb") as f:
        return f.read()


def read_in_child(path):
    """The file's bytes as a fresh process reads them."""
    r = subprocess.run([sys.executable, "-c",
                        "import sys; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read())",
                        str(path)], capture_output=True, check=True)
    return r.stdout


def read_mmap(path):
    with open(path, "rb") as f:
        with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
            return bytes(m)


def test_open_writer_seen_at_once_on_the_same_mount(cluster):
    """Small writes through a descriptor that stays open are buffered in nacre-mount and the
    MDS has no size yet; every other process on that mount still sees them at once, through
    stat, a descriptor it opened before the writes, a new open, another process and mmap
    (a read there used to stop at the size its own handle knew: 0 bytes, and SIGBUS)."""
    mnt = cluster.mounts[0].path
    path = mnt / "wb-holder"
    path.write_bytes(b"")
    early = os.open(path, os.O_RDONLY)
    try:
        assert os.fstat(early).st_size == 0
        w = Holder(path)
        w.write(0, 512, 1)
        w.write(512, 512, 2)
        w.write(5000, 100000, 3)  # past a hole
        want = bytes(w.want)
        assert os.stat(path).st_size == len(want)
        assert os.pread(early, len(want) + 10, 0) == want
        assert read_all(path) == want
        assert read_in_child(path) == want
        assert read_mmap(path) == want
        # Locks order writer and reader (generic/131's pattern): what was written under
        # the writer's lock is there for a reader that takes the lock after it.
        w.do("lock")
        w.write(len(want), 3000, 4)
        w.write(7, 20, 5)
        w.do("unlock")
        want = bytes(w.want)
        with open(path, "rb") as f:
            fcntl.lockf(f, fcntl.LOCK_SH)
            assert f.read() == want
            fcntl.lockf(f, fcntl.LOCK_UN)
        assert os.pread(early, len(want) + 10, 0) == want
        w.do("close")
        w.end()
        assert read_all(path) == want
    finally:
        os.close(early)


def test_open_writer_seen_elsewhere_after_fsync_and_close(cluster):
    """Close-to-open between mounts with the writer's descriptor open: another mount (with
    the default attribute cache, which has cached the old size) sees the data once the
    writer fsyncs, and the rest once it closes."""
    a = cluster.mounts[0].path
    mb = cluster.mount(name="wb-other")
    try:
        pa, pb = a / "wb-holder-2", mb.path / "wb-holder-2"
        pa.write_bytes(b"")
        w = Holder(pa)
        w.write(0, 70000, 6)
        assert os.stat(pb).st_size == 0  # B's kernel now caches size 0
        w.do("fsync")
        assert read_all(pb) == bytes(w.want)
        w.write(70000, 1000, 7)
        w.write(100, 10, 8)
        w.do("close")
        assert read_all(pb) == bytes(w.want)
        assert os.stat(pb).st_size == len(w.want)
        w.end()
    finally:
        mb.unmount()
        cluster.mounts.remove(mb)


@pytest.mark.parametrize("how", ["truncate", "ftruncate"])
def test_truncate_of_buffered_file_updates_times(cluster, how):
    """generic/313: truncate(2) by path (and ftruncate) of a file whose writes are still
    buffered sets mtime and ctime, down and up, as on a local file system (the MDS had
    size 0 and saw no change, so mtime stayed)."""
    path = cluster.mounts[0].path / f"wb-trunc-{how}"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, b"this is a test string\0")
        before = os.fstat(fd)
        for size in (0, 123):
            time.sleep(1.05)
            if how == "truncate":
                os.truncate(path, size)
            else:
                os.ftruncate(fd, size)
            after = os.fstat(fd)
            assert after.st_size == size
            assert after.st_mtime_ns > before.st_mtime_ns, size
            assert after.st_ctime_ns > before.st_ctime_ns, size
            before = after
    finally:
        os.close(fd)
    assert path.read_bytes() == bytes(123)
