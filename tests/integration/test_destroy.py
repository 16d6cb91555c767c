"""Object destruction after unlink: the MDS's destroy log sends each OST one
OST_DESTROY_BATCH for many files' objects; every OST ends up empty, objects on a down OSS are
destroyed once it returns, and an OSS that predates the batch (NACRE_OSS_NO_DESTROY_BATCH=1)
gets one OST_DESTROY per object."""
import os
import re
import signal
import urllib.request

import pytest

from conftest import Cluster, free_port, wait_for

STRIPE = 65536


class ScrapedCluster(Cluster):
    """OSSes serve metrics, so a test can count the requests each opcode got."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.mports = [free_port() for _ in range(self.noss)]

    def oss_argv(self, j, fmt):
        return super().oss_argv(j, fmt) + ["--metrics-addr", f"127.0.0.1:{self.mports[j]}"]

    def requests(self, op):
        """OST requests of opcode op (its name) the OSSes have handled, summed."""
        n = 0.0
        pat = re.compile(r'^nacre_rpc_server_requests_total\{[^}]*op="%s"[^}]*\}\s+(\S+)$' % op)
        for port in self.mports:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                for line in r.read().decode().splitlines():
                    m = pat.match(line)
                    if m:
                        n += float(m.group(1))
        return int(n)


@pytest.fixture
def scluster(make_cluster):
    return lambda **kw: make_cluster(cls=ScrapedCluster, **kw)


def objects(c, ost):
    return sum(len(files) for _, _, files in os.walk(c.ost_dir(ost) / "O"))


def wait_empty(c, osts, timeout, what):
    """Waits until OSTs osts hold no objects; what names them in the failure message."""
    wait_for(lambda: all(objects(c, o) == 0 for o in osts), timeout, what, interval=0.2)


def make_files(c, nacre_cli, n, name="d"):
    """n files in a directory striped over 4 OSTs, each with one byte in every stripe (so
    every file has an object on each OST)."""
    d = c.mounts[0].path / name
    os.mkdir(d)
    nacre_cli("setstripe", "-c", 4, "-S", "64K", d, check=True)
    paths = []
    for i in range(n):
        p = d / f"f{i:04d}"
        fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            for s in range(4):
                os.pwrite(fd, b"x", s * STRIPE)
        finally:
            os.close(fd)
        paths.append(p)
    wait_for(lambda: all(objects(c, o) == n for o in range(4)), 30,
             f"{n} objects on each of the 4 OSTs")
    return paths


def test_unlink_many_striped_files_empties_every_ost(scluster, nacre_cli):
    c = scluster(osts=4, oss=2)
    n = 300
    paths = make_files(c, nacre_cli, n)
    for p in paths:
        os.unlink(p)
    wait_empty(c, range(4), 60, "every OST's object directory to be empty")
    # Batched: none one by one, and fewer requests than objects (how many fewer depends on
    # how fast the unlinks came: a pass starts 20 ms after the first; on a quiet machine a
    # few dozen requests carry all 1200 objects).
    batches = c.requests("OST_DESTROY_BATCH")
    assert 4 <= batches < 4 * n, f"{batches} OST_DESTROY_BATCH for {4 * n} objects"
    assert c.requests("OST_DESTROY") == 0
    assert "not destroyed" not in c.mds.text()


def test_unlink_while_oss_down_destroys_rest_then_its_objects(scluster, nacre_cli):
    c = scluster(osts=4, oss=2)  # OSS 0 serves OSTs 0 and 2, OSS 1 serves 1 and 3
    n = 60
    paths = make_files(c, nacre_cli, n)
    down = [o for o in range(4) if c.oss_of(o) == 1]
    live = [o for o in range(4) if c.oss_of(o) == 0]
    c.oss[1].kill(signal.SIGKILL)
    for o in down:
        c.wait_ost_down(o)
    for p in paths:
        os.unlink(p)
    wait_empty(c, live, 30, f"the objects of OSTs {live} (up) to be destroyed")
    assert all(objects(c, o) == n for o in down), "objects of a down OSS went away"
    c.start_oss(1, fmt=False)
    c.wait_osts_up()
    # the destroy log retries every 3 s
    wait_empty(c, down, 30,
               f"the objects of OSTs {down} to be destroyed after their OSS came back")


def test_old_oss_gets_one_destroy_per_object(scluster, nacre_cli, monkeypatch):
    monkeypatch.setenv("NACRE_OSS_NO_DESTROY_BATCH", "1")
    c = scluster(osts=4, oss=2)
    n = 50
    paths = make_files(c, nacre_cli, n)
    for p in paths:
        os.unlink(p)
    wait_empty(c, range(4), 60, "every OST's object directory to be empty")
    assert c.requests("OST_DESTROY") >= 4 * n
    assert "predates OST_DESTROY_BATCH" in c.mds.text()
