"""Write-back leases on directories (docs/writeback.md, "Leases"): a mount with -o wb=on takes
the lease of each directory it makes and answers the lookups in it (the negative LOOKUP
before every create) without the MDS; another mount that looks at the directory has the
MDS recall the lease first, so it sees every name and what it makes is seen back; a holder
that does not answer the recall (SIGSTOP) is evicted after the callback timeout and the
others go on."""
import errno
import os
import signal
import stat
import subprocess
import time
import urllib.request

import pytest

from conftest import (MetricsCluster, as_user, binary, dir_fsync_errno, finish, md_counts,
                      start_cluster)

N = 60
RECALL_S = 7  # WIRE_LEASE_RECALL_MS


@pytest.fixture(scope="module")
def lc():
    c = start_cluster(MetricsCluster, osts=2)  # mounts[0]: write-back off
    c.mount(opts=["wb=on"])                    # mounts[1]: on
    c.mount()                                  # mounts[2]: another client, off
    yield c
    finish(c)


def creates(top, n):
    """Makes top and n files in it (each create looks the name up first), returns the
    MDS's LOOKUP requests it took (with the other clients idle)."""
    os.mkdir(top)
    for i in range(n):
        with open(os.path.join(top, f"f{i:03d}"), "wb") as f:
            f.write(b"%d\n" % i)


def lookups_for(c, fn):
    before = md_counts(c).get("lookup", 0)
    fn()
    return md_counts(c).get("lookup", 0) - before


def test_lookups_in_a_directory_it_made_do_not_reach_the_mds(lc):
    off, on, _ = lc.mounts
    without = lookups_for(lc, lambda: creates(off / "plain", N))
    with_lease = lookups_for(lc, lambda: creates(on / "leased", N))
    # every create's negative lookup was a request without the lease; with it, none of
    # the names in the new directory was asked (its own name, in the root, still is)
    assert without >= N, without
    assert with_lease <= 3, (with_lease, without)
    for i in (0, N - 1):
        assert (on / "leased" / f"f{i:03d}").read_bytes() == b"%d\n" % i


def test_a_tree_it_makes_is_leased_with_one_request(lc):
    _, on, other = lc.mounts
    before = md_counts(lc)
    deep = on / "tree" / "a" / "b" / "c"
    os.makedirs(deep)
    for i in range(10):
        (deep / f"f{i}").write_bytes(b"x")
    after = md_counts(lc)
    # the top directory's GET; the ones made in it came leased with it
    assert after.get("lease", 0) - before.get("lease", 0) == 1, (before, after)
    # makedirs looks "tree" up in the root (not leased) four times; nothing below asks
    assert after.get("lookup", 0) - before.get("lookup", 0) <= 4, (before, after)
    # another mount walks in: the top's recall ends the ones under it too
    assert sorted(os.listdir(other / "tree" / "a" / "b" / "c")) == [f"f{i}" for i in range(10)]
    (other / "tree" / "a" / "b" / "c" / "new").write_bytes(b"y")
    assert (deep / "new").read_bytes() == b"y"


def test_another_mount_sees_every_name_and_is_seen_back(lc):
    _, on, other = lc.mounts
    d = on / "shared"
    creates(d, 20)
    t0 = time.monotonic()
    names = sorted(os.listdir(other / "shared"))  # the lease is recalled first
    assert names == [f"f{i:03d}" for i in range(20)]
    assert time.monotonic() - t0 < RECALL_S - 2, "the holder did not give the lease back"
    # what the other mount makes there is seen by the holder, whose lease is gone
    (other / "shared" / "from-other").write_bytes(b"hello")
    assert (d / "from-other").read_bytes() == b"hello"
    # and a later create in it by the holder asks the MDS: nothing answers from the past
    with pytest.raises(FileExistsError):
        os.open(d / "from-other", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    # a directory made after that is leased again, and a rename into it is known there
    os.mkdir(d / "sub")
    os.rename(d / "f000", d / "sub" / "moved")
    assert (other / "shared" / "sub" / "moved").read_bytes() == b"0\n"
    assert "f000" not in os.listdir(other / "shared")


def test_changes_under_a_lease_go_in_batches(lc):
    _, on, other = lc.mounts
    top = on / "batched"
    os.mkdir(top)
    before = md_counts(lc)  # through the other mount: nothing of this one is flushed
    for i in range(40):
        os.mkdir(top / f"d{i:02d}")
        os.symlink(f"target{i}", top / f"l{i:02d}")
    os.mkfifo(top / "fifo")
    for i in range(0, 40, 2):
        os.rmdir(top / f"d{i:02d}")
        os.unlink(top / f"l{i:02d}")
    os.rename(top / "l01", top / "renamed")
    time.sleep(0.5)  # the queue's timer sends them
    after = md_counts(lc)
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    for op in ("mkdir", "symlink", "mknod", "rmdir", "unlink", "rename", "lookup"):
        assert delta.get(op, 0) == 0, (op, delta)
    assert 1 <= delta.get("batch", 0) <= 20, delta
    # all of it is at the MDS, as made
    names = sorted(os.listdir(other / "batched"))
    want = sorted([f"d{i:02d}" for i in range(1, 40, 2)] +
                  [f"l{i:02d}" for i in range(3, 40, 2)] + ["fifo", "renamed"])
    assert names == want
    assert os.readlink(other / "batched" / "renamed") == "target1"
    assert stat.S_ISFIFO(os.lstat(other / "batched" / "fifo").st_mode)
    st = os.stat(other / "batched" / "d01")
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == 0
    # what the holder said of them is what the MDS made
    assert oct(os.stat(top / "d01").st_mode) == oct(st.st_mode)


def test_attributes_of_what_it_made_are_set_here(lc):
    """As tar does after each file: utimes, chown, chmod, with no request each."""
    _, on, other = lc.mounts
    top = on / "untar"
    os.mkdir(top)
    for i in range(10):
        (top / f"f{i}").write_bytes(b"data %d\n" % i)
    os.mkdir(top / "sub")
    before = md_counts(lc)
    t0 = time.monotonic()
    for i in range(10):
        p = top / f"f{i}"
        os.utime(p, ns=(1_000_000_000 + i, 2_000_000_000 + i))
        os.chown(p, 1000 + i, 2000 + i)
        os.chmod(p, 0o640)
        st = os.stat(p)  # answered here too
        assert (st.st_uid, st.st_gid, st.st_mtime_ns, st.st_size) == \
            (1000 + i, 2000 + i, 2_000_000_000 + i, len(b"data %d\n" % i))
        # and what the kernel asks before a write: it has no capability, no ACL
        for name in ("security.capability", "system.posix_acl_access"):
            with pytest.raises(OSError) as e:
                os.getxattr(p, name)
            assert e.value.errno == errno.ENODATA
    os.chmod(top / "sub", 0o700)
    os.utime(top / "sub", ns=(3_000_000_000, 4_000_000_000))
    time.sleep(0.3)
    after = md_counts(lc)
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    # (the top directory was made where nothing is leased: its attributes the MDS says,
    # once per attr_timeout (1 s) that a slow run, the sanitizer build's, takes)
    getattrs = 1 + int(time.monotonic() - t0)
    assert delta.get("setattr", 0) == 0 and delta.get("getattr", 0) <= getattrs, delta
    assert delta.get("getxattr", 0) == 0, delta
    # an xattr set here is asked of the MDS again
    os.setxattr(top / "f0", "security.test", b"v")
    assert os.getxattr(top / "f0", "security.test") == b"v"
    # they went in batches (the holder's counters)
    r = subprocess.run([binary("nacre"), "get_param", "-n", "--mount", str(on.path),
                        "mdc.*.wb_stats"], capture_output=True, text=True, timeout=30)
    v = {ln.split()[0]: ln.split()[1] for ln in r.stdout.splitlines()[1:]}
    assert int(v.get("batch_changes", 0)) >= 1 and int(v.get("changes_sent", 0)) >= 32, v
    # what the MDS made is what the holder said
    for i in range(10):
        st = os.stat(other / "untar" / f"f{i}")
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), st.st_atime_ns,
                st.st_mtime_ns) == (1000 + i, 2000 + i, 0o640, 1_000_000_000 + i,
                                    2_000_000_000 + i)
        assert (other / "untar" / f"f{i}").read_bytes() == b"data %d\n" % i
    st = os.stat(other / "untar" / "sub")
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_mtime_ns == 4_000_000_000


def test_a_refused_change_is_reported_at_fsync(lc):
    _, on, other = lc.mounts
    shared = on / "quota"
    os.mkdir(shared)
    os.chmod(shared, 0o777)
    r = subprocess.run([binary("nacre"), "setquota", "-u", "60002", "-i", "0", "-I", "4",
                        str(on.path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    def fn():
        u = shared / "u"
        os.mkdir(u)  # its lease comes with the root's directory's
        # answered here, the MDS takes three; once it refused one the lease went back and
        # a later mkdir may be refused at once
        for i in range(6):
            os.mkdir(u / f"s{i}")
        fd = os.open(u, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    assert as_user(fn, uid=60002, gid=60002) == errno.EDQUOT
    # logged with the name and the reason; the other mount sees what the MDS made
    log = on.proc.text()
    assert "MDS_MKDIR s3 in directory" in log and "refused by MDS" in log, log[-2000:]
    assert "Disk quota exceeded (reported at the next fsync)" in log, log[-2000:]
    assert sorted(os.listdir(other / "quota" / "u")) == ["s0", "s1", "s2"]
    # the holder's view agrees once the lease went back
    assert sorted(os.listdir(shared / "u")) == ["s0", "s1", "s2"]


def test_unmount_sends_what_is_queued(lc):
    _, _, other = lc.mounts
    m = lc.mount(opts=["wb=on"], name="wbshort")
    os.mkdir(m / "late")
    for i in range(30):
        os.mkdir(m / "late" / f"x{i}")
    m.unmount()
    lc.mounts.remove(m)
    assert len(os.listdir(other / "late")) == 30


def set_param(m, kv):
    r = subprocess.run([binary("nacre"), "set_param", "-n", "--mount", str(m.path),
                        f"llite.*.{kv}"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def test_a_stopped_holder_is_evicted_and_the_others_go_on(lc):
    _, on, other = lc.mounts
    creates(on / "stopped", 3)
    set_param(on, "wb_delay_ms=5000")  # what it makes next stays queued here
    try:
        for i in range(4):
            os.mkdir(on / "stopped" / f"q{i}")
        pid = on.proc.p.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            names = sorted(os.listdir(other / "stopped"))
            waited = time.monotonic() - t0
        finally:
            os.kill(pid, signal.SIGCONT)
        # the others see what reached the MDS, after the recall's timeout, not for ever
        assert names == ["f000", "f001", "f002"]
        assert RECALL_S - 2 <= waited <= RECALL_S + 10, waited
        assert "did not give it back" in lc.mds.text()
        # the holder's queued mkdirs are not sent late: reported lost, and at fsync
        deadline = time.monotonic() + 30
        while "lost: this mount's lease ended" not in on.proc.text():
            assert time.monotonic() < deadline, on.proc.text()[-2000:]
            time.sleep(0.2)
        assert dir_fsync_errno(on / "stopped") == errno.EIO
    finally:
        set_param(on, "wb_delay_ms=50")
    assert sorted(os.listdir(other / "stopped")) == ["f000", "f001", "f002"]
    # the holder's lease is void on its side too: a name made meanwhile is seen
    (other / "stopped" / "late").write_bytes(b"late")
    deadline = time.monotonic() + 30
    while True:
        try:
            assert (on / "stopped" / "late").read_bytes() == b"late"
            break
        except OSError:
            # evicted: its first requests may fail while it makes a new session
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    assert sorted(os.listdir(on / "stopped")) == ["f000", "f001", "f002", "late"]


def test_the_mds_counts_its_leases(lc):
    with urllib.request.urlopen(f"http://127.0.0.1:{lc.mds_mport}/metrics", timeout=10) as r:
        text = r.read().decode()
    got = {}
    for ln in text.splitlines():
        if ln.startswith("nacre_mds_wb_lease_events_total{"):
            event = ln.split('event="')[1].split('"')[0]
            got[event] = float(ln.rsplit(" ", 1)[1])
    # leased: leased/, shared/, shared/sub, stopped/; recalled: shared/ and stopped/; the
    # stopped holder evicted
    assert got.get("granted", 0) >= 4, got
    assert got.get("recalled", 0) >= 2 and got.get("evicted", 0) >= 1, got
    assert got.get("returned", 0) >= 1, got


def test_wb_option_is_checked(lc):
    mnt = lc.dir / "badwb"
    mnt.mkdir()
    r = subprocess.run([binary("nacre-mount"), lc.spec, str(mnt), "-o",
                        f"key_file={lc.key},wb=maybe"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode != 0
    assert "wb=maybe" in r.stderr and "on" in r.stderr and "off" in r.stderr, r.stderr
