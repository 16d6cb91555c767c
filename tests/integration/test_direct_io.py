"""nacre-oss --direct-io: reads and writes of whole 4 KiB blocks reach the OST files with
O_DIRECT (reads take what the page cache holds first), the rest goes through the page cache.
Mixed on one object, the bytes read back through another mount (page cache dropped) are
exactly what was written, to an end of object inside a block; the OSS's metrics show which
path took how much; --direct-io off does nothing directly."""
import os
import re
import subprocess
import urllib.request

from conftest import binary, free_port

MiB = 1 << 20


def oss_counter(port, name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return sum(float(v) for v in re.findall(rf"^{name}\{{[^}}]*\}} (\S+)$", text, re.M))


def write_at(path, off, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, data, off)
        os.fsync(fd)
    finally:
        os.close(fd)


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def test_aligned_and_unaligned_writes_mix_on_one_object(make_cluster, nacre_cli):
    port = free_port()
    c = make_cluster(osts=2, oss=1, oss_args=["--metrics-addr", f"127.0.0.1:{port}"])
    m = c.mount()
    other = c.mount()
    f = m / "mixed"
    nacre_cli("setstripe", "-c", "2", "-S", "1M", f, check=True)
    want = bytearray(os.urandom(8 * MiB))
    write_at(f, 0, bytes(want))
    direct0 = oss_counter(port, "nacre_oss_direct_write_bytes_total")
    assert direct0 >= 4 * MiB, f"aligned MiB writes went through the page cache: {direct0}"
    # unaligned pieces (buffered) inside and across blocks the direct writes wrote
    for off, n in ((MiB - 100, 300), (3 * MiB + 5, 70000), (7 * MiB + 4095, 2)):
        piece = os.urandom(n)
        want[off:off + n] = piece
        write_at(f, off, piece)
    # an aligned overwrite over what the page cache holds of the object
    piece = os.urandom(2 * MiB)
    want[4 * MiB:6 * MiB] = piece
    write_at(f, 4 * MiB, piece)
    # an end of file inside a block: the direct read stops there
    tail = os.urandom(4097)
    want += tail
    write_at(f, 8 * MiB, tail)
    read0 = oss_counter(port, "nacre_oss_direct_read_bytes_total")
    drop_caches()
    assert (other / "mixed").read_bytes() == bytes(want)
    assert oss_counter(port, "nacre_oss_direct_read_bytes_total") >= read0 + 4 * MiB
    direct1 = oss_counter(port, "nacre_oss_direct_write_bytes_total")
    total = oss_counter(port, "nacre_oss_write_bytes_total")
    assert direct1 >= direct0 + 2 * MiB and direct1 < total, (direct0, direct1, total)


def test_direct_io_off_and_a_bad_value(make_cluster):
    r = subprocess.run([binary("nacre-oss"), "--direct-io", "maybe"], capture_output=True,
                       text=True, timeout=10)
    assert r.returncode != 0 and "--direct-io \"maybe\": expected on or off" in r.stderr
    port = free_port()
    c = make_cluster(osts=1, oss_args=["--metrics-addr", f"127.0.0.1:{port}",
                                       "--direct-io", "off"])
    m = c.mount()
    data = os.urandom(4 * MiB)
    write_at(m / "buffered", 0, data)
    assert oss_counter(port, "nacre_oss_direct_write_bytes_total") == 0
    assert oss_counter(port, "nacre_oss_write_bytes_total") >= 4 * MiB
    drop_caches()
    assert (c.mount() / "buffered").read_bytes() == data
    assert oss_counter(port, "nacre_oss_direct_read_bytes_total") == 0
