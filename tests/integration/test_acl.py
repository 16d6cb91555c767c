"""POSIX ACLs side by side with ext4: the same getfacl/setfacl script runs in a directory on
a real ext4 (a loop-mounted image file) and in one on a nacre mount; the transcripts (exit
codes, messages, getfacl output, modes) and the access results of ordinary users (read,
write, exec, create in a directory, as a named user, a named group member, an owning group
member and a non-member) must be the same."""
import ctypes
import errno
import os
import re
import shutil
import stat
import struct
import subprocess
import tempfile

import pytest

from conftest import BUILD, REPO, as_user, load_libnacre

OWNER, NAMED, MEMBER, GMEMBER, OTHER = 2000, 2001, 2002, 2003, 2004
OWNGROUP, NAMEDGROUP = 3000, 3001
# (name, uid, gid, supplementary groups)
USERS = [
    ("owner", OWNER, OWNGROUP, ()),
    ("named", NAMED, 4000, ()),
    ("member", MEMBER, 4000, (NAMEDGROUP,)),
    ("gmember", GMEMBER, OWNGROUP, ()),
    ("other", OTHER, 4000, ()),
]


def require_acl_tools():
    for t in ("getfacl", "setfacl", "mkfs.ext4"):
        if not shutil.which(t):
            pytest.fail(f"{t} is missing: apt-get install acl e2fsprogs")


@pytest.fixture(scope="module")
def ext4():
    """An ext4 file system on a loop device in a temporary directory (acl is on by default),
    unmounted and removed afterwards."""
    require_acl_tools()
    d = tempfile.mkdtemp(prefix="nacre-acl-ext4-")
    os.chmod(d, 0o755)
    img, mp = os.path.join(d, "img"), os.path.join(d, "mnt")
    os.mkdir(mp)
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", img], check=True, capture_output=True)
    r = subprocess.run(["mount", "-o", "loop", img, mp], capture_output=True, text=True)
    if r.returncode != 0:
        shutil.rmtree(d, ignore_errors=True)
        pytest.fail(f"cannot loop-mount an ext4 image (needs root and loop devices): "
                    f"{r.stderr.strip()}")
    os.chmod(mp, 0o755)
    try:
        yield mp
    finally:
        subprocess.run(["umount", mp], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def sides(request, mnt, ext4):
    """A fresh directory on nacre and one on ext4."""
    name = request.node.name
    a, b = os.path.join(mnt, name), os.path.join(ext4, name)
    for p in (a, b):
        os.mkdir(p)
        os.chmod(p, 0o755)
    return a, b




def paths_under(base):
    out = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [n for n in dirnames if n != "lost+found"]
        for n in dirnames + filenames:
            out.append(os.path.relpath(os.path.join(dirpath, n), base))
    return sorted(out)


def state(base):
    """getfacl -n of every path (relative), with each mode and its system.* xattr names."""
    lines = []
    for p in paths_under(base):
        st = os.lstat(os.path.join(base, p))
        names = sorted(n for n in os.listxattr(os.path.join(base, p)) if n.startswith("system."))
        lines.append(f"{p} {stat.filemode(st.st_mode)} {st.st_uid}:{st.st_gid} {names}")
        r = subprocess.run(["getfacl", "-n", p], cwd=base, capture_output=True, text=True)
        lines.append(f"rc={r.returncode} {r.stdout}{r.stderr}")
    return "\n".join(lines)


def run(base, argv, user=None):
    """Runs argv in base (umask 022), as root or as one of USERS; returns a transcript line."""
    def become():
        os.umask(0o022)
        if user:
            _, uid, gid, groups = user
            os.setgroups(list(groups))
            os.setgid(gid)
            os.setuid(uid)
    r = subprocess.run(argv, cwd=base, capture_output=True, text=True, preexec_fn=become)
    who = user[0] if user else "root"
    return f"$ ({who}) {' '.join(argv)}\nrc={r.returncode} {r.stdout}{r.stderr}"


def _open(path, flags):
    os.close(os.open(path, flags))


def _exec(path):
    subprocess.run([path], check=True, capture_output=True)


def _create_in(d):
    path = os.path.join(d, f"by-{os.getuid()}")
    _open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    os.unlink(path)


def _list(d):
    os.listdir(d)


def _search(d):
    os.stat(os.path.join(d, "."))


CHECKS = {
    "read": lambda p: _open(p, os.O_RDONLY),
    "write": lambda p: _open(p, os.O_WRONLY),
    "exec": _exec,
}
DIR_CHECKS = {"list": _list, "search": _search, "create": _create_in}


def access(base, paths):
    """errno of every check, for every user, on every path (relative to base)."""
    out = []
    for p in paths:
        full = os.path.join(base, p)
        checks = DIR_CHECKS if os.path.isdir(full) else CHECKS
        for user in USERS:
            for what, fn in checks.items():
                e = as_user(lambda: fn(full), user[1], user[2], user[3])
                out.append(f"{p} {user[0]} {what}: {errno.errorcode.get(e, e) if e else 'ok'}")
    return out


SCRIPT_FILE = "#!/bin/sh\nexit 0\n"


def prepare(base):
    with open(os.path.join(base, "file"), "w") as f:
        f.write(SCRIPT_FILE)
    os.chmod(os.path.join(base, "file"), 0o750)
    os.mkdir(os.path.join(base, "dir"))
    os.chmod(os.path.join(base, "dir"), 0o750)
    os.chown(os.path.join(base, "file"), OWNER, OWNGROUP)
    os.chown(os.path.join(base, "dir"), OWNER, OWNGROUP)


def transcript(base, steps):
    """Runs steps in base: ("sh", argv, user), ("state",), ("access", paths)."""
    out = []
    for s in steps:
        if s[0] == "sh":
            out.append(run(base, s[1], s[2] if len(s) > 2 else None))
        elif s[0] == "state":
            out.append(state(base))
        else:
            out.extend(access(base, s[1]))
    return out


def compare(sides, steps):
    nacre, ext4 = sides
    for b in sides:
        prepare(b)
    ta, tb = transcript(nacre, steps), transcript(ext4, steps)
    assert len(ta) == len(tb)
    diffs = [f"nacre: {x}\n ext4: {y}" for x, y in zip(ta, tb) if x != y]
    assert not diffs, "differences from ext4:\n" + "\n".join(diffs)
    return ta


def sh(*argv, user=None):
    return ("sh", list(argv), user) if user else ("sh", list(argv))


OWNER_USER = USERS[0]
OTHER_USER = USERS[4]


def test_named_entries_and_mask(sides):
    """Named users and groups, the mask limiting them, chmod moving the mask, -x, -b, and
    an ACL equal to the mode stored as the mode alone."""
    t = compare(sides, [
        sh("setfacl", "-m", f"u:{NAMED}:rwx,g:{NAMEDGROUP}:rw", "file"),
        sh("setfacl", "-m", f"u:{NAMED}:r-x,g:{NAMEDGROUP}:rwx", "dir"),
        ("state",),
        ("access", ["file", "dir"]),
        sh("chmod", "0740", "file"),  # the mask becomes r--
        sh("chmod", "0700", "dir"),  # the mask becomes ---
        ("state",),
        ("access", ["file", "dir"]),
        sh("setfacl", "-m", "m::rwx", "file"),
        sh("setfacl", "-x", f"u:{NAMED}", "file"),
        ("state",),
        ("access", ["file"]),
        sh("setfacl", "-b", "file"),
        ("state",),
        sh("setfacl", "-m", "u::rwx,g::r-x,o::r--", "file"),  # equivalent to a mode
        sh("setfacl", "-m", f"u:{OTHER}:r", "dir", user=OTHER_USER),  # not the owner
        sh("setfacl", "-m", f"u:{OTHER}:rwx", "dir", user=OWNER_USER),  # the owner may
        ("state",),
        ("access", ["file", "dir"]),
    ])
    # the script did what it says (not only the same on both)
    text = "\n".join(t)
    assert f"user:{NAMED}:rwx\t#effective:r--" in text
    assert "file -rwxr-xr-- 2000:3000 []" in text
    assert "Operation not permitted" in text


def test_default_acl_inheritance(sides):
    """A default ACL is inherited by new files (limited by their mode, no umask), by new
    subdirectories (which also get the default), by nested ones and by a FIFO; -k removes it
    and the umask applies again."""
    t = compare(sides, [
        sh("setfacl", "-m", f"u:{NAMED}:rwx,g:{NAMEDGROUP}:r-x", "dir"),
        sh("setfacl", "-d", "-m", f"u:{NAMED}:rwx,g:{NAMEDGROUP}:r-x,o::---", "dir"),
        sh("sh", "-c", f"echo '{SCRIPT_FILE}' > dir/new; mkdir dir/sub; mkdir dir/sub/deeper; "
           "touch dir/sub/deeper/leaf; mkfifo dir/fifo; mkdir -m 0700 dir/private"),
        sh("sh", "-c", "chmod 0755 dir/new"),
        ("state",),
        ("access", ["dir", "dir/new", "dir/sub", "dir/sub/deeper", "dir/sub/deeper/leaf"]),
        sh("setfacl", "-k", "dir"),
        sh("sh", "-c", "touch dir/after; mkdir dir/after-dir"),
        sh("mkdir", "wide"),
        sh("setfacl", "-d", "-m", "u::rwx,g::rwx,o::rwx", "wide"),
        sh("sh", "-c", "touch wide/f; mkdir wide/d"),  # 0666 and 0777 despite umask 022
        ("state",),
    ])
    text = "\n".join(t)
    assert "dir/sub/deeper/leaf -rw-rw---- 0:0" in text  # the mask took the group bits
    assert "wide/f -rw-rw-rw-" in text
    assert f"default:user:{NAMED}:rwx" in text


def test_invalid_acls_refused(sides):
    """Malformed or invalid ACLs get the same errors as on ext4, setfacl's own checks too;
    a default ACL on a file is refused."""
    u = 0xffffffff

    def blob(entries):
        return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)
    bad = {
        "no mask with named": blob([(1, 6, u), (2, 4, NAMED), (4, 4, u), (0x20, 4, u)]),
        "order": blob([(4, 4, u), (1, 6, u), (0x20, 4, u)]),
        "perm": blob([(1, 0xf, u), (4, 4, u), (0x20, 4, u)]),
        "no other": blob([(1, 6, u), (4, 4, u)]),
        "two owners": blob([(1, 6, u), (1, 6, u), (4, 4, u), (0x20, 4, u)]),
        "short": b"\x02\x00\x00",
        "ragged": blob([(1, 6, u)]) + b"\x00",
        "version": struct.pack("<I", 1) + blob([(1, 6, u), (4, 4, u), (0x20, 4, u)])[4:],
        "tag": blob([(1, 6, u), (0x40, 4, u), (4, 4, u), (0x20, 4, u)]),
    }
    nacre, ext4 = sides
    results = {}
    for b in sides:
        prepare(b)
        r = []
        for what, value in bad.items():
            for name in ("system.posix_acl_access", "system.posix_acl_default"):
                target = os.path.join(b, "dir")
                try:
                    os.setxattr(target, name, value)
                    r.append((what, name, "ok"))
                except OSError as e:
                    r.append((what, name, errno.errorcode[e.errno]))
        try:
            os.setxattr(os.path.join(b, "file"), "system.posix_acl_default",
                        blob([(1, 6, u), (4, 4, u), (0x20, 4, u)]))
            r.append(("default on file", "ok"))
        except OSError as e:
            r.append(("default on file", errno.errorcode[e.errno]))
        r.append(("file acl", sorted(os.listxattr(os.path.join(b, "file")))))
        results[b] = r
    assert results[nacre] == results[ext4]
    assert ("order", "system.posix_acl_access", "EINVAL") in results[nacre]
    assert ("default on file", "EACCES") in results[nacre]
    t = compare(_subdirs(sides, "cli"), [
        sh("setfacl", "-m", f"u:{NAMED}:r,u:{NAMED}:w", "file"),  # duplicate
        sh("setfacl", "-m", "u:nosuchuser-acl:r", "file"),
        sh("setfacl", "-n", "-m", f"u:{NAMED}:rwx", "file"),  # no mask recalculation
        sh("setfacl", "-d", "-m", f"u:{NAMED}:rwx", "file"),
        ("state",),
    ])
    assert any("rc=1" in line for line in t)


def _subdirs(sides, name):
    out = []
    for b in sides:
        p = os.path.join(b, name)
        os.mkdir(p)
        os.chmod(p, 0o755)
        out.append(p)
    return tuple(out)


# ---- the MDS decides too: a client that skips the kernel's checks (libnacre directly) ----

class Fid(ctypes.Structure):
    _fields_ = [("seq", ctypes.c_uint64), ("oid", ctypes.c_uint32), ("ver", ctypes.c_uint32)]


def _max_groups():
    text = (REPO / "include/nacre/nacre_types.h").read_text()
    return int(re.search(r"#define NACRE_CRED_GROUPS\s+(\d+)", text).group(1))


class Cred(ctypes.Structure):
    _fields_ = [("uid", ctypes.c_uint32), ("gid", ctypes.c_uint32),
                ("ngroups", ctypes.c_uint32), ("groups", ctypes.c_uint32 * _max_groups()),
                ("groups_token", ctypes.c_uint64), ("flags", ctypes.c_uint32)]


class MountOpts(ctypes.Structure):
    _fields_ = [("key_file", ctypes.c_char_p), ("timeout_ms", ctypes.c_int),
                ("recovery_timeout_ms", ctypes.c_int), ("connect_timeout_ms", ctypes.c_int),
                ("client_name", ctypes.c_char_p), ("log_fn", ctypes.c_void_p),
                ("log_arg", ctypes.c_void_p), ("max_rpc_size", ctypes.c_uint),
                ("max_rpcs_in_flight", ctypes.c_int), ("max_dirty_mb", ctypes.c_int),
                ("readahead_max_mb", ctypes.c_int), ("sec", ctypes.c_char_p)]


@pytest.fixture(scope="module")
def libnacre(cluster):
    lib = load_libnacre()
    lib.nacre_fs_mount.argtypes = [ctypes.c_char_p, ctypes.POINTER(MountOpts),
                                   ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
                                   ctypes.c_size_t]
    lib.nacre_fs_umount.argtypes = [ctypes.c_void_p]
    lib.nacre_open.argtypes = [ctypes.c_void_p, ctypes.POINTER(Cred), ctypes.POINTER(Fid),
                               ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
    lib.nacre_close.argtypes = [ctypes.c_void_p]
    lib.nacre_fid_parse.argtypes = [ctypes.c_char_p, ctypes.POINTER(Fid)]
    opts = MountOpts(key_file=str(cluster.key).encode(), client_name=b"acl-direct")
    fs, err = ctypes.c_void_p(), ctypes.create_string_buffer(512)
    spec = f"127.0.0.1:{cluster.mds_port}:/{cluster.fsname}".encode()
    rc = lib.nacre_fs_mount(spec, ctypes.byref(opts), ctypes.byref(fs), err, len(err))
    assert rc == 0, err.value.decode()
    yield lib, fs
    lib.nacre_fs_umount(fs)


def test_mds_enforces_acls(mnt, libnacre):
    """Opens through libnacre, past the kernel: the MDS applies the ACL with its mask."""
    lib, fs = libnacre
    d = os.path.join(mnt, "mds-enforced")
    os.mkdir(d, 0o755)
    p = os.path.join(d, "f")
    with open(p, "w") as f:
        f.write("x")
    os.chown(p, OWNER, OWNGROUP)
    os.chmod(p, 0o600)
    subprocess.run(["setfacl", "-m", f"u:{NAMED}:rw,g:{NAMEDGROUP}:r,m::r", p], check=True)
    fid = Fid()
    assert lib.nacre_fid_parse(os.getxattr(p, "nacre.fid"), ctypes.byref(fid)) == 0

    def try_open(uid, gid, groups, flags):
        cr = Cred(uid=uid, gid=gid, ngroups=len(groups))
        for i, g in enumerate(groups):
            cr.groups[i] = g
        f = ctypes.c_void_p()
        rc = lib.nacre_open(fs, ctypes.byref(cr), ctypes.byref(fid), flags, ctypes.byref(f))
        if rc == 0:
            lib.nacre_close(f)
        return rc

    eacces = -errno.EACCES
    assert try_open(NAMED, 4000, (), os.O_RDONLY) == 0  # the mode alone (0640) says no
    assert try_open(NAMED, 4000, (), os.O_WRONLY) == eacces  # rw- masked to r--
    assert try_open(MEMBER, 4000, (NAMEDGROUP,), os.O_RDONLY) == 0
    assert try_open(MEMBER, 4000, (NAMEDGROUP,), os.O_RDWR) == eacces
    assert try_open(OTHER, 4000, (), os.O_RDONLY) == eacces
    assert try_open(OWNER, OWNGROUP, (), os.O_RDWR) == 0
    # chmod g+w moves the mask: the named user may write now
    os.chmod(p, 0o660)
    assert try_open(NAMED, 4000, (), os.O_WRONLY) == 0
    assert try_open(MEMBER, 4000, (NAMEDGROUP,), os.O_WRONLY) == eacces  # its entry is r--
    # without the ACL the named user is "other" again
    subprocess.run(["setfacl", "-b", p], check=True)
    assert try_open(NAMED, 4000, (), os.O_RDONLY) == eacces
