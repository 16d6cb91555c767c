"""Per-client keys, revocation and roles (docs/security.md, "Keys and roles"): `nacre key
issue` writes a client key derived from the cluster key, a mount proves it and the servers log
its name; `nacre key revoke` cuts the mount off from the MDS and the OSSes within a second and
refuses it from then on, also on an OSS that restarted; a re-issued key has a new generation
and the old file stays refused; a client key can neither register a target nor run admin
requests."""
import errno
import os
import stat
import time

from conftest import binary, Proc, wait_for

ALLOW = ["--allow-fault-injection"]


def key_cli(nacre_cli, c, verb, *args, key=None, **kw):
    return nacre_cli("key", verb, *args, "--mds", c.spec, "--key-file", key or c.key, **kw)


def issue(nacre_cli, c, name, admin=False, out=None):
    out = out or c.dir / f"{name}.key"
    args = [name, "-o", out] + (["--admin"] if admin else [])
    r = key_cli(nacre_cli, c, "issue", *args, check=True)
    assert f"key {name} generation" in r.stdout, r.stdout
    return out


def key_table(nacre_cli, c, key=None):
    r = key_cli(nacre_cli, c, "list", key=key, check=True)
    rows = [line.split() for line in r.stdout.splitlines()[1:]]
    return {f[0]: (f[1], int(f[2]), f[3]) for f in rows}


def mount_fails(c, key, name):
    """Starts a mount with key that must be refused; returns its log."""
    m = c.mount(opts=[f"key_file={key}"], name=name, wait=False)
    wait_for(lambda: not m.proc.alive(), 20, "the refused mount to exit")
    assert m.proc.p.returncode != 0
    return m.proc.text()


def fails_within(fn, limit):
    """Runs fn until it raises OSError; returns (seconds until then, errno)."""
    t0 = time.monotonic()
    while True:
        try:
            fn()
        except OSError as e:
            return time.monotonic() - t0, e.errno
        if time.monotonic() - t0 > limit + 2:
            return time.monotonic() - t0, None
        time.sleep(0.01)


CUT_OFF = (errno.EKEYREVOKED, errno.EACCES, errno.EIO, errno.ENOTCONN)


def test_issue_mount_revoke_reissue(make_cluster, nacre_cli):
    c = make_cluster(osts=2, oss=2, fsname="keys")
    admin_mnt = c.mounts[0].path
    k1 = issue(nacre_cli, c, "node1")
    assert stat.S_IMODE(os.stat(k1).st_mode) == 0o600
    fields = k1.read_text().split()
    assert fields[:3] == ["client", "node1", "1"] and len(fields[3]) == 64, fields
    assert key_table(nacre_cli, c) == {"node1": ("client", 1, "active")}

    # root on a client-key mount is squashed (the nodemap default): it writes where anyone may
    os.chmod(admin_mnt, 0o1777)
    m = c.mount(opts=[f"key_file={k1}"], name="client1")
    data = os.urandom(3 << 20)
    (m / "f").write_bytes(data)
    assert (m / "f").read_bytes() == data
    assert (admin_mnt / "f").read_bytes() == data
    # the servers name the key that connected
    assert "client key node1 generation 1" in c.mds.text()
    wait_for(lambda: any("client key node1 generation 1" in p.text() for p in c.oss), 5,
             "an OSS to log the client key")

    # data this mount never cached: its read goes to the OSSes on an open file
    other = os.urandom(2 << 20)
    (admin_mnt / "g").write_bytes(other)
    fd_read = os.open(m / "g", os.O_RDONLY)
    fd_write = os.open(m / "h", os.O_WRONLY | os.O_CREAT, 0o644)

    r = key_cli(nacre_cli, c, "revoke", "node1", check=True)
    t_revoked = time.monotonic()
    assert "revoked key node1" in r.stdout
    # the MDS: a name nobody looked up yet
    t_mds, e_mds = fails_within(lambda: os.stat(m / f"nosuch{time.monotonic_ns()}"), 1)
    # the OSSes: a read of uncached data and a written-back write on open files
    t_read, e_read = fails_within(lambda: os.pread(fd_read, 1 << 20, 1 << 20), 1)

    def write_sync():
        os.pwrite(fd_write, b"x" * 65536, 0)
        os.fsync(fd_write)
    t_write, e_write = fails_within(write_sync, 1)
    elapsed = time.monotonic() - t_revoked
    print(f"cut off after the revoke: MDS {t_mds:.3f}s, OSS read {t_read:.3f}s, "
          f"write {t_write:.3f}s", [errno.errorcode.get(e) for e in (e_mds, e_read, e_write)])
    for what, t, e in (("MDS", t_mds, e_mds), ("OSS read", t_read, e_read),
                       ("write", t_write, e_write)):
        assert e in CUT_OFF, (what, e and errno.errorcode.get(e, e))
    assert elapsed < 1.0, (t_mds, t_read, t_write)
    os.close(fd_read)
    try:
        os.close(fd_write)
    except OSError:
        pass
    assert "closing connection" in c.mds.text() and "node1 is no longer valid" in c.mds.text()
    assert any("node1 is no longer valid" in p.text() for p in c.oss)
    # the mount with the cluster key goes on
    assert (admin_mnt / "g").read_bytes() == other
    assert key_table(nacre_cli, c)["node1"] == ("client", 1, "revoked")

    # a new mount with the revoked key is refused, saying why
    log = mount_fails(c, k1, "client2")
    assert "key node1 was revoked" in log, log
    assert "refused" in c.mds.text() and "Key has been revoked" in c.mds.text()

    # re-issued: a new generation; the old file stays refused
    k2 = issue(nacre_cli, c, "node1", out=c.dir / "node1-2.key")
    assert k2.read_text().split()[:3] == ["client", "node1", "2"]
    assert key_table(nacre_cli, c)["node1"] == ("client", 2, "active")
    log = mount_fails(c, k1, "client3")
    assert "generation 1 was replaced by a newer one" in log, log
    m2 = c.mount(opts=[f"key_file={k2}"], name="client4")
    (m2 / "k").write_bytes(data[:100000])
    assert (admin_mnt / "k").read_bytes() == data[:100000]
    # a key file is never overwritten
    r = key_cli(nacre_cli, c, "issue", "node1", "-o", k2)
    assert r.returncode != 0 and "exists" in r.stderr, r.stderr
    assert key_table(nacre_cli, c)["node1"][1] == 2


def test_client_key_cannot_register_a_target(make_cluster, nacre_cli):
    c = make_cluster(osts=1, fsname="keyreg", mds_args=ALLOW, oss_args=ALLOW)
    k = issue(nacre_cli, c, "intruder")
    argv = [binary("nacre-oss"), "--fsname", c.fsname, "--mds", c.mds_addr,
            "--listen", "127.0.0.1:0", "--key-file", str(k), "--ost", f"7:{c.dir / 'ost7'}",
            "--format"]
    p = Proc("fake-oss", argv, c.dir / "fake-oss.log").start()
    c.extra.append(p)
    wait_for(lambda: not p.alive(), 20, "nacre-oss with a client key to exit")
    assert p.p.returncode != 0
    assert "a client key cannot register a target" in p.text(), p.text()
    assert "--key-file" in p.text()
    assert "refused MDS_TARGET_REGISTER" in c.mds.text()
    assert "client key intruder" in c.mds.text()
    assert ("OST", 7) not in c.targets()

    # admin requests: refused with a client key, done with an admin key
    r = key_cli(nacre_cli, c, "list", key=k)
    assert r.returncode != 0 and "a client key cannot run admin requests" in r.stderr, r.stderr
    r = key_cli(nacre_cli, c, "revoke", "intruder", key=k)
    assert r.returncode != 0 and "cannot run admin requests" in r.stderr, r.stderr
    r = key_cli(nacre_cli, c, "issue", "other", "-o", c.dir / "other.key", key=k)
    assert r.returncode != 0 and "needs the cluster key" in r.stderr, r.stderr
    for server in (c.mds_addr, f"127.0.0.1:{c.oss_ports[0]}"):
        r = nacre_cli("fault", "list", "--key-file", k, "--fsname", c.fsname, server)
        assert r.returncode != 0 and "Permission denied" in r.stderr, r.stderr
    adm = issue(nacre_cli, c, "ops", admin=True)
    assert adm.read_text().split()[0] == "admin"
    assert key_table(nacre_cli, c, key=adm) == {"intruder": ("client", 1, "active"),
                                                "ops": ("admin", 1, "active")}
    r = nacre_cli("fault", "list", "--key-file", adm, "--fsname", c.fsname, c.mds_addr)
    assert r.returncode == 0, r.stderr
    key_cli(nacre_cli, c, "revoke", "intruder", key=adm, check=True)
    assert key_table(nacre_cli, c)["intruder"] == ("client", 1, "revoked")
    # the MDS itself needs the cluster key
    r = nacre_cli("key", "revoke", "nosuch", "--mds", c.spec, "--key-file", c.key)
    assert r.returncode != 0 and "no key nosuch was ever issued" in r.stderr, r.stderr


def test_restarted_oss_refuses_a_revoked_key(make_cluster, nacre_cli):
    c = make_cluster(osts=1, fsname="keyrst", oss_args=ALLOW)
    good = issue(nacre_cli, c, "good")
    bad = issue(nacre_cli, c, "bad")
    key_cli(nacre_cli, c, "revoke", "bad", check=True)
    oss = f"127.0.0.1:{c.oss_ports[0]}:/{c.fsname}"
    c.oss[0].kill()
    c.start_oss(0, fmt=False)
    wait_for(lambda: "nacre-oss: serving" in c.oss[0].text().split("===")[-1], 20,
             "the OSS to serve again")
    # the restarted OSS loaded the key table before serving: the revoked key is refused at
    # its handshake, the good one gets through it (and only then meets the role check)
    r = nacre_cli("fault", "list", "--key-file", bad, oss)
    assert r.returncode != 0 and "key bad was revoked" in r.stderr, r.stderr
    r = nacre_cli("fault", "list", "--key-file", good, oss)
    assert r.returncode != 0 and "Permission denied" in r.stderr, r.stderr
    assert "Key has been revoked" in c.oss[0].text()
    log = mount_fails(c, bad, "badmnt")
    assert "key bad was revoked" in log, log
