"""Crash and restart: data written and fsynced survives kill -9 of every server; objects of
files unlinked while their OSS was down are destroyed once it returns."""
import hashlib
import os
import signal
import threading
import time
from pathlib import Path

from conftest import free_port, wait_for
from test_data import object_path, parse_fid, parse_layout


def write_sync(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def snapshot(root):
    """{relative path: (type, sha256 or target)} of a tree."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs:
            out[os.path.relpath(os.path.join(d, n), root)] = ("dir", None)
        for n in files:
            p = os.path.join(d, n)
            if os.path.islink(p):
                out[os.path.relpath(p, root)] = ("link", os.readlink(p))
            else:
                with open(p, "rb") as f:
                    out[os.path.relpath(p, root)] = ("file", hashlib.sha256(f.read()).hexdigest())
    return out


def test_kill9_everything_and_restart(make_cluster, nacre_cli):
    c = make_cluster(osts=2, oss=2)
    m = c.mounts[0].path
    os.mkdir(m / "d")
    nacre_cli("setstripe", "-c", 2, "-S", "64K", m / "d" / "striped", check=True)
    write_sync(m / "d" / "striped", os.urandom(1 << 20))
    for i in range(20):
        write_sync(m / "d" / f"small{i}", os.urandom(i * 1000))
    os.symlink("small3", m / "d" / "link")
    before = snapshot(m)

    c.mds.kill(signal.SIGKILL)
    for p in c.oss:
        p.kill(signal.SIGKILL)
    c.start_mds(fmt=False)
    for j in range(c.noss):
        c.start_oss(j, fmt=False)

    # The old mount should reconnect by itself; remount if it cannot.
    def old_mount_works():
        try:
            return snapshot(m) == before
        except OSError:
            return False
    try:
        wait_for(old_mount_works, 30, "the existing mount to reconnect", interval=0.5)
    except AssertionError:
        print("existing mount did not reconnect within 30 s; remounting")
        c.mounts[0].unmount()
        c.mounts.pop(0)
        m = c.mount().path
    c.wait_osts_up()
    assert snapshot(m) == before
    # And it keeps working for new writes.
    write_sync(m / "d" / "after", b"after restart")
    with open(m / "d" / "after", "rb") as f:
        assert f.read() == b"after restart"


def test_unlink_while_oss_down_destroys_objects_later(make_cluster, nacre_cli):
    c = make_cluster(osts=2, oss=2)
    m = c.mounts[0].path
    path = m / "victim"
    nacre_cli("setstripe", "-c", 2, "-S", "64K", path, check=True)
    write_sync(path, os.urandom(4 * 65536))
    _, _, gen, osts = parse_layout(os.getxattr(path, "nacre.layout").decode())
    fid = parse_fid(os.getxattr(path, "nacre.fid").decode())
    objs = [object_path(c.ost_dir(ost), fid, s, gen) for s, ost in enumerate(osts)]
    for o in objs:
        assert os.path.exists(o), f"object {o} missing after fsync"

    down_ost = osts[1]
    c.oss[c.oss_of(down_ost)].kill(signal.SIGKILL)
    os.unlink(path)
    assert not os.path.exists(path)
    # The live OST's object goes at once (or soon); the dead one's stays for now.
    wait_for(lambda: not os.path.exists(objs[0]), 20, f"{objs[0]} to be destroyed")
    assert os.path.exists(objs[1])
    c.start_oss(c.oss_of(down_ost), fmt=False)
    c.wait_osts_up()
    wait_for(lambda: not os.path.exists(objs[1]), 30,
             f"{objs[1]} to be destroyed after its OSS came back")


def test_mds_restart_keeps_layout_defaults(make_cluster, nacre_cli):
    c = make_cluster(osts=2, oss=1)
    m = c.mounts[0].path
    os.mkdir(m / "wide")
    nacre_cli("setstripe", "-c", 2, "-S", "128K", m / "wide", check=True)
    c.mds.kill(signal.SIGKILL)
    c.start_mds(fmt=False)
    time.sleep(0.5)

    def works():
        try:
            return nacre_cli("getstripe", "-d", m / "wide").stdout.strip()
        except OSError:
            return False
    out = wait_for(works, 30, "getstripe after MDS restart", interval=0.5)
    assert out.splitlines()[0] == \
        "stripe_count:  2 stripe_size:   131072 pattern:       raid0 stripe_offset: -1"


def test_creates_right_after_mds_restart_wait_for_no_ost(make_cluster):
    """The OSSes register again only at their next heartbeat (every 2 s): meanwhile the MDS
    allocates on the OSTs it remembers instead of answering ENOSPC."""
    c = make_cluster(osts=2, oss=2)
    m = c.mounts[0].path
    os.mkdir(m / "d")
    c.mds.kill(signal.SIGKILL)
    c.start_mds(fmt=False)
    for i in range(50):
        write_sync(m / "d" / f"f{i}", b"x" * 4096)
    assert sorted(os.listdir(m / "d")) == sorted(f"f{i}" for i in range(50))


def test_creates_wait_for_osts_after_mds_restart(make_cluster, nacre_cli):
    """Right after an MDS restart creates wait for the OSTs to register again (ost_wait.h)
    instead of failing with ENOSPC, and get every stripe they ask for."""
    c = make_cluster(osts=2, oss=2)
    m = c.mounts[0].path
    os.mkdir(m / "wide")
    nacre_cli("setstripe", "-c", 2, m / "wide", check=True)
    for k in range(4):
        os.mkdir(m / "wide" / str(k))  # one directory each: the kernel serializes creates

    c.mds.kill(signal.SIGKILL)
    for p in c.oss:
        p.kill(signal.SIGKILL)
    c.start_mds(fmt=False)
    t0 = time.monotonic()
    results, errors = {}, []

    def create(k):
        for i in range(5):
            p = m / "wide" / str(k) / f"f{i}"
            try:
                write_sync(p, b"data %d %d" % (k, i))
                results[p] = time.monotonic() - t0
            except OSError as e:
                errors.append((p, e))

    threads = [threading.Thread(target=create, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    time.sleep(2)
    for j in range(c.noss):
        c.start_oss(j, fmt=False)
    for t in threads:
        t.join(60)
    assert errors == [], errors
    assert len(results) == 20
    print("creates done %.1f..%.1f s after the MDS restart" % (min(results.values()),
                                                                 max(results.values())))
    for p in results:
        count, _, _, osts = parse_layout(os.getxattr(p, "nacre.layout").decode())
        assert count == 2 and sorted(osts) == [0, 1], (p, count, osts)
        with open(p, "rb") as f:
            assert f.read().startswith(b"data ")


def test_oss_restarted_at_another_address_is_found_at_once(make_cluster):
    """An OSS that comes back at another address (another port or host) registers it with
    the MDS; a mount whose connection still tries the old one asks the MDS's target list
    again after its failed attempts and goes there, instead of waiting out recovery_timeout
    (300 s) at an address nobody will answer."""
    c = make_cluster(osts=1)
    m = c.mounts[0].path
    data = os.urandom(3 << 20)
    (m / "f").write_bytes(data)
    c.oss[0].kill(signal.SIGKILL)
    c.oss_ports[0] = free_port()
    c.start_oss(0, fmt=False)
    wait_for(lambda: f"127.0.0.1:{c.oss_ports[0]}" in c.mds.text(), 15,
             "the OSS to register its new address")
    Path("/proc/sys/vm/drop_caches").write_text("3")
    t0 = time.monotonic()
    with open(m / "f", "rb", buffering=0) as f:
        assert f.read() == data
    (m / "g").write_bytes(data[:4096])
    took = time.monotonic() - t0
    assert took < 20, f"reading after the OSS moved took {took:.1f} s"
    assert "no longer at this address" in c.mounts[0].proc.text(), c.mounts[0].proc.text()
