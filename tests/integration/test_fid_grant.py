"""FID grants (docs/writeback.md, "FIDs chosen by the client"): each mount names its new
inodes from sequences the MDS granted to it alone, asks for the next before one runs out,
keeps them across an MDS restart (kill -9, with creates in flight replayed), and never gets
a FID anyone else had. The MDS grants 16 FIDs at a time here, so a few dozen creates cross
several grants."""
import os
import threading

import pytest

from conftest import binary, finish, start_cluster

WIDTH = 16


def fid_of(path):
    """(seq, oid) of path, from its nacre.fid xattr "[0x...:0x...:0x0]"."""
    text = os.getxattr(path, "nacre.fid").decode().strip("[]\x00")
    seq, oid, ver = (int(x, 16) for x in text.split(":"))
    assert ver == 0, text
    return seq, oid


@pytest.fixture(scope="module")
def gc():
    c = start_cluster(osts=2, mds_args=["--fid-grant-width", str(WIDTH),
                                        "--recovery-window", "30"])
    c.mount()  # a second mount, with grants of its own
    yield c
    finish(c)


def make_files(dirpath, n, prefix="f"):
    os.makedirs(dirpath, exist_ok=True)
    fids = {}
    for i in range(n):
        p = os.path.join(dirpath, f"{prefix}{i}")
        with open(p, "wb") as f:
            f.write(f"{p}\n".encode() * 100)
        fids[p] = fid_of(p)
    return fids


def test_each_mount_names_its_inodes_from_its_own_grants(gc):
    a, b = gc.mounts
    fa = make_files(a / "ga", 40)
    fb = make_files(b / "gb", 40)
    # every FID distinct, across both mounts
    assert len(set(fa.values()) | set(fb.values())) == 80
    seqs_a = {s for s, _ in fa.values()}
    seqs_b = {s for s, _ in fb.values()}
    assert not seqs_a & seqs_b, (seqs_a, seqs_b)
    # 40 creates (and the directory) cross grants of 16: at least three sequences each,
    # every oid within its grant
    assert len(seqs_a) >= 3 and len(seqs_b) >= 3, (seqs_a, seqs_b)
    assert all(1 <= o <= WIDTH for _, o in list(fa.values()) + list(fb.values()))
    # the directory, made by the same mount, is in one of its sequences too
    assert fid_of(a / "ga")[0] in seqs_a
    # data written to objects named by those FIDs reads back through the other mount
    for p in list(fa)[:5]:
        other = os.path.join(b, os.path.relpath(p, a))
        with open(other, "rb") as f:
            assert f.read() == f"{p}\n".encode() * 100
        assert fid_of(other) == fa[p]


def test_tunable_off_lets_the_mds_choose(gc):
    a = gc.mounts[0]
    before = make_files(a / "t-on", 2, "before")
    seqs = {s for s, _ in before.values()}
    r = os.system(f"{binary('nacre')} set_param -n --mount {a.path} llite.*.fid_grant=0")
    assert r == 0
    try:
        off = make_files(a / "t-on", 3, "off")
        assert not {s for s, _ in off.values()} & seqs
    finally:
        assert os.system(f"{binary('nacre')} set_param -n --mount {a.path} "
                         "llite.*.fid_grant=1") == 0
    after = make_files(a / "t-on", 1, "after")
    (s, o), = after.values()
    prev = max(before.values())
    assert s >= prev[0] and (s, o) > prev  # its grant again, where it left off


def test_grants_survive_an_mds_kill_with_creates_in_flight(gc):
    a, b = gc.mounts
    seen = set()
    for m in (a, b):
        for root, dirs, files in os.walk(m.path):
            for name in dirs + files:
                seen.add(fid_of(os.path.join(root, name)))
    errors, made = [], {}

    def creator(m, tag):
        try:
            made.update(make_files(m / f"k-{tag}", 60))
        except OSError as e:
            errors.append(e)

    threads = [threading.Thread(target=creator, args=(m, t)) for m, t in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    gc.mds.kill()  # kill -9 while both mounts create: they replay to the next MDS
    gc.start_mds(fmt=False)
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert len(made) == 120
    # every file there, with the FID its creator was told, none reused
    for p, fid in made.items():
        assert fid_of(p) == fid
    assert len(set(made.values())) == 120
    assert not set(made.values()) & seen
    # after the restart new grants continue past every FID handed out before
    newest = make_files(b / "k-after", WIDTH + 1)
    assert not set(newest.values()) & (seen | set(made.values()))
    assert max(s for s, _ in newest.values()) > max(s for s, _ in made.values())
