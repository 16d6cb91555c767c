"""On-disk compatibility: the build under test starts on a file system an older build made
(tests/data/, scripts/make-compat-image; docs/ondisk.md, "Compatibility image") on other
ports, and every byte, mode, owner, layout, xattr, ACL, project, HSM state, quota report and
changelog record reads back as the manifest the older build wrote says; a released file
restores from the image's archive; new files are written beside the old ones."""
import hashlib
import json
import os
import tarfile
from pathlib import Path

import pytest

import compat_image as ci
from conftest import REPO, wait_for

# NACRE_COMPAT_IMAGE: another image (one just made with scripts/make-compat-image)
IMAGE = Path(os.environ.get("NACRE_COMPAT_IMAGE") or
             REPO / "tests/data/compat-mdt1-ost1-143d3f1.tar.gz")


def compare(want, got, what):
    """Asserts got matches want, naming every path and field that differs. Fields the
    image's manifest lacks (describe() learnt them later) are not compared."""
    diffs = []
    for p in sorted(set(want["paths"]) | set(got["paths"])):
        w, g = want["paths"].get(p), got["paths"].get(p)
        if w is None or g is None:
            diffs.append(f"{p}: {'only now' if w is None else 'missing now'}")
            continue
        for k in sorted(w):
            if w[k] != g.get(k):
                diffs.append(f"{p} {k}: image {w[k]!r}, now {g.get(k)!r}")
    for k in sorted(set(want) & set(got) - {"paths"}):
        if want[k] != got[k]:
            diffs.append(f"{k}: image\n{want[k]}now\n{got[k]}")
    assert not diffs, f"{what}:\n" + "\n".join(diffs)


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_older_image_reads_back(make_cluster, nacre_cli):
    if not IMAGE.exists():
        pytest.fail(f"{IMAGE} is missing: make it with scripts/make-compat-image")
    c = make_cluster(start=False, osts=2, oss=2, fsname=ci.FSNAME)
    with tarfile.open(IMAGE) as tar:  # mdt/ ost0/ ost1/ archive/ cluster.key manifest.json
        tar.extractall(c.dir)
    want = json.loads((c.dir / "manifest.json").read_text())
    archive = c.dir / "archive"
    old_root = want["archive_root"]  # where the copies were made: recorded on the files

    # no --format: the daemons open what is there, on ports the image never saw. The MDS
    # hands out the OST addresses it recorded until each OSS registered its new one: mount
    # after that (a client given the image's dead address waits for it to come back)
    c.start_mds(fmt=False)
    for j in range(c.noss):
        c.start_oss(j, fmt=False)
    moved = [f"{ci.FSNAME}-OST{i:04x} is up at 127.0.0.1:{c.oss_ports[c.oss_of(i)]}"
             for i in range(c.nosts)]
    wait_for(lambda: all(line in c.mds.text() for line in moved), 20,
             "the OSSes to register their new addresses")
    m = c.mount(name="mnt")
    c.wait_osts_up()
    mnt = m.path

    released_sum = want["paths"][ci.RELEASED].pop("sha256")
    got = ci.describe(c, mnt, old_root, skip_read={ci.RELEASED})
    compare(want, got, f"the image of {want['build']} reads back differently")

    # the archive moved with the image: point the two files at its new place (the
    # documented location check refuses a copytool of another one), then read the released
    # file through a restore on both OSTs
    for p in (ci.ARCHIVED, ci.RELEASED):
        os.setxattr(mnt / p, "trusted.nacre.hsm_origin", f"posix:{archive}".encode())
    ci.start_copytool(c, archive)
    assert sha256(mnt / ci.RELEASED) == released_sum
    ci.wait_hsm(mnt, ci.RELEASED, ci.ARCHIVED_BIT)
    assert ci.hsm_bits(mnt, ci.RELEASED) & ci.RELEASED_BIT == 0
    layout = nacre_cli("getstripe", "-c", "-S", "-L", mnt / ci.RELEASED, check=True).stdout
    assert layout.split()[1::2] == ["2", "65536", "raid0"], layout

    # new files beside the old ones: a striped one, one of the quota user's, a directory
    os.mkdir(mnt / "new")
    nacre_cli("setstripe", "-c", 2, "-S", "64K", mnt / "new/striped.bin", check=True)
    fresh = ci.pattern(333_333, 99)
    (mnt / "new/striped.bin").write_bytes(fresh)
    with open(mnt / "hello.txt", "ab") as f:
        f.write(b"and a newer one\n")
    assert ci.as_user(lambda: (mnt / "user/f2").write_bytes(b"x" * 8192),
                      uid=ci.USER, gid=ci.USER) == 0
    assert (mnt / "new/striped.bin").read_bytes() == fresh
    assert (mnt / "dir/hardlink").read_bytes() == b"hello, older build\nand a newer one\n"
    files = ci.nacre("quota", "-u", ci.USER, mnt).stdout.splitlines()[-1].split()[4]
    assert files == "4", files  # the image's 3 inodes of the user, and f2
    for p, e in want["paths"].items():
        if "sha256" in e and p not in ("hello.txt", "dir/hardlink"):
            assert sha256(mnt / p) == e["sha256"], f"{p} changed after new writes"
    assert sha256(mnt / ci.RELEASED) == released_sum
