"""HSM on the posix backend, with real processes: archive, release, transparent restore,
dirty, remove, cancel, a copytool killed mid-action, import of a hand-written archive tree,
bulk restore, and lfs's output formats."""
import hashlib
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import Proc, binary, finish, start_cluster, wait_for

BW = 20  # MB/s per transfer of the module's copytool: big files take seconds, small ones not


def start_copytool(c, archive_dir, archive_id=1, name="ct", bw=BW, threads=2):
    argv = [binary("nacre-copytool"), "--mds", c.spec, "--key-file", str(c.key),
            "--archive-id", str(archive_id), "--backend", f"posix:{archive_dir}",
            "--threads", str(threads)]
    if bw:
        argv += ["--bandwidth", str(bw)]
    p = Proc(name, argv, c.dir / f"{name}.log").start()
    c.extra.append(p)
    wait_for(lambda: "serving archive" in p.text() or not p.alive(), 15, f"{name} to start")
    assert p.alive(), p.text()
    return p


@pytest.fixture(scope="module")
def hsm():
    from conftest import Cluster
    c = Cluster(osts=2, oss=1)
    # private tmpfs OSTs: `nacre df` then shows exactly what release frees
    for i in range(2):
        d = c.dir / f"tmpfs-ost{i}"
        d.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400m", "tmpfs", str(d)], check=True)
        c.ost_dirs[i] = d
    orig = c.mds_argv
    c.mds_argv = lambda fmt: orig(fmt) + ["--hsm-timeout", "30", "--hsm-remove-on-unlink",
                                          "--hsm-grace", "600"]
    try:
        c.start()
        c.mount()
        c.wait_osts_up()
    except BaseException:
        print(c.logs())
        c.stop()
        raise
    c.archive = c.dir / "archive"
    c.archive.mkdir()
    c.ct = start_copytool(c, c.archive)
    yield c
    finish(c)


@pytest.fixture
def mnt(hsm):
    return hsm.mounts[0].path


def nacre(*args, check=True, timeout=120):
    r = subprocess.run([binary("nacre"), *map(str, args)], capture_output=True, text=True,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"nacre {args} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r


def state(path):
    out = nacre("hsm_state", path).stdout
    m = re.match(r"^(.*): \(0x([0-9a-f]{8})\)(.*)\n$", out)
    assert m, out
    return int(m.group(2), 16), m.group(3)


def wait_state(path, want_bits, unwanted=0, timeout=60):
    def ok():
        s, _ = state(path)
        return (s & want_bits) == want_bits and not (s & unwanted)
    wait_for(ok, timeout, f"{path} HSM state with 0x{want_bits:x}", interval=0.2)


EXISTS, DIRTY, RELEASED, ARCHIVED, NORELEASE = 0x1, 0x2, 0x4, 0x8, 0x10


def write_random(path, size, seed=0):
    data = hashlib.sha256(str(seed).encode()).digest() * (size // 32 + 1)
    data = bytes(data[:size])
    Path(path).write_bytes(data)
    return data


def drop_caches():
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        pass


def ost_used_kb(c):
    return sum(st for _, st in ost_usage(c))


def ost_usage(c):
    text = os.getxattr(os.fspath(c.mounts[0].path), "nacre.targets").decode()
    out = []
    for line in text.splitlines():
        f = line.split()
        if f[0] == "OST":
            out.append((int(f[1]), int(f[4]) - int(f[5])))
    return out


def test_archive_release_read_restores(hsm, mnt):
    f = mnt / "a1"
    nacre("setstripe", "-c", 2, "-S", "1M", f)
    data = write_random(f, 24 << 20, seed=1)
    st0 = os.stat(f)
    nacre("hsm_archive", f)
    wait_state(f, EXISTS | ARCHIVED)
    assert nacre("hsm_state", f).stdout == f"{f}: (0x00000009) exists archived, archive_id:1\n"
    obj = hsm.archive / "a1"
    assert obj.read_bytes() == data
    meta = (hsm.archive / ".a1.nacre-meta").read_text()
    assert "permissions=0644" in meta and "owner=0" in meta and "nacre_fid=[0x" in meta

    # objects on the OSTs before release
    fid = os.getxattr(f, "nacre.fid").decode().strip("[]").split(":")
    oid = fid[1][2:]
    objs = lambda: [p for i in range(2) for p in (hsm.ost_dir(i) / "O").rglob(f"*-{oid}-*")]
    assert objs()
    used0 = ost_used_kb(hsm)
    nacre("hsm_release", f)
    assert nacre("hsm_state", f).stdout == \
        f"{f}: (0x0000000d) released exists archived, archive_id:1\n"
    wait_for(lambda: not objs(), 20, "the released objects to be destroyed")
    wait_for(lambda: ost_used_kb(hsm) < used0 - 20 * 1024, 20, "the OSTs to report space back")
    df = nacre("df", mnt).stdout
    used = [int(l.split()[2]) for l in df.splitlines() if "[OST:" in l]
    assert sum(used) < used0 - 20 * 1024, df
    st1 = os.stat(f)
    for k in ("st_size", "st_mode", "st_uid", "st_gid", "st_mtime_ns"):
        assert getattr(st1, k) == getattr(st0, k), k
    ls = subprocess.run(["ls", "-l", str(f)], capture_output=True, text=True).stdout
    assert str(24 << 20) in ls

    drop_caches()
    assert f.read_bytes() == data  # the open waits for the restore
    s, _ = state(f)
    assert s == EXISTS | ARCHIVED, hex(s)
    assert objs()
    assert "RESTORE" in hsm.ct.text()


def test_write_sets_dirty_and_release_refused(hsm, mnt):
    f = mnt / "d1"
    write_random(f, 100000, seed=2)
    nacre("hsm_archive", f)
    wait_state(f, EXISTS | ARCHIVED)
    with open(f, "ab") as fp:
        fp.write(b"more")
    s, text = state(f)
    assert s & DIRTY and "dirty" in text
    r = nacre("hsm_release", f, check=False)
    assert r.returncode != 0
    assert "dirty" in r.stderr and str(f) in r.stderr
    # archiving again makes it clean and releasable
    nacre("hsm_archive", f)
    wait_state(f, EXISTS | ARCHIVED, DIRTY)
    nacre("hsm_release", f)
    assert f.read_bytes()[-4:] == b"more"


def test_release_refused_when_not_archived_or_norelease(hsm, mnt):
    f = mnt / "n1"
    write_random(f, 1000, seed=3)
    r = nacre("hsm_release", f, check=False)
    assert r.returncode != 0 and "not archived" in r.stderr
    nacre("hsm_archive", f)
    wait_state(f, EXISTS | ARCHIVED)
    nacre("hsm_set", "--norelease", f)
    assert "never_release" in nacre("hsm_state", f).stdout
    r = nacre("hsm_release", f, check=False)
    assert r.returncode != 0 and "norelease" in r.stderr
    nacre("hsm_clear", "--norelease", f)
    nacre("hsm_release", f)
    assert state(f)[0] & RELEASED


def test_remove(hsm, mnt):
    f = mnt / "r1"
    write_random(f, 5000, seed=4)
    nacre("hsm_archive", f)
    wait_state(f, EXISTS | ARCHIVED)
    assert (hsm.archive / "r1").exists()
    nacre("hsm_remove", f)
    wait_for(lambda: nacre("hsm_state", f).stdout == f"{f}: (0x00000000)\n", 30,
             "the archive copy to be removed")
    assert not (hsm.archive / "r1").exists()


def test_unlink_removes_archive_copy(hsm, mnt):
    f = mnt / "u1"
    write_random(f, 5000, seed=5)
    nacre("hsm_archive", f)
    wait_state(f, EXISTS | ARCHIVED)
    assert (hsm.archive / "u1").exists()
    os.unlink(f)
    wait_for(lambda: not (hsm.archive / "u1").exists(), 30, "REMOVE after unlink")


def test_action_and_cancel_mid_transfer(hsm, mnt):
    f = mnt / "big1"
    write_random(f, 120 << 20, seed=6)
    assert nacre("hsm_action", f).stdout == f"{f}: NOOP\n"
    nacre("hsm_archive", f)

    def running():
        out = nacre("hsm_action", f).stdout
        m = re.match(rf"^{re.escape(str(f))}: ARCHIVE running \((\d+) bytes moved\)\n$", out)
        return m and int(m.group(1)) > 0
    wait_for(running, 30, "the archive to be running", interval=0.2)
    lst = nacre("hsm", "list", mnt).stdout
    assert re.search(r"action=ARCHIVE archive#=1 .*status=STARTED done=\d+ total=125829120", lst), lst
    nacre("hsm_cancel", f)
    wait_for(lambda: nacre("hsm_action", f).stdout == f"{f}: NOOP\n", 30, "the cancel")
    s, _ = state(f)
    assert not s & ARCHIVED
    assert "canceled" in hsm.ct.text()
    assert "status=CANCELED" in nacre("hsm", "list", mnt).stdout
    assert not list(hsm.archive.glob("big1*"))  # the temporary copy is gone


def test_copytool_killed_mid_action(hsm, mnt):
    f = mnt / "big2"
    data = write_random(f, 64 << 20, seed=7)
    nacre("hsm_archive", f)
    wait_for(lambda: "running" in nacre("hsm_action", f).stdout, 30, "archive running",
             interval=0.2)
    hsm.ct.kill()
    # the coordinator takes the action back when the agent's connection drops
    wait_for(lambda: "waiting" in nacre("hsm_action", f).stdout, 30, "action back to WAITING",
             interval=0.2)
    hsm.ct = start_copytool(hsm, hsm.archive, name="ct2", bw=0)
    wait_state(f, EXISTS | ARCHIVED, timeout=60)
    assert (hsm.archive / "big2").read_bytes() == data
    assert not [p for p in hsm.archive.iterdir() if "nacre-tmp" in p.name and "big2" in p.name
                and p.stat().st_mtime > time.time() - 1]


def test_restore_recursive(hsm, mnt):
    d = mnt / "rr"
    (d / "sub").mkdir(parents=True)
    files = [d / f"f{i}" for i in range(4)] + [d / "sub" / "g"]
    datas = [write_random(p, 200000 + i, seed=10 + i) for i, p in enumerate(files)]
    nacre("hsm_archive", *files)
    for p in files:
        wait_state(p, EXISTS | ARCHIVED)
    nacre("hsm_release", *files)
    for p in files:
        assert state(p)[0] & RELEASED
    r = nacre("hsm_restore", "-r", d)
    assert "5/5 files restored" in r.stderr
    for p, data in zip(files, datas):
        assert not state(p)[0] & RELEASED
        assert p.read_bytes() == data


def test_import_hand_written_tree(hsm, mnt):
    arch2 = hsm.dir / "archive2"
    (arch2 / "models" / "v1").mkdir(parents=True)
    (arch2 / "models" / "v1" / "weights.bin").write_bytes(b"W" * 300000)
    (arch2 / "models" / "v1" / ".weights.bin.nacre-meta").write_text(
        "owner=1234\ngroup=4321\npermissions=0640\nmodtime=2021-02-03T04:05:06Z\n")
    (arch2 / "models" / "readme.txt").write_bytes(b"hello archive\n")
    os.utime(arch2 / "models" / "readme.txt", (1500000000, 1500000000))
    os.chmod(arch2 / "models", 0o750)
    ct2 = start_copytool(hsm, arch2, archive_id=2, name="ct-a2", bw=0)
    dest = mnt / "imported"
    dest.mkdir()
    r = nacre("hsm", "import", "--archive-id", 2, "--backend", f"posix:{arch2}", dest)
    assert "import: 2 files, 2 directories" in r.stderr
    w = dest / "models" / "v1" / "weights.bin"
    st = os.stat(w)
    assert (st.st_size, st.st_uid, st.st_gid, st.st_mode & 0o7777) == (300000, 1234, 4321, 0o640)
    assert st.st_mtime == 1612325106
    assert nacre("hsm_state", w).stdout == \
        f"{w}: (0x0000000d) released exists archived, archive_id:2\n"
    rd = dest / "models" / "readme.txt"
    assert os.stat(rd).st_mtime == 1500000000
    assert os.stat(dest / "models").st_mode & 0o7777 == 0o750
    assert w.read_bytes() == b"W" * 300000
    assert rd.read_bytes() == b"hello archive\n"
    assert not state(w)[0] & RELEASED
    assert "RESTORE" in ct2.text()
    ct2.kill()


def test_open_without_copytool_times_out(hsm, mnt, make_cluster):
    c = make_cluster(start=False, osts=1)
    c.start()
    c.mount(opts=["timeout=3"])
    c.wait_osts_up()
    m = c.mounts[0].path
    arch = c.dir / "archive"
    arch.mkdir()
    ct = start_copytool(c, arch, bw=0)
    f = m / "t1"
    write_random(f, 4096, seed=20)
    nacre("hsm_archive", f)
    wait_state(f, EXISTS | ARCHIVED)
    nacre("hsm_release", f)
    ct.kill()
    t0 = time.monotonic()
    with pytest.raises(OSError) as e:
        f.read_bytes()
    assert e.value.errno == 5  # EIO
    assert time.monotonic() - t0 < 30
    wait_for(lambda: "did not finish within" in c.mounts[0].proc.text(), 10,
             "a log line naming the file")
