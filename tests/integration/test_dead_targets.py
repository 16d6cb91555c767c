"""An OST whose server is gone or does not answer: inactive at once in df and check servers,
and left out of new files, so creates and writes never wait on it (Lustre's OSP marks such
an OST inactive)."""
import signal
import subprocess
import time

import pytest

from conftest import Cluster, binary, finish, start_cluster, wait_for


@pytest.fixture
def dc():
    c = start_cluster(Cluster, osts=2, oss=2)
    yield c
    for p in c.oss:
        if p is not None and p.alive():
            p.p.send_signal(signal.SIGCONT)
    finish(c)


def nacre(*args):
    return subprocess.run([binary("nacre"), *map(str, args)], capture_output=True, text=True,
                          timeout=60)


def osts_of(path):
    r = nacre("getstripe", "-y", path)
    assert r.returncode == 0, r.stderr
    return sorted(int(ln.split()[-1]) for ln in r.stdout.splitlines()
                  if ln.strip().startswith("- l_ost_idx:"))


def make_files(m, n, tag):
    """n files striped over every active OST, written; the seconds it took."""
    t0 = time.monotonic()
    for i in range(n):
        p = m.path / f"{tag}{i}"
        assert nacre("setstripe", "-c", "-1", p).returncode == 0
        p.write_bytes(b"d" * (3 << 20))
    return time.monotonic() - t0


def df_line(c, ost):
    r = nacre("df", c.mounts[0].path)
    return [ln for ln in r.stdout.splitlines() if f"OST{ost:04x}" in ln or
            f"OST:{ost}" in ln]


def test_a_killed_oss_is_inactive_at_once_and_left_out(dc):
    m = dc.mounts[0]
    assert make_files(m, 2, "before") < 20
    assert osts_of(m.path / "before0") == [0, 1]
    dc.oss[1].kill()  # SIGKILL: its connection to the MDS closes
    t0 = time.monotonic()
    wait_for(lambda: dc.targets().get(("OST", 1)) is False, 10, "OST1 inactive")
    assert time.monotonic() - t0 < 1.5, "not at once"
    assert "inactive" in " ".join(df_line(dc, 1)), nacre("df", m.path).stdout
    r = nacre("check", "osts", m.path)
    assert r.returncode == 1 and "OST0001-osc" in r.stdout and "inactive" in r.stdout
    took = make_files(m, 5, "after")
    assert took < 10, took  # nothing waits on the dead OST
    for i in range(5):
        assert osts_of(m.path / f"after{i}") == [0]
    assert "is down: its server's connection closed" in dc.mds.text()


def test_an_oss_that_does_not_answer_is_left_out_until_it_does(dc):
    m = dc.mounts[0]
    dc.oss[1].p.send_signal(signal.SIGSTOP)  # registered, connected, silent
    t0 = time.monotonic()
    wait_for(lambda: dc.targets().get(("OST", 1)) is False, 10, "OST1 inactive")
    assert time.monotonic() - t0 < 4.5, time.monotonic() - t0  # a probe, not the 6 s miss
    took = make_files(m, 4, "quiet")
    assert took < 10, took
    for i in range(4):
        assert osts_of(m.path / f"quiet{i}") == [0]
    assert "does not answer the MDS: inactive" in dc.mds.text()
    dc.oss[1].p.send_signal(signal.SIGCONT)
    wait_for(lambda: dc.targets().get(("OST", 1)) is True, 15, "OST1 active again")
    make_files(m, 1, "back")
    assert osts_of(m.path / "back0") == [0, 1]
    assert "answers the MDS again" in dc.mds.text()
