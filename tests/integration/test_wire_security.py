"""Wire security flavours (docs/security.md, "Wire flavours"): what a capture of the loopback
traffic shows, what a relay without the key can do, and which mounts a server's --sec-min
refuses.

The relay is a small TCP proxy between a mount and the MDS: it forwards both ways, parses
the client's frames (wire.h: the 36-byte header; after AUTH on a sealed connection a 16-byte
tag follows each frame) and injects or alters requests. With sec=null it succeeds, which
shows the tests can fail; with integrity the MDS closes the connection and nothing happens.
"""
import errno
import os
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time

import pytest

from conftest import Mount, Proc, binary, free_port, mounted_dirs, wait_for

WIRE_MAGIC = 0x5243414E
HDR = struct.Struct("<IHHIIQiII")  # magic, version, opcode, flags, body_len, xid, status,
assert HDR.size == 36               # bulk_len, bulk_crc
OP_CONNECT, OP_AUTH, OP_MKDIR = 1, 2, 21
FEAT_RECOVERY, FEAT_SEC = 1, 2
NACRE_EAUTH, NACRE_EPROTO_VERSION = 4002, 4001
TAG_LEN = 16


def mount_spec(cluster, spec, opts=(), name=None, wait=True):
    """cluster.mount with another spec (the relay's address)."""
    mnt = cluster.dir / (name or f"mnt{len(cluster.mounts)}")
    mnt.mkdir(exist_ok=True)
    o = ",".join([f"key_file={cluster.key}"] + list(opts))
    argv = [binary("nacre-mount"), spec, str(mnt), "-o", o, "-f"]
    p = Proc(f"mount-{mnt.name}", argv, cluster.dir / f"{mnt.name}.log").start()
    m = Mount(cluster, mnt, p)
    cluster.mounts.append(m)
    if wait:
        def ready():
            if not p.alive():
                raise AssertionError(f"nacre-mount exited:\n{p.text()}")
            return str(mnt) in mounted_dirs()
        wait_for(ready, 20, f"{mnt} to be mounted")
    return m


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


class Relay:
    """A proxy on loopback to target. sealed: the flavour seals frames after AUTH (their
    length then includes a tag). on_request(relay, hdr_fields, frame_bytes) returns the
    bytes to forward (the frame, altered, or with more frames after it)."""

    def __init__(self, target_port, sealed, on_request, on_handshake=None):
        self.target_port, self.sealed, self.on_request = target_port, sealed, on_request
        self.on_handshake = on_handshake or (lambda relay, f, frame: frame)
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.conns = 0
        self.closed_by_server = 0
        self.stopping = False
        self.socks = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            s = socket.create_connection(("127.0.0.1", self.target_port))
            self.socks += [c, s]
            self.conns += 1
            threading.Thread(target=self._up, args=(c, s), daemon=True).start()
            threading.Thread(target=self._down, args=(s, c), daemon=True).start()

    def _up(self, c, s):
        """Client to server, frame by frame."""
        authed = False
        try:
            while True:
                raw = recv_exact(c, HDR.size)
                f = HDR.unpack(raw)
                n = f[4] + f[7] + (TAG_LEN if authed and self.sealed else 0)
                frame = raw + recv_exact(c, n)
                out = (self.on_request if authed else self.on_handshake)(self, f, frame)
                s.sendall(out)
                if f[2] == OP_AUTH:
                    authed = True
        except (EOFError, OSError):
            pass
        for x in (c, s):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _down(self, s, c):
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    self.closed_by_server += 1
                    break
                c.sendall(b)
        except OSError:
            pass
        for x in (c, s):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self):
        self.stopping = True
        self.lsock.close()
        for x in self.socks:
            try:
                x.close()
            except OSError:
                pass


def mkdir_injector(template, injected):
    """After the client's own MKDIR of template, a second MKDIR built here: a header of our
    own (fresh xid, no tag: the relay has no key; a random one under a sealed flavour) and
    the template's body with the name replaced."""
    state = {"done": False}

    def on_request(relay, f, frame):
        if state["done"] or f[2] != OP_MKDIR or template not in frame:
            return frame
        state["done"] = True
        body = frame[HDR.size:HDR.size + f[4]].replace(template, injected)
        # The MKDIR ends with the FID the client chose from its grant (WIRE_CREATE_FID): a
        # copy would be the same create, refused under another name. The next oid of the
        # same grant makes it a new one.
        seq, oid, ver = struct.unpack("<QII", body[-16:])
        if ver == 0 and 0x200000400 <= seq < 1 << 40:
            body = body[:-8] + struct.pack("<II", oid + 1000, ver)
        hdr = HDR.pack(WIRE_MAGIC, 1, OP_MKDIR, 0, len(body), 0x7FFF0000, 0, 0, 0)
        tag = os.urandom(TAG_LEN) if relay.sealed else b""
        return frame + hdr + body + tag
    return on_request, state


def byte_flipper(name):
    """Flips one bit of name's last byte in the first MKDIR that carries it."""
    state = {"done": False}

    def on_request(relay, f, frame):
        i = frame.find(name)
        if state["done"] or f[2] != OP_MKDIR or i < 0:
            return frame
        state["done"] = True
        b = bytearray(frame)
        b[i + len(name) - 1] ^= 1
        return bytes(b)
    return on_request, state


@pytest.mark.parametrize("sec", ["null", "integrity"])
def test_relay_injects_mkdir(make_cluster, sec):
    c = make_cluster(osts=1)
    on_request, state = mkdir_injector(b"tmpl0001", b"injected")
    relay = Relay(c.mds_port, sec != "null", on_request)
    try:
        m = mount_spec(c, f"127.0.0.1:{relay.port}:/{c.fsname}", [f"sec={sec}"], "relayed")
        os.mkdir(m / "tmpl0001")
        assert state["done"], "the relay saw no MKDIR of tmpl0001"
        direct = c.mounts[0]
        if sec == "null":
            # the server executed the relay's request: the test can fail
            wait_for(lambda: os.path.isdir(direct / "injected"), 5, "the injected MKDIR")
            return
        wait_for(lambda: "failed sec=integrity verification" in c.mds.text(), 5,
                 "the MDS to reject the injected frame")
        wait_for(lambda: relay.closed_by_server >= 1, 5, "the MDS to close the connection")
        assert not os.path.exists(direct / "injected")
        assert not os.path.exists(m / "injected")
        # the mount reconnects (through the relay, which now only forwards) and goes on
        os.mkdir(m / "after")
        assert os.path.isdir(direct / "after")
        assert os.path.isdir(direct / "tmpl0001")
    finally:
        relay.stop()


@pytest.mark.parametrize("sec", ["null", "integrity"])
def test_relay_flips_a_byte(make_cluster, sec):
    c = make_cluster(osts=1)
    on_request, state = byte_flipper(b"flipme01")
    relay = Relay(c.mds_port, sec != "null", on_request)
    try:
        m = mount_spec(c, f"127.0.0.1:{relay.port}:/{c.fsname}", [f"sec={sec}"], "relayed")
        os.mkdir(m / "flipme01")
        assert state["done"]
        direct = c.mounts[0]
        if sec == "null":
            assert os.path.isdir(direct / "flipme00")  # the altered name was executed
            return
        assert "failed sec=integrity verification" in c.mds.text()
        assert not os.path.exists(direct / "flipme00")
        assert os.path.isdir(direct / "flipme01")  # resent on a new connection, intact
    finally:
        relay.stop()


def tcpdump_bin():
    exe = shutil.which("tcpdump")
    if not exe:
        pytest.fail("tcpdump is missing: apt-get install tcpdump")
    return exe


def capture_write(c, m, path, data, pcap):
    ports = [c.mds_port] + list(c.oss_ports)
    flt = " or ".join(f"tcp port {p}" for p in ports)
    td = subprocess.Popen([tcpdump_bin(), "-i", "lo", "-U", "--immediate-mode", "-s", "0",
                           "-B", "65536", "-w", str(pcap), flt],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # tcpdump says "listening on lo" once the capture runs
        line = td.stderr.readline().decode()
        assert "listening" in line, f"tcpdump did not start: {line}"
        with open(path, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.sync()
        # let tcpdump write out what it holds: until the file stops growing
        last, t_end = -1, time.time() + 10
        while time.time() < t_end:
            time.sleep(0.5)
            size = pcap.stat().st_size if pcap.exists() else 0
            if size == last:
                break
            last = size
    finally:
        td.send_signal(signal.SIGINT)
        td.wait(10)
    stats = td.stderr.read().decode()
    assert "\n0 packets dropped by kernel" in "\n" + stats, f"tcpdump lost packets: {stats}"
    return pcap.read_bytes()


def chunks_found(capture, data):
    """How many of data's 4 KiB chunks appear whole in the capture."""
    return sum(1 for i in range(0, len(data), 4096) if data[i:i + 4096] in capture)


@pytest.mark.parametrize("sec", ["null", "privacy"])
def test_capture_shows_data_only_without_privacy(make_cluster, sec):
    c = make_cluster(osts=1)
    m = c.mount([f"sec={sec}"], name=f"m_{sec}")
    pattern = os.urandom(1 << 20)
    cap = capture_write(c, m, m / "secret.bin", pattern, c.dir / f"{sec}.pcap")
    found = chunks_found(cap, pattern)
    print(f"sec={sec}: capture {len(cap)} bytes, {found} of 256 chunks found")
    assert len(cap) > len(pattern), "the capture holds less than the data written"
    if sec == "null":
        assert found > 0, "sec=null: the pattern should be visible on the wire"
    else:
        assert found == 0, f"sec=privacy: {found} chunks of the pattern are on the wire"
    # and the data is intact, read back through another mount
    other = c.mounts[0]
    assert (other / "secret.bin").read_bytes() == pattern


def test_sec_min_refuses_and_names_the_rule(make_cluster):
    c = make_cluster(osts=1, mds_args=["--sec-min", "privacy"],
                     oss_args=["--sec-min", "privacy"])
    for asked in ("null", "integrity"):
        m = c.mount([f"sec={asked}"], name=f"refused_{asked}", wait=False)
        m.proc.p.wait(30)
        assert m.proc.p.returncode != 0
        text = m.proc.text()
        assert "requires sec=privacy or better for this client (--sec-min)" in text, text
        assert str(m.path) not in mounted_dirs()
    assert "asked for sec=null, this server requires sec=privacy" in c.mds.text()
    # the default mount (fixture's) got privacy; an explicit one works end to end
    p = c.mount(["sec=privacy"], name="priv")
    data = os.urandom(3 << 20)
    (p / "f").write_bytes(data)
    assert (c.mounts[0] / "f").read_bytes() == data


def test_integrity_and_privacy_end_to_end(make_cluster):
    c = make_cluster(osts=2, mds_args=["--sec-min", "integrity"],
                     oss_args=["--sec-min", "integrity"])
    refused = c.mount(["sec=null"], name="null", wait=False)
    refused.proc.p.wait(30)
    assert refused.proc.p.returncode != 0
    assert "requires sec=integrity or better" in refused.proc.text()
    a = c.mount(["sec=integrity"], name="integ")
    b = c.mount(["sec=privacy"], name="priv")
    for size in (0, 1, 4095, 65536 + 17, 5 << 20):
        data = os.urandom(size)
        (a / f"f{size}").write_bytes(data)
        assert (b / f"f{size}").read_bytes() == data
        (b / f"g{size}").write_bytes(data)
        assert (a / f"g{size}").read_bytes() == data
    os.mkdir(a / "d")
    os.rename(a / "f1", a / "d" / "moved")
    assert sorted(os.listdir(b / "d")) == ["moved"]
    # the OSS registered with the MDS over a sealed connection
    assert "sec=integrity" in c.mds.text()


@pytest.mark.parametrize("what", ["sec", "flags"])
def test_relay_cannot_downgrade(make_cluster, what):
    """A relay that rewrites what a privacy mount asks for in CONNECT: the flavour
    (connect_req's sec byte, second to last of the body) to null, or its flags (the last
    byte) to let the server choose. The server answers what it was asked, which the client
    notices; the proofs bind what each side saw, so a change the client cannot see fails
    the key check. Either way the mount fails instead of running with less."""
    c = make_cluster(osts=1)
    seen = {"connects": 0}

    def downgrade(relay, f, frame):
        if f[2] != OP_CONNECT:
            return frame
        seen["connects"] += 1
        b = bytearray(frame)
        assert b[-2] == 2 and b[-1] == 0, "connect_req.sec is not where wire.h puts it"
        if what == "sec":
            b[-2] = 0
        else:
            b[-1] = 1  # WIRE_SEC_RAISE
        return bytes(b)

    relay = Relay(c.mds_port, False, lambda r, f, frame: frame, downgrade)
    try:
        m = mount_spec(c, f"127.0.0.1:{relay.port}:/{c.fsname}", ["sec=privacy"], "down",
                       wait=False)
        m.proc.p.wait(60)
        assert seen["connects"] >= 1
        assert m.proc.p.returncode != 0
        if what == "sec":
            assert "server answered sec=null to a request for sec=privacy: the handshake " \
                "was altered" in m.proc.text(), m.proc.text()
        else:
            assert "cluster key rejected" in m.proc.text(), m.proc.text()
        assert str(m.path) not in mounted_dirs()
    finally:
        relay.stop()


def connect_frame(fsname, features):
    """A CONNECT as a client of another version builds it (wire.h, wire.c)."""
    body = struct.pack("<HHQ", 1, 1, features) + os.urandom(16)
    body += struct.pack("<H", len(fsname)) + fsname.encode()
    body += struct.pack("<H", 6) + b"oldcli"
    if features & FEAT_RECOVERY:
        body += struct.pack("<QQ", 0, 0)
    return HDR.pack(WIRE_MAGIC, 1, OP_CONNECT, 0, len(body), 1, 0, 0, 0) + body


def test_old_client_is_told_what_is_wrong(make_cluster):
    """A peer without WIRE_FEAT_SEC gets NACRE_EPROTO_VERSION, a code it knows, from a
    server whose minimum is above null, and the server log says why; with no minimum it is
    served as before (null)."""
    c = make_cluster(osts=1, mds_args=["--sec-min", "integrity"])
    with socket.create_connection(("127.0.0.1", c.mds_port)) as s:
        s.sendall(connect_frame(c.fsname, FEAT_RECOVERY))
        f = HDR.unpack(recv_exact(s, HDR.size))
        assert f[6] == -NACRE_EPROTO_VERSION
    wait_for(lambda: "it has no wire security and this server requires sec=integrity"
             in c.mds.text(), 5, "the MDS to log the refusal")
    c2 = make_cluster(osts=1)
    with socket.create_connection(("127.0.0.1", c2.mds_port)) as s:
        s.sendall(connect_frame(c2.fsname, FEAT_RECOVERY))
        f = HDR.unpack(recv_exact(s, HDR.size))
        assert f[6] == 0
        rep = recv_exact(s, f[4])
        features = struct.unpack_from("<Q", rep, 2)[0]
        assert features == FEAT_RECOVERY  # no FEAT_SEC towards a peer that lacks it


def test_sealed_replay_after_the_mds_lost_its_commits(make_cluster):
    """Recovery on a privacy connection: the replay after an MDS restart runs on the new
    socket's sealed frames before anything else (rpc_recovery_call), and the OSS
    re-registers over its own sealed connection."""
    from test_recovery import NoSyncCluster, write_fsync

    c = make_cluster(cls=NoSyncCluster, osts=1, mds_args=["--sec-min", "privacy"],
                     oss_args=["--sec-min", "privacy"])
    m = c.mounts[0].path
    (m / "durable").mkdir()
    write_fsync(m / "durable" / "a", b"a" * 1000)
    snap = c.dir / "mdt-snapshot"
    snap.mkdir()
    subprocess.run(["mdb_copy", str(c.dir / "mdt"), str(snap)], check=True, capture_output=True)
    (m / "lost").mkdir()
    for i in range(10):
        (m / "lost" / f"f{i}").write_bytes(b"z" * (i + 1))
    c.mds.kill(signal.SIGKILL)
    shutil.copy(snap / "data.mdb", c.dir / "mdt" / "data.mdb")
    c.start_mds(fmt=False)
    assert sorted(os.listdir(m / "lost")) == sorted(f"f{i}" for i in range(10))
    assert "replaying" in c.mounts[0].proc.text()
    other = c.mount(["sec=privacy"]).path
    for i in range(10):
        assert (other / "lost" / f"f{i}").read_bytes() == b"z" * (i + 1)
    assert "failed sec=" not in c.mds.text()


def test_nacre_up_sec_min(nacre_cli):
    """nacre up --sec-min privacy: the MDS and the OSSes get the minimum, the OSSes register
    and the mount connects with privacy (it asked for nothing, so it takes the minimum), and
    DIR/up.options keeps it for the next nacre up."""
    from test_cli import _free_base_port
    import tempfile

    d = tempfile.mkdtemp(prefix="nacre-up-sec-")
    port = _free_base_port(3)
    try:
        r = nacre_cli("up", "--dir", d, "--osts", 2, "--port", port, "--sec-min", "privacy",
                      timeout=90)
        assert r.returncode == 0, r.stdout + r.stderr
        mnt = os.path.join(d, "mnt")
        data = os.urandom(1 << 20)
        with open(os.path.join(mnt, "f"), "wb") as f:
            f.write(data)
        with open(os.path.join(mnt, "f"), "rb") as f:
            assert f.read() == data
        assert "--sec-min=privacy" in open(os.path.join(d, "up.options")).read()
        logs = "".join(open(os.path.join(d, n), errors="replace").read()
                       for n in os.listdir(d) if n.endswith(".log"))
        assert "authenticated, sec=privacy" in logs
        assert "authenticated, sec=null" not in logs
        bad = nacre_cli("up", "--dir", d + "-x", "--sec-min", "secret", timeout=30)
        assert bad.returncode != 0 and "invalid --sec-min 'secret'" in bad.stderr
    finally:
        nacre_cli("down", "--dir", d, timeout=60)
        shutil.rmtree(d, ignore_errors=True)


def test_oss_minimum_above_the_mount_flavour_fails_io_with_the_reason(make_cluster):
    """The OSSes enforce their own minimum: a mount with sec=integrity on an MDS that allows
    it cannot write to an OSS that requires privacy (EIO), and its log says why."""
    c = make_cluster(osts=1, oss_args=["--sec-min", "privacy"])
    m = c.mount(["sec=integrity"], name="integ")
    with pytest.raises(OSError) as e:
        with open(m / "f", "wb") as f:
            f.write(b"x" * 65536)
            f.flush()
            os.fsync(f.fileno())
    assert e.value.errno == errno.EIO
    wait_for(lambda: "requires sec=privacy or better for this client (--sec-min)"
             in m.proc.text(), 5, "the mount to log the OSS's refusal")
    # the default mount took the OSS's minimum and writes
    (c.mounts[0] / "g").write_bytes(b"y" * 65536)
    assert (c.mounts[0] / "g").read_bytes() == b"y" * 65536
