"""File handles (name_to_handle_at / open_by_handle_at, what an NFS re-export of a nacre mount
uses): a handle keeps naming its file after the kernel dropped the inode from its cache and
nacre-mount forgot it, in another mount, and after nacre-mount --upgrade; a handle of a file
or directory that was removed gives ESTALE (the checks of xfstests generic/426, 467, 477)."""
import errno
import os
import shutil
import subprocess
import time

import pytest

from conftest import REPO, fuse_ring, mounted_dirs, wait_for
from test_upgrade import upgrade


@pytest.fixture(scope="module")
def fhandle(tmp_path_factory):
    """tests/integration/fhandle.c, built with the system's cc."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.fail("a C compiler (cc) is needed to build the file handle helper")
    exe = tmp_path_factory.mktemp("fhandle") / "fhandle"
    subprocess.run([cc, "-O", "-Wall", "-o", str(exe), str(REPO / "tests/integration/fhandle.c")],
                   check=True)
    return str(exe)


def encode(fhandle, path, connectable=False):
    r = subprocess.run([fhandle, "encode", *(["-c"] if connectable else []), str(path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def open_by_handle(fhandle, mount_dir, handle):
    """(errno or 0, the path the kernel gives the open file, its bytes)."""
    r = subprocess.run([fhandle, "open", str(mount_dir), *handle], capture_output=True)
    if r.returncode:
        return r.returncode, None, None
    path, _, data = r.stdout.partition(b"\n")
    return 0, path.decode(), data


def drop_caches():
    """Drops the kernel's dentries and inodes; nacre-mount gets their FORGETs."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2")
    time.sleep(0.3)


def make_tree(top):
    """top/d with files f0..f4, a subdirectory, a renamed file and a file whose first name was
    removed after a second link was made. Returns {name: (path now, bytes)}."""
    d = top / "d"
    (d / "sub").mkdir(parents=True)
    files = {}
    for i in range(5):
        (d / f"f{i}").write_bytes(b"file %d " % i * (i + 1))
        files[f"f{i}"] = (d / f"f{i}", b"file %d " % i * (i + 1))
    (d / "sub" / "deep").write_bytes(b"deep file")
    files["deep"] = (d / "sub" / "deep", b"deep file")
    (d / "old-name").write_bytes(b"renamed")
    files["old-name"] = (d / "old-name", b"renamed")
    (d / "first").write_bytes(b"linked")
    files["first"] = (d / "first", b"linked")
    return d, files


def test_handles_outlive_the_kernel_cache(cluster, mnt, fhandle):
    top = mnt / "h-cache"
    d, files = make_tree(top)
    handles = {n: encode(fhandle, p) for n, (p, _) in files.items()}
    connectable = {n: encode(fhandle, p, connectable=True) for n, (p, _) in files.items()}
    dir_handles = {"d": encode(fhandle, d), "sub": encode(fhandle, d / "sub")}
    os.rename(d / "old-name", d / "new-name")
    files["old-name"] = (d / "new-name", b"renamed")
    os.link(d / "first", d / "sub" / "second")
    os.unlink(d / "first")
    files["first"] = (d / "sub" / "second", b"linked")
    drop_caches()
    for name, (path, data) in files.items():
        err, _, got = open_by_handle(fhandle, mnt, handles[name])
        assert err == 0, f"{name}: {os.strerror(err)}"
        assert got == data, name
        if name == "first":
            continue  # a connectable handle names the parent it had: gone from there
        # a connectable handle names its parent too: the kernel gives the file its path
        drop_caches()
        err, where, got = open_by_handle(fhandle, mnt, connectable[name])
        assert err == 0, f"{name} (connectable): {os.strerror(err)}"
        assert got == data
        assert where == str(path), name
    # directories are connected to the tree again (".." up to the root): their real path
    drop_caches()
    for name, path in (("d", d), ("sub", d / "sub")):
        err, where, _ = open_by_handle(fhandle, mnt, dir_handles[name])
        assert err == 0, f"{name}: {os.strerror(err)}"
        assert where == str(path)


def test_handle_of_a_removed_file_is_stale(cluster, mnt, fhandle):
    top = mnt / "h-stale"
    (top / "gone-dir").mkdir(parents=True)
    (top / "gone").write_bytes(b"to be removed")
    (top / "kept").write_bytes(b"kept")
    gone, gone_dir, kept = (encode(fhandle, top / n) for n in ("gone", "gone-dir", "kept"))
    os.unlink(top / "gone")
    os.rmdir(top / "gone-dir")
    drop_caches()
    assert open_by_handle(fhandle, mnt, gone)[0] == errno.ESTALE
    assert open_by_handle(fhandle, mnt, gone_dir)[0] == errno.ESTALE
    assert open_by_handle(fhandle, mnt, kept)[2] == b"kept"
    # a handle made up of a node id no FID ever had, and one of an old-style counter
    assert open_by_handle(fhandle, mnt, ["129", "ffffff7fffffff7f00000000"])[0] == errno.ESTALE
    assert open_by_handle(fhandle, mnt, ["129", "000000000500000000000000"])[0] == errno.ESTALE


def test_handles_work_in_a_new_mount(cluster, mnt, fhandle):
    """A handle kept across a mount cycle (xfstests generic/477): decoded by another
    nacre-mount process that never saw its inode, after the directories above were renamed."""
    top = mnt / "h-cycle"
    d, files = make_tree(top)
    handles = {n: encode(fhandle, p) for n, (p, _) in files.items()}
    dir_handle = encode(fhandle, d / "sub")
    os.rename(top, mnt / "h-cycle-renamed")
    m = cluster.mount(name="mnt-handles")
    try:
        for name, (path, data) in files.items():
            err, _, got = open_by_handle(fhandle, m.path, handles[name])
            assert err == 0, f"{name}: {os.strerror(err)}"
            assert got == data
        err, where, _ = open_by_handle(fhandle, m.path, dir_handle)
        assert err == 0, os.strerror(err)
        assert where == str(m.path / "h-cycle-renamed" / "d" / "sub")
    finally:
        m.unmount()
        cluster.mounts.remove(m)


def test_handles_across_upgrade(make_cluster, fhandle):
    """nacre-mount --upgrade: handles made before open through the new process, also once
    it forgot their inodes."""
    with fuse_ring(False):  # a session on io_uring cannot be handed over
        c = make_cluster(osts=1)
        m = c.mounts[0]
        d, files = make_tree(m.path)
        handles = {n: encode(fhandle, p) for n, (p, _) in files.items()}
        upgrade(c, m)
        for round_ in range(2):
            for name, (path, data) in files.items():
                err, _, got = open_by_handle(fhandle, m.path, handles[name])
                assert err == 0, f"{name} (round {round_}): {os.strerror(err)}"
                assert got == data
            drop_caches()
        assert str(m.path) in mounted_dirs()
