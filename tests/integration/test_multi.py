"""Two mounts of one file system: close-to-open consistency between them."""
import errno
import mmap
import os
import time

import pytest


@pytest.fixture(scope="module")
def two(cluster):
    # attr_timeout=0 so the kernel does not answer from its own cache: we test the servers.
    a = cluster.mount(opts=["attr_timeout=0"], name="mnt-a")
    b = cluster.mount(opts=["attr_timeout=0"], name="mnt-b")
    yield a.path, b.path
    for m in (a, b):
        m.unmount()
        cluster.mounts.remove(m)


def retry(fn, timeout=3.0):
    """Entry caches of a mount may lag by up to attr_timeout; allow a short grace."""
    end = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except (AssertionError, OSError):
            if time.monotonic() > end:
                raise
            time.sleep(0.1)


def test_write_close_then_read_elsewhere(two):
    a, b = two
    data = os.urandom(5 * 1024 * 1024 + 3)
    with open(os.path.join(a, "shared"), "wb") as f:
        f.write(data)
    with open(os.path.join(b, "shared"), "rb") as f:
        assert f.read() == data
    # Overwrite part of it from B; A sees it on its next open.
    with open(os.path.join(b, "shared"), "r+b") as f:
        f.seek(1000)
        f.write(b"B" * 100000)
    want = data[:1000] + b"B" * 100000 + data[101000:]
    with open(os.path.join(a, "shared"), "rb") as f:
        assert f.read() == want


def test_append_grows_size_everywhere(two):
    a, b = two
    pa, pb = os.path.join(a, "grow"), os.path.join(b, "grow")
    with open(pa, "wb") as f:
        f.write(b"a" * 1000)
    with open(pb, "ab") as f:
        f.write(b"b" * 3000)
    assert os.stat(pa).st_size == 4000
    with open(pa, "rb") as f:
        assert f.read() == b"a" * 1000 + b"b" * 3000


def test_mapping_of_an_append_descriptor_never_appends_its_pages(two):
    """Pages written through a shared mapping go to their offset: an O_APPEND descriptor
    either refuses the shared mapping (ENODEV: nacre-mount opens it for direct I/O) or
    writes the page where it is mapped, never at the end of the file. Reads through the
    descriptor see what it appended."""
    a, b = two
    pa, pb = os.path.join(a, "mapped"), os.path.join(b, "mapped")
    with open(pa, "wb") as f:
        f.write(b"x" * 8192)
    fd = os.open(pa, os.O_RDWR | os.O_APPEND)
    try:
        assert os.write(fd, b"tail") == 4
        assert os.pread(fd, 8196, 0) == b"x" * 8192 + b"tail"
        try:
            m = mmap.mmap(fd, 8192, mmap.MAP_SHARED)
        except OSError as e:
            assert e.errno == errno.ENODEV
        else:
            m[0:4] = b"MMAP"
            m.flush()
            m.close()
            os.fsync(fd)
    finally:
        os.close(fd)
    with open(pb, "rb") as f:
        data = f.read()
    assert len(data) == 8196 and data[8192:] == b"tail"
    assert data[:4] in (b"xxxx", b"MMAP") and data[4:8192] == b"x" * 8188


def test_namespace_changes_are_seen(two):
    a, b = two
    os.mkdir(os.path.join(a, "dir"))
    for i in range(50):
        with open(os.path.join(a, "dir", f"f{i}"), "wb") as f:
            f.write(str(i).encode())
    assert sorted(os.listdir(os.path.join(b, "dir"))) == sorted(f"f{i}" for i in range(50))
    os.rename(os.path.join(b, "dir", "f0"), os.path.join(b, "dir", "renamed"))
    os.unlink(os.path.join(b, "dir", "f1"))

    def seen():
        names = os.listdir(os.path.join(a, "dir"))
        assert "renamed" in names and "f0" not in names and "f1" not in names
        with open(os.path.join(a, "dir", "renamed"), "rb") as f:
            assert f.read() == b"0"
    retry(seen)

    def gone():
        try:
            os.stat(os.path.join(a, "dir", "f1"))
        except OSError as e:
            assert e.errno == errno.ENOENT
            return
        raise AssertionError("f1 still visible on mount A")
    retry(gone)


def test_truncate_seen_elsewhere(two):
    a, b = two
    with open(os.path.join(a, "t"), "wb") as f:
        f.write(os.urandom(300000))
    os.truncate(os.path.join(b, "t"), 1000)
    retry(lambda: (assert_eq(os.stat(os.path.join(a, "t")).st_size, 1000)))
    with open(os.path.join(a, "t"), "rb") as f:
        assert len(f.read()) == 1000


def test_close_after_another_mounts_truncate(two):
    """A writer's close reports only what it wrote since its size last reached the MDS: a
    truncate by another mount in between stands (the close used to report its old end,
    and the file grew back, zeros where the data was; a late release did it too)."""
    a, b = two
    pa, pb = os.path.join(a, "cut-late"), os.path.join(b, "cut-late")
    data = os.urandom(300000)
    fd = os.open(pa, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
        os.truncate(pb, 1000)
    finally:
        os.close(fd)
    assert os.stat(pb).st_size == 1000
    with open(pb, "rb") as f:
        assert f.read() == data[:1000]
    # a write after the truncate is reported by the next close: the file grows to it
    fd = os.open(pa, os.O_RDWR)
    try:
        os.fsync(fd)
        os.truncate(pb, 500)
        os.pwrite(fd, b"end", 2000)
    finally:
        os.close(fd)
    retry(lambda: assert_eq(os.stat(pb).st_size, 2003))
    with open(pb, "rb") as f:
        got = f.read()
    assert got[:500] == data[:500] and got[500:2000] == bytes(1500) and got[2000:] == b"end"


def assert_eq(x, y):
    assert x == y, f"{x} != {y}"
