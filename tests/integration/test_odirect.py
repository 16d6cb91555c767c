"""Applications' O_DIRECT and AIO on a mount (as xfstests generic/451, 465 and 525 exercise
them): an asynchronous direct write is what buffered readers of the same client see next,
even when they loaded pages while it ran; a reader that keeps a file open sees the bytes a
direct writer of the same client appended, or another client appended and closed; and a write past what the OSTs can store fails with EFBIG at once
instead of vanishing, while the last byte nacre can store reads back through a fresh mount
(and an OSS refuses an OST whose file system could not store it).
The AIO patterns run in build/dio-probe (tests/unit/dio_probe.c)."""
import errno
import mmap
import os
import subprocess

from conftest import binary, wait_for

MiB = 1 << 20
# common/layout.h: LAYOUT_OBJ_MAXBYTES, what an object may hold (ext4 with 4 KiB blocks)
OBJ_MAX = (1 << 44) - 4096


def probe(*args, timeout=180):
    r = subprocess.run([binary("dio-probe"), *map(str, args)], capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, f"dio-probe {' '.join(map(str, args))}: {r.stdout}{r.stderr}"


def test_aio_direct_overwrite_is_seen_by_buffered_and_direct_reads(cluster, mnt):
    """generic/451: two processes read the file through the page cache in a loop while AIO
    O_DIRECT writes flip it between two patterns; after each write, a buffered and a direct
    read must both return the new pattern (pages loaded during the write must not stay)."""
    size = 640 * 1024
    probe("cycle", mnt / "flip", size, 60, 2)
    other = cluster.mount()
    assert (other / "flip").read_bytes() == b"\x55" * size  # loop 60 wrote pattern 0x55


def test_direct_append_is_seen_by_a_direct_reader(cluster, mnt):
    """generic/465: a thread reads the next block with O_DIRECT (another fd) until it gets
    bytes while the main thread appends that block with O_DIRECT, synchronously and with
    AIO: the reader must get the appended bytes, not end of file forever."""
    for mode in ("sync", "aio"):
        probe("append", mnt / f"append-{mode}", MiB, 8, mode, 15)
        assert os.path.getsize(mnt / f"append-{mode}") == 8 * MiB
    other = cluster.mount()
    assert (other / "append-aio").read_bytes() == b"a" * (8 * MiB)


def test_a_reader_kept_open_sees_what_another_client_appended(cluster, mnt):
    """The same across clients: a reader that keeps the file open (through the page cache or
    with O_DIRECT) sees the size grow once the writer closed, and must then read the bytes
    too, not end of file for as long as it keeps the file open."""
    other = cluster.mount()
    for name, flags in (("buffered", 0), ("direct", os.O_DIRECT)):
        (mnt / f"grow-{name}").write_bytes(b"")
        fd = os.open(other / f"grow-{name}", os.O_RDONLY | flags)
        try:
            buf = mmap.mmap(-1, MiB)  # page aligned, as O_DIRECT wants
            assert os.preadv(fd, [buf], 0) == 0
            (mnt / f"grow-{name}").write_bytes(b"g" * MiB)
            wait_for(lambda: os.fstat(fd).st_size == MiB, 10, "the new size on the reader")
            assert os.preadv(fd, [buf], 0) == MiB, name
            assert buf[:] == b"g" * MiB
        finally:
            os.close(fd)


def max_file_size(stripe_size, stripe_count):
    """common/layout.c's layout_max_file_size."""
    return (OBJ_MAX // stripe_size) * stripe_size * stripe_count + OBJ_MAX % stripe_size


def efbig(fn, *args):
    try:
        fn(*args)
    except OSError as e:
        return e.errno == errno.EFBIG
    return False


def test_a_write_past_what_the_osts_store_fails_with_efbig(make_cluster, nacre_cli):
    """generic/525: a byte written at 2^63 - 2 came back as 0 after a remount (the OST's file
    system refused it after write(2) had succeeded). Past the layout's limit a write and a
    truncate fail with EFBIG and the size does not move; the last byte below it is stored."""
    c = make_cluster(osts=2)
    m = c.mount()
    f = m / "huge"
    nacre_cli("setstripe", "-c", "2", "-S", "1M", f, check=True)
    limit = max_file_size(MiB, 2)
    fd = os.open(f, os.O_RDWR)
    try:
        assert efbig(os.pwrite, fd, b"a", (1 << 63) - 2)
        assert efbig(os.pwrite, fd, b"a", limit)
        assert efbig(os.ftruncate, fd, (1 << 63) - 1)
        assert efbig(os.ftruncate, fd, limit + 1)
        assert os.fstat(fd).st_size == 0
        assert os.pwrite(fd, b"xy", limit - 1) == 1  # a short write up to the limit
        assert os.fstat(fd).st_size == limit
    finally:
        os.close(fd)
    # O_APPEND at the limit: the MDS refuses the reservation
    fd = os.open(f, os.O_WRONLY | os.O_APPEND)
    try:
        assert efbig(os.write, fd, b"z")
    finally:
        os.close(fd)
    m.unmount()
    other = c.mount()
    assert os.path.getsize(other / "huge") == limit
    fd = os.open(other / "huge", os.O_RDONLY)
    try:
        assert os.pread(fd, 2, limit - 1) == b"x"
        assert os.pread(fd, 1, limit - 2) == b"\0"
    finally:
        os.close(fd)
    # a file of one stripe: the limit is what one object holds
    g = other / "one"
    nacre_cli("setstripe", "-c", "1", "-S", "1M", g, check=True)
    fd = os.open(g, os.O_RDWR)
    try:
        assert efbig(os.pwrite, fd, b"a", OBJ_MAX)
        assert os.pwrite(fd, b"b", OBJ_MAX - 1) == 1
    finally:
        os.close(fd)
    with open(c.mount() / "one", "rb") as r:
        r.seek(OBJ_MAX - 1)
        assert r.read() == b"b"


def test_an_ost_whose_file_system_holds_less_is_refused(tmp_path):
    """ext4 with 1 KiB blocks holds files of 4 TiB: clients would write behind up to 16 TiB
    into its objects and learn of the refusal only after write(2) returned. nacre-oss refuses
    such an OST at start, before formatting it, naming the directory."""
    img, fs = tmp_path / "img", tmp_path / "ext4-1k"
    fs.mkdir()
    subprocess.run(["truncate", "-s", "64M", str(img)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-b", "1024", str(img)], check=True,
                   capture_output=True)
    subprocess.run(["mount", "-o", "loop", str(img), str(fs)], check=True)
    try:
        key = tmp_path / "cluster.key"
        key.write_text(os.urandom(32).hex())
        key.chmod(0o600)
        r = subprocess.run([binary("nacre-oss"), "--fsname", "tiny", "--mds", "127.0.0.1:1",
                            "--listen", "127.0.0.1:0", "--key-file", str(key), "--ost",
                            f"0:{fs}/ost0", "--format"], capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 1
        assert f"the file system of {fs}/ost0 cannot hold files of {OBJ_MAX} bytes" in r.stderr
        assert os.listdir(fs / "ost0") == []
    finally:
        subprocess.run(["umount", str(fs)], check=True)
