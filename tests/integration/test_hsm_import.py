"""HSM import round trips on every backend (posix, Azurite, s3rver): the archive-name rule
(an imported file archives back to the object it came from; a rename moves nothing), the
archive location recorded per file and checked by the copytool, re-import into a populated
tree (skip, --update), and the metadata styles the copytool writes (--meta-style).
The rule is in docs/CONTRACTS.md ("Archive names", "Archive locations")."""
import errno
import os
import re
import secrets

import pytest

from conftest import wait_for
from test_hsm import (ARCHIVED, DIRTY, EXISTS, RELEASED, drop_caches, hsm, mnt, nacre,  # noqa: F401
                      obj, servers, start_copytool, state, wait_state)

META = {"owner": "0", "group": "0", "permissions": "0644", "modtime": "2024-01-02T03:04:05Z"}


def keys(store, pre):
    return [k[len(pre) + 1:] for k in store.keys(pre)]


def archive(path, unwanted=DIRTY):
    nacre("hsm_archive", path)
    wait_state(path, EXISTS | ARCHIVED, unwanted)


def test_imported_file_archives_back_to_its_object(hsm, mnt):
    st = hsm.store
    pre = "imp-" + secrets.token_hex(3)
    st.put(f"{pre}/data/a.txt", b"original a", META)
    st.put(f"{pre}/data/b.txt", b"original b", META)
    ct = start_copytool(hsm, st.ct_args(pre), archive_id=3, name=f"ct-{pre}", bw=0)
    dest = mnt / pre
    dest.mkdir()
    nacre("hsm", "import", "--archive-id", 3, *st.ct_args(pre), dest)
    a, b = dest / "data/a.txt", dest / "data/b.txt"
    assert a.read_bytes() == b"original a"
    a.write_bytes(b"changed in nacre")
    archive(a)
    # written back over the object it came from: no imp-X/data/a.txt appeared
    assert st.read(f"{pre}/data/a.txt")[0] == b"changed in nacre"
    assert keys(st, pre) == ["data/a.txt", "data/b.txt"]
    # renamed (to another directory), then changed and archived: still its object
    moved = mnt / f"{pre}-moved.txt"
    os.rename(b, moved)
    assert moved.read_bytes() == b"original b"
    moved.write_bytes(b"b after the rename")
    archive(moved)
    assert st.read(f"{pre}/data/b.txt")[0] == b"b after the rename"
    assert keys(st, pre) == ["data/a.txt", "data/b.txt"]
    # release + restore after the rename reads those bytes back
    nacre("hsm_release", moved)
    drop_caches()
    assert moved.read_bytes() == b"b after the rename"
    ct.kill()


def test_native_file_keeps_its_name_through_renames(hsm, mnt):
    st = hsm.store
    name = f"nat-{secrets.token_hex(3)}"
    f = mnt / f"{name}.txt"
    f.write_bytes(b"version 1")
    archive(f)
    assert st.read(obj(hsm, f"{name}.txt"))[0] == b"version 1"
    g = mnt / f"{name}-renamed.txt"
    os.rename(f, g)
    g.write_bytes(b"version 2, renamed")
    archive(g)
    # the copy is replaced where it is; nothing is written under the new name
    assert st.read(obj(hsm, f"{name}.txt"))[0] == b"version 2, renamed"
    assert not st.exists(obj(hsm, f"{name}-renamed.txt"))
    # a new file at the old name does not take the renamed file's copy
    f.write_bytes(b"a new file")
    archive(f)
    fid = os.getxattr(f, "nacre.fid").decode().strip("[]")
    assert st.read(obj(hsm, f"{name}.txt.{fid}"))[0] == b"a new file"
    assert st.read(obj(hsm, f"{name}.txt"))[0] == b"version 2, renamed"
    for p, data in ((g, b"version 2, renamed"), (f, b"a new file")):
        nacre("hsm_release", p)
        drop_caches()
        assert p.read_bytes() == data
    # hsm_remove drops the name: the next archive uses the path it has now
    g.write_bytes(b"version 3")
    archive(g)
    nacre("hsm_remove", g)
    wait_for(lambda: not state(g)[0] & ARCHIVED, 30, "the remove")
    assert not st.exists(obj(hsm, f"{name}.txt"))
    archive(g)
    assert st.read(obj(hsm, f"{name}-renamed.txt"))[0] == b"version 3"


def test_import_from_another_location_fails_with_the_reason(hsm, mnt):
    st = hsm.store
    pre_a, pre_b = ("loc-" + secrets.token_hex(3) for _ in range(2))
    st.put(f"{pre_a}/x.bin", b"in A", META)
    ct = start_copytool(hsm, st.ct_args(pre_b), archive_id=4, name=f"ct-{pre_b}", bw=0)
    dest = mnt / pre_a
    dest.mkdir()
    nacre("hsm", "import", "--archive-id", 4, *st.ct_args(pre_a), dest)
    with pytest.raises(OSError) as e:
        (dest / "x.bin").read_bytes()
    assert e.value.errno == errno.EIO, e.value
    why = (f"x.bin was imported from {st.url(pre_a)}, this copytool serves {st.url(pre_b)}: "
           f"run a copytool for archive 4 there")
    lines = [l for l in nacre("hsm", "list", mnt).stdout.splitlines()
             if "action=RESTORE" in l and "archive#=4" in l]
    assert any("status=FAILED" in l and f"path=x.bin ({why})" in l for l in lines), lines
    wait_for(lambda: why in ct.text(), 10, "the copytool's log line")
    assert re.search(r"RESTORE \[0x[0-9a-f:x]+\] failed: Input/output error: " + re.escape(why),
                     ct.text()), ct.text()
    assert state(dest / "x.bin")[0] & RELEASED
    ct.kill()


def test_reimport_skips_and_updates(hsm, mnt):
    st = hsm.store
    pre = "re-" + secrets.token_hex(3)
    for n in "abd":
        st.put(f"{pre}/{n}", f"first {n}".encode(), META)
    ct = start_copytool(hsm, st.ct_args(pre), archive_id=5, name=f"ct-{pre}", bw=0)
    dest = mnt / pre
    dest.mkdir()
    args = ("hsm", "import", "--archive-id", 5, *st.ct_args(pre), dest)
    nacre(*args)
    r = nacre(*args)
    assert "import: imported 0, skipped 3 existing, updated 0, failed 0\n" in r.stderr, r.stderr
    assert (dest / "d").read_bytes() == b"first d"
    (dest / "d").write_bytes(b"changed in nacre")
    st.put(f"{pre}/a", b"a new, longer content",
           dict(META, modtime="2025-05-06T07:08:09.5Z"))
    st.put(f"{pre}/b", b"first b", dict(META, permissions="0600", owner="1234"))
    st.put(f"{pre}/c", b"new c", META)
    st.put(f"{pre}/d", b"d changed in the archive", META)
    r = nacre(*args, "--update")
    assert ("import: imported 1, skipped 1 existing, updated 2, failed 0, "
            "kept 1 changed in nacre\n") in r.stderr, r.stderr
    assert f"kept {dest}/d: its object changed but the file was modified in nacre" in r.stderr
    sa, sb = os.stat(dest / "a"), os.stat(dest / "b")
    assert sa.st_size == 21 and sa.st_mtime_ns == 1746515289500000000
    assert (sb.st_mode & 0o7777, sb.st_uid) == (0o600, 1234)
    assert state(dest / "a")[0] & RELEASED and state(dest / "b")[0] & RELEASED
    assert (dest / "a").read_bytes() == b"a new, longer content"
    assert (dest / "c").read_bytes() == b"new c"
    assert (dest / "d").read_bytes() == b"changed in nacre"
    # the replaced stub of a still archives to its object
    (dest / "a").write_bytes(b"a from nacre")
    archive(dest / "a")
    assert st.read(f"{pre}/a")[0] == b"a from nacre"
    assert keys(st, pre) == ["a", "b", "c", "d"]
    ct.kill()


STYLE_MODTIME = {
    "amlfs": r"2023-11-14 22:13:20\.123456789 \+0000",
    "rfc3339": r"2023-11-14T22:13:20\.123456789Z",
    "azcopy": r"1700000000123456789",
}


@pytest.mark.parametrize("style", ["amlfs", "rfc3339", "azcopy"])
def test_meta_style_round_trip(hsm, mnt, style):
    st = hsm.store
    pre = f"ms-{style}-" + secrets.token_hex(3)
    aid = {"amlfs": 6, "rfc3339": 7, "azcopy": 8}[style]
    ct = start_copytool(hsm, [*st.ct_args(pre), "--meta-style", style], archive_id=aid,
                        name=f"ct-{pre}", bw=0)
    src = mnt / pre
    src.mkdir()
    f = src / "f.bin"
    f.write_bytes(b"styled")
    os.chown(f, 1234, 567)
    os.chmod(f, 0o640)
    os.utime(f, ns=(1700000000123456789, 1700000000123456789))
    nacre("hsm_archive", "--archive", aid, f)
    wait_state(f, EXISTS | ARCHIVED, DIRTY)
    _, meta = st.read(f"{pre}/{pre}/f.bin")
    assert re.fullmatch(STYLE_MODTIME[style], meta["modtime"]), meta
    if style == "azcopy":
        assert (meta["posix_owner"], meta["posix_group"], meta["permissions"]) == \
            ("1234", "567", str(0o100640)), meta
    else:
        assert (meta["owner"], meta["group"], meta["permissions"]) == ("1234", "567", "0640")
    dest = mnt / f"{pre}-back"
    dest.mkdir()
    nacre("hsm", "import", "--archive-id", aid, *st.ct_args(pre), dest)
    a, b = os.stat(f), os.stat(dest / pre / "f.bin")
    for k in ("st_size", "st_uid", "st_gid", "st_mode", "st_mtime_ns"):
        assert getattr(a, k) == getattr(b, k), k
    assert (dest / pre / "f.bin").read_bytes() == b"styled"
    ct.kill()
