"""Write-behind and readahead through FUSE: data written on one mount is on the OSTs when
close returns (close-to-open with buffered writes), reads of a stream see every local
write, and an OSS lost while data is buffered is reported (EIO) by write/fsync/close
without damaging anything else."""
import errno
import os
import signal
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
