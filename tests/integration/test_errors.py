"""Failures that users and operators meet: bad mount strings, unreachable or missing servers,
wrong keys and directories, full OSTs, and garbage on the wire."""
import errno
import os
import secrets
import signal
import socket
import struct
import subprocess
import time

import pytest

from conftest import binary, free_port, mounted_dirs, wait_for

WIRE_MAGIC = 0x5243414E
HDR = struct.Struct("<IHHIIQiII")  # magic version opcode flags body_len xid status bulk_len crc


def run_mount(spec, mnt, opts, timeout=40):
    os.makedirs(mnt, exist_ok=True)
    t0 = time.monotonic()
    r = subprocess.run([binary("nacre-mount"), spec, str(mnt), "-o", ",".join(opts), "-f"],
                       capture_output=True, text=True, timeout=timeout)
    return r, time.monotonic() - t0


def test_bad_mount_strings(make_cluster, tmp_path):
    c = make_cluster(osts=1)
    for spec in ("nonsense", "127.0.0.1:/", ":/testfs", "127.0.0.1:99999:/testfs",
                 "127.0.0.1:/waytoolongfsname"):
        r, _ = run_mount(spec, tmp_path / "m", [f"key_file={c.key}"])
        assert r.returncode != 0, f"{spec!r} was accepted"
        assert spec in r.stderr or "spec" in r.stderr.lower() or "mount" in r.stderr.lower(), \
            f"{spec!r}: message does not say what is wrong: {r.stderr}"
        assert str(tmp_path / "m") not in mounted_dirs()


def test_unreachable_mds_names_address(tmp_path):
    port = free_port()
    key = tmp_path / "k"
    key.write_text(secrets.token_hex(32))
    key.chmod(0o600)
    r, took = run_mount(f"127.0.0.1:{port}:/testfs", tmp_path / "m",
                        [f"key_file={key}", "timeout=3"])
    assert r.returncode != 0
    assert f"127.0.0.1:{port}" in r.stderr, r.stderr
    # connect timeout is 10 s by default: the answer must come before then plus slack.
    assert took < 15, f"took {took:.1f}s"
    assert str(tmp_path / "m") not in mounted_dirs()


def test_wrong_fsname_refused(make_cluster, tmp_path):
    c = make_cluster(osts=1)
    r, _ = run_mount(f"{c.mds_addr}:/otherfs", tmp_path / "m", [f"key_file={c.key}"])
    assert r.returncode != 0
    assert "otherfs" in r.stderr or "testfs" in r.stderr, r.stderr


def test_wrong_key_refused(make_cluster, tmp_path):
    c = make_cluster(osts=1)
    bad = tmp_path / "bad.key"
    bad.write_text(secrets.token_hex(32) + "\n")
    bad.chmod(0o600)
    r, took = run_mount(c.spec, tmp_path / "m", [f"key_file={bad}"])
    assert r.returncode != 0
    assert "key" in r.stderr.lower(), r.stderr
    assert took < 15
    # No key at all is refused too.
    r, _ = run_mount(c.spec, tmp_path / "m2", [])
    assert r.returncode != 0 and "key" in r.stderr.lower(), r.stderr
    # An OSS with the wrong key does not get its OST registered.
    p = subprocess.run([binary("nacre-oss"), "--fsname", c.fsname, "--mds", c.mds_addr,
                        "--listen", f"127.0.0.1:{free_port()}", "--key-file", str(bad),
                        "--ost", f"5:{tmp_path / 'ost5'}", "--format"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "key" in p.stderr.lower(), p.stderr
    assert ("OST", 5) not in c.targets()


def test_loose_key_file_modes_refused(make_cluster, tmp_path):
    """A key file that group or others may read is refused by a mount and by the daemons,
    naming the file and the chmod that fixes it."""
    c = make_cluster(osts=1)
    loose = tmp_path / "loose.key"
    loose.write_bytes(c.key.read_bytes())
    for mode in (0o644, 0o640, 0o604):
        loose.chmod(mode)
        r, _ = run_mount(c.spec, tmp_path / "m", [f"key_file={loose}"])
        assert r.returncode != 0
        assert str(loose) in r.stderr and "chmod 600" in r.stderr, r.stderr
        assert str(tmp_path / "m") not in mounted_dirs()
    p = subprocess.run([binary("nacre-mds"), "--fsname", "x", "--data", str(tmp_path / "mdt"),
                        "--listen", f"127.0.0.1:{free_port()}", "--key-file", str(loose),
                        "--format"], capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "chmod 600" in p.stderr, p.stderr


def test_wrong_ost_directory_refused(make_cluster, tmp_path):
    c = make_cluster(osts=2, oss=2)

    def oss(idx, d, fsname=c.fsname, fmt=False):
        argv = [binary("nacre-oss"), "--fsname", fsname, "--mds", c.mds_addr,
                "--listen", f"127.0.0.1:{free_port()}", "--key-file", str(c.key),
                "--ost", f"{idx}:{d}"] + (["--format"] if fmt else [])
        return subprocess.run(argv, capture_output=True, text=True, timeout=30)

    # OST 1's directory offered as index 0 (and while OST 0 is up elsewhere).
    c.oss[1].kill(signal.SIGKILL)
    r = oss(0, c.ost_dir(1))
    assert r.returncode == 1
    assert str(c.ost_dir(1)) in r.stderr and "1" in r.stderr and "0" in r.stderr, r.stderr
    # A directory of another file system.
    r = oss(1, c.ost_dir(1), fsname="otherfs")
    assert r.returncode == 1
    assert "otherfs" in r.stderr and "testfs" in r.stderr, r.stderr
    # A directory with no superblock, without --format.
    (tmp_path / "empty").mkdir()
    r = oss(1, tmp_path / "empty")
    assert r.returncode == 1 and "--format" in r.stderr, r.stderr
    # The real one still works.
    c.start_oss(1, fmt=False)
    c.wait_osts_up()


def test_missing_oss_read_times_out_then_recovers(make_cluster, nacre_cli):
    c = make_cluster(osts=2, oss=2)
    writer = c.mounts[0].path
    path = writer / "on-ost1"
    nacre_cli("setstripe", "-c", 1, "-i", 1, path, check=True)
    data = os.urandom(3 * 1048576)
    with open(path, "r+b") as f:
        f.write(data)
        os.fsync(f.fileno())
    # A second mount that has never read the file: nothing of it is in its page cache.
    # A missing server fails calls once the recovery timeout passed (the per-request timeout
    # bounds each connection attempt).
    reader = c.mount(opts=["timeout=3", "recovery_timeout=3"], name="mnt-timeout")
    rpath = reader.path / "on-ost1"
    assert os.path.getsize(rpath) == len(data)
    c.oss[1].kill(signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(OSError) as ei:
        with open(rpath, "rb") as f:
            f.read()
    took = time.monotonic() - t0
    assert ei.value.errno == errno.EIO, ei.value
    assert 2.0 <= took <= 20, f"read failed after {took:.1f}s (recovery_timeout=3)"
    # Metadata still works while an OSS is missing.
    assert os.path.getsize(rpath) == len(data)
    c.start_oss(1, fmt=False)
    c.wait_osts_up()

    def readable():
        try:
            with open(rpath, "rb") as f:
                return f.read() == data
        except OSError:
            return False
    wait_for(readable, 30, "the file to be readable again once its OSS is back", interval=0.5)


def test_full_ost_gives_enospc(make_cluster, tmp_path, nacre_cli):
    small = tmp_path / "small-ost"
    small.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(small)],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"cannot mount a tmpfs for the full-OST test: {r.stderr}"
    c = None
    try:
        c = make_cluster(osts=1, ost_dirs={0: small / "ost0"})
        m = c.mounts[0].path
        got = None
        fd = os.open(m / "big", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            chunk = os.urandom(1 << 20)
            for _ in range(32):
                os.write(fd, chunk)
            os.fsync(fd)
        except OSError as e:
            got = e.errno
        finally:
            try:
                os.close(fd)
            except OSError as e:
                got = got or e.errno
        assert got == errno.ENOSPC, f"expected ENOSPC writing 32 MiB to an 8 MiB OST, got {got}"
        # After deleting, space comes back and writes work again.
        os.unlink(m / "big")
        wait_for(lambda: not any(files for _, _, files in os.walk(small / "ost0" / "O")), 20,
                 "objects of the deleted file to be destroyed")
        with open(m / "again", "wb") as f:
            f.write(b"x" * 1000000)
        with open(m / "again", "rb") as f:
            assert f.read() == b"x" * 1000000
    finally:
        # Stop the servers before the tmpfs under their OST goes away.
        bad = c.stop() if c else []
        subprocess.run(["umount", "-l", str(small)], capture_output=True)
        assert not bad, f"sanitizer reports: {bad}"


def garbage_frames():
    """Byte strings a broken or hostile peer could send."""
    big = HDR.pack(WIRE_MAGIC, 1, 1, 0, 0xFFFFFFFF, 1, 0, 0xFFFFFFFF, 0)
    return [
        b"",                                                  # connect and close
        os.urandom(7),                                        # truncated header
        os.urandom(4096),                                     # noise
        HDR.pack(0xDEADBEEF, 1, 1, 0, 0, 1, 0, 0, 0),          # bad magic
        big,                                                  # lengths over the limits
        HDR.pack(WIRE_MAGIC, 99, 1, 0, 0, 2, 0, 0, 0),         # unknown version
        HDR.pack(WIRE_MAGIC, 1, 0xFFFF, 0, 0, 3, 0, 0, 0),     # unknown opcode
        HDR.pack(WIRE_MAGIC, 1, 1, 0, 1000, 4, 0, 0, 0) + b"x" * 10,  # truncated body
        HDR.pack(WIRE_MAGIC, 1, 64, 0, 16, 5, 0, 100, 0) + b"\0" * 16 + b"y" * 100,  # op before auth
        HDR.pack(WIRE_MAGIC, 1, 1, 0, 64, 6, 0, 0, 0) + os.urandom(64),  # garbage connect body
    ]


def send_garbage(port, payload):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        if payload:
            s.sendall(payload)
        s.settimeout(2)
        try:
            s.recv(4096)
        except (socket.timeout, ConnectionError):
            pass
    finally:
        s.close()


def test_malformed_frames_do_not_kill_servers(make_cluster):
    c = make_cluster(osts=1)
    m = c.mounts[0].path
    for port in (c.mds_port, c.oss_ports[0]):
        for i, payload in enumerate(garbage_frames()):
            send_garbage(port, payload)
            assert c.mds.alive(), f"nacre-mds died after frame {i} to port {port}"
            assert c.oss[0].alive(), f"nacre-oss died after frame {i} to port {port}"
        # Many half-open connections at once.
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(50)]
        for s in socks:
            s.sendall(b"NACR")
        for s in socks:
            s.close()
    # Still serving real clients.
    data = os.urandom(200000)
    with open(m / "still-alive", "wb") as f:
        f.write(data)
    with open(m / "still-alive", "rb") as f:
        assert f.read() == data
    assert c.mds.alive() and c.oss[0].alive()


def test_mdt_on_a_fresh_ext4_is_empty(tmp_path):
    """A freshly made file system holds only lost+found: --format takes it as empty, as the
    OSS already does, instead of refusing a directory that is "not empty"."""
    img, mdt = tmp_path / "mdt.img", tmp_path / "mdt"
    mdt.mkdir()
    subprocess.run(["truncate", "-s", "256M", str(img)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], check=True, capture_output=True)
    subprocess.run(["mount", "-o", "loop", str(img), str(mdt)], check=True)
    try:
        assert os.listdir(mdt) == ["lost+found"]
        key = tmp_path / "cluster.key"
        key.write_text(secrets.token_hex(32))
        key.chmod(0o600)
        port = free_port()
        p = subprocess.Popen([binary("nacre-mds"), "--fsname", "extfs", "--data", str(mdt),
                              "--listen", f"127.0.0.1:{port}", "--key-file", str(key),
                              "--format"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
        try:
            wait_for(lambda: p.poll() is not None or (mdt / "data.mdb").exists(), 30,
                     "the MDS to format the fresh ext4")
            assert p.poll() is None, p.stdout.read()
        finally:
            p.terminate()
            p.wait(30)
    finally:
        subprocess.run(["umount", str(mdt)], check=True)
