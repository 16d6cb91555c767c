"""HSM at scale and the MDS's built-in policy, on the posix backend: a 10,000-file bulk
restore that never has more than --hsm-max-active actions STARTED, and the archive-age and
release-watermark rules on small tmpfs OSTs; the policy reads only the inodes that changed,
keeps working across an MDS kill -9, and falls back to full scans past its bound."""
import os
import re
import signal
import threading
import time
import urllib.request

from conftest import Cluster, finish, free_port, sanitized_build, wait_for
from test_hsm import (ARCHIVED, EXISTS, RELEASED, nacre, ost_usage, start_copytool,
                      tmpfs_osts, write_random)

MAX_ACTIVE = 8


def metric(port, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    m = re.search(rf"^{re.escape(name)} ([0-9.e+]+)$", text, re.M)
    assert m, f"{name} not in the MDS metrics:\n{text}"
    return float(m.group(1))


def state_of(f):
    return int(re.search(r"\(0x([0-9a-f]+)\)", nacre("hsm_state", f).stdout).group(1), 16)


def cluster_with(mds_args, osts=2, tmpfs=None):
    c = Cluster(osts=osts, oss=1)
    if tmpfs:
        tmpfs_osts(c, osts, tmpfs)
    orig = c.mds_argv
    c.mds_argv = lambda fmt: orig(fmt) + mds_args
    try:
        c.start()
        c.mount()
        c.wait_osts_up()
    except BaseException:
        print(c.logs())
        c.stop()
        raise
    return c


def test_bulk_restore_10000_files_bounded():
    """10,000 files (4,000 in a sanitizer build, where the same queue bounds are reached)."""
    mport = free_port()
    c = cluster_with(["--hsm-max-active", str(MAX_ACTIVE), "--hsm-grace", "5",
                      "--metrics-addr", f"127.0.0.1:{mport}"])
    try:
        mnt = c.mounts[0].path
        arch = c.dir / "archive"
        n = 4000 if sanitized_build() else 10000
        for i in range(n):  # written straight into the archive: import makes the stubs
            d = arch / f"b{i // 1000}"
            if i % 1000 == 0:
                d.mkdir(parents=True)
            (d / f"f{i:05d}").write_bytes(b"%d\n" % i)
        # more copytool threads than the MDS allows: the coordinator's limit must hold
        ct = start_copytool(c, ["--backend", f"posix:{arch}"], bw=0, threads=16)
        dest = mnt / "bulk"
        dest.mkdir()
        t1 = time.monotonic()
        r = nacre("hsm", "import", "--archive-id", 1, "--backend", f"posix:{arch}", dest,
                  timeout=600)
        assert f"import: {n} files, {n // 1000} directories" in r.stderr, r.stderr
        t_import = time.monotonic() - t1
        assert metric(mport, "nacre_mds_hsm_max_active") == MAX_ACTIVE

        seen, stop = [0], threading.Event()
        waiting, started = 'nacre_mds_hsm_actions{status="WAITING"}', \
            'nacre_mds_hsm_actions{status="STARTED"}'
        assert metric(mport, waiting) == 0 and metric(mport, started) == 0
        depth = {"waiting": 0, "started": 0}

        def sample():  # `nacre hsm list` shows actions STARTED while the restore runs
            while not stop.is_set():
                out = nacre("hsm", "list", mnt, check=False).stdout
                seen[0] = max(seen[0], out.count("status=STARTED"))
                # the queue gauges: thousands WAITING, never more than the limit STARTED
                depth["waiting"] = max(depth["waiting"], metric(mport, waiting))
                depth["started"] = max(depth["started"], metric(mport, started))
                time.sleep(1)
        t = threading.Thread(target=sample)
        t.start()
        t0 = time.monotonic()
        try:
            r = nacre("hsm_restore", "-r", dest, timeout=900)
        finally:
            stop.set()
            t.join()
        took = time.monotonic() - t0
        assert f"{n}/{n} files restored" in r.stderr, r.stderr[-500:]
        high = metric(mport, "nacre_mds_hsm_active_actions_max")
        assert 1 < high <= MAX_ACTIVE, high
        # (a long list is read in pages, not one snapshot: the gauge is the exact bound)
        assert seen[0] > 0
        assert metric(mport, "nacre_mds_hsm_actions_started_total") >= n
        wait_for(lambda: metric(mport, "nacre_mds_hsm_active_actions") == 0, 30,
                 "no active action left")
        assert depth["waiting"] > 1000, depth
        assert 0 < depth["started"] <= MAX_ACTIVE, depth
        wait_for(lambda: metric(mport, waiting) == 0 and metric(mport, started) == 0, 10,
                 "the queue gauges to fall to 0")
        names = [dest / f"b{i // 1000}" / f"f{i:05d}" for i in range(n)]
        lst = c.dir / "filelist"
        lst.write_text("".join(f"{p}\n" for p in names))
        out = nacre("hsm_state", "--filelist", lst).stdout.splitlines()
        assert len(out) == n
        bad = [l for l in out if not l.endswith(": (0x00000009) exists archived, archive_id:1")]
        assert not bad, bad[:5]
        for i, p in enumerate(names):
            assert p.read_bytes() == b"%d\n" % i, p
        print(f"{n} imports in {t_import:.1f} s, {n} restores in {took:.1f} s, "
              f"at most {int(high)} STARTED at once "
              f"({seen[0]} seen in hsm list), queue gauges peaked at "
              f"{int(depth['waiting'])} WAITING, {int(depth['started'])} STARTED")
        ct.kill()
    finally:
        finish(c)


def test_policy_archives_old_files_and_releases_lru():
    c = cluster_with(["--hsm-archive-age", "2", "--hsm-release", "50:40",
                      "--hsm-policy-period", "1"], osts=2, tmpfs="64m")
    try:
        mnt = c.mounts[0].path
        (c.dir / "archive").mkdir()
        start_copytool(c, ["--backend", f"posix:{c.dir / 'archive'}"], bw=0, threads=4)
        keep = mnt / "keep"
        write_random(keep, 4096, seed=99)
        nacre("hsm_set", "--noarchive", keep)
        now = time.time()

        def write(name, seed, atime):
            f = mnt / name
            nacre("setstripe", "-c", 2, "-S", "1M", f)
            write_random(f, 8 << 20, seed=seed)
            os.utime(f, (atime, now - 100))  # modified long ago: the age rule takes it
            return f
        # 48 MiB over two 64 MiB OSTs (37%): archived by the age rule, nothing released;
        # least recently used first in `old`
        old = [write(f"p{i}", 100 + i, 1000000 + (i * 7) % 6 * 1000) for i in range(6)]
        old.sort(key=lambda f: os.stat(f).st_atime)
        wait_for(lambda: all(state_of(f) & ARCHIVED for f in old), 60, "the policy to archive")
        time.sleep(2)
        assert not any(state_of(f) & RELEASED for f in old)
        # 32 MiB more (62%): the watermark rule releases the LRU archived files until the
        # OSTs are below 40%: about 4 of the 6
        new = [write(f"q{i}", 200 + i, now) for i in range(4)]
        wait_for(lambda: any(state_of(f) & RELEASED for f in old), 30, "the policy to release")

        def below_low():
            return all(used * 100 < 40 * 64 * 1024 for _, used in ost_usage(c))
        # released files give their space back through the destroy log, slow under ASan
        wait_for(below_low, 120, "the OSTs to fall below the low mark")
        st = [state_of(f) for f in old]
        released = [bool(s & RELEASED) for s in st]
        k = released.count(True)
        assert released == [True] * k + [False] * (len(st) - k), st  # LRU first
        assert 3 <= k < len(st), st  # only as many as needed
        assert all(s == EXISTS | ARCHIVED | RELEASED for s in st[:k]), st
        assert not any(state_of(f) & RELEASED for f in new)
        assert not state_of(keep) & ARCHIVED  # noarchive holds
        time.sleep(3)  # later passes release nothing more
        assert [bool(state_of(f) & RELEASED) for f in old] == released
        assert "policy: archiving" in c.mds.text() and "policy: an OST is above" in c.mds.text()
        i = int(old[0].name[1:])
        assert old[0].read_bytes() == write_random(c.dir / "x", 8 << 20, seed=100 + i)
    finally:
        finish(c)


EXAMINED = "nacre_mds_hsm_policy_inodes_examined_total"
SCANS = "nacre_mds_hsm_policy_scans_total"


def test_policy_reads_only_changed_inodes():
    """1000 idle files (import stubs): while nothing changes the policy reads no inode; 3 new
    files cost a few reads (not 1000) and are archived once 3 s old."""
    mport = free_port()
    c = cluster_with(["--hsm-archive-age", "3", "--hsm-policy-period", "1",
                      "--metrics-addr", f"127.0.0.1:{mport}"], osts=1)
    try:
        mnt = c.mounts[0].path
        arch = c.dir / "archive"
        arch.mkdir()
        start_copytool(c, ["--backend", f"posix:{arch}"], bw=0, threads=2)
        for i in range(1000):  # 1000 idle files: stubs of an import (one MDS request each)
            (c.dir / "imp" / f"d{i // 100}").mkdir(parents=True, exist_ok=True)
            (c.dir / "imp" / f"d{i // 100}" / f"i{i:04d}").write_bytes(b"%d\n" % i)
        idle = mnt / "idle"
        idle.mkdir()
        r = nacre("hsm", "import", "--archive-id", 1, "--backend", f"posix:{c.dir / 'imp'}",
                  idle, timeout=120)
        assert "import: 1000 files, 10 directories" in r.stderr, r.stderr
        names = [idle / f"d{i // 100}" / f"i{i:04d}" for i in range(1000)]
        wait_for(lambda: metric(mport, SCANS) == 1, 10, "the scan at start")

        def settled():  # the policy has read what the import fed it
            a = metric(mport, EXAMINED)
            time.sleep(2.5)  # a run every 1-2 s (the coordinator ticks once a second)
            return metric(mport, EXAMINED) == a
        wait_for(settled, 30, "the policy to read the imported files")
        assert metric(mport, EXAMINED) >= 1000  # each idle file read once, after its import
        quiet = metric(mport, EXAMINED)
        time.sleep(4.5)  # several policy runs on a quiet file system: no inode read
        assert metric(mport, EXAMINED) == quiet
        assert metric(mport, SCANS) == 1
        new = [mnt / f"new{i}" for i in range(3)]
        for i, f in enumerate(new):
            write_random(f, 4096, seed=i)
        wait_for(lambda: all(state_of(f) & ARCHIVED for f in new), 30, "the 3 new archived")
        time.sleep(2)  # the archives' ends (HSM changes) are read too
        read = metric(mport, EXAMINED) - quiet
        # each new file is read after its create/close and after its archive ended
        assert 3 <= read <= 20, read
        assert metric(mport, SCANS) == 1
        assert "policy: archiving" in c.mds.text()
        time.sleep(3)
        assert metric(mport, EXAMINED) - quiet == read  # quiet again
        assert state_of(names[0]) == state_of(names[-1]) == EXISTS | ARCHIVED | RELEASED
        print(f"1000 idle files: 0 inodes read in 4.5 idle seconds; 3 new files: "
              f"{int(read)} inodes read")
    finally:
        finish(c)


def test_policy_archives_file_written_before_mds_kill9():
    """A file written before a kill -9 of the MDS and not yet archived: the scan at start
    finds it, and it is archived when it comes of age."""
    mport = free_port()
    c = cluster_with(["--hsm-archive-age", "4", "--hsm-policy-period", "1",
                      "--metrics-addr", f"127.0.0.1:{mport}"], osts=1)
    try:
        mnt = c.mounts[0].path
        (c.dir / "archive").mkdir()
        wait_for(lambda: metric(mport, SCANS) == 1, 10, "the scan at start")
        f = mnt / "before-crash"
        data = write_random(f, 65536, seed=7)
        time.sleep(1.5)  # the policy follows f (to archive at 4 s): in memory only
        c.mds.kill(signal.SIGKILL)
        time.sleep(0.3)
        c.start_mds(fmt=False)
        c.wait_osts_up()
        assert not state_of(f) & ARCHIVED
        wait_for(lambda: metric(mport, SCANS) == 1, 10, "the scan at the restart")
        start_copytool(c, ["--backend", f"posix:{c.dir / 'archive'}"], bw=0, threads=2)
        wait_for(lambda: state_of(f) & ARCHIVED, 30, "the policy to archive f")
        assert state_of(f) == EXISTS | ARCHIVED
        assert f.read_bytes() == data
        assert metric(mport, SCANS) == 1  # no scan after the one at start
    finally:
        finish(c)


def test_policy_past_its_bound_scans_and_says_so_once():
    """More changed files than --hsm-policy-max-files: one warning, full scans instead, and
    the files are archived all the same."""
    mport = free_port()
    c = cluster_with(["--hsm-archive-age", "2", "--hsm-policy-period", "1",
                      "--hsm-policy-max-files", "5", "--metrics-addr", f"127.0.0.1:{mport}"],
                     osts=1)
    try:
        mnt = c.mounts[0].path
        (c.dir / "archive").mkdir()
        start_copytool(c, ["--backend", f"posix:{c.dir / 'archive'}"], bw=0, threads=2)
        wait_for(lambda: metric(mport, SCANS) == 1, 10, "the scan at start")
        files = [mnt / f"f{i}" for i in range(12)]
        for i, f in enumerate(files):
            write_random(f, 1024, seed=i)
        wait_for(lambda: all(state_of(f) & ARCHIVED for f in files), 40, "all 12 archived")
        assert metric(mport, SCANS) > 1
        warn = "(--hsm-policy-max-files): scanning every inode after changes"
        assert c.mds.text().count(warn) == 1, c.mds.text()[-3000:]
    finally:
        finish(c)
