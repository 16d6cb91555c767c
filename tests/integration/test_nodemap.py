"""Nodemaps (docs/security.md, "Nodemaps"): root squash by default, squash_all, id maps,
read-only, fileset, deny, admin; rules managed with `nacre nodemap`, effective at once for
connected clients and kept across an MDS restart. Each squashed client is a real FUSE mount
with its own client_name; the fixtures' first mount is admin (rule local-admin)."""
import ctypes
import errno
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import (BUILD, as_user as _as_user, daemon_env, load_libnacre, mounted_dirs,
                      wait_for)




def err_of(fn):
    try:
        fn()
        return 0
    except OSError as e:
        return e.errno


def read(p):
    with open(p, "rb") as f:
        return f.read()


def write(p, data=b"x", flags=os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode=0o644):
    fd = os.open(p, flags, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


@pytest.fixture
def nodemap(cluster, nacre_cli):
    def run(*args, check=True):
        return nacre_cli("nodemap", "--mds", cluster.spec, "--key-file", cluster.key, *args,
                         check=check)
    return run


@pytest.fixture(scope="module")
def secret(cluster, mnt):
    """A 0600 file of uid 1000 in a 0755 directory, made through the admin mount."""
    d = os.path.join(mnt, "nm")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)
    p = os.path.join(d, "secret")
    write(p, b"top secret")
    os.chown(p, 1000, 1000)
    os.chmod(p, 0o600)
    return p


def rel(mount, path, mnt):
    return os.path.join(mount.path, os.path.relpath(path, mnt))


def test_default_squashes_root_admin_does_not(cluster, mnt, secret, nodemap):
    assert read(secret) == b"top secret"  # the admin mount: root is root
    sq = cluster.mount(opts=["client_name=plain-node"])
    p = rel(sq, secret, mnt)
    st = os.stat(p)
    assert (st.st_uid, st.st_mode & 0o777) == (1000, 0o600)
    assert err_of(lambda: read(p)) == errno.EACCES  # root became 65534
    # the owner keeps its access; a new file of squashed root belongs to 65534
    assert _as_user(lambda: read(p), 1000, 1000) == 0
    write(os.path.join(sq.path, "nm", "by-squashed-root"))
    st = os.stat(os.path.join(mnt, "nm", "by-squashed-root"))
    assert (st.st_uid, st.st_gid) == (65534, 65534)
    # root's directory is not writable to 65534
    assert err_of(lambda: os.mkdir(os.path.join(sq.path, "rootdir"))) == errno.EACCES
    out = nodemap("test", "127.0.0.1", "plain-node").stdout
    assert "nodemap: default" in out and "uid 0 -> 65534, gid 0 -> 65534" in out, out
    out = nodemap("test", "127.0.0.1", "nacre-up").stdout
    assert "nodemap: local-admin" in out and "uid 0 -> 0" in out, out
    sq.unmount()


def test_squash_all_and_id_maps(cluster, mnt, nodemap):
    pub = os.path.join(mnt, "pub")
    os.makedirs(pub, exist_ok=True)
    os.chmod(pub, 0o777)
    nodemap("add", "all", "--client", "all-node")
    nodemap("modify", "all", "--squash_all", "1")
    nodemap("modify", "all", "--squash_uid", "4000")
    nodemap("modify", "all", "--squash_gid", "4001")
    nodemap("add", "mapped", "--client", "mapped-node", "--range", "127.0.0.0/8")
    nodemap("modify", "mapped", "--map_uid", "1000:5000:10")
    nodemap("modify", "mapped", "--property", "map_gid", "--value", "1000:6000:10")
    a = cluster.mount(opts=["client_name=all-node"])
    m = cluster.mount(opts=["client_name=mapped-node"])
    assert _as_user(lambda: write(os.path.join(a.path, "pub", "all")), 1234, 1234) == 0
    st = os.stat(os.path.join(pub, "all"))
    assert (st.st_uid, st.st_gid) == (4000, 4001)
    assert _as_user(lambda: write(os.path.join(m.path, "pub", "mapped")), 1003, 1004) == 0
    st = os.stat(os.path.join(pub, "mapped"))
    assert (st.st_uid, st.st_gid) == (5003, 6004)
    # the mapped client sees its own ids back
    st = os.stat(os.path.join(m.path, "pub", "mapped"))
    assert (st.st_uid, st.st_gid) == (1003, 1004)
    # outside the map: ids pass, root is squashed (the rule is not trusted)
    assert _as_user(lambda: write(os.path.join(m.path, "pub", "other")), 2000, 2000) == 0
    st = os.stat(os.path.join(pub, "other"))
    assert (st.st_uid, st.st_gid) == (2000, 2000)
    write(os.path.join(m.path, "pub", "root"))
    st = os.stat(os.path.join(pub, "root"))
    assert (st.st_uid, st.st_gid) == (65534, 65534)
    # chown by the mapped client: the new owner is mapped too
    nodemap("modify", "mapped", "--trusted", "1")
    wait_for(lambda: err_of(lambda: os.chown(os.path.join(m.path, "pub", "root"), 1001, 1001))
             == 0, 2, "chown through the trusted mapped client")
    # (the admin mount caches attributes for the attribute timeout)
    wait_for(lambda: os.stat(os.path.join(pub, "root")).st_uid == 5001, 5, "the new owner")
    assert os.stat(os.path.join(pub, "root")).st_gid == 6001
    out = nodemap("test", "127.0.0.1", "mapped-node").stdout
    assert "nodemap: mapped" in out and "uid 1000..1009 -> 5000..5009" in out, out
    a.unmount()
    m.unmount()
    nodemap("del", "all")
    nodemap("del", "mapped")


def test_readonly(cluster, mnt, nodemap):
    d = os.path.join(mnt, "rodir")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)
    write(os.path.join(d, "f"), b"readable")
    nodemap("add", "ro", "--client", "ro-node")
    nodemap("modify", "ro", "--readonly", "1")
    nodemap("modify", "ro", "--trusted", "1")
    ro = cluster.mount(opts=["client_name=ro-node"])
    f = os.path.join(ro.path, "rodir", "f")
    assert read(f) == b"readable"
    assert err_of(lambda: write(os.path.join(ro.path, "rodir", "new"))) == errno.EROFS
    assert err_of(lambda: os.mkdir(os.path.join(ro.path, "rodir", "sub"))) == errno.EROFS
    assert err_of(lambda: write(f, flags=os.O_WRONLY)) == errno.EROFS
    assert err_of(lambda: os.chmod(f, 0o600)) == errno.EROFS
    assert err_of(lambda: os.unlink(f)) == errno.EROFS
    assert read(os.path.join(d, "f")) == b"readable"
    ro.unmount()
    nodemap("del", "ro")


def test_fileset(cluster, mnt, nodemap, nacre_cli):
    os.makedirs(os.path.join(mnt, "proj", "a"), exist_ok=True)
    os.makedirs(os.path.join(mnt, "other"), exist_ok=True)
    write(os.path.join(mnt, "proj", "a", "inside"), b"in")
    write(os.path.join(mnt, "other", "outside"), b"out")
    r = nodemap("modify", "nope", "--fileset", "/proj", check=False)
    assert r.returncode != 0 and "nodemap nope not found" in r.stderr, r.stderr
    nodemap("add", "fs", "--client", "fs-node")
    r = nodemap("modify", "fs", "--fileset", "/no/such", check=False)
    assert r.returncode != 0 and "bad fileset /no/such" in r.stderr, r.stderr
    nodemap("modify", "fs", "--fileset", "/proj")
    nodemap("modify", "fs", "--trusted", "1")
    m = cluster.mount(opts=["client_name=fs-node"])
    assert sorted(os.listdir(m.path)) == ["a"]
    assert read(os.path.join(m.path, "a", "inside")) == b"in"
    assert os.stat(os.path.join(m.path, "a", "..")).st_ino == os.stat(m.path).st_ino
    out_fid = nacre_cli("path2fid", os.path.join(mnt, "other", "outside"), check=True)
    out_fid = out_fid.stdout.strip()
    in_fid = nacre_cli("path2fid", os.path.join(mnt, "proj", "a", "inside"), check=True)
    in_fid = in_fid.stdout.strip()
    r = nacre_cli("fid2path", m.path, in_fid, check=True)
    assert r.stdout == os.path.join(str(m.path), "a", "inside") + "\n", r.stdout
    # a hard link outside the fileset is not shown to its client (fid2path, path2fid -p)
    outside_link = os.path.join(mnt, "other", "inside-link")
    os.link(os.path.join(mnt, "proj", "a", "inside"), outside_link)
    assert nacre_cli("fid2path", mnt, in_fid, check=True).stdout.count("\n") == 2
    r = nacre_cli("fid2path", m.path, in_fid, check=True)
    assert r.stdout == os.path.join(str(m.path), "a", "inside") + "\n", r.stdout
    a_fid = nacre_cli("path2fid", os.path.join(mnt, "proj", "a"), check=True).stdout.strip()
    r = nacre_cli("path2fid", "-p", os.path.join(m.path, "a", "inside"), check=True)
    assert r.stdout == f"{a_fid}/inside\n", r.stdout
    os.unlink(outside_link)
    # a FID from outside the subtree is refused by the MDS
    r = nacre_cli("fid2path", m.path, out_fid)
    assert r.returncode != 0 and "ermission denied" in r.stderr, (r.stdout, r.stderr)
    root_fid = nacre_cli("path2fid", mnt, check=True).stdout.strip()
    r = nacre_cli("fid2path", m.path, root_fid)
    assert r.returncode != 0, r.stdout
    # a rename out of the subtree takes the file out of the client's sight at once
    os.rename(os.path.join(mnt, "proj", "a"), os.path.join(mnt, "other", "a"))
    r = nacre_cli("fid2path", m.path, in_fid)
    assert r.returncode != 0, r.stdout
    os.rename(os.path.join(mnt, "other", "a"), os.path.join(mnt, "proj", "a"))
    m.unmount()
    nodemap("del", "fs")


class Fid(ctypes.Structure):
    _fields_ = [("seq", ctypes.c_uint64), ("oid", ctypes.c_uint32), ("ver", ctypes.c_uint32)]


def libnacre_as(cluster, client_name):
    """A libnacre mount of cluster (no FUSE) that calls itself client_name: requests built by
    the library straight from FIDs, as a program holding that client's key could send."""
    lib = load_libnacre()
    lib.nacre_fs_root.restype = Fid
    lib.nacre_fs_root.argtypes = [ctypes.c_void_p]
    old = {k: os.environ.get(k) for k in ("NACRE_CLIENT_NAME", "NACRE_KEY_FILE")}
    os.environ["NACRE_CLIENT_NAME"] = client_name
    os.environ["NACRE_KEY_FILE"] = str(cluster.key)
    fs = ctypes.c_void_p()
    err = ctypes.create_string_buffer(512)
    try:
        rc = lib.nacre_fs_mount(cluster.spec.encode(), None, ctypes.byref(fs), err, 512)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return lib, rc, fs, err.value.decode()


def fid_of(lib, text):
    f = Fid()
    assert lib.nacre_fid_parse(text.encode(), ctypes.byref(f)) == 0, text
    return f


def test_fileset_against_hand_built_requests(cluster, mnt, nodemap, nacre_cli):
    os.makedirs(os.path.join(mnt, "hb", "in"), exist_ok=True)
    write(os.path.join(mnt, "hb", "in", "f"), b"in")
    write(os.path.join(mnt, "hb", "out"), b"out")
    nodemap("add", "hb", "--client", "hb-node")
    nodemap("modify", "hb", "--fileset", "/hb/in")
    nodemap("modify", "hb", "--trusted", "1")
    lib, rc, fs, err = libnacre_as(cluster, "hb-node")
    assert rc == 0, err
    try:
        want = nacre_cli("path2fid", os.path.join(mnt, "hb", "in"), check=True).stdout.strip()
        root = lib.nacre_fs_root(fs)
        assert "[0x%x:0x%x:0x%x]" % (root.seq, root.oid, root.ver) == want
        attr = ctypes.create_string_buffer(4096)
        inside = fid_of(lib, nacre_cli("path2fid", os.path.join(mnt, "hb", "in", "f"),
                                       check=True).stdout.strip())
        assert lib.nacre_getattr(fs, None, ctypes.byref(inside), attr) == 0
        for path in (os.path.join(mnt, "hb", "out"), mnt):
            outside = fid_of(lib, nacre_cli("path2fid", path, check=True).stdout.strip())
            assert lib.nacre_getattr(fs, None, ctypes.byref(outside), attr) == -errno.EACCES
            fh = ctypes.c_void_p()
            assert lib.nacre_open(fs, None, ctypes.byref(outside), os.O_RDONLY,
                                  ctypes.byref(fh)) == -errno.EACCES
    finally:
        lib.nacre_fs_umount(fs)
    # denied: the library's mount fails naming the rule
    nodemap("modify", "hb", "--deny", "1")
    lib, rc, fs, err = libnacre_as(cluster, "hb-node")
    assert rc == -errno.EACCES and "denied by nodemap rule 'hb'" in err, (rc, err)
    nodemap("del", "hb")


def test_deny_names_the_rule(cluster, nodemap):
    nodemap("add", "blocked", "--client", "bad-node")
    nodemap("modify", "blocked", "--deny", "1")
    m = cluster.mount(opts=["client_name=bad-node"], wait=False)
    wait_for(lambda: not m.proc.alive(), 20, "the denied mount to exit")
    assert m.proc.p.returncode != 0
    assert "denied by nodemap rule 'blocked'" in m.proc.text(), m.proc.text()
    assert "bad-node" in cluster.mds.text() and "nodemap blocked denies it" in cluster.mds.text()
    nodemap("del", "blocked")


def test_sec_min_rule_refuses_a_weaker_client(cluster, mnt, nodemap):
    """A rule's sec_min is the least wire flavour its clients get: sec=null is refused with
    a message naming the rule, privacy works, and clients of other rules keep null."""
    nodemap("add", "secret-lab", "--client", "lab-node")
    nodemap("modify", "secret-lab", "--sec_min", "privacy")
    nodemap("modify", "secret-lab", "--trusted", "1")
    m = cluster.mount(opts=["client_name=lab-node", "sec=null"], wait=False)
    wait_for(lambda: not m.proc.alive(), 20, "the sec=null mount to exit")
    assert m.proc.p.returncode != 0
    assert "nodemap rule 'secret-lab'" in m.proc.text(), m.proc.text()
    assert "sec=privacy" in m.proc.text(), m.proc.text()
    # without sec= the client takes the rule's minimum, and works
    ok = cluster.mount(opts=["client_name=lab-node"])
    (ok.path / "lab").write_bytes(b"sealed")
    assert (mnt / "lab").read_bytes() == b"sealed"
    assert "(lab-node) authenticated, sec=privacy" in cluster.mds.text()
    # and the file data to the OSSes, which know no nodemaps, goes sealed the same way
    assert any("(lab-node) authenticated, sec=privacy" in o.text() for o in cluster.oss)
    assert not any("(lab-node) authenticated, sec=null" in o.text() for o in cluster.oss)
    ok.unmount()
    nodemap("del", "secret-lab")


def test_change_applies_to_connected_client_within_1s(cluster, mnt, secret, nodemap):
    c = cluster.mount(opts=["client_name=late-node"])
    p = rel(c, secret, mnt)
    assert err_of(lambda: read(p)) == errno.EACCES
    nodemap("add", "late", "--client", "late-node")
    t0 = time.monotonic()
    nodemap("modify", "late", "--trusted", "1")
    wait_for(lambda: err_of(lambda: read(p)) == 0, 1.0, "the trusted rule to apply")
    took = time.monotonic() - t0
    assert took < 1.0, took
    nodemap("modify", "late", "--deny", "1")
    wait_for(lambda: err_of(lambda: os.stat(p)) == errno.EACCES, 1.0, "deny to apply")
    c.unmount()
    nodemap("del", "late")


def test_errors_and_list(cluster, nodemap):
    r = nodemap("add", "x", "--range", "10.0.0.0/33", check=False)
    assert r.returncode != 0 and "bad CIDR range '10.0.0.0/33'" in r.stderr, r.stderr
    r = nodemap("add", "x", "--range", "fe80::/10,10.1.0.0/16", check=True)
    r = nodemap("modify", "x", "--property", "colour", "--value", "red", check=False)
    assert r.returncode != 0 and "unknown option --property" not in r.stderr
    assert "unknown property 'colour'" in r.stderr, r.stderr
    r = nodemap("modify", "x", "--sec_min", "paranoid", check=False)
    assert r.returncode != 0 and "sec_min" in r.stderr, r.stderr
    nodemap("modify", "x", "--sec_min", "privacy")
    r = nodemap("del", "ghost", check=False)
    assert r.returncode != 0 and "nodemap ghost not found" in r.stderr, r.stderr
    r = nodemap("add", "x", "--range", "10.0.0.0/8", check=False)
    assert r.returncode != 0 and "exists already" in r.stderr, r.stderr
    out = nodemap("list").stdout
    for line in ("nodemap.default.squash_uid=65534", "nodemap.default.trusted_nodemap=0",
                 "nodemap.local-admin.admin_nodemap=1", "nodemap.local-admin.clients=nacre-up,nacre-admin",
                 "nodemap.x.ranges=fe80::/10,10.1.0.0/16", "nodemap.x.sec_min=privacy"):
        assert line in out.splitlines(), out
    # the most specific range wins: a /24 beats a /16
    nodemap("add", "y", "--range", "10.1.2.0/24")
    assert "nodemap: y" in nodemap("test", "10.1.2.3").stdout
    assert "nodemap: x" in nodemap("test", "10.1.3.3").stdout
    assert "nodemap: default" in nodemap("test", "192.168.0.1").stdout
    nodemap("del", "x")
    nodemap("del", "y")


def test_rules_survive_restart_and_admin_only(make_cluster, nacre_cli):
    c = make_cluster(osts=1)

    def nm(*args, check=True):
        return nacre_cli("nodemap", "--mds", c.spec, "--key-file", c.key, *args, check=check)
    nm("add", "keep", "--range", "192.168.7.0/24", "--client", "k1,k2")
    nm("modify", "keep", "--map_uid", "500:1500:5")
    c.mds.kill()
    c.start_mds(fmt=False)
    out = nm("list").stdout
    assert "nodemap.keep.ranges=192.168.7.0/24" in out, out
    assert "nodemap.keep.clients=k1,k2" in out, out
    assert "nodemap.keep.idmap_uid=[{ client: 500, fs: 1500, count: 5 }]" in out, out
    # a client that is not admin may not change the rules
    nm("modify", "local-admin", "--clients", "nacre-up")
    r = nm("list", check=False)
    assert r.returncode != 0 and "is not admin" in r.stderr, r.stderr


def test_nacre_up_mount_is_admin_others_squashed(nacre_cli):
    """`nacre up` marks its own mount admin by name; a client with another name on the
    same machine (same 127.0.0.1) is squashed. The environment names nobody."""
    env = daemon_env()
    env.pop("NACRE_CLIENT_NAME", None)
    d = tempfile.mkdtemp(prefix="nacre-up-nm-")
    for port in range(20000 + os.getpid() % 20000, 60000, 7):
        socks = []
        try:
            for p in range(port, port + 3):
                s = socket.socket()
                s.bind(("127.0.0.1", p))
                socks.append(s)
            break
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    mnt = os.path.join(d, "mnt")
    try:
        r = nacre_cli("up", "--dir", d, "--osts", 1, "--port", port, "--fsname", "upnm",
                      timeout=90, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        write(os.path.join(mnt, "rootfile"))  # root dir 0755 root: only unsquashed root may
        os.chmod(os.path.join(mnt, "rootfile"), 0o600)
        assert os.stat(os.path.join(mnt, "rootfile")).st_uid == 0
        spec = f"127.0.0.1:{port}:/upnm"
        key = os.path.join(d, "cluster.key")
        out = nacre_cli("nodemap", "--mds", spec, "--key-file", key, "test", "127.0.0.1",
                        "nacre-up", check=True, env=env).stdout
        assert "nodemap: local-admin" in out, out
        other = os.path.join(d, "other")
        os.mkdir(other)
        p = subprocess.Popen([str(BUILD / "nacre-mount"), spec, other, "-o",
                              f"key_file={key},client_name=elsewhere", "-f"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            wait_for(lambda: other in mounted_dirs(), 20, f"{other} to be mounted")
            assert err_of(lambda: read(os.path.join(other, "rootfile"))) == errno.EACCES
            assert err_of(lambda: write(os.path.join(other, "new"))) == errno.EACCES
        finally:
            subprocess.run(["fusermount3", "-u", other], capture_output=True)
            p.wait(20)
    finally:
        nacre_cli("down", "--dir", d, timeout=60, env=env)
        shutil.rmtree(d, ignore_errors=True)
