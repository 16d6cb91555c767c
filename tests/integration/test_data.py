"""Data integrity: striped layouts, a seeded fsx-style random workload, fio with verification,
and the bytes of every stripe object on the OST directories."""
import errno
import os
import random
import shutil
import subprocess
import zlib

import pytest

SIZES = {"64K": 65536, "1M": 1048576}


def parse_layout(text):
    """nacre.layout text: "stripe_count=4 stripe_size=1048576 ... gen=0 osts=0,1,2,3"."""
    kv = dict(item.split("=", 1) for item in text.split())
    osts = [int(x) for x in kv["osts"].split(",")] if kv.get("osts") else []
    return int(kv["stripe_count"]), int(kv["stripe_size"]), int(kv.get("gen", 0)), osts


def parse_fid(text):
    seq, oid, ver = text.strip().strip("[]").split(":")
    return int(seq, 16), int(oid, 16), int(ver, 16)


def object_path(ost_dir, fid, stripe, gen):
    """CONTRACTS.md: DIR/O/<hh>/<seq hex>-<oid hex>-<ver hex>-<stripe>-<gen>."""
    seq, oid, ver = fid
    hh = (oid ^ seq ^ (seq >> 32)) & 0xff
    return os.path.join(ost_dir, "O", f"{hh:02x}", f"{seq:x}-{oid:x}-{ver:x}-{stripe}-{gen}")


def expected_objects(data, count, size):
    """Splits file bytes into per-stripe object contents (RAID0)."""
    objs = [bytearray() for _ in range(count)]
    for off in range(0, len(data), size):
        objs[(off // size) % count] += data[off:off + size]
    return objs


def check_objects(cluster, path, data):
    count, size, gen, osts = parse_layout(os.getxattr(path, "nacre.layout").decode())
    fid = parse_fid(os.getxattr(path, "nacre.fid").decode())
    assert len(osts) == count
    for stripe, (ost, want) in enumerate(zip(osts, expected_objects(data, count, size))):
        p = object_path(cluster.ost_dir(ost), fid, stripe, gen)
        if not want:
            assert not os.path.exists(p) or os.path.getsize(p) == 0
            continue
        assert os.path.exists(p), (
            f"stripe {stripe} of {path} should be {p}; that directory holds "
            f"{os.listdir(os.path.dirname(p)) if os.path.isdir(os.path.dirname(p)) else 'nothing'}")
        with open(p, "rb") as f:
            got = f.read()
        assert got == bytes(want), f"object {p}: {len(got)} bytes, expected {len(want)}"


@pytest.mark.parametrize("size", ["64K", "1M"])
@pytest.mark.parametrize("count", [1, 2, 4])
def test_striped_file(cluster, mnt, nacre_cli, count, size):
    path = os.path.join(mnt, f"striped-{count}-{size}")
    nacre_cli("setstripe", "-c", count, "-S", size, path, check=True)
    assert nacre_cli("getstripe", "-c", path, check=True).stdout == f"{count}\n\n"
    assert nacre_cli("getstripe", "-S", path, check=True).stdout == f"{SIZES[size]}\n\n"
    s = SIZES[size]
    # Several full stripe rows, then a partial one ending mid-stripe.
    data = os.urandom(3 * count * s + s // 2 + 123)
    with open(path, "r+b") as f:
        f.write(data)
    with open(path, "rb") as f:
        assert f.read() == data
    assert os.path.getsize(path) == len(data)
    # Unaligned reads across stripe boundaries.
    fd = os.open(path, os.O_RDONLY)
    try:
        rng = random.Random(count * 31 + s)
        for _ in range(50):
            off = rng.randrange(len(data))
            n = rng.randrange(1, 3 * s)
            assert os.pread(fd, n, off) == data[off:off + n]
    finally:
        os.close(fd)
    check_objects(cluster, path, data)


def test_objects_after_truncate(cluster, mnt, nacre_cli):
    path = os.path.join(mnt, "trunc-objects")
    nacre_cli("setstripe", "-c", 4, "-S", "64K", path, check=True)
    data = os.urandom(10 * 65536 + 999)
    with open(path, "r+b") as f:
        f.write(data)
    os.truncate(path, 5 * 65536 + 7)
    data = data[:5 * 65536 + 7]
    with open(path, "rb") as f:
        assert f.read() == data
    check_objects(cluster, path, data)


def test_fsx_random_ops(mnt, nacre_cli):
    seed = int(os.environ.get("NACRE_FSX_SEED", random.randrange(1 << 30)))
    nops = int(os.environ.get("NACRE_FSX_OPS", 3000))
    print(f"fsx seed {seed} (rerun with NACRE_FSX_SEED={seed})")
    rng = random.Random(seed)
    path = os.path.join(mnt, "fsx")
    nacre_cli("setstripe", "-c", 4, "-S", "64K", path, check=True)
    maxlen = 4 << 20
    model = bytearray()
    fd = os.open(path, os.O_RDWR)
    log = []
    try:
        for i in range(nops):
            op = rng.choices(["write", "read", "truncate", "reopen", "fsync", "mapread"],
                             [40, 35, 8, 8, 4, 5])[0]
            if op == "write":
                off = rng.randrange(maxlen)
                n = min(rng.choice([1, 7, 4096, 65536, 65537, rng.randrange(1, 300000)]),
                        maxlen - off)
                buf = rng.randbytes(n)
                log.append(f"{i} write {off} {n}")
                assert os.pwrite(fd, buf, off) == n
                if off > len(model):
                    model += b"\0" * (off - len(model))
                model[off:off + n] = buf
            elif op == "read":
                off = rng.randrange(len(model) + 1)
                n = rng.randrange(1, 400000)
                log.append(f"{i} read {off} {n}")
                got = os.pread(fd, n, off)
                assert got == bytes(model[off:off + n]), \
                    f"op {i} (seed {seed}): read {off}+{n} differs; last ops: {log[-8:]}"
            elif op == "truncate":
                size = rng.randrange(maxlen)
                log.append(f"{i} truncate {size}")
                os.ftruncate(fd, size)
                if size < len(model):
                    del model[size:]
                else:
                    model += b"\0" * (size - len(model))
            elif op == "reopen":
                log.append(f"{i} reopen")
                os.close(fd)
                fd = os.open(path, os.O_RDWR)
            elif op == "fsync":
                log.append(f"{i} fsync")
                os.fsync(fd)
            else:
                log.append(f"{i} stat")
                assert os.fstat(fd).st_size == len(model), \
                    f"op {i} (seed {seed}): size {os.fstat(fd).st_size} != {len(model)}"
        os.close(fd)
        fd = -1
        assert os.path.getsize(path) == len(model)
        with open(path, "rb") as f:
            assert zlib.crc32(f.read()) == zlib.crc32(bytes(model)), f"seed {seed}: final differs"
    finally:
        if fd >= 0:
            os.close(fd)


def test_fio_verify(mnt, nacre_cli):
    fio = shutil.which("fio")
    assert fio, "fio is not installed (apt-get install fio)"
    d = os.path.join(mnt, "fio")
    os.makedirs(d, exist_ok=True)
    nacre_cli("setstripe", "-c", 2, "-S", "1M", d, check=True)
    r = subprocess.run([fio, "--name=nacre-verify", f"--directory={d}", "--rw=randwrite",
                        "--bs=64k", "--size=24m", "--numjobs=2", "--ioengine=psync",
                        "--verify=crc32c", "--do_verify=1", "--verify_fatal=1",
                        "--fsync_on_close=1", "--group_reporting", "--verify_state_save=0"],
                       capture_output=True, text=True, timeout=300, cwd=d)
    assert r.returncode == 0, f"fio failed:\n{r.stdout}\n{r.stderr}"
    assert "verify" not in r.stderr.lower() or "bad" not in r.stderr.lower(), r.stderr


# ---- sparse files: st_blocks, fallocate, SEEK_DATA/SEEK_HOLE ----

KiB, MiB = 1024, 1024 * 1024


def other_mount(cluster):
    """A second mount of the module's cluster (made once): what another client sees."""
    for m in cluster.mounts[1:]:
        if m.path.name == "mnt-sparse":
            return str(m.path)
    return str(cluster.mount(name="mnt-sparse").path)


def du_kib(path):
    r = subprocess.run(["du", "-k", path], capture_output=True, text=True, check=True)
    return int(r.stdout.split()[0])


def fallocate(*args):
    r = subprocess.run(["fallocate", *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, f"fallocate {' '.join(map(str, args))}: {r.stderr}"


def test_sparse_blocks_are_the_objects(cluster, mnt, nacre_cli):
    """st_blocks is what the OST objects hold, not the size rounded up: 50 KiB at 1.6 MiB
    is at most 1 MiB in du, here and through another client."""
    for count in (1, 4):
        path = os.path.join(mnt, f"sparse-du-{count}")
        nacre_cli("setstripe", "-c", count, "-S", "1M", path, check=True)
        data = os.urandom(50 * KiB)
        with open(path, "r+b") as f:
            f.seek(1600 * KiB)
            f.write(data)
        st = os.stat(path)
        assert st.st_size == 1650 * KiB
        assert 50 * KiB <= st.st_blocks * 512 <= MiB, f"{count} stripes: {st.st_blocks} blocks"
        assert du_kib(path) <= 1024
        other = os.path.join(other_mount(cluster), os.path.basename(path))
        assert 50 * KiB <= os.stat(other).st_blocks * 512 <= MiB
        with open(other, "rb") as f:
            assert f.read() == bytes(1600 * KiB) + data
        # a full file counts all its bytes
        with open(path, "r+b") as f:
            f.write(os.urandom(1600 * KiB))
        assert os.stat(path).st_blocks * 512 >= 1650 * KiB
        # truncating down frees the objects' blocks
        os.truncate(path, 0)
        assert os.stat(path).st_blocks == 0


def test_fallocate_modes(cluster, mnt, nacre_cli):
    """fallocate(1) mode 0, --keep-size, --punch-hole and --zero-range on a file striped
    over 4 OSTs: sizes, blocks and bytes as another client sees them."""
    path = os.path.join(mnt, "falloc")
    nacre_cli("setstripe", "-c", 4, "-S", "1M", path, check=True)
    fallocate("-l", "10M", path)
    other = os.path.join(other_mount(cluster), "falloc")
    for p in (path, other):
        st = os.stat(p)
        assert st.st_size == 10 * MiB
        assert st.st_blocks * 512 >= 10 * MiB, f"{p}: {st.st_blocks} blocks"
    assert du_kib(path) >= 10 * 1024
    with open(other, "rb") as f:
        assert f.read() == bytes(10 * MiB)

    # KEEP_SIZE: blocks beyond the end, the size unchanged
    keep = os.path.join(mnt, "falloc-keep")
    nacre_cli("setstripe", "-c", 4, "-S", "1M", keep, check=True)
    fallocate("--keep-size", "-l", "6M", keep)
    st = os.stat(keep)
    assert st.st_size == 0 and st.st_blocks * 512 >= 6 * MiB

    # PUNCH_HOLE and ZERO_RANGE over a file of data, across stripe boundaries
    full = os.path.join(mnt, "falloc-punch")
    nacre_cli("setstripe", "-c", 4, "-S", "1M", full, check=True)
    data = bytearray(os.urandom(8 * MiB))
    with open(full, "wb") as f:
        f.write(data)
    before = os.stat(full).st_blocks
    fallocate("--punch-hole", "-o", 1 * MiB + 512 * KiB, "-l", 2 * MiB, full)
    data[1 * MiB + 512 * KiB:3 * MiB + 512 * KiB] = bytes(2 * MiB)
    fallocate("--zero-range", "-o", 5 * MiB - 64 * KiB, "-l", 128 * KiB, full)
    data[5 * MiB - 64 * KiB:5 * MiB + 64 * KiB] = bytes(128 * KiB)
    st = os.stat(full)
    assert st.st_size == 8 * MiB
    assert st.st_blocks * 512 <= before * 512 - 2 * MiB + 64 * KiB, (before, st.st_blocks)
    for p in (full, os.path.join(other_mount(cluster), "falloc-punch")):
        with open(p, "rb") as f:
            assert f.read() == bytes(data), f"{p}: bytes differ after punch/zero"
    # ZERO_RANGE without KEEP_SIZE grows the file
    fallocate("--zero-range", "-o", 8 * MiB, "-l", 1 * MiB, full)
    assert os.stat(full).st_size == 9 * MiB
    with open(full, "rb") as f:
        f.seek(8 * MiB)
        assert f.read() == bytes(MiB)

    # what Linux refuses: a punch without KEEP_SIZE (the kernel), len 0
    fd = os.open(full, os.O_RDWR)
    try:
        with pytest.raises(OSError) as e:
            os.posix_fallocate(fd, 0, 0)
        assert e.value.errno == errno.EINVAL
    finally:
        os.close(fd)


def test_seek_data_hole_striped(cluster, mnt, nacre_cli):
    """SEEK_DATA and SEEK_HOLE over 4 stripes of 1 MiB with data in stripes 1 and 2 only,
    and a hole at the end; ENXIO past the end, as Linux."""
    path = os.path.join(mnt, "seek-striped")
    nacre_cli("setstripe", "-c", 4, "-S", "1M", path, check=True)
    a, b = os.urandom(64 * KiB), os.urandom(64 * KiB)
    with open(path, "wb") as f:
        f.seek(MiB + 100 * KiB)  # stripe 1, object offset 100 KiB
        f.write(a)
        f.seek(6 * MiB)  # row 1, stripe 2
        f.write(b)
        f.truncate(9 * MiB)
    for p in (path, os.path.join(other_mount(cluster), "seek-striped")):
        fd = os.open(p, os.O_RDONLY)
        try:
            assert os.lseek(fd, 0, os.SEEK_DATA) == MiB + 100 * KiB
            assert os.lseek(fd, 0, os.SEEK_HOLE) == 0
            assert os.lseek(fd, MiB + 100 * KiB, os.SEEK_HOLE) == MiB + 164 * KiB
            assert os.lseek(fd, MiB + 164 * KiB, os.SEEK_DATA) == 6 * MiB
            assert os.lseek(fd, 6 * MiB + 4 * KiB, os.SEEK_DATA) == 6 * MiB + 4 * KiB
            assert os.lseek(fd, 6 * MiB, os.SEEK_HOLE) == 6 * MiB + 64 * KiB
            assert os.lseek(fd, 8 * MiB, os.SEEK_HOLE) == 8 * MiB
            for off, whence in ((6 * MiB + 64 * KiB, os.SEEK_DATA), (9 * MiB, os.SEEK_DATA),
                                (9 * MiB, os.SEEK_HOLE), (20 * MiB, os.SEEK_HOLE)):
                with pytest.raises(OSError) as e:
                    os.lseek(fd, off, whence)
                assert e.value.errno == errno.ENXIO, (off, whence)
        finally:
            os.close(fd)
    # data still buffered in this client counts as data, for any of its handles, and so
    # does the size its writes gave the file
    other_fd = os.open(path, os.O_RDONLY)
    try:
        with open(path, "r+b") as f:
            f.seek(3 * MiB)
            f.write(b"x" * 4096)
            f.seek(10 * MiB)
            f.write(b"y" * 4096)
            f.flush()
            for fd in (f.fileno(), other_fd):
                assert os.lseek(fd, 2 * MiB, os.SEEK_DATA) == 3 * MiB
                assert os.lseek(fd, 9 * MiB, os.SEEK_DATA) == 10 * MiB
    finally:
        os.close(other_fd)


def test_cp_sparse_keeps_holes(cluster, mnt, nacre_cli, tmp_path):
    """cp --sparse=always of a sparse file inside the mount makes a sparse copy with the
    same bytes; tar -S archives it as a sparse member."""
    src = os.path.join(mnt, "cp-src")
    nacre_cli("setstripe", "-c", 4, "-S", "1M", src, check=True)
    with open(src, "wb") as f:
        f.seek(2 * MiB)
        f.write(os.urandom(128 * KiB))
        f.seek(7 * MiB)
        f.write(os.urandom(64 * KiB))
        f.truncate(12 * MiB)
    dst = os.path.join(mnt, "cp-dst")
    subprocess.run(["cp", "--sparse=always", src, dst], check=True)
    with open(src, "rb") as f1, open(os.path.join(other_mount(cluster), "cp-dst"), "rb") as f2:
        assert f1.read() == f2.read()
    st = os.stat(dst)
    assert st.st_size == 12 * MiB
    assert st.st_blocks * 512 <= 1 * MiB, f"the copy holds {st.st_blocks} blocks"
    # tar -S finds the holes (st_blocks, SEEK_HOLE): a small archive, a sparse extraction
    tar = tmp_path / "a.tar"
    subprocess.run(["tar", "-S", "-cf", str(tar), "-C", mnt, "cp-src"], check=True)
    assert tar.stat().st_size < 1 * MiB, f"the archive is {tar.stat().st_size} bytes"
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run(["tar", "-xf", str(tar), "-C", str(out)], check=True)
    with open(src, "rb") as f:
        assert (out / "cp-src").read_bytes() == f.read()


def test_old_oss_without_space_ops(make_cluster, nacre_cli, monkeypatch):
    """OSSes that predate OST_FALLOCATE and OST_SEEK (NACRE_OSS_NO_SPACE_OPS=1): fallocate
    fails with EOPNOTSUPP, SEEK_DATA/SEEK_HOLE give Linux's generic answer (all data),
    st_blocks still comes from the objects."""
    monkeypatch.setenv("NACRE_OSS_NO_SPACE_OPS", "1")
    c = make_cluster(osts=2, oss=1)
    mnt = str(c.mounts[0].path)
    path = os.path.join(mnt, "old-oss")
    with open(path, "wb") as f:
        f.seek(3 * MiB)
        f.write(os.urandom(64 * KiB))
    st = os.stat(path)
    assert 64 * KiB <= st.st_blocks * 512 <= MiB
    r = subprocess.run(["fallocate", "-l", "1M", path], capture_output=True, text=True)
    assert r.returncode != 0 and "not supported" in r.stderr, r.stderr
    fd = os.open(path, os.O_RDONLY)
    try:
        assert os.lseek(fd, 0, os.SEEK_DATA) == 0
        assert os.lseek(fd, 4096, os.SEEK_HOLE) == st.st_size
        with pytest.raises(OSError) as e:
            os.lseek(fd, st.st_size, os.SEEK_DATA)
        assert e.value.errno == errno.ENXIO
    finally:
        os.close(fd)
