"""The on-disk compatibility image (docs/ondisk.md, "Compatibility image"): the tree that
scripts/make-compat-image writes with an older build, and the manifest of it that
test_compat.py reads back with the build under test. Both sides describe the tree with
describe(), so a field added here is recorded and checked alike (after regenerating)."""
import hashlib
import os
import stat
import struct
import subprocess
from pathlib import Path

from conftest import Proc, as_user, binary, daemon_env, wait_for

FSNAME = "compat"
USER = 60123            # the quota user; owns user/ and what is in it
PROJECT = 4242          # project id of proj/ (inherited by its files)
ARCHIVED = "hsm/archived.bin"
RELEASED = "hsm/released.bin"
EXISTS, DIRTY, RELEASED_BIT, ARCHIVED_BIT = 0x1, 0x2, 0x4, 0x8
MTIME = (1_600_000_000, 123_456_789)  # a fixed mtime on one file


def pattern(size, seed):
    """Bytes that differ per file and position yet compress well (the image stays small)."""
    return bytes((i * 31 + (i >> 12) + seed * 7) & 0xff for i in range(size))


def nacre(*args, check=True, cwd=None):
    r = subprocess.run([binary("nacre"), *map(str, args)], capture_output=True, text=True,
                       timeout=120, env=daemon_env(), cwd=cwd)
    if check and r.returncode != 0:
        raise AssertionError(f"nacre {' '.join(map(str, args))} failed ({r.returncode}):\n"
                             f"{r.stdout}{r.stderr}")
    return r


def acl_xattr(entries):
    """Linux's system.posix_acl_access value: version 2, then (tag, perm, id) entries."""
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, i) for t, p, i in entries)


def hsm_bits(mnt, path):
    out = nacre("hsm_state", Path(mnt) / path).stdout
    return int(out.split("(0x", 1)[1][:8], 16)


def wait_hsm(mnt, path, bits):
    wait_for(lambda: hsm_bits(mnt, path) & bits == bits, 60,
             f"{path} to have HSM state 0x{bits:x}", interval=0.2)


def start_copytool(c, archive_root):
    argv = [binary("nacre-copytool"), "--mds", c.spec, "--key-file", str(c.key),
            "--archive-id", "1", "--backend", f"posix:{archive_root}", "--threads", "1"]
    p = Proc("copytool", argv, c.dir / "copytool.log").start()
    c.extra.append(p)
    wait_for(lambda: "serving archive" in p.text() or not p.alive(), 15, "the copytool")
    assert p.alive(), p.text()
    return p


def populate(c, mnt, archive_root):
    """The tree of the image, made through the mount mnt of cluster c. Returns the sha256 of
    every regular file (the released one cannot be read without a restore later)."""
    mnt = Path(mnt)
    key = ["--key-file", c.key]
    nacre("changelog_register", *key, mnt)
    nacre("setquota", "-u", USER, "-b", "10M", "-B", "20M", "-i", "100", "-I", "200", mnt)
    nacre("setquota", "-t", "-u", "-b", "3d", "-i", "2d", mnt)

    os.makedirs(mnt / "dir/sub")
    (mnt / "hello.txt").write_bytes(b"hello, older build\n")
    (mnt / "dir/small.bin").write_bytes(pattern(5000, 1))
    (mnt / "dir/sub/empty").write_bytes(b"")
    (mnt / "dir/secret").write_bytes(b"only the owner reads this\n")
    os.chmod(mnt / "dir/secret", 0o600)
    os.utime(mnt / "dir/small.bin", ns=(MTIME[0] * 10**9, MTIME[0] * 10**9 + MTIME[1]))
    # a file over both OSTs, and a directory whose default layout its new files take
    nacre("setstripe", "-c", 2, "-S", "64K", mnt / "striped.bin")
    (mnt / "striped.bin").write_bytes(pattern(200_000, 2))
    os.mkdir(mnt / "wide")
    nacre("setstripe", "-c", 2, "-S", "128K", mnt / "wide")
    (mnt / "wide/inherits.bin").write_bytes(pattern(300_000, 3))
    os.symlink("dir/small.bin", mnt / "link")
    os.link(mnt / "hello.txt", mnt / "dir/hardlink")
    os.setxattr(mnt / "hello.txt", "user.color", b"blue")
    os.setxattr(mnt / "dir", "user.blob", bytes(range(40)))
    # an access ACL with a named user: an inode record with ACL entries
    os.setxattr(mnt / "dir/secret", "system.posix_acl_access",
                acl_xattr([(1, 6, 0xffffffff), (2, 4, USER), (4, 0, 0xffffffff),
                           (0x10, 4, 0xffffffff), (0x20, 0, 0xffffffff)]))
    # a project directory: its id and inherit flag, and a file that took them
    os.mkdir(mnt / "proj")
    nacre("project", "-p", PROJECT, "-s", mnt / "proj")
    (mnt / "proj/member").write_bytes(pattern(3000, 4))
    # the quota user's usage: a directory and files it made itself
    os.mkdir(mnt / "user")
    os.chown(mnt / "user", USER, USER)

    def write_as_user():
        for i, size in enumerate((40_000, 9000)):
            with open(mnt / f"user/f{i}", "wb") as f:
                f.write(pattern(size, 10 + i))
    assert as_user(write_as_user, uid=USER, gid=USER) == 0

    # HSM: one file archived, one archived and released (striped: restored on both OSTs)
    os.mkdir(mnt / "hsm")
    (mnt / ARCHIVED).write_bytes(pattern(30_000, 5))
    nacre("setstripe", "-c", 2, "-S", "64K", mnt / RELEASED)
    (mnt / RELEASED).write_bytes(pattern(150_000, 6))
    sums = {p: hashlib.sha256((mnt / p).read_bytes()).hexdigest()
            for p in (ARCHIVED, RELEASED)}
    start_copytool(c, archive_root)
    nacre("hsm_archive", mnt / ARCHIVED, mnt / RELEASED)
    wait_hsm(mnt, ARCHIVED, ARCHIVED_BIT)
    wait_hsm(mnt, RELEASED, ARCHIVED_BIT)
    nacre("hsm_release", mnt / RELEASED)
    wait_hsm(mnt, RELEASED, RELEASED_BIT)

    # the changelog user has cleared its first records: the rest are kept
    nacre("changelog_clear", *key, mnt, "cl1", 5)
    return sums


def _norm(text, mnt, archive_root):
    return text.replace(str(mnt), "MNT").replace(str(archive_root), "ARCHIVE")


def describe(c, mnt, archive_root, skip_read=()):
    """The manifest of the tree under mnt: per path its type, mode, owner, links, size,
    mtime, content hash, xattrs (paths of the archive written as ARCHIVE), layout (nacre
    getstripe), project (nacre project -d), HSM state (nacre hsm_state); the quota user's
    report and grace times (nacre quota) and the changelog (nacre changelog). Files in
    skip_read get no hash (reading a released file would restore it)."""
    mnt = Path(mnt)
    norm = lambda s: _norm(s, mnt, archive_root)  # noqa: E731
    paths = {}
    for root, dirs, files in os.walk(mnt):
        dirs.sort()
        for name in ([""] if Path(root) == mnt else []) + sorted(dirs + files):
            p = Path(root) / name
            rel = str(p.relative_to(mnt))
            st = os.lstat(p)
            e = {"mode": "%o" % st.st_mode, "uid": st.st_uid, "gid": st.st_gid,
                 "nlink": st.st_nlink, "mtime_ns": st.st_mtime_ns}
            x = {}
            for n in sorted(os.listxattr(p, follow_symlinks=False)):
                v = os.getxattr(p, n, follow_symlinks=False)
                try:
                    x[n] = norm(v.decode())
                except UnicodeDecodeError:
                    x[n] = "hex:" + v.hex()
            e["xattrs"] = x
            if stat.S_ISLNK(st.st_mode):
                e["target"] = os.readlink(p)
                e["size"] = st.st_size
            elif stat.S_ISDIR(st.st_mode):
                e["layout"] = norm(nacre("getstripe", "-d", p).stdout)
                e["project"] = norm(nacre("project", "-d", p).stdout)
            else:
                e["size"] = st.st_size
                if rel not in skip_read:
                    e["sha256"] = hashlib.sha256(p.read_bytes()).hexdigest()
                e["layout"] = norm(nacre("getstripe", p).stdout)
                e["project"] = norm(nacre("project", "-d", p).stdout)
                e["hsm_state"] = norm(nacre("hsm_state", p).stdout)
            paths[rel] = e
    return {
        "paths": paths,
        "quota": norm(nacre("quota", "-u", USER, mnt).stdout),
        "quota_grace": norm(nacre("quota", "-t", "-u", mnt).stdout),
        "changelog": nacre("changelog", "--key-file", c.key, mnt).stdout,
    }
