"""MDS failover (docs/recovery.md, "Failover"): one MDS serves an MDT at a time; a standby on
the same MDT directory waits for it and takes over when it dies; mounts and OSSes that name
both addresses carry on with the standby."""
import os
import signal
import socket
import subprocess
import time

from conftest import Cluster, Proc, binary, free_port, wait_for


class FailoverCluster(Cluster):
    """A primary MDS and a standby on the same MDT directory; every spec and --mds lists
    both."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.standby_port = free_port()
        self.standby = None

    @property
    def standby_addr(self):
        return f"127.0.0.1:{self.standby_port}"

    @property
    def spec(self):
        return f"{self.mds_addr},{self.standby_addr}:/{self.fsname}"

    def oss_argv(self, j, fmt):
        argv = super().oss_argv(j, fmt)
        argv[argv.index("--mds") + 1] = f"{self.mds_addr},{self.standby_addr}"
        return argv

    def start_standby(self):
        argv = self.mds_argv(False)
        argv[argv.index("--listen") + 1] = self.standby_addr
        self.standby = Proc("mds-standby", argv + ["--standby"],
                            self.dir / "mds-standby.log").start()
        wait_for(lambda: "standby: waiting" in self.standby.text() or not self.standby.alive(),
                 10, "the standby MDS to wait for the MDT")
        assert self.standby.alive(), self.standby.text()
        self.extra.append(self.standby)


def serves(addr):
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def test_standby_takes_over_when_the_primary_dies(make_cluster):
    c = make_cluster(cls=FailoverCluster, osts=2, oss=2)
    m = c.mounts[0].path
    (m / "before").write_bytes(b"written to the primary")
    c.start_standby()
    time.sleep(0.5)
    assert not serves(c.standby_addr), "the standby serves while the primary holds the MDT"
    assert c.standby.alive()

    c.mds.kill(signal.SIGKILL)
    t0 = time.monotonic()
    wait_for(lambda: "nacre-mds: serving" in c.standby.text(), 10, "the standby to take over")
    # the mount goes on with no error: create, write, read
    data = os.urandom(300000)
    (m / "after").write_bytes(data)
    assert (m / "after").read_bytes() == data
    assert (m / "before").read_bytes() == b"written to the primary"
    os.mkdir(m / "dir")
    os.rename(m / "after", m / "dir" / "after")
    assert sorted(os.listdir(m)) == ["before", "dir"]
    print("the mount went on %.1f s after the primary died" % (time.monotonic() - t0))

    # every OSS registered again, with the standby
    def reregistered():
        return all(f"with MDS {c.standby_addr}" in p.text() for p in c.oss)
    wait_for(reregistered, 15, "the OSSes to register with the standby")
    c.wait_osts_up()
    log = c.standby.text()
    assert "standby: the MDT in" in log and "taking over" in log


def test_second_mds_without_standby_refuses(make_cluster):
    c = make_cluster(osts=1)
    mdt = str(c.dir / "mdt")
    argv = c.mds_argv(False)
    argv[argv.index("--listen") + 1] = f"127.0.0.1:{free_port()}"
    r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    assert r.returncode != 0
    assert mdt in r.stderr and "--standby" in r.stderr, r.stderr
    # the primary goes on serving
    (c.mounts[0].path / "still").write_bytes(b"ok")


def test_oss_takes_a_failover_list(make_cluster):
    """--mds "a,b": the OSS registers with whichever answers (here only the second)."""
    c = make_cluster(start=False, osts=1)
    c.start_mds(fmt=True)
    argv = c.oss_argv(0, True)
    argv[argv.index("--mds") + 1] = f"127.0.0.1:{free_port()},{c.mds_addr}"
    c.oss[0] = Proc("oss0", argv, c.dir / "oss0.log").start()
    wait_for(lambda: f"with MDS {c.mds_addr}" in c.oss[0].text(), 15,
             "the OSS to register with the second address")
    r = subprocess.run([binary("nacre-oss"), "--fsname", "x", "--mds", "a:1,", "--listen",
                        "127.0.0.1:1", "--key-file", str(c.key), "--ost", "0:/nonexistent"],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode != 0 and "--mds" in r.stderr, r.stderr


class OssPairCluster(Cluster):
    """OSS 0 registers a failover partner that is not started with the cluster."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.partner_port = free_port()

    def oss_argv(self, j, fmt):
        return super().oss_argv(j, fmt) + ["--failover", f"127.0.0.1:{self.partner_port}"]

    def start_partner(self):
        argv = Cluster.oss_argv(self, 0, False)
        argv[argv.index("--listen") + 1] = f"127.0.0.1:{self.partner_port}"
        p = Proc("oss0-standby", argv + ["--standby", "--failover",
                                         f"127.0.0.1:{self.oss_ports[0]}"],
                 self.dir / "oss0-standby.log").start()
        self.extra.append(p)
        return p


def test_oss_standby_takes_over_its_osts(make_cluster):
    """nacre-oss --standby on the same OST directory waits, then serves it when the primary
    dies; clients reach it at the partner address the OSTs were registered with."""
    c = make_cluster(cls=OssPairCluster, osts=1)
    m = c.mounts[0].path
    data = os.urandom(1 << 20)
    with open(m / "f", "wb") as f:
        f.write(data)
        os.fsync(f.fileno())
    reader = c.mount(name="reader").path  # nothing of f in its page cache
    assert os.path.getsize(reader / "f") == len(data)
    partner = f"127.0.0.1:{c.partner_port}"
    standby = c.start_partner()
    wait_for(lambda: "standby: waiting" in standby.text() or not standby.alive(), 10,
             "the standby OSS to wait for its OST")
    assert standby.alive() and not serves(partner)

    c.oss[0].kill(signal.SIGKILL)
    t0 = time.monotonic()
    wait_for(lambda: f"registered testfs-OST0000 at {partner}," in standby.text(), 10,
             "the standby to register the OST")
    assert (reader / "f").read_bytes() == data
    with open(m / "g", "wb") as f:
        f.write(b"after the OSS failover")
        os.fsync(f.fileno())
    assert (m / "g").read_bytes() == b"after the OSS failover"
    print("I/O went on %.1f s after the OSS died" % (time.monotonic() - t0))
