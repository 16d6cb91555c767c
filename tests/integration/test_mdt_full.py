"""A full MDT still accepts unlinks, rmdirs and truncates (docs/ondisk.md, "Reserve and
ballast"): the MDS keeps room back, as ext4 reserves blocks, and logs failures rate-limited."""
import errno
import os
import subprocess
import threading
import time

from conftest import Cluster, mounted_dirs, wait_for

MDT_SIZE = "4m"


class SmallMdtCluster(Cluster):
    """A cluster whose MDT directory is a tmpfs of MDT_SIZE."""

    def start_mds(self, fmt=True):
        mdt = self.dir / "mdt"
        mdt.mkdir(exist_ok=True)
        if str(mdt) not in mounted_dirs():
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={MDT_SIZE}", "tmpfs", str(mdt)],
                           check=True)
        super().start_mds(fmt)

    def stop(self):
        bad = super().stop()
        subprocess.run(["umount", "-l", str(self.dir / "mdt")], capture_output=True)
        return bad


def fill(d, nthreads=4):
    """Creates files in d/t<k>/ from nthreads threads until creates fail; returns the paths
    made and the errnos of the failures."""
    made, errs, lock = [], {}, threading.Lock()

    def run(k):
        sub = d / f"t{k}"
        os.mkdir(sub)
        fails = 0
        i = 0
        while fails < 5:
            p = sub / f"f{i}"
            i += 1
            try:
                os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            except OSError as e:
                fails += 1
                with lock:
                    errs[e.errno] = errs.get(e.errno, 0) + 1
                continue
            fails = 0  # until five in a row fail: the room left is then under the reserve
            with lock:
                made.append(p)

    ts = [threading.Thread(target=run, args=(k,)) for k in range(nthreads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return made, errs


def unlink_all(paths):
    failed = {}
    for p in paths:
        try:
            os.unlink(p)
        except OSError as e:
            failed[e.errno] = failed.get(e.errno, 0) + 1
    return failed


def hog(path):
    """Fills the rest of a file system with one file."""
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    os.close(fd)


def log_failures(text):
    return [l for l in text.splitlines() if " ERR " in l or "failed" in l]


def fill_mdt(c):
    """Fills c's MDT with creates; returns the files made. Only creates fail, with ENOSPC."""
    made, errs = fill(c.mounts[0].path / "keep")
    assert set(errs) == {errno.ENOSPC}, errs
    assert len(made) > 2000, len(made)
    st = os.statvfs(c.dir / "mdt")
    print(f"MDT ({MDT_SIZE}) full after {len(made)} creates: "
          f"{st.f_bavail * st.f_frsize // 1024} KiB free")
    return made


def creates_work_again(m):
    def works():
        try:
            os.close(os.open(m / "again", os.O_CREAT | os.O_WRONLY, 0o644))
            return True
        except OSError as ex:
            assert ex.errno == errno.ENOSPC
            return False
    wait_for(works, 5, "creates to work again")
    os.mkdir(m / "newdir")


def check_log(c):
    failures = log_failures(c.mds.text())
    print(f"MDS log: {len(c.mds.text().splitlines())} lines, {len(failures)} failure lines")
    assert len(failures) <= 20, "\n".join(failures[:40])


def test_full_mdt_unlinks_and_truncates(make_cluster):
    c = make_cluster(cls=SmallMdtCluster, osts=2, oss=2)
    m = c.mounts[0].path
    ballast = c.dir / "mdt" / "reserve"
    assert ballast.exists() and ballast.stat().st_blocks * 512 >= 1 << 20
    os.mkdir(m / "keep")
    with open(m / "keep" / "data", "wb") as f:
        f.write(os.urandom(300000))
    os.mkdir(m / "emptydir")
    made = fill_mdt(c)

    # what takes space is refused (checked first: what frees space below may give a page
    # or two back, enough for the reserve to let one more change in)
    for make in (lambda: os.mkdir(m / "nope"), lambda: os.symlink("x", m / "nope"),
                 lambda: os.link(m / "keep" / "data", m / "nope"),
                 lambda: os.setxattr(m / "keep" / "data", "user.x", b"1")):
        try:
            make()
            raise AssertionError("a change that takes space ran on the full MDT")
        except OSError as ex:
            assert ex.errno == errno.ENOSPC, ex
    # what frees or keeps space still runs on the full MDT
    os.truncate(m / "keep" / "data", 1000)
    assert os.stat(m / "keep" / "data").st_size == 1000
    os.chmod(m / "keep" / "data", 0o600)
    os.rename(m / "keep" / "data", m / "keep" / "data2")
    os.rmdir(m / "emptydir")
    assert len(os.listdir(m / "keep" / "t0")) > 0

    # every unlink runs in the reserve; the ballast stays
    assert unlink_all(made[:2000]) == {}
    assert ballast.exists()
    print("unlinked 2000 files on the full MDT")
    creates_work_again(m)
    check_log(c)


def test_full_file_system_gives_up_the_ballast(make_cluster):
    c = make_cluster(cls=SmallMdtCluster, osts=2, oss=2)
    m = c.mounts[0].path
    mdt = c.dir / "mdt"
    os.mkdir(m / "keep")
    made = fill_mdt(c)
    # something else takes the rest of the file system: the ballast goes, unlinks go on
    hog(mdt / "hog")
    assert unlink_all(made[:2000]) == {}
    assert not (mdt / "reserve").exists()
    print("unlinked 2000 files on the full file system")
    # space back (the hog gone, and more pages freed inside the store than the two reserves
    # need by a clear margin): creates work again and the ballast comes back
    os.unlink(mdt / "hog")
    assert unlink_all(made[2000:3000]) == {}
    creates_work_again(m)
    wait_for((mdt / "reserve").exists, 5, "the ballast to be made again")
    check_log(c)


class FailingCommitsCluster(Cluster):
    """Half of the MDS's group commits fail as if the store were full (mds.db_full)."""

    def start_mds(self, fmt=True):
        os.environ["NACRE_FAULT"] = "mds.db_full=prob:50"
        try:
            super().start_mds(fmt)
        finally:
            del os.environ["NACRE_FAULT"]


def test_commit_failures_are_rate_limited(make_cluster):
    c = make_cluster(cls=FailingCommitsCluster, osts=1)
    m = c.mounts[0].path
    t0 = time.monotonic()
    failed = 0
    for i in range(600):
        try:
            os.close(os.open(m / f"f{i}", os.O_CREAT | os.O_WRONLY, 0o644))
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
            failed += 1
    secs = time.monotonic() - t0
    lines = [l for l in c.mds.text().splitlines() if "group commit failed" in l]
    print(f"{failed} of 600 creates failed in {secs:.1f} s: {len(lines)} log lines")
    assert failed > 100
    assert len(lines) <= 10 * (int(secs) + 2), len(lines)  # 10 a second at most (log.h)
