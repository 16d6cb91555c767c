"""Quotas (docs/quota.md): user and group limits on inodes and blocks, soft limits with
grace, defaults, lfs quota's output, the recount, root exempt, and usage across a kill -9
of the MDS. One module-wide cluster of 4 OSTs."""
import ctypes
import errno
import os
import signal
import subprocess
import time

from conftest import as_user, binary


def q(nacre_cli, *args):
    return nacre_cli("quota", *args)


def sq(nacre_cli, *args):
    r = nacre_cli("setquota", *args)
    assert r.returncode == 0, r.stderr
    return r


def user_dir(mnt, name, uid, gid=None):
    d = os.path.join(str(mnt), name)
    os.mkdir(d)
    os.chown(d, uid, gid if gid is not None else uid)
    os.chmod(d, 0o777)
    return d


def creates(d, n, prefix="f"):
    def fn():
        for i in range(n):
            with open(os.path.join(d, f"{prefix}{i}"), "w"):
                pass
    return fn


HEADER = "     Filesystem  kbytes   quota   limit   grace   files   quota   limit   grace"


def test_inode_hard_limit_and_output(mnt, nacre_cli):
    d = user_dir(mnt, "ih", 60001)
    sq(nacre_cli, "-u", "60001", "-b", "1M", "-B", "2M", "-i", "0", "-I", "4", str(mnt))
    # the directory (chowned to the user) is one of its 4 inodes
    assert as_user(creates(d, 3), uid=60001, gid=60001) == 0
    assert as_user(creates(d, 1, "g"), uid=60001, gid=60001) == errno.EDQUOT
    r = q(nacre_cli, "-u", "60001", str(mnt))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "Disk quotas for usr 60001 (uid 60001):"
    assert lines[1] == HEADER
    root = str(mnt)
    assert len(root) > 15 and lines[2] == root  # a long name gets a line of its own
    assert lines[3] == "%15s %7s%c %6s %7s %7s %7s%c %6s %7s %7s" % (
        "", "0", " ", "1024", "2048", "-", "4", "*", "0", "4", "-"), r.stdout
    assert len(lines) == 4
    r = q(nacre_cli, "-h", "-u", "60001", str(mnt))
    assert r.stdout.splitlines()[1].split()[1] == "used"
    assert r.stdout.splitlines()[3].split()[:3] == ["0k", "1M", "2M"], r.stdout
    # without -u/-g: the caller's user, then its group
    r = q(nacre_cli, str(mnt))
    lines = r.stdout.splitlines()
    assert lines[0] == "Disk quotas for usr root (uid 0):" and lines[1] == HEADER
    assert lines[4] == "Disk quotas for grp root (gid 0):" and len(lines) == 8, r.stdout
    # unlink gives the inode back
    os.unlink(os.path.join(d, "f0"))
    assert as_user(creates(d, 1, "h"), uid=60001, gid=60001) == 0


def test_block_hard_limit_striped_write(mnt, nacre_cli):
    d = user_dir(mnt, "bh", 60002)
    nacre_cli("setstripe", "-c", "4", "-S", "1M", d, check=True)
    sq(nacre_cli, "-u", "60002", "-B", "4M", str(mnt))
    path = os.path.join(d, "big")

    def write():
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
        try:
            for _ in range(8):
                os.write(fd, b"x" * (1 << 20))
            os.fsync(fd)
        finally:
            os.close(fd)
    assert as_user(write, uid=60002, gid=60002) == errno.EDQUOT
    r = q(nacre_cli, "-u", "60002", str(mnt))
    used = int(r.stdout.splitlines()[-1].split()[-8].rstrip("*"))
    assert used <= 4096, r.stdout
    # a long write is refused by write(2) itself within 32 MiB of the limit
    os.unlink(path)
    stage = os.path.join(d, "stage")

    def long_write():
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)  # closed as the child exits
        for n in range(64):
            try:
                os.write(fd, b"x" * (1 << 20))
            except OSError:
                with open(stage, "w") as f:
                    f.write(str(n))
                raise
    assert as_user(long_write, uid=60002, gid=60002) == errno.EDQUOT
    assert 4 <= int(open(stage).read()) <= 40
    os.unlink(stage)
    # within the limit it works
    small = os.path.join(d, "small")

    def write_small():
        with open(small, "wb") as f:
            f.write(b"y" * (1 << 20))
    os.unlink(path)
    assert as_user(write_small, uid=60002, gid=60002) == 0
    r = q(nacre_cli, "-u", "60002", str(mnt))
    assert r.stdout.splitlines()[-1].split()[-8] == "1024", r.stdout


def test_root_exempt(mnt, nacre_cli):
    sq(nacre_cli, "-u", "0", "-I", "1", str(mnt))
    d = os.path.join(str(mnt), "rootdir")
    os.mkdir(d)
    for i in range(3):
        open(os.path.join(d, f"r{i}"), "w").close()
    sq(nacre_cli, "-u", "0", "-I", "0", str(mnt))
    # root writing into a user's file is not refused either; the user is, after
    d = user_dir(mnt, "re", 60010)
    sq(nacre_cli, "-u", "60010", "-B", "2M", str(mnt))
    f = os.path.join(d, "f")
    assert as_user(creates(d, 1), uid=60010, gid=60010) == 0
    f = os.path.join(d, "f0")
    with open(f, "r+b") as fh:
        fh.write(b"r" * (4 << 20))
        os.fsync(fh.fileno())
    r = q(nacre_cli, "-u", "60010", str(mnt))
    assert r.stdout.splitlines()[-1].split()[-8:-5] == ["4096*", "0", "2048"], r.stdout

    def grow():
        with open(f, "ab") as fh:
            fh.write(b"u" * 8192)
            os.fsync(fh.fileno())
    assert as_user(grow, uid=60010, gid=60010) == errno.EDQUOT


def test_group_limit_and_defaults(mnt, nacre_cli):
    d = user_dir(mnt, "gq", 60004, 60040)
    sq(nacre_cli, "-g", "60040", "-I", "3", str(mnt))
    # the directory is one of the group's 3 inodes
    assert as_user(creates(d, 2), uid=60004, gid=60040) == 0
    assert as_user(creates(d, 1, "x"), uid=60004, gid=60040) == errno.EDQUOT
    r = q(nacre_cli, "-g", "60040", str(mnt))
    assert r.stdout.splitlines()[0] == "Disk quotas for grp 60040 (gid 60040):"
    # defaults: user 60005 has no limits of its own
    d5 = user_dir(mnt, "dq", 60005)
    sq(nacre_cli, "-U", "-I", "2", str(mnt))
    try:
        assert as_user(creates(d5, 1), uid=60005, gid=60005) == 0
        assert as_user(creates(d5, 1, "y"), uid=60005, gid=60005) == errno.EDQUOT
        r = q(nacre_cli, "-U", str(mnt))
        lines = r.stdout.splitlines()
        assert lines[0] == "Disk default usr quota:"
        assert lines[1] == "     Filesystem   bquota  blimit  bgrace   iquota  ilimit  igrace"
        assert lines[3] == "%15s %6s %7s %7s %6s %7s %7s" % (
            "", "0", "0", "604800", "0", "2", "604800"), r.stdout
    finally:
        sq(nacre_cli, "-U", "-I", "0", str(mnt))
    assert as_user(creates(d5, 1, "z"), uid=60005, gid=60005) == 0


def test_soft_limit_grace(mnt, nacre_cli):
    d = user_dir(mnt, "sg", 60003)
    sq(nacre_cli, "-t", "-u", "-b", "1w", "-i", "2", str(mnt))
    try:
        r = q(nacre_cli, "-t", "-u", str(mnt))
        assert r.stdout == "Block grace time: 1w; Inode grace time: 2s\n"
        sq(nacre_cli, "-u", "60003", "-i", "2", "-I", "100", str(mnt))
        assert as_user(creates(d, 3), uid=60003, gid=60003) == 0  # over soft: grace
        r = q(nacre_cli, "-u", "60003", str(mnt))
        f = r.stdout.splitlines()[-1].split()
        assert f[-4:-1] == ["4*", "2", "100"], r.stdout
        assert f[-1] in ("1s", "2s"), r.stdout
        time.sleep(2.2)
        assert as_user(creates(d, 1, "late"), uid=60003, gid=60003) == errno.EDQUOT
        r = q(nacre_cli, "-u", "60003", str(mnt))
        assert r.stdout.splitlines()[-1].split()[-1] == "none", r.stdout
    finally:
        sq(nacre_cli, "-t", "-u", "-b", "1w", "-i", "1w", str(mnt))


def test_bad_input(mnt, nacre_cli):
    r = nacre_cli("setquota", "-u", "no_such_user_q", "-I", "1", str(mnt))
    assert r.returncode == 1 and "unknown user 'no_such_user_q'" in r.stderr
    r = nacre_cli("setquota", "-u", "60001", "-B", "10X", str(mnt))
    assert r.returncode == 1 and "bad limit '10X'" in r.stderr
    r = nacre_cli("setquota", "-u", "60001", "-b", "2M", "-B", "1M", str(mnt))
    assert r.returncode == 1 and "above the hard limit" in r.stderr
    r = nacre_cli("setquota", "-t", "-u", "-b", "1x", str(mnt))
    assert r.returncode == 1 and "bad grace time" in r.stderr


def test_recount_after_mds_kill9(cluster, mnt, nacre_cli):
    d = user_dir(mnt, "rk", 60006)
    assert as_user(creates(d, 20), uid=60006, gid=60006) == 0
    before = q(nacre_cli, "-u", "60006", str(mnt)).stdout
    cluster.mds.kill(signal.SIGKILL)
    time.sleep(0.3)
    cluster.start_mds(fmt=False)
    r = q(nacre_cli, "--check", str(mnt))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "quota check: 0 ids with drift"
    assert q(nacre_cli, "-u", "60006", str(mnt)).stdout == before


def test_project_ids_inherit_quota_and_df(mnt, nacre_cli):
    d = user_dir(mnt, "proj", 60007)
    os.mkdir(os.path.join(d, "old"))  # made before the id: set by -r
    nacre_cli("project", "-p", "1000", "-s", "-r", d, check=True)
    r = nacre_cli("project", "-d", d, check=True)
    assert r.stdout == " 1000 P %s\n" % d
    sub = os.path.join(d, "sub")

    def make():
        os.mkdir(sub)
        with open(os.path.join(sub, "f"), "wb") as f:
            f.write(b"z" * 8192)
    assert as_user(make, uid=60007, gid=60007) == 0
    r = nacre_cli("project", "-r", d, check=True)
    assert sorted(r.stdout.splitlines()) == sorted([
        " 1000 P %s/old" % d, " 1000 P %s" % sub, " 1000 - %s/f" % sub]), r.stdout
    assert nacre_cli("project", "-c", "-r", d).returncode == 0
    # d, old, sub, sub/f: 4 inodes, 8 KiB
    r = q(nacre_cli, "-p", "1000", str(mnt))
    assert r.stdout.splitlines()[0] == "Disk quotas for prj 1000 (pid 1000):"
    assert r.stdout.splitlines()[-1].split()[-8:] == [
        "8", "0", "0", "-", "4", "0", "0", "-"], r.stdout
    sq(nacre_cli, "-p", "1000", "-B", "10M", "-I", "5", str(mnt))
    assert as_user(creates(sub, 1, "x"), uid=60007, gid=60007) == 0
    assert as_user(creates(sub, 1, "y"), uid=60007, gid=60007) == errno.EDQUOT
    # df inside: the project's limit is the size
    st = os.statvfs(sub)
    assert st.f_blocks * st.f_frsize == 10 << 20
    assert (st.f_blocks - st.f_bfree) * st.f_frsize == 8192
    assert st.f_files == 5 and st.f_ffree == 0
    assert os.statvfs(str(mnt)).f_blocks * os.statvfs(str(mnt)).f_frsize != 10 << 20
    # -c against another id; then a directory moved to another project
    r = nacre_cli("project", "-c", "-r", "-p", "7", d)
    assert r.returncode == 1 and "project identifier is not set (inode=1000, tree=7)" in r.stdout
    nacre_cli("project", "-p", "5", d + "/old", check=True)
    r = q(nacre_cli, "-p", "1000", str(mnt))
    assert r.stdout.splitlines()[-1].split()[-4] == "4", r.stdout  # d, sub, f, x
    r = q(nacre_cli, "-p", "5", str(mnt))
    assert r.stdout.splitlines()[-1].split()[-4] == "1", r.stdout
    r = nacre_cli("project", "-p", "abc", d)
    assert r.returncode == 1 and "bad project id 'abc'" in r.stderr


def test_recount_after_oss_kill9_mid_write(cluster, mnt, nacre_cli):
    d = user_dir(mnt, "ok", 60008)
    nacre_cli("setstripe", "-c", "4", d, check=True)
    done = os.path.join(d, "done")
    with open(done, "wb") as f:
        f.write(b"a" * (3 << 20))
    os.chown(done, 60008, 60008)
    pid = os.fork()
    if pid == 0:  # a writer as the user, killed with the OSS under it
        try:
            os.setgid(60008)
            os.setuid(60008)
            with open(os.path.join(d, "mid"), "wb") as f:
                for _ in range(64):
                    f.write(b"b" * (1 << 20))
                    f.flush()
                    os.fsync(f.fileno())
        finally:
            os._exit(0)
    time.sleep(0.3)
    cluster.oss[0].kill(signal.SIGKILL)
    time.sleep(0.3)
    cluster.start_oss(0, fmt=False)
    cluster.wait_osts_up()
    os.waitpid(pid, 0)
    r = q(nacre_cli, "--check", str(mnt))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "quota check: 0 ids with drift"
    used = int(q(nacre_cli, "-u", "60008", str(mnt)).stdout.splitlines()[-1].split()[-8])
    want = 3072 + (os.stat(os.path.join(d, "mid")).st_size + 4095) // 4096 * 4
    assert used == want


def test_quota_off_then_on_recounts(cluster, mnt, nacre_cli):
    """nacre-mds --quota off counts nothing and refuses nothing (the bench's baseline, and
    Lustre's quota.mdt=none); started with quotas on again, the MDS recounts at open and the
    limits hold with usage exact."""
    d = user_dir(mnt, "qoff", 60012)
    sq(nacre_cli, "-u", "60012", "-I", "5", str(mnt))
    assert as_user(creates(d, 4), uid=60012, gid=60012) == 0  # the directory is the fifth
    assert as_user(creates(d, 1, "x"), uid=60012, gid=60012) == errno.EDQUOT

    def restart(*args):
        cluster.mds.kill(signal.SIGTERM)
        cluster.mds.p.wait(20)
        cluster.mds_args = [a for a in cluster.mds_args if a not in ("--quota", "off")]
        cluster.mds_args += list(args)
        cluster.start_mds(fmt=False)

    try:
        restart("--quota", "off")
        assert "quotas are off" in cluster.mds.text()
        assert as_user(creates(d, 3, "y"), uid=60012, gid=60012) == 0  # not refused
        r = q(nacre_cli, "-u", "60012", str(mnt))
        assert r.returncode != 0
        assert "quotas are off on the MDS" in r.stderr and "--quota on" in r.stderr, r.stderr
    finally:
        restart()
    assert "quota usage counted for" in cluster.mds.text()
    r = q(nacre_cli, "-u", "60012", str(mnt))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[3].split()[4] == "8*", r.stdout  # 1 dir + 4 + 3 files
    assert as_user(creates(d, 1, "z"), uid=60012, gid=60012) == errno.EDQUOT
    r = q(nacre_cli, "--check", str(mnt))
    assert r.stdout.splitlines()[-1] == "quota check: 0 ids with drift", r.stdout


def test_verbose_shows_each_target(cluster, mnt, nacre_cli):
    """quota -v: lfs quota -v's per-target lines. The MDT line carries the files, each OST
    line the id's objects on it (from sizes and layouts), and the granted limits are 0 (no
    grants: the MDS enforces)."""
    d = user_dir(mnt, "verb", 60013)
    nacre_cli("setstripe", "-c", "4", "-S", "1M", d, check=True)
    with open(os.path.join(d, "big"), "wb") as f:
        f.write(b"v" * (3 << 20))  # 1 MiB on each of three objects, the fourth empty
    with open(os.path.join(d, "small"), "wb") as f:
        f.write(b"s" * 100000)     # 25 blocks of 4 KiB on the first object
    for name in ("big", "small"):
        os.chown(os.path.join(d, name), 60013, 60013)
    r = q(nacre_cli, "-v", "-u", "60013", str(mnt))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1] == HEADER and lines[3].split()[:1] == ["3172"], r.stdout
    fs = cluster.fsname
    assert lines[4] == f"{fs}-MDT0000_UUID", r.stdout
    assert lines[5] == "%15s %7s  %6s %7s %7s %7s  %6s %7s %7s" % (
        "", "0", "-", "0", "-", "3", "-", "0", "-"), r.stdout
    osts = {}
    for name, row in zip(lines[6:-1:2], lines[7:-1:2]):
        assert name.startswith(f"{fs}-OST") and name.endswith("_UUID"), r.stdout
        assert row == "%15s %7s  %6s %7s %7s %7s %7s %7s %7s" % (
            "", row.split()[0], "-", "0", "-", "-", "-", "-", "-"), r.stdout
        osts[name] = int(row.split()[0])
    assert len(osts) == 4 and sum(osts.values()) == 3072 + 100, r.stdout
    assert max(osts.values()) <= 1124 and sorted(osts.values())[-2] >= 1024, r.stdout
    assert lines[-1] == "Total allocated inode limit: 0, total allocated block limit: 0"
    r = q(nacre_cli, "-v", "-h", "-u", "60013", str(mnt))
    assert r.stdout.splitlines()[-1].endswith("block limit: 0k"), r.stdout
    # another user's per-target usage is a scan of every inode: root's only
    r = subprocess.run([binary("nacre"), "quota", "-v", "-u", "60013", str(mnt)],
                       capture_output=True, text=True,
                       preexec_fn=lambda: (os.setgid(60014), os.setuid(60014)))
    assert r.returncode == 1
    assert "-v (the usage on each target) of an id not your own needs root" in r.stderr, \
        r.stderr


def keep_size_fallocate(path, length):
    """fallocate(2) with FALLOC_FL_KEEP_SIZE of [0, length), creating path: raises OSError."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        if libc.fallocate(fd, 1, 0, length) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
    finally:
        os.close(fd)


def test_fallocate_keep_size_is_charged(mnt, nacre_cli):
    """Space fallocated past the size (KEEP_SIZE) counts against the block quota, from the
    blocks the objects hold: over the hard limit, fallocate fails with EDQUOT."""
    d = user_dir(mnt, "fk", 60007)
    nacre_cli("setstripe", "-c", "2", "-S", "1M", d, check=True)
    sq(nacre_cli, "-u", "60007", "-B", "8M", str(mnt))
    path = os.path.join(d, "keep")

    def used():
        r = q(nacre_cli, "-u", "60007", str(mnt))
        return int(r.stdout.splitlines()[-1].split()[-8].rstrip("*"))

    assert as_user(lambda: keep_size_fallocate(path, 4 << 20), uid=60007, gid=60007) == 0
    assert os.stat(path).st_size == 0
    assert 4096 <= used() <= 4200
    assert as_user(lambda: keep_size_fallocate(path, 16 << 20), uid=60007,
                   gid=60007) == errno.EDQUOT
    assert used() <= 8192
