"""Listings with attributes (READDIRPLUS): a mount answers the kernel's READDIRPLUS from
READDIR pages that carry each entry's attributes, so `ls -l` of a directory costs a few MDS
requests, not a LOOKUP or GETATTR per entry; the attributes are those a stat gives, on
another mount too; a caller who may read a directory but not search it gets names only."""
import errno
import os
import re
import stat
import subprocess

import pytest

from conftest import MetricsCluster, as_user, finish, md_counts, start_cluster

N = 300


@pytest.fixture(scope="module")
def rc():
    c = start_cluster(MetricsCluster, osts=2)  # mounts[0] writes the tree
    c.mount()  # mounts[1] lists it with nothing cached
    yield c
    finish(c)


def make_tree(top):
    os.makedirs(top)
    for i in range(N):
        p = os.path.join(top, f"f{i:03d}")
        with open(p, "wb") as f:
            f.write(b"x" * (i * 37))
        os.chmod(p, 0o600 + (i % 64))
    os.mkdir(os.path.join(top, "sub"))
    os.symlink("f001", os.path.join(top, "link"))


def listing(path):
    """name -> (mode, size, uid, nlink, mtime) through os.scandir + stat (as ls -l)."""
    out = {}
    with os.scandir(path) as it:
        for e in it:
            st = e.stat(follow_symlinks=False)
            out[e.name] = (st.st_mode, st.st_size, st.st_uid, st.st_nlink, st.st_mtime_ns)
    return out


def test_ls_l_needs_no_request_per_entry(rc):
    a, b = rc.mounts
    make_tree(os.path.join(a, "t"))
    want = listing(os.path.join(a, "t"))
    before = md_counts(rc)
    got = listing(os.path.join(b, "t"))
    after = md_counts(rc)
    assert got == want
    assert len(got) == N + 2
    per_entry = sum(after.get(k, 0) - before.get(k, 0) for k in ("lookup", "getattr"))
    pages = after.get("readdir", 0) - before.get("readdir", 0)
    # a handful of requests for the directory itself, none per entry (N + 2 without)
    assert per_entry < 20, (per_entry, before, after)
    assert 1 <= pages <= 10, (pages, before, after)
    # ls -l agrees, and names what each entry is
    ls = subprocess.run(["ls", "-l", os.path.join(b, "t")], capture_output=True, text=True)
    assert ls.returncode == 0, ls.stderr
    assert re.search(r"^l.* link -> f001$", ls.stdout, re.M), ls.stdout
    assert re.search(r"^d.* sub$", ls.stdout, re.M), ls.stdout


def test_attributes_follow_changes_from_another_mount(rc):
    a, b = rc.mounts
    top = os.path.join(a, "chg")
    os.makedirs(top)
    with open(os.path.join(top, "x"), "wb") as f:
        f.write(b"1" * 10)
    assert listing(os.path.join(b, "chg"))["x"][1] == 10
    with open(os.path.join(top, "x"), "ab") as f:
        f.write(b"2" * 90)
    os.chmod(os.path.join(top, "x"), 0o640)
    # a new listing (a new open of the directory) reads the attributes again
    st = listing(os.path.join(b, "chg"))["x"]
    assert st[1] == 100 and stat.S_IMODE(st[0]) == 0o640


def test_own_buffered_writes_show_in_a_listing(rc):
    b = rc.mounts[1]
    top = os.path.join(b, "own")
    os.makedirs(top)
    with open(os.path.join(top, "w"), "wb") as f:
        f.write(b"z" * 5000)
        f.flush()
        # still open: the size may be at this mount only, and the listing shows it
        assert listing(top)["w"][1] == 5000


def test_names_only_without_search_permission(rc):
    a, b = rc.mounts
    top = os.path.join(a, "noexec")
    os.makedirs(top)
    for i in range(3):
        open(os.path.join(top, f"n{i}"), "w").close()
    os.chmod(top, 0o744)  # others may read it, not search it
    path = os.path.join(b, "noexec")

    def list_names():
        if sorted(os.listdir(path)) != ["n0", "n1", "n2"]:
            raise AssertionError("names differ")
    assert as_user(list_names) == 0
    assert as_user(lambda: os.stat(os.path.join(path, "n0"))) == errno.EACCES
