"""Object capabilities (docs/security.md, "Object capabilities"): an OSS serves an object only
with a capability the MDS minted for that file, that client and that right, before it expires.

The refusals are shown with hand-built requests (build/cap-probe: a client that holds the key
and talks to the MDS and the OSSes directly, as a program bypassing nacre-mount would); the
mount's own I/O, truncate, unlink and capability renewal must keep working meanwhile.
"""
import os
import re
import subprocess
import time

import pytest

from conftest import binary, daemon_env, wait_for

EACCES = -13


def fid_of(nacre_cli, path):
    r = nacre_cli("path2fid", path, check=True)
    return r.stdout.split()[-1]


def probe(c, *cmds, key=None):
    """Runs cap-probe against cluster c (with key, default the cluster key); returns its
    output lines, one per command."""
    r = subprocess.run([binary("cap-probe"), c.mds_addr, c.fsname, str(key or c.key), *cmds],
                       capture_output=True, text=True, timeout=60, env=daemon_env())
    assert r.returncode == 0, f"cap-probe failed ({r.returncode}):\n{r.stdout}{r.stderr}"
    lines = r.stdout.splitlines()
    assert len(lines) == len(cmds), r.stdout + r.stderr
    return lines


def rc(line):
    return int(re.search(r"rc=(-?\d+)", line).group(1))


def field(line, name):
    return int(re.search(name + r"=(-?\d+)", line).group(1))


def oss_logs(c):
    return "".join(p.text() for p in c.oss if p is not None)


def objects_of(c):
    n = 0
    for i in range(c.nosts):
        for _, _, files in os.walk(c.ost_dir(i) / "O"):
            n += len(files)
    return n


def test_handbuilt_requests(make_cluster, nacre_cli):
    c = make_cluster(osts=2, oss=2)
    mnt = c.mounts[0].path
    a, b = mnt / "a", mnt / "b"
    a.write_bytes(b"A" * 4096)
    b.write_bytes(b"B" * 4096)
    os.chmod(a, 0o600)  # root's, unreadable by uid 1000
    fa, fb = fid_of(nacre_cli, a), fid_of(nacre_cli, b)

    out = probe(c,
                f"open a {fa} r",            # 0: read-only open of a
                f"open b {fb} rw",           # 1: read-write open of b
                "io read none a",            # 2: no capability
                "io write none a",           # 3
                "io read a a",               # 4: a's read capability reads a
                "io write a a",              # 5: ...but does not write it
                "io read a b",               # 6: a's capability does not open b
                "io write b a",              # 7: b's write capability does not write a
                "io write b b",              # 8: b's own write capability writes b
                "io punch b b",              # 9: clients get no punch right
                "io destroy b b",            # 10: nor destroy
                "forge a 3",                 # 11: a's capability with write added by hand
                "io write a a",              # 12
                f"layout l {fa} 1000 1000",  # 13: getstripe by a user who may not read a
                "io read l a",               # 14
                f"layout r {fa}",            # 15: getstripe by root: read only
                "io read r a",               # 16
                "io write r a",              # 17
                "io getattr r a",            # 18: getattr and sync take read or write
                "io sync b b")               # 19
    assert rc(out[0]) == 0 and field(out[0], "cap") == 1 and field(out[0], "rights") == 1, out[0]
    assert rc(out[1]) == 0 and field(out[1], "rights") == 3, out[1]
    assert rc(out[2]) == EACCES and rc(out[3]) == EACCES, out[2:4]
    assert rc(out[4]) == 0 and field(out[4], "bytes") == 4096, out[4]
    assert rc(out[5]) == EACCES, out[5]
    assert rc(out[6]) == EACCES, out[6]
    assert rc(out[7]) == EACCES, out[7]
    assert rc(out[8]) == 0, out[8]
    assert rc(out[9]) == EACCES and rc(out[10]) == EACCES, out[9:11]
    assert rc(out[12]) == EACCES, out[12]
    assert rc(out[13]) == 0 and field(out[13], "cap") == 0, out[13]
    assert rc(out[14]) == EACCES, out[14]
    assert rc(out[15]) == 0 and field(out[15], "rights") == 1, out[15]
    assert rc(out[16]) == 0 and rc(out[17]) == EACCES, out[16:18]
    assert rc(out[18]) == 0 and rc(out[19]) == 0, out[18:20]

    # nothing the refused requests sent reached the files; b got the one allowed write
    assert a.read_bytes() == b"A" * 4096
    data = b.read_bytes()
    assert data[:5] == b"HACKD" and data[5:] == b"B" * 4091
    # the OSS logs each refusal with the peer, the FID and the reason
    logs = oss_logs(c)
    who = f"({os.environ['NACRE_CLIENT_NAME']}, client "
    assert "no capability" in logs and who in logs, logs[-2000:]
    assert "grants read only" in logs
    assert fa.strip("[]") in logs or fa in logs


def test_expiry_and_renewal(make_cluster, nacre_cli):
    c = make_cluster(osts=2, oss=1, mds_args=["--cap-lifetime", "2"])
    mnt = c.mounts[0].path
    f = mnt / "f"
    f.write_bytes(b"x" * 8192)
    fid = fid_of(nacre_cli, f)
    out = probe(c, f"open f {fid} r", "io read f f", "sleep 3.5", "io read f f")
    assert rc(out[1]) == 0, out
    assert rc(out[3]) == EACCES, out  # expired
    assert "expired" in oss_logs(c)

    # a file kept open through several lifetimes: its I/O never fails (renewal)
    payload = os.urandom(1 << 20)
    fd = os.open(f, os.O_RDWR | os.O_TRUNC)
    try:
        end = time.monotonic() + 7
        n = 0
        while time.monotonic() < end:
            assert os.pwrite(fd, payload, n * len(payload)) == len(payload)
            os.fsync(fd)
            n += 1
            time.sleep(0.7)
        for i in range(n):
            assert os.pread(fd, len(payload), i * len(payload)) == payload
    finally:
        os.close(fd)
    # and a fresh read through another mount, after everything it held expired
    m2 = c.mount()
    time.sleep(2.5)
    assert (m2.path / "f").read_bytes()[:len(payload)] == payload


def test_mount_data_path_still_works(make_cluster):
    """Normal I/O, truncate (the MDS's punch) and unlink (the MDS's destroy) all carry the
    capabilities they need."""
    c = make_cluster(osts=2, oss=2)
    mnt = c.mounts[0].path
    before = objects_of(c)
    f = mnt / "t"
    data = os.urandom(3 << 20)
    f.write_bytes(data)
    assert f.read_bytes() == data
    os.truncate(f, 1 << 20)
    assert f.stat().st_size == 1 << 20
    assert f.read_bytes() == data[:1 << 20]
    with open(f, "r+b") as h:  # truncate of an open file, then grow again
        h.truncate(4096)
        h.seek(8192)
        h.write(b"z")
    got = f.read_bytes()
    assert got[:4096] == data[:4096] and got[4096:8192] == bytes(4096) and got[8192:] == b"z"
    assert objects_of(c) > before
    f.unlink()
    wait_for(lambda: objects_of(c) == before, 30, "the unlinked file's objects destroyed")
    assert "refused" not in oss_logs(c), oss_logs(c)[-2000:]


def test_nodemaps_hold_against_a_client_that_bypasses_the_mds(make_cluster, nacre_cli):
    """A client with its own key whose nodemap is read-only cannot write an object with a
    hand-built OSS request, and one restricted to a fileset cannot read a file outside it by
    FID: the MDS refuses the opens, so no capability exists that an OSS would honour."""
    c = make_cluster(osts=2, oss=2)
    mnt = c.mounts[0].path
    (mnt / "proj").mkdir()
    inside, outside = mnt / "proj" / "in", mnt / "out"
    inside.write_bytes(b"I" * 4096)
    outside.write_bytes(b"O" * 4096)
    fi, fo = fid_of(nacre_cli, inside), fid_of(nacre_cli, outside)

    def admin(*args):
        return nacre_cli(*args, "--mds", c.spec, "--key-file", c.key, check=True)

    keys = {}
    for name in ("ro-node", "fs-node"):
        keys[name] = c.dir / f"{name}.key"
        admin("key", "issue", name, "-o", keys[name])
    nm = ["nodemap", "--mds", c.spec, "--key-file", c.key]
    nacre_cli(*nm, "add", "ro", "--client", "ro-node", check=True)
    nacre_cli(*nm, "modify", "ro", "--readonly", "1", check=True)
    nacre_cli(*nm, "modify", "ro", "--trusted", "1", check=True)
    nacre_cli(*nm, "add", "fs", "--client", "fs-node", check=True)
    nacre_cli(*nm, "modify", "fs", "--fileset", "/proj", check=True)
    nacre_cli(*nm, "modify", "fs", "--trusted", "1", check=True)

    out = probe(c,
                f"open r {fo} r",     # 0: the read-only client may read
                f"open w {fo} rw",    # 1: ...but not open for writing: EROFS, no capability
                "io read r r",        # 2: its read capability reads the object
                "io write r r",       # 3: ...and does not write it
                "io write none r",    # 4: nor does no capability
                "io write w r",       # 5: nor the refused open's (absent) capability
                key=keys["ro-node"])
    assert rc(out[0]) == 0 and field(out[0], "rights") == 1, out[0]
    assert rc(out[1]) == -30 and field(out[1], "cap") == 0, out[1]  # EROFS
    assert rc(out[2]) == 0 and field(out[2], "bytes") == 4096, out[2]
    assert rc(out[3]) == EACCES and rc(out[4]) == EACCES and rc(out[5]) == EACCES, out[3:]

    # where the outside file's object lives, as an attacker could learn it elsewhere
    where = probe(c, f"open x {fo} r")[0]
    ost, gen = field(where, "ost"), field(where, "gen")
    out = probe(c,
                f"open i {fi} r",     # 0: inside the fileset
                f"open o {fo} r",     # 1: outside: refused by FID
                f"layout l {fo}",     # 2: nor a layout (and so no capability) for it
                "io read i i",        # 3
                f"known o {fo} {ost} {gen}",
                "io read none o",     # 5: the object outside, without a capability
                "io read i o",        # 6: ...or with the capability of a file inside
                key=keys["fs-node"])
    assert rc(out[0]) == 0 and field(out[0], "cap") == 1, out[0]
    assert rc(out[1]) == EACCES and field(out[1], "cap") == 0, out[1]
    assert rc(out[2]) == EACCES, out[2]
    assert rc(out[3]) == 0 and field(out[3], "bytes") == 4096, out[3]
    assert rc(out[5]) == EACCES and rc(out[6]) == EACCES, out[5:]
    # and the OSSes saw the clients by their proven key names
    logs = oss_logs(c)
    assert "ro-node" in logs and "fs-node" in logs, logs[-2000:]
