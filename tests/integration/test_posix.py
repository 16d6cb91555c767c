"""POSIX behaviour of a nacre mount, compared operation by operation with a local directory."""
import ctypes
import errno
import os
import stat
import tempfile
import time

import pytest

from conftest import errno_of, wait_for, as_user as _as_user

AT_FDCWD = -100
RENAME_NOREPLACE = 1
_libc = ctypes.CDLL(None, use_errno=True)


def renameat2(src, dst, flags):
    if not hasattr(_libc, "renameat2"):
        raise AssertionError("libc has no renameat2 (glibc >= 2.28 needed)")
    r = _libc.renameat2(AT_FDCWD, os.fsencode(src), AT_FDCWD, os.fsencode(dst), flags)
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), src)


@pytest.fixture(scope="module")
def localroot():
    d = tempfile.mkdtemp(prefix="nacre-ref-")
    os.chmod(d, 0o755)
    yield d
    os.system(f"rm -rf '{d}'")


@pytest.fixture
def pair(request, mnt, localroot):
    """A fresh directory on the mount and its twin in the local reference directory."""
    name = request.node.name.replace("[", "_").replace("]", "")
    a, b = os.path.join(mnt, name), os.path.join(localroot, name)
    os.mkdir(a)
    os.mkdir(b)
    os.chmod(a, 0o755)
    os.chmod(b, 0o755)
    return a, b


def both(pair, fn, paths, *args, **kw):
    """Runs fn(path..., *args) on the same relative path (or tuple of paths) in both trees;
    asserts equal outcomes (value or errno name) and returns it."""
    a, b = pair
    if isinstance(paths, str):
        paths = (paths,)
    ra = errno_of(fn, *[os.path.join(a, n) for n in paths], *args, **kw)
    rb = errno_of(fn, *[os.path.join(b, n) for n in paths], *args, **kw)
    assert ra == rb, f"{getattr(fn, '__name__', fn)}{paths}{args}: nacre {ra} != local {rb}"
    return ra


def write_file(path, data, flags=os.O_WRONLY | os.O_CREAT | os.O_TRUNC):
    fd = os.open(path, flags, 0o644)
    try:
        return os.write(fd, data)
    finally:
        os.close(fd)


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def attrs(path):
    st = os.lstat(path)
    return (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_size, st.st_nlink)


def test_create_write_read(pair):
    data = os.urandom(3 * 1024 * 1024 + 17)
    assert both(pair, write_file, "f", data=data) == ("ok", len(data))
    assert both(pair, read_file, "f") == ("ok", data)
    assert both(pair, attrs, "f")[0] == "ok"
    # Overwrite in the middle, unaligned.
    def patch(p):
        fd = os.open(p, os.O_RDWR)
        os.pwrite(fd, b"x" * 70001, 1048570)
        os.close(fd)
        return read_file(p)
    assert both(pair, patch, "f")[0] == "ok"
    assert both(pair, os.path.getsize, "f") == ("ok", len(data))
    # O_EXCL on an existing file.
    assert both(pair, os.open, "f", flags=os.O_CREAT | os.O_EXCL | os.O_WRONLY) == \
        ("err", "EEXIST")


def test_truncate(pair):
    data = os.urandom(300000)
    both(pair, write_file, "t", data=data)
    for size in (200000, 0, 5, 1 << 21, 65536, 131073):
        assert both(pair, os.truncate, "t", size) == ("ok", None)
        r = both(pair, read_file, "t")
        assert len(r[1]) == size
    # Extending leaves zeros.
    assert both(pair, read_file, "t")[1][6:] == b"\0" * (131073 - 6)
    assert both(pair, os.truncate, "missing", 0) == ("err", "ENOENT")


def test_append(pair):
    def append(p):
        for i in range(20):
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.write(fd, bytes([i]) * (1000 + i * 997))
            os.close(fd)
        return read_file(p)
    assert both(pair, append, "a")[0] == "ok"


def test_unlink(pair):
    both(pair, write_file, "u", data=b"hello")
    assert both(pair, os.unlink, "u") == ("ok", None)
    assert both(pair, os.stat, "u") == ("err", "ENOENT")
    assert both(pair, os.unlink, "u") == ("err", "ENOENT")
    # Unlink while open: the data stays readable through the descriptor.
    def open_unlink_read(p):
        write_file(p, b"still here")
        fd = os.open(p, os.O_RDONLY)
        os.unlink(p)
        data = os.pread(fd, 100, 0)
        os.close(fd)
        return data
    assert both(pair, open_unlink_read, "ou") == ("ok", b"still here")


def test_rename(pair):
    both(pair, write_file, "r1", data=b"one")
    both(pair, write_file, "r2", data=b"two")
    assert both(pair, os.rename, ("r1", "r3")) == ("ok", None)
    assert both(pair, os.stat, "r1") == ("err", "ENOENT")
    assert both(pair, read_file, "r3") == ("ok", b"one")
    # Replace an existing file.
    assert both(pair, os.rename, ("r3", "r2")) == ("ok", None)
    assert both(pair, read_file, "r2") == ("ok", b"one")
    # RENAME_NOREPLACE.
    both(pair, write_file, "r4", data=b"four")
    assert both(pair, renameat2, ("r4", "r2"), flags=RENAME_NOREPLACE) == ("err", "EEXIST")
    assert both(pair, renameat2, ("r4", "r5"), flags=RENAME_NOREPLACE) == ("ok", None)
    # Directories.
    both(pair, os.mkdir, "d1")
    both(pair, os.mkdir, "d2")
    both(pair, write_file, "d2/x", data=b"x")
    assert both(pair, os.rename, ("d1", "d2")) == ("err", "ENOTEMPTY")
    assert both(pair, os.rename, ("r2", "d1")) == ("err", "EISDIR")
    assert both(pair, os.rename, ("d1", "r2")) == ("err", "ENOTDIR")
    assert both(pair, os.rename, ("d2", "d1")) == ("ok", None)
    assert both(pair, read_file, "d1/x") == ("ok", b"x")
    assert both(pair, os.rename, ("d1", "d1/sub")) == ("err", "EINVAL")
    assert both(pair, os.rename, ("nope", "d9")) == ("err", "ENOENT")
    assert both(pair, lambda p: sorted(os.listdir(p)), "") == \
        ("ok", sorted(["d1", "r2", "r5"]))


def test_fstat_of_a_victim_of_rename(pair):
    # generic/035: a directory or file replaced by rename stays stat-able through a
    # descriptor held open, with nlink 0
    def replace(p, make):
        make(p + "-src")
        make(p + "-dst")
        fd = os.open(p + "-dst", os.O_RDONLY)
        try:
            os.rename(p + "-src", p + "-dst")
            st = os.fstat(fd)
            return stat.S_IFMT(st.st_mode), st.st_nlink
        finally:
            os.close(fd)
    assert both(pair, replace, "d", make=os.mkdir) == ("ok", (stat.S_IFDIR, 0))
    assert both(pair, replace, "f", make=lambda p: write_file(p, b"x")) == \
        ("ok", (stat.S_IFREG, 0))
    # a directory removed while it is the working directory of a process
    def cwd_removed(p):
        os.mkdir(p)
        here = os.getcwd()
        os.chdir(p)
        try:
            os.rmdir(p)
            st = os.stat(".")
            return stat.S_IFMT(st.st_mode), st.st_nlink
        finally:
            os.chdir(here)
    assert both(pair, cwd_removed, "c") == ("ok", (stat.S_IFDIR, 0))


def test_atime_on_read(cluster, mnt):
    # generic/003: relatime (the default) sets atime at a read when it is not after mtime
    # or ctime, strictatime at every open's first read, noatime never. The reading mount
    # shows it at once, the others after the close.
    strict = cluster.mount(opts=["strictatime"], name="atime-strict")
    noat = cluster.mount(opts=["noatime"], name="atime-no")
    try:
        d = os.path.join(mnt, "atime")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, "f")
        write_file(p, b"data" * 1000)
        paths = {m: os.path.join(m, "atime", "f") for m in (strict, noat)}

        def atime(q):
            return os.stat(q).st_atime_ns

        def old_atime():
            st = os.stat(p)
            old = st.st_mtime_ns - 100 * 10**9
            os.utime(p, ns=(old, st.st_mtime_ns))
            return old
        old = old_atime()
        before = time.time_ns()
        assert read_file(p) == b"data" * 1000
        a1 = atime(p)
        assert a1 >= before
        assert read_file(p) and atime(p) == a1   # after mtime and ctime now: kept
        wait_for(lambda: atime(paths[strict]) == a1, 5, "the other mount to see the atime")

        old = old_atime()
        assert read_file(paths[noat])
        time.sleep(1.5)                          # the close, and every attribute cache
        assert atime(paths[noat]) == old and atime(p) == old

        assert read_file(paths[strict])
        s1 = atime(paths[strict])
        assert s1 > old
        time.sleep(0.05)
        assert read_file(paths[strict])          # strictatime: every open's read
        assert atime(paths[strict]) > s1
    finally:
        for m in (strict, noat):
            m.unmount()
            cluster.mounts.remove(m)


def test_mkdir_rmdir_errors(pair):
    assert both(pair, os.mkdir, "d") == ("ok", None)
    assert both(pair, os.mkdir, "d") == ("err", "EEXIST")
    both(pair, write_file, "d/f", data=b"")
    assert both(pair, os.rmdir, "d") == ("err", "ENOTEMPTY")
    assert both(pair, os.rmdir, "d/f") == ("err", "ENOTDIR")
    assert both(pair, os.unlink, "d") == ("err", "EISDIR")
    assert both(pair, os.open, "d", flags=os.O_WRONLY) == ("err", "EISDIR")
    assert both(pair, os.mkdir, "d/f/x") == ("err", "ENOTDIR")
    assert both(pair, os.mkdir, "nope/x") == ("err", "ENOENT")
    assert both(pair, os.unlink, "d/f") == ("ok", None)
    assert both(pair, os.rmdir, "d") == ("ok", None)
    assert both(pair, os.rmdir, "d") == ("err", "ENOENT")


def test_readdir_5000(pair):
    names = sorted(f"entry-{i:05d}-{'x' * (i % 40)}" for i in range(5000))
    a, b = pair
    for base in (a, b):
        os.mkdir(os.path.join(base, "big"))
        for n in names:
            os.close(os.open(os.path.join(base, "big", n), os.O_CREAT | os.O_WRONLY, 0o644))
    la = os.listdir(os.path.join(a, "big"))
    assert len(la) == len(set(la)) == 5000, "duplicates or missing entries in readdir"
    assert sorted(la) == sorted(os.listdir(os.path.join(b, "big"))) == names
    # scandir gives types.
    assert all(e.is_file() for e in os.scandir(os.path.join(a, "big")))
    for n in names:
        os.unlink(os.path.join(a, "big", n))
    assert os.listdir(os.path.join(a, "big")) == []
    os.rmdir(os.path.join(a, "big"))


def test_symlink(pair):
    assert both(pair, lambda p: os.symlink("target/../x", p), "s") == ("ok", None)
    assert both(pair, os.readlink, "s") == ("ok", "target/../x")
    assert both(pair, lambda p: stat.S_ISLNK(os.lstat(p).st_mode), "s") == ("ok", True)
    assert both(pair, os.stat, "s") == ("err", "ENOENT")  # dangling
    both(pair, write_file, "x", data=b"via link")
    assert both(pair, read_file, "s") == ("err", "ENOENT")  # "target" does not exist yet
    both(pair, os.mkdir, "target")
    assert both(pair, read_file, "s") == ("ok", b"via link")
    long_target = "a/" * 1000 + "b"
    assert both(pair, lambda p: os.symlink(long_target, p), "long") == ("ok", None)
    assert both(pair, os.readlink, "long") == ("ok", long_target)
    assert both(pair, os.readlink, "x") == ("err", "EINVAL")
    assert both(pair, lambda p: os.symlink("y", p), "s") == ("err", "EEXIST")


def test_hardlinks(pair):
    both(pair, write_file, "h", data=b"shared")
    assert both(pair, os.link, ("h", "h2")) == ("ok", None)
    assert both(pair, lambda p: os.stat(p).st_nlink, "h") == ("ok", 2)
    a, _ = pair
    assert os.stat(os.path.join(a, "h")).st_ino == os.stat(os.path.join(a, "h2")).st_ino
    both(pair, write_file, "h2", data=b"changed", flags=os.O_WRONLY)
    assert both(pair, read_file, "h") == ("ok", b"changed")
    assert both(pair, os.unlink, "h") == ("ok", None)
    assert both(pair, lambda p: os.stat(p).st_nlink, "h2") == ("ok", 1)
    assert both(pair, read_file, "h2") == ("ok", b"changed")
    both(pair, os.mkdir, "dir")
    assert both(pair, os.link, ("dir", "dirlink")) == ("err", "EPERM")
    assert both(pair, os.link, ("h2", "h2")) == ("err", "EEXIST")


def test_chmod_chown_utime(pair):
    both(pair, write_file, "m", data=b"")
    for mode in (0o600, 0o4755, 0o1777, 0o000, 0o644):
        assert both(pair, os.chmod, "m", mode) == ("ok", None)
        assert both(pair, lambda p: stat.S_IMODE(os.stat(p).st_mode), "m") == ("ok", mode)
    assert both(pair, os.chown, "m", 1234, 5678) == ("ok", None)
    assert both(pair, lambda p: (os.stat(p).st_uid, os.stat(p).st_gid), "m") == \
        ("ok", (1234, 5678))
    ns = (1_600_000_000_123_456_789, 1_500_000_000_987_654_321)
    assert both(pair, os.utime, "m", ns=ns) == ("ok", None)
    assert both(pair, lambda p: (os.stat(p).st_atime_ns, os.stat(p).st_mtime_ns), "m") == \
        ("ok", ns)
    # A write moves mtime forward.
    a, _ = pair
    write_file(os.path.join(a, "m"), b"new", flags=os.O_WRONLY)
    assert os.stat(os.path.join(a, "m")).st_mtime_ns > ns[1]
    assert both(pair, os.chmod, "missing", 0o600) == ("err", "ENOENT")


def test_statfs(mnt, cluster):
    st = os.statvfs(mnt)
    assert st.f_bsize > 0 and st.f_blocks > 0
    assert 0 <= st.f_bavail <= st.f_bfree <= st.f_blocks
    assert st.f_files > 0 and st.f_ffree <= st.f_files
    assert st.f_namemax == 255
    # The sum over OSTs equals what the targets xattr reports.
    text = os.getxattr(str(mnt), "nacre.targets").decode()
    kb = sum(int(l.split()[4]) for l in text.splitlines() if l.startswith("OST"))
    assert abs(st.f_blocks * st.f_frsize // 1024 - kb) <= kb // 100 + 1


def test_user_xattrs(pair):
    both(pair, write_file, "x", data=b"")
    assert both(pair, os.setxattr, "x", "user.one", b"1") == ("ok", None)
    assert both(pair, os.setxattr, "x", "user.big", os.urandom(0) + b"v" * 4000) == ("ok", None)
    assert both(pair, os.getxattr, "x", "user.one") == ("ok", b"1")
    assert both(pair, os.getxattr, "x", "user.none") == ("err", "ENODATA")
    assert both(pair, lambda p: sorted(n for n in os.listxattr(p) if n.startswith("user.")),
                "x") == ("ok", ["user.big", "user.one"])
    assert both(pair, os.setxattr, "x", "user.one", b"2", os.XATTR_CREATE) == ("err", "EEXIST")
    assert both(pair, os.setxattr, "x", "user.two", b"2", os.XATTR_REPLACE) == \
        ("err", "ENODATA")
    assert both(pair, os.removexattr, "x", "user.one") == ("ok", None)
    assert both(pair, os.removexattr, "x", "user.one") == ("err", "ENODATA")
    # Virtual names are not listed.
    a, _ = pair
    assert not [n for n in os.listxattr(os.path.join(a, "x")) if n.startswith("nacre.")]


def test_xattr_value_of_64_kib(pair, cluster):
    # generic/020, 486: Linux's largest value (XATTR_SIZE_MAX, 65536 bytes) is stored and
    # read back whole through another mount; one byte more is E2BIG (from the kernel)
    a, _ = pair
    p = os.path.join(a, "x64k")
    write_file(p, b"")
    value = os.urandom(65536)
    os.setxattr(p, "user.full", value)
    os.setxattr(p, "user.almost", value[:64001])
    assert errno_of(os.setxattr, p, "user.over", value + b"x") == ("err", "E2BIG")
    other = cluster.mount(name="xattr-b")
    try:
        q = os.path.join(other, os.path.relpath(p, a.rsplit("/", 1)[0]))
        assert os.getxattr(q, "user.full") == value
        assert os.getxattr(q, "user.almost") == value[:64001]
        assert sorted(n for n in os.listxattr(q) if n.startswith("user.")) == \
            ["user.almost", "user.full"]
    finally:
        other.unmount()
        cluster.mounts.remove(other)




def test_eacces_as_other_user(pair):
    a, b = pair
    for base in (a, b):
        write_file(os.path.join(base, "secret"), b"s")
        os.chmod(os.path.join(base, "secret"), 0o600)
        os.mkdir(os.path.join(base, "closed"), 0o755)
        write_file(os.path.join(base, "public"), b"p")
        os.chmod(os.path.join(base, "public"), 0o644)
    cases = [
        lambda base: open(os.path.join(base, "secret"), "rb").read(),
        lambda base: write_file(os.path.join(base, "closed", "new"), b""),
        lambda base: os.mkdir(os.path.join(base, "closed", "sub")),
        lambda base: open(os.path.join(base, "public"), "ab").write(b"x"),
        lambda base: os.chmod(os.path.join(base, "public"), 0o777),
        lambda base: os.unlink(os.path.join(base, "public")),
    ]
    expect = [errno.EACCES, errno.EACCES, errno.EACCES, errno.EACCES, errno.EPERM,
              errno.EACCES]
    for i, case in enumerate(cases):
        got_a = _as_user(lambda: case(a))
        got_b = _as_user(lambda: case(b))
        assert got_b == expect[i], f"case {i}: local reference gave {got_b}"
        assert got_a == got_b, f"case {i}: nacre errno {got_a} != local {got_b}"
    # Reading a public file works for the other user.
    assert _as_user(lambda: open(os.path.join(a, "public"), "rb").read()) == 0


def test_fid2path_needs_search_permission(pair, mnt):
    """fid2path shows a path only to a caller who could have walked it: search permission
    on every directory of the path, as a lookup needs."""
    a, _ = pair
    os.makedirs(os.path.join(a, "shut", "in"))
    os.makedirs(os.path.join(a, "open", "in"))
    for d in ("shut", "open"):
        write_file(os.path.join(a, d, "in", "f"), b"x")
        os.chmod(os.path.join(a, d, "in", "f"), 0o644)
    os.chmod(os.path.join(a, "shut"), 0o700)  # root's; others may not search it

    def fid2path(d):
        fid = os.getxattr(os.path.join(a, d, "in", "f"), "nacre.fid").decode()
        return lambda: os.getxattr(mnt, "nacre.fid2path." + fid).decode()

    rel = os.path.relpath(a, mnt)
    assert fid2path("shut")() == f"/{rel}/shut/in/f"  # root may
    assert fid2path("open")() == f"/{rel}/open/in/f"
    assert _as_user(fid2path("shut")) == errno.EACCES
    assert _as_user(fid2path("open")) == 0


def test_supplementary_groups(pair):
    """A directory open to one supplementary group: a member creates in it, a caller without
    the group is refused, and the same pair of callers in turn (nacre-mount keeps callers'
    groups for a moment) each still gets its own answer; all as on a local directory."""
    a, b = pair
    for base in (a, b):
        os.mkdir(os.path.join(base, "team"))
        os.chown(os.path.join(base, "team"), 0, 4242)
        os.chmod(os.path.join(base, "team"), 0o770)
    for round_ in range(3):
        for base in (a, b):
            name = os.path.join(base, "team", f"f{round_}")
            assert _as_user(lambda: write_file(name, b"x"), groups=(4242,)) == 0
            assert _as_user(lambda: write_file(name + "-no", b"x"), groups=(4343,)) == \
                errno.EACCES
            assert _as_user(lambda: open(name, "rb").read(), groups=(7, 4242, 9)) == 0
    assert sorted(os.listdir(os.path.join(a, "team"))) == \
        sorted(os.listdir(os.path.join(b, "team")))


def test_create_open_semantics(pair):
    """open(O_CREAT) is one MDS request that creates and opens: the creator may write a
    file it creates read-only, O_EXCL refuses an existing name, and O_CREAT without O_EXCL
    of an existing file opens it with the usual permission checks."""
    a, b = pair
    for base in (a, b):
        os.chmod(base, 0o777)

    def create_readonly(base):
        fd = os.open(os.path.join(base, "ro-new"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        os.write(fd, b"written by its creator")
        os.close(fd)

    def excl_existing(base):
        os.close(os.open(os.path.join(base, "ro-new"), os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                         0o644))

    def creat_existing_readonly(base):
        os.close(os.open(os.path.join(base, "ro-new"), os.O_WRONLY | os.O_CREAT, 0o644))

    cases = (create_readonly, excl_existing, creat_existing_readonly)
    for i, (case, expect) in enumerate(zip(cases, (0, errno.EEXIST, errno.EACCES))):
        got_a = _as_user(lambda: case(a))
        got_b = _as_user(lambda: case(b))
        assert got_b == expect, f"case {i}: local reference gave {got_b}"
        assert got_a == got_b, f"case {i}: nacre errno {got_a} != local {got_b}"
    for base in (a, b):
        st = os.stat(os.path.join(base, "ro-new"))
        assert (st.st_mode & 0o777, st.st_uid) == (0o444, 65534)
        assert read_file(os.path.join(base, "ro-new")) == b"written by its creator"


def test_erofs_on_ro_mount(cluster, mnt):
    os.makedirs(os.path.join(mnt, "rotest"), exist_ok=True)
    write_file(os.path.join(mnt, "rotest", "f"), b"ro data")
    ro = cluster.mount(opts=["ro"], name="mnt-ro")
    try:
        base = os.path.join(ro.path, "rotest")
        assert read_file(os.path.join(base, "f")) == b"ro data"
        for fn in (lambda: write_file(os.path.join(base, "g"), b""),
                   lambda: os.mkdir(os.path.join(base, "d")),
                   lambda: os.unlink(os.path.join(base, "f")),
                   lambda: os.truncate(os.path.join(base, "f"), 0),
                   lambda: os.open(os.path.join(base, "f"), os.O_WRONLY),
                   lambda: os.setxattr(os.path.join(base, "f"), "user.a", b"1")):
            with pytest.raises(OSError) as ei:
                fn()
            assert ei.value.errno == errno.EROFS
    finally:
        ro.unmount()
        cluster.mounts.remove(ro)
