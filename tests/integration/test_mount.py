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
