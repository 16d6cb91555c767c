"""Data integrity: striped layouts, a seeded fsx-style random workload, fio with verification,
and the bytes of every stripe object on the OST directories."""
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
