"""Permissions as an ordinary user sees them (issue 14): special files checked on open,
search permission right after a chmod on the same mount and on a second one, every
supplementary group counted, and protected_hardlinks.

The user is a forked child that drops to an unused uid with setgroups/setgid/setuid; it
runs the operations it is told over a pipe, so the time from a chmod's return on one
mount to the first refusal on another is measured without a fork in between.
"""
import errno
import os
import signal
import shutil
import stat
import subprocess
import tempfile
import time

import pytest

from conftest import as_user, wait_for

UID, GID = 52001, 52001
GROUPS40 = [52100 + i for i in range(40)]  # the 40th, 52139, owns the file below


def _ops(base, uid, gid):
    d = os.path.join(base, "d")
    return {
        "warm": lambda: (os.stat(f"{d}/f"), os.close(os.open(f"{d}/f", os.O_RDONLY)),
                         os.listdir(d)),
        "open": lambda: os.close(os.open(f"{d}/f", os.O_RDWR)),
        "truncate": lambda: os.truncate(f"{d}/f", 0),
        "otrunc": lambda: os.close(os.open(f"{d}/f", os.O_WRONLY | os.O_TRUNC)),
        "chmod": lambda: os.chmod(f"{d}/f", 0o640),
        "chown": lambda: os.chown(f"{d}/f", uid, gid),
        "link": lambda: os.link(f"{d}/f", f"{d}/l"),
        "unlink": lambda: os.unlink(f"{d}/u"),
        "rename": lambda: os.rename(f"{d}/r", f"{d}/r2"),
        "mkdir": lambda: os.mkdir(f"{d}/m"),
    }


CHMOD_TIMES = []  # how long each chmod took, callbacks included

OPS = ["open", "truncate", "otrunc", "chmod", "chown", "link", "unlink", "rename", "mkdir"]


class User:
    """A child process running as uid/gid/groups; do(name, arg) runs one named operation
    and returns (errno or 0, CLOCK_MONOTONIC when it ended)."""

    def __init__(self, ops, uid=UID, gid=GID, groups=()):
        self.ops = ops
        r1, w1 = os.pipe()
        r2, w2 = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(w1)
            os.close(r2)
            try:
                os.setgroups(list(groups))
                os.setgid(gid)
                os.setuid(uid)
                cmd_in = os.fdopen(r1, "r")
                for line in cmd_in:
                    name, _, arg = line.rstrip("\n").partition(" ")
                    code = 0
                    try:
                        fn = ops.get(name)
                        if fn is None:
                            fn = self._generic(name, arg)
                        fn()
                    except OSError as e:
                        code = e.errno
                    os.write(w2, f"{code} {time.monotonic():.6f}\n".encode())
            finally:
                os._exit(0)
        os.close(r1)
        os.close(w2)
        self.w = os.fdopen(w1, "w")
        self.r = os.fdopen(r2, "r")

    @staticmethod
    def _generic(name, arg):
        if name == "read":
            return lambda: open(arg, "rb").read()
        if name == "openr":
            return lambda: os.close(os.open(arg, os.O_RDONLY | os.O_NONBLOCK))
        if name == "openw":
            return lambda: os.close(os.open(arg, os.O_WRONLY | os.O_NONBLOCK))
        if name == "openrw":
            return lambda: os.close(os.open(arg, os.O_RDWR))
        if name == "link":
            src, dst = arg.split("\t")
            return lambda: os.link(src, dst)
        raise OSError(errno.EINVAL, name)

    def do(self, name, arg=""):
        self.w.write(f"{name} {arg}\n")
        self.w.flush()
        code, t = self.r.readline().split()
        return int(code), float(t)

    def close(self):
        self.w.close()
        os.waitpid(self.pid, 0)


@pytest.fixture(scope="module")
def mounts(cluster):
    """Two more mounts with the default cache times (1 s): the kernel caches names and
    attributes, which is what must not let a user through after a chmod."""
    a = cluster.mount(opts=["dev"], name="perm-a")
    b = cluster.mount(opts=["dev"], name="perm-b")
    yield a.path, b.path
    for m in (a, b):
        m.unmount()
        cluster.mounts.remove(m)


def _reset(base):
    """As root: d owned by the user (0755) with f, u, r; l, r2 and m absent."""
    d = os.path.join(base, "d")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    for name in ("l", "r2"):
        if os.path.exists(f"{d}/{name}"):
            os.unlink(f"{d}/{name}")
    if os.path.isdir(f"{d}/m"):
        os.rmdir(f"{d}/m")
    for name in ("f", "u", "r"):
        with open(f"{d}/{name}", "wb") as f:
            f.write(b"data")
        os.chown(f"{d}/{name}", UID, GID)
        os.chmod(f"{d}/{name}", 0o644)
    os.chown(d, UID, GID)


def _chmod_refuses(chmod_base, user_base, label):
    """For every operation: the user warms its caches, root chmods d 0644 on chmod_base,
    the user's operation on user_base must fail EACCES; after chmod 0755 it must work.
    Returns the worst time from the chmod's return to the refusal."""
    worst = 0.0
    u = User(_ops(user_base, UID, GID))
    try:
        for op in OPS:
            _reset(user_base)
            assert u.do("warm")[0] == 0, f"{label}: warm-up failed before {op}"
            c0 = time.monotonic()
            os.chmod(os.path.join(chmod_base, "d"), 0o644)
            t0 = time.monotonic()
            CHMOD_TIMES.append(t0 - c0)
            code, t1 = u.do(op)
            assert code == errno.EACCES, \
                f"{label}: {op} under a 0644 directory: {os.strerror(code) if code else 'ok'}"
            worst = max(worst, t1 - t0)
            os.chmod(os.path.join(chmod_base, "d"), 0o755)
            code, _ = u.do(op)
            assert code == 0, f"{label}: {op} after chmod 0755: {os.strerror(code)}"
    finally:
        u.close()
    return worst


def test_chmod_same_mount(mounts):
    a, _ = mounts
    worst = _chmod_refuses(a, a, "same mount")
    assert worst < 0.05


def test_chmod_second_mount_within_50ms(mounts):
    a, b = mounts
    worst = _chmod_refuses(a, b, "second mount")
    print(f"worst time from chmod's return on one mount to the refusal on the other: "
          f"{worst * 1000:.1f} ms; chmod with 2 other mounts listening: median "
          f"{sorted(CHMOD_TIMES)[len(CHMOD_TIMES) // 2] * 1000:.2f} ms")
    assert worst < 0.05, f"refused only {worst * 1000:.1f} ms after the chmod returned"


def test_chown_and_chgrp_second_mount(mounts):
    """A change of owner or group is pushed as a change of mode is."""
    a, b = mounts
    _reset(b)
    d = os.path.join(a, "d")
    os.chmod(d, 0o750)
    u = User(_ops(b, UID, GID))
    try:
        assert u.do("warm")[0] == 0
        os.chown(d, 0, 0)  # no longer the user's, group root: nothing left for the user
        assert u.do("open")[0] == errno.EACCES
        os.chown(d, 0, GID)  # the group may search
        assert u.do("open")[0] == 0
    finally:
        u.close()
        os.chown(d, UID, GID)


def test_special_files_checked_on_open(mounts):
    a, b = mounts
    fifo = os.path.join(a, "fifo")
    dev = os.path.join(a, "null")
    for p in (fifo, dev):
        if os.path.lexists(p):
            os.unlink(p)
    os.mkfifo(fifo, 0o600)
    os.mknod(dev, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    os.chmod(fifo, 0o600)
    os.chmod(dev, 0o600)
    u = User({})
    try:
        for base in (a, b):
            f, n = os.path.join(base, "fifo"), os.path.join(base, "null")
            assert u.do("openr", f)[0] == errno.EACCES, "FIFO opened without read permission"
            assert u.do("openrw", n)[0] == errno.EACCES, "device opened without permission"
        os.chmod(fifo, 0o644)
        os.chmod(dev, 0o644)
        for base in (a, b):
            f, n = os.path.join(base, "fifo"), os.path.join(base, "null")
            assert u.do("openr", f)[0] == 0
            assert u.do("openrw", n)[0] == errno.EACCES  # read, not write
        os.chmod(dev, 0o666)
        for base in (a, b):
            assert u.do("openrw", os.path.join(base, "null"))[0] == 0
    finally:
        u.close()


def test_forty_supplementary_groups(mounts):
    a, b = mounts
    p = os.path.join(a, "g40")
    with open(p, "wb") as f:
        f.write(b"for the 40th group")
    os.chown(p, 0, GROUPS40[-1])
    os.chmod(p, 0o640)
    u = User({}, groups=GROUPS40)
    try:
        for base in (a, b):
            assert u.do("read", os.path.join(base, "g40"))[0] == 0
    finally:
        u.close()
    u = User({}, groups=GROUPS40[:-1])  # without it: refused
    try:
        assert u.do("read", os.path.join(b, "g40"))[0] == errno.EACCES
    finally:
        u.close()


@pytest.fixture
def protected_hardlinks():
    path = "/proc/sys/fs/protected_hardlinks"
    old = open(path).read().strip()
    with open(path, "w") as f:
        f.write("1")
    yield
    with open(path, "w") as f:
        f.write(old)


def test_protected_hardlinks(mounts, protected_hardlinks):
    a, _ = mounts
    home = os.path.join(a, "home")
    os.makedirs(home, exist_ok=True)
    os.chown(home, UID, GID)
    secret = os.path.join(a, "rootfile")
    with open(secret, "wb") as f:
        f.write(b"root's")
    os.chmod(secret, 0o600)
    mine = os.path.join(home, "mine")
    for p in (mine, os.path.join(home, "l1"), os.path.join(home, "l2")):
        if os.path.exists(p):
            os.unlink(p)
    with open(mine, "wb") as f:
        f.write(b"mine")
    os.chown(mine, UID, GID)
    u = User({})
    try:
        code, _ = u.do("link", f"{secret}\t{home}/l1")
        assert code == errno.EPERM, f"linked root's 0600 file: {os.strerror(code) or 'ok'}"
        assert u.do("link", f"{mine}\t{home}/l2")[0] == 0
    finally:
        u.close()
    assert not os.path.exists(os.path.join(home, "l1"))


@pytest.fixture
def local_dir():
    """A directory on a local file system that the user can reach."""
    d = tempfile.mkdtemp(prefix="nacre-perm-local-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_access_utimes_truncate_as_on_local(mounts, local_dir):
    """access(2), utimes and O_TRUNC by a non-owner answer as on a local file system."""
    a, _ = mounts
    bases = (os.path.join(a, "acc"), local_dir)
    modes = (0o600, 0o644, 0o666, 0o755, 0o711, 0o000, 0o4755)
    for base in bases:
        os.makedirs(base, exist_ok=True)
        os.chmod(base, 0o755)
        for mode in modes:
            p = os.path.join(base, f"m{mode:o}")
            with open(p, "wb") as f:
                f.write(b"x")
            os.chmod(p, mode)
    results = []
    for base in bases:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            out = []
            try:
                os.setgroups([])
                os.setgid(GID)
                os.setuid(UID)
                for mode in modes:
                    p = os.path.join(base, f"m{mode:o}")
                    out.append(tuple(os.access(p, m) for m in (os.R_OK, os.W_OK, os.X_OK)))
                    for fn in (lambda: os.utime(p, None), lambda: os.utime(p, (1, 1)),
                               lambda: os.close(os.open(p, os.O_WRONLY | os.O_TRUNC))):
                        try:
                            fn()
                            out.append(0)
                        except OSError as e:
                            out.append(e.errno)
            finally:
                os.write(w, repr(out).encode())
                os._exit(0)
        os.close(w)
        data = b""
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            data += chunk
        os.close(r)
        os.waitpid(pid, 0)
        results.append(data.decode())
    assert results[0] == results[1], f"nacre {results[0]}\nlocal {results[1]}"


def test_execute_only_file_runs_for_others(mounts):
    """generic/126: a program of mode 0711 or 0701 owned by root runs for another user, who
    still cannot read it; 0700 does not run. On both mounts (the second with cold caches)."""
    a, b = mounts
    d = os.path.join(a, "xonly")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    for mode in (0o711, 0o701, 0o700):
        p = os.path.join(d, f"true{mode:o}")
        shutil.copyfile("/bin/true", p)
        os.chmod(p, mode)
    for base in (a, b):
        def run(name):
            return as_user(lambda: subprocess.run([os.path.join(base, "xonly", name)],
                                                  check=True), UID, GID)
        assert run("true711") == 0, base
        assert run("true701") == 0, base
        assert run("true700") == errno.EACCES, base
        p = os.path.join(base, "xonly", "true711")
        assert as_user(lambda: os.close(os.open(p, os.O_RDONLY)), UID, GID) == errno.EACCES


def test_ftruncate_of_a_new_mode_0_file(mounts):
    """pjdfstest ftruncate/00.t: a user creates a file of mode 0 with O_RDWR and truncates it
    through that descriptor (permission was granted at open); a truncate by path fails."""
    a, b = mounts
    d = os.path.join(a, "ftrunc0")
    os.makedirs(d, exist_ok=True)
    os.chown(d, UID, GID)
    p = os.path.join(d, "f")

    def create_and_truncate():
        fd = os.open(p, os.O_CREAT | os.O_RDWR, 0)
        try:
            os.write(fd, b"0123456789")
            os.ftruncate(fd, 4)
            os.ftruncate(fd, 123456)
        finally:
            os.close(fd)
    assert as_user(create_and_truncate, UID, GID) == 0
    assert stat.S_IMODE(os.stat(p).st_mode) == 0
    assert os.path.getsize(os.path.join(b, "ftrunc0", "f")) == 123456
    assert as_user(lambda: os.truncate(p, 0), UID, GID) == errno.EACCES


def test_callbacks_and_long_group_lists_survive_mds_restart(make_cluster):
    """After an MDS restart the long poll is asked again (a chmod on one mount still reaches
    the other before it returns) and a 40-group list registered before counts again."""
    c = make_cluster(osts=1)
    a = c.mount(name="ra").path
    b = c.mount(name="rb").path
    p = os.path.join(a, "g40")
    with open(p, "wb") as f:
        f.write(b"for the 40th group")
    os.chown(p, 0, GROUPS40[-1])
    os.chmod(p, 0o640)
    u = User({}, groups=GROUPS40)
    try:
        assert u.do("read", os.path.join(b, "g40"))[0] == 0
        c.mds.kill(signal.SIGKILL)
        c.start_mds(fmt=False)
        wait_for(lambda: os.stat(os.path.join(b, "g40")) is not None, 30, "the MDS back")
        time.sleep(1.1)  # past nacre-mount's 1 s cache of the caller's credentials
        assert u.do("read", os.path.join(b, "g40"))[0] == 0
    finally:
        u.close()
    worst = _chmod_refuses(a, b, "after an MDS restart")
    assert worst < 0.05, f"refused only {worst * 1000:.1f} ms after the chmod returned"


def test_stopped_client_delays_one_chmod_only(make_cluster):
    """A client that does not acknowledge (SIGSTOP) holds a chmod back for the bounded time
    once; it is not waited for again until it answers, and then it is."""
    c = make_cluster(osts=1)
    a = c.mount(name="sa").path
    b = c.mount(name="sb").path
    stopped = c.mount(name="sc")
    _reset(a)
    d = os.path.join(a, "d")
    os.stat(os.path.join(str(stopped.path), "d"))
    # A mount listens once its first NOTIFY_WAIT is parked at the MDS, which its notify
    # thread sends after the mount is up: stopped before that, it is not waited for. On a
    # loaded machine that can take a while: the client is stopped again after a longer wait
    # before the test gives up. (Twice in the full suite it was never waited for: a poll
    # reply lost to the client's own limit left it lagging for good; see
    # test_client_that_lost_a_batch_is_told_to_drop_everything_and_waited_for_again.)
    for settle in (1.0, 3.0, 6.0):
        time.sleep(settle)
        os.kill(stopped.proc.p.pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            os.chmod(d, 0o700)
            first = time.monotonic() - t0
            t0 = time.monotonic()
            os.chmod(d, 0o755)
            second = time.monotonic() - t0
        finally:
            os.kill(stopped.proc.p.pid, signal.SIGCONT)
        if first > 2.5:
            break
    assert 2.5 < first < 6, f"first chmod took {first:.2f} s\n{c.mds.text()[-4000:]}"
    assert second < 0.5, f"second chmod took {second:.2f} s"
    assert "did not acknowledge a permission change" in c.mds.text()
    # it catches up (acknowledges what it was sent) and is waited for again
    wait_for(lambda: os.stat(os.path.join(str(stopped.path), "d")) is not None, 10, "sc back")
    time.sleep(0.5)
    u = User(_ops(str(stopped.path), UID, GID))
    try:
        assert u.do("warm")[0] == 0
        os.chmod(d, 0o644)
        assert u.do("open")[0] == errno.EACCES
    finally:
        u.close()
        os.chmod(d, 0o755)


def test_client_that_lost_a_batch_is_told_to_drop_everything_and_waited_for_again(
        make_cluster, nacre_cli):
    """A batch whose reply never reaches the client (its poll gave up first: a long stop, a
    late reply; here the MDS drops every NOTIFY_WAIT reply for a while) is lost to it. Its
    next poll acknowledges less than was sent: it is told to drop every cached attribute,
    acknowledges, and is waited for again, instead of staying unwaited-for for good."""
    c = make_cluster(osts=1, mds_args=["--allow-fault-injection"])
    a = c.mount(name="la").path
    late = c.mount(name="lb")
    d = os.path.join(a, "d")
    os.makedirs(d)
    seen = os.path.join(str(late.path), "d")
    assert os.stat(seen).st_mode & 0o777 == 0o755
    time.sleep(1)
    key = ["--key-file", c.key, "--fsname", c.fsname, c.mds_addr]
    nacre_cli("fault", "set", *key,
              "rpc.drop_reply=every:1,op=MDS_NOTIFY_WAIT", check=True)
    try:
        t0 = time.monotonic()
        os.chmod(d, 0o700)  # lb's batch is dropped: it cannot acknowledge it
        took = time.monotonic() - t0
    finally:
        nacre_cli("fault", "clear", *key, check=True)
    assert 2.5 < took < 6, f"chmod took {took:.2f} s"
    # lb's poll ends at its own limit (4 s); the next one shows the gap
    wait_for(lambda: "missed a permission-change batch" in c.mds.text(), 10, "the gap seen")
    assert os.stat(seen).st_mode & 0o777 == 0o700  # it dropped what it had cached
    # It is waited for again once its next poll acknowledged the drop; stopped before that
    # (a loaded machine, a sanitizer build), it is not yet: stop it again after a longer
    # settle before the test gives up, as test_stopped_client_delays_one_chmod_only does.
    for settle, mode in ((0.5, 0o750), (2.0, 0o710), (5.0, 0o705)):
        time.sleep(settle)
        os.stat(seen)
        os.kill(late.proc.p.pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            os.chmod(d, mode)
            took = time.monotonic() - t0
        finally:
            os.kill(late.proc.p.pid, signal.SIGCONT)
        if took > 2.5:
            break
    assert 2.5 < took < 6, f"lb was not waited for again: chmod took {took:.2f} s"


def test_unmount_with_the_mds_gone_is_not_held_by_the_callbacks(make_cluster):
    """The long poll must not hold an unmount back: with the MDS killed, nacre-mount exits
    within its goodbye timeouts and what is left of the poll's 4 s limit (3.7 s here;
    2.0 s without callbacks)."""
    c = make_cluster(osts=1)
    m = c.mount(name="um")
    os.stat(m.path)
    time.sleep(0.3)  # its NOTIFY_WAIT is parked at the MDS
    c.mds.kill(signal.SIGKILL)
    t0 = time.monotonic()
    subprocess.run(["fusermount3", "-u", str(m.path)], capture_output=True)
    m.proc.p.wait(20)
    took = time.monotonic() - t0
    print(f"unmount with the MDS gone: {took:.2f} s")
    assert took < 6, f"nacre-mount took {took:.1f} s to exit"


def test_ten_thousand_groups(mounts):
    """A list longer than one GROUPS_SET chunk (8192): all of it counts."""
    a, b = mounts
    groups = [60000 + i for i in range(10000)]
    p = os.path.join(a, "g10k")
    with open(p, "wb") as f:
        f.write(b"for the last group")
    os.chown(p, 0, groups[-1])
    os.chmod(p, 0o640)
    u = User({}, groups=groups)
    try:
        assert u.do("read", os.path.join(b, "g10k"))[0] == 0
    finally:
        u.close()
    u = User({}, groups=groups[:-1])
    try:
        assert u.do("read", os.path.join(b, "g10k"))[0] == errno.EACCES
    finally:
        u.close()
