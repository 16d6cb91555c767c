"""Mount forms: a subdirectory mount, Lustre's `host@tcp:/fs` spec, and the mount(8) helper
form `mount.nacre SPEC DIR -o opts` (what `mount -t nacre` and /etc/fstab run), which must
return only once the mount works and must leave no mount behind on failure."""
import errno
import os
import subprocess
import time

import pytest

from conftest import binary, daemon_env, mounted_dirs, wait_for


def mount_helper(spec, target, opts, timeout=30):
    """Runs mount.nacre as mount(8) would. Returns (CompletedProcess, seconds taken)."""
    target.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    r = subprocess.run([binary("mount.nacre"), spec, str(target), "-o", opts],
                       capture_output=True, text=True, timeout=timeout, env=daemon_env())
    return r, time.monotonic() - t0


def umount(target):
    subprocess.run(["fusermount3", "-u", str(target)], capture_output=True)
    wait_for(lambda: str(target) not in mounted_dirs(), 10, f"{target} unmounted")


def test_subdirectory_mount(cluster, mnt, tmp_path):
    os.makedirs(mnt / "projects" / "alpha" / "data")
    (mnt / "projects" / "alpha" / "data" / "f").write_bytes(b"inside")
    (mnt / "outside").write_bytes(b"outside")
    m = cluster.mount(name="mnt-sub", spec_suffix="/projects/alpha")
    try:
        assert sorted(os.listdir(m.path)) == ["data"]
        assert (m.path / "data" / "f").read_bytes() == b"inside"
        # ".." of the mount root is the mount's parent on the client, not /projects.
        assert os.path.realpath(m.path / "..") == str(m.path.parent)
        (m.path / "data" / "g").write_bytes(b"from the submount")
        assert (mnt / "projects" / "alpha" / "data" / "g").read_bytes() == b"from the submount"
        # fid2path through the submount names the path from the file system root.
        fid = os.getxattr(m.path / "data" / "g", "nacre.fid").decode()
        assert fid.startswith("[0x") and fid.endswith("]")
    finally:
        m.unmount()
        cluster.mounts.remove(m)


def test_subdirectory_mount_missing_dir(cluster, tmp_path):
    target = tmp_path / "m"
    r, _ = mount_helper(f"{cluster.mds_addr}:/testfs/no/such/dir", target,
                        f"key_file={cluster.key}")
    assert r.returncode != 0
    assert "/no/such/dir" in r.stderr, r.stderr
    assert str(target) not in mounted_dirs()


def test_mount_helper_and_lustre_spec(cluster, mnt, tmp_path):
    host, port = cluster.mds_addr.rsplit(":", 1)
    (mnt / "via-helper").write_bytes(b"hello from mount.nacre")
    target = tmp_path / "helper"
    # mount(8) passes generic options (rw, _netdev from fstab...) along with ours.
    r, took = mount_helper(f"{host}@tcp:{port}:/testfs", target,
                           f"rw,_netdev,key_file={cluster.key},attr_timeout=0")
    assert r.returncode == 0, r.stderr
    try:
        # The helper daemonized and returned only once the mount worked.
        assert str(target) in mounted_dirs()
        with open("/proc/self/mounts") as f:
            line = next(l for l in f if f" {target} " in l)
        assert line.split()[2] == "fuse.nacre", line
        assert (target / "via-helper").read_bytes() == b"hello from mount.nacre"
    finally:
        umount(target)


def test_ro_helper_mount_refuses_writes(cluster, mnt, tmp_path):
    target = tmp_path / "ro"
    r, _ = mount_helper(f"{cluster.mds_addr}:/testfs", target, f"ro,key_file={cluster.key}")
    assert r.returncode == 0, r.stderr
    try:
        with pytest.raises(OSError) as e:
            (target / "nope").write_bytes(b"x")
        assert e.value.errno == errno.EROFS
    finally:
        umount(target)


def test_helper_failure_leaves_no_mount(cluster, tmp_path):
    target = tmp_path / "bad"
    wrong_key = tmp_path / "wrong.key"
    wrong_key.write_text("ab" * 32)
    r, took = mount_helper(f"{cluster.mds_addr}:/testfs", target, f"key_file={wrong_key}")
    assert r.returncode != 0
    assert "key" in r.stderr, r.stderr
    assert took < 15
    assert str(target) not in mounted_dirs()


def mounts_at(target):
    with open("/proc/self/mounts") as f:
        return sum(1 for line in f if line.split()[1] == str(target))


def test_second_mount_on_a_nacre_mount_is_refused(cluster, mnt, tmp_path):
    """mount(8) refuses a busy target; a second nacre mount stacked on the first would hide
    it, still running. Refused with a message, unless -o overmount asks for it."""
    target = tmp_path / "twice"
    r, _ = mount_helper(f"{cluster.mds_addr}:/testfs", target, f"key_file={cluster.key}")
    assert r.returncode == 0, r.stderr
    try:
        (target / "first").write_bytes(b"first mount")
        r, _ = mount_helper(f"{cluster.mds_addr}:/testfs", target, f"key_file={cluster.key}")
        assert r.returncode != 0
        assert f"{target} is already a nacre mount" in r.stderr, r.stderr
        assert "overmount" in r.stderr, r.stderr
        assert mounts_at(target) == 1
        assert (target / "first").read_bytes() == b"first mount"
        r, _ = mount_helper(f"{cluster.mds_addr}:/testfs", target,
                            f"key_file={cluster.key},overmount")
        assert r.returncode == 0, r.stderr
        assert mounts_at(target) == 2
        assert (target / "first").read_bytes() == b"first mount"
    finally:
        for _ in range(50):
            if not mounts_at(target):
                break
            subprocess.run(["fusermount3", "-u", "-z", str(target)], capture_output=True)
            time.sleep(0.2)


# ---------------------------------------------------------------- mount(8): remount, suid, dev

SBIN_HELPERS = ("mount.nacre", "mount.fuse.nacre")


@pytest.fixture
def sbin_helpers(tmp_path):
    """/sbin/mount.nacre and /sbin/mount.fuse.nacre linked to this build (mount(8) looks
    only in /sbin), as installed; whatever was there is put back afterwards."""
    saved = tmp_path / "sbin-saved"
    saved.mkdir()
    for name in SBIN_HELPERS:
        p = "/sbin/" + name
        if os.path.lexists(p):
            os.rename(p, saved / name)
        os.symlink(binary("nacre-mount"), p)
    yield
    for name in SBIN_HELPERS:
        os.unlink("/sbin/" + name)
        if os.path.lexists(saved / name):
            os.rename(saved / name, "/sbin/" + name)


def mount_opts(target):
    """The per-mount options of target's mount in /proc/self/mountinfo, as a set."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == str(target):
                return set(fields[5].split(","))
    raise AssertionError(f"{target} is not mounted")


def expect_erofs(path):
    with pytest.raises(OSError) as e:
        path.write_bytes(b"refused")
    assert e.value.errno == errno.EROFS


def helper_remount(spec, target, opts):
    """Runs mount.fuse.nacre as mount(8) does for `mount -o remount,...` of a fuse.nacre
    mount: the options it passes are the running mount's, the kernel's FUSE ones included."""
    return subprocess.run(
        [binary("mount.fuse.nacre"), spec, str(target), "-o",
         f"{opts},remount,user_id=0,group_id=0,default_permissions,allow_other",
         "-t", "fuse.nacre"], capture_output=True, text=True, timeout=30, env=daemon_env())


def test_remount_ro_rw_keeps_the_session(cluster, mnt):
    """-o ro refuses writes in nacre-mount too; remount,rw lifts that without a new process
    and remount,ro brings EROFS back from the kernel; files opened before stay usable."""
    (mnt / "remount-before").write_bytes(b"written before")
    m = cluster.mount(opts=["ro"], name="mnt-remount")
    try:
        pid = m.proc.p.pid
        kept = open(m.path / "remount-before", "rb")
        expect_erofs(m.path / "remount-a")
        r = helper_remount(cluster.spec, m.path, "rw,nosuid,nodev,relatime")
        assert r.returncode == 0, r.stderr
        assert "ro" not in mount_opts(m.path)
        (m.path / "remount-a").write_bytes(b"after remount,rw")
        assert (mnt / "remount-a").read_bytes() == b"after remount,rw"
        # the kernel refuses remount,ro while a file is open for writing
        with open(m.path / "remount-a", "ab"):
            r = helper_remount(cluster.spec, m.path, "ro,nosuid,nodev,relatime")
            assert r.returncode != 0 and "open for writing" in r.stderr, r.stderr
        r = helper_remount(cluster.spec, m.path, "ro,nosuid,nodev,relatime")
        assert r.returncode == 0, r.stderr
        assert "ro" in mount_opts(m.path)
        expect_erofs(m.path / "remount-b")
        expect_erofs(m.path / "remount-a")
        r = helper_remount(cluster.spec, m.path, "rw,nosuid,nodev,relatime")
        assert r.returncode == 0, r.stderr
        (m.path / "remount-b").write_bytes(b"rw again")
        assert (mnt / "remount-b").read_bytes() == b"rw again"
        assert kept.read() == b"written before"
        kept.close()
        assert m.proc.alive() and m.proc.p.pid == pid
    finally:
        m.unmount()
        cluster.mounts.remove(m)


def test_mount_command_remount(cluster, mnt, tmp_path, sbin_helpers):
    """The whole chain as a user runs it: `mount -t nacre` (mount.nacre), then
    `mount -o remount,ro|rw DIR`, which mount(8) hands to mount.fuse.nacre (the helper of
    type fuse.nacre; without it mount.fuse would look for a program called nacre)."""
    target = tmp_path / "cmd"
    target.mkdir()
    env = dict(daemon_env(), NACRE_KEY_FILE=str(cluster.key))
    r = subprocess.run(["mount", "-t", "nacre", cluster.spec, str(target)],
                       capture_output=True, text=True, timeout=30, env=env)
    assert r.returncode == 0, r.stderr
    try:
        (target / "cmd-a").write_bytes(b"a")
        r = subprocess.run(["mount", "-o", "remount,ro", str(target)], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert "ro" in mount_opts(target)
        expect_erofs(target / "cmd-b")
        r = subprocess.run(["mount", "-o", "remount,rw", str(target)], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        (target / "cmd-b").write_bytes(b"b")
        assert (mnt / "cmd-b").read_bytes() == b"b"
        assert (target / "cmd-a").read_bytes() == b"a"
    finally:
        umount(target)


def test_root_helper_mount_is_suid_dev_unless_told(cluster, mnt, tmp_path, sbin_helpers):
    """As mount.fuse: a mount root makes through mount(8) honours setuid bits and device
    files; nosuid and nodev still apply when given. nacre-mount itself keeps nosuid,nodev."""
    target = tmp_path / "suid"
    target.mkdir()
    env = dict(daemon_env(), NACRE_KEY_FILE=str(cluster.key))
    for opts, want_nosuid, want_nodev in ((None, False, False), ("nosuid", True, False),
                                          ("nodev", False, True),
                                          ("nosuid,nodev", True, True)):
        argv = ["mount", "-t", "nacre", cluster.spec, str(target)]
        if opts:
            argv += ["-o", opts]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env)
        assert r.returncode == 0, r.stderr
        try:
            got = mount_opts(target)
            assert ("nosuid" in got, "nodev" in got) == (want_nosuid, want_nodev), (opts, got)
        finally:
            umount(target)
    # the mount the fixture made with nacre-mount
    assert {"nosuid", "nodev"} <= mount_opts(mnt)
