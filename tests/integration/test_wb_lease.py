"""Write-back leases on directories (docs/writeback.md, "Leases"): a mount with -o wb=on takes
the lease of each directory it makes and answers the lookups in it (the negative LOOKUP
before every create) without the MDS; another mount that looks at the directory has the
MDS recall the lease first, so it sees every name and what it makes is seen back; a holder
that does not answer the recall (SIGSTOP) is evicted after the callback timeout and the
others go on."""
import os
import signal
import subprocess
import time
import urllib.request

import pytest

from conftest import MetricsCluster, binary, finish, md_counts, start_cluster

N = 60
RECALL_S = 7  # WIRE_LEASE_RECALL_MS


@pytest.fixture(scope="module")
def lc():
    c = start_cluster(MetricsCluster, osts=2)  # mounts[0]: write-back off
    c.mount(opts=["wb=on"])                    # mounts[1]: on
    c.mount()                                  # mounts[2]: another client, off
    yield c
    finish(c)


def creates(top, n):
    """Makes top and n files in it (each create looks the name up first), returns the
    MDS's LOOKUP requests it took (with the other clients idle)."""
    os.mkdir(top)
    for i in range(n):
        with open(os.path.join(top, f"f{i:03d}"), "wb") as f:
            f.write(b"%d\n" % i)


def lookups_for(c, fn):
    before = md_counts(c).get("lookup", 0)
    fn()
    return md_counts(c).get("lookup", 0) - before


def test_lookups_in_a_directory_it_made_do_not_reach_the_mds(lc):
    off, on, _ = lc.mounts
    without = lookups_for(lc, lambda: creates(off / "plain", N))
    with_lease = lookups_for(lc, lambda: creates(on / "leased", N))
    # every create's negative lookup was a request without the lease; with it, none of
    # the names in the new directory was asked (its own name, in the root, still is)
    assert without >= N, without
    assert with_lease <= 3, (with_lease, without)
    for i in (0, N - 1):
        assert (on / "leased" / f"f{i:03d}").read_bytes() == b"%d\n" % i


def test_a_tree_it_makes_is_leased_with_one_request(lc):
    _, on, other = lc.mounts
    before = md_counts(lc)
    deep = on / "tree" / "a" / "b" / "c"
    os.makedirs(deep)
    for i in range(10):
        (deep / f"f{i}").write_bytes(b"x")
    after = md_counts(lc)
    # the top directory's GET; the ones made in it came leased with it
    assert after.get("lease", 0) - before.get("lease", 0) == 1, (before, after)
    # makedirs looks "tree" up in the root (not leased) four times; nothing below asks
    assert after.get("lookup", 0) - before.get("lookup", 0) <= 4, (before, after)
    # another mount walks in: the top's recall ends the ones under it too
    assert sorted(os.listdir(other / "tree" / "a" / "b" / "c")) == [f"f{i}" for i in range(10)]
    (other / "tree" / "a" / "b" / "c" / "new").write_bytes(b"y")
    assert (deep / "new").read_bytes() == b"y"


def test_another_mount_sees_every_name_and_is_seen_back(lc):
    _, on, other = lc.mounts
    d = on / "shared"
    creates(d, 20)
    t0 = time.monotonic()
    names = sorted(os.listdir(other / "shared"))  # the lease is recalled first
    assert names == [f"f{i:03d}" for i in range(20)]
    assert time.monotonic() - t0 < RECALL_S - 2, "the holder did not give the lease back"
    # what the other mount makes there is seen by the holder, whose lease is gone
    (other / "shared" / "from-other").write_bytes(b"hello")
    assert (d / "from-other").read_bytes() == b"hello"
    # and a later create in it by the holder asks the MDS: nothing answers from the past
    with pytest.raises(FileExistsError):
        os.open(d / "from-other", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    # a directory made after that is leased again, and a rename into it is known there
    os.mkdir(d / "sub")
    os.rename(d / "f000", d / "sub" / "moved")
    assert (other / "shared" / "sub" / "moved").read_bytes() == b"0\n"
    assert "f000" not in os.listdir(other / "shared")


def test_a_stopped_holder_is_evicted_and_the_others_go_on(lc):
    _, on, other = lc.mounts
    creates(on / "stopped", 3)
    pid = on.proc.p.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        names = sorted(os.listdir(other / "stopped"))
        waited = time.monotonic() - t0
    finally:
        os.kill(pid, signal.SIGCONT)
    assert names == ["f000", "f001", "f002"]
    # it waited for the recall's timeout, not for ever
    assert RECALL_S - 2 <= waited <= RECALL_S + 10, waited
    assert "did not give it back" in lc.mds.text()
    # the holder's lease is void on its side too: a name made meanwhile is seen
    (other / "stopped" / "late").write_bytes(b"late")
    deadline = time.monotonic() + 30
    while True:
        try:
            assert (on / "stopped" / "late").read_bytes() == b"late"
            break
        except OSError:
            # evicted: its first requests may fail while it makes a new session
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_the_mds_counts_its_leases(lc):
    with urllib.request.urlopen(f"http://127.0.0.1:{lc.mds_mport}/metrics", timeout=10) as r:
        text = r.read().decode()
    got = {}
    for ln in text.splitlines():
        if ln.startswith("nacre_mds_wb_lease_events_total{"):
            event = ln.split('event="')[1].split('"')[0]
            got[event] = float(ln.rsplit(" ", 1)[1])
    # leased: leased/, shared/, shared/sub, stopped/; recalled: shared/ and stopped/; the
    # stopped holder evicted
    assert got.get("granted", 0) >= 4, got
    assert got.get("recalled", 0) >= 2 and got.get("evicted", 0) >= 1, got
    assert got.get("returned", 0) >= 1, got


def test_wb_option_is_checked(lc):
    mnt = lc.dir / "badwb"
    mnt.mkdir()
    r = subprocess.run([binary("nacre-mount"), lc.spec, str(mnt), "-o",
                        f"key_file={lc.key},wb=maybe"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode != 0
    assert "wb=maybe" in r.stderr and "on" in r.stderr and "off" in r.stderr, r.stderr
