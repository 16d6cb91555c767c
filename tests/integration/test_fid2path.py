"""fid2path and path2fid as Lustre 2.15's lfs: every hard link in link order, --link N,
-f/-c, the FSNAME form relative to the root, path2fid --parents, errors and exit codes."""
import errno
import os

import pytest

from conftest import finish, start_cluster

FSNAME = "f2p%d" % (os.getpid() % 10000)  # its own name: FSNAME lookups see every mount


@pytest.fixture(scope="module")
def fs():
    c = start_cluster(osts=2, oss=1, fsname=FSNAME)
    yield c
    finish(c)


def fid_of(nacre_cli, path):
    return nacre_cli("path2fid", path, check=True).stdout.strip()


def lines(r):
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_links_in_order_options_and_rename(fs, nacre_cli):
    mnt = str(fs.mounts[0].path)
    top = os.path.join(mnt, "links")
    for d in ("a", "b", "c"):
        os.makedirs(os.path.join(top, d))
    f = os.path.join(top, "a", "f")
    with open(f, "wb") as fh:
        fh.write(b"x")
    os.link(f, os.path.join(top, "b", "g"))
    os.link(f, os.path.join(top, "c", "h"))
    fid = fid_of(nacre_cli, f)
    bare = fid.strip("[]")
    paths = ["links/a/f", "links/b/g", "links/c/h"]

    # every link, in the order they were made; MOUNT form: the mount point, then the path
    assert lines(nacre_cli("fid2path", mnt, fid)) == [f"{mnt}/{p}" for p in paths]
    # FSNAME form: relative to the root, as lfs prints it
    assert lines(nacre_cli("fid2path", FSNAME, bare)) == paths
    # --link N picks one; an N past the last gives the first, as lfs's MDT does
    assert lines(nacre_cli("fid2path", "--link", 1, FSNAME, fid)) == ["links/b/g"]
    assert lines(nacre_cli("fid2path", "-l", "2", mnt, fid)) == [f"{mnt}/links/c/h"]
    assert lines(nacre_cli("fid2path", "-l", "7", FSNAME, fid)) == ["links/a/f"]
    # -f prefixes the FID as given, -c the link number lfs reports (the next one's)
    assert lines(nacre_cli("fid2path", "-f", FSNAME, bare)) == [f"{bare} {p}" for p in paths]
    assert lines(nacre_cli("fid2path", "--print-link", FSNAME, fid)) == \
        ["1 links/a/f", "2 links/b/g", "2 links/c/h"]
    assert lines(nacre_cli("fid2path", "-f", "-c", "--link", "0", mnt, fid)) == \
        [f"{fid} 1 {mnt}/links/a/f"]
    # several FIDs: each FID's links in turn
    d = fid_of(nacre_cli, os.path.join(top, "b"))
    assert lines(nacre_cli("fid2path", FSNAME, d, fid)) == ["links/b"] + paths

    # path2fid --parents: [parent]/name per link, tab-separated; PATH: with several paths
    pa, pb, pc = (fid_of(nacre_cli, os.path.join(top, x)) for x in "abc")
    want = f"{pa}/f\t{pb}/g\t{pc}/h"
    assert lines(nacre_cli("path2fid", "--parents", f)) == [want]
    assert lines(nacre_cli("path2fid", "-p", f, os.path.join(top, "b"))) == \
        [f"{f}: {want}", f"{os.path.join(top, 'b')}: {fid_of(nacre_cli, top)}/b"]

    # a renamed link moves last, as in Lustre's link EA; an unlinked one goes
    os.rename(f, os.path.join(top, "c", "f2"))
    assert lines(nacre_cli("fid2path", FSNAME, fid)) == \
        ["links/b/g", "links/c/h", "links/c/f2"]
    assert lines(nacre_cli("fid2path", "--link", 2, FSNAME, fid)) == ["links/c/f2"]
    os.unlink(os.path.join(top, "b", "g"))
    assert lines(nacre_cli("fid2path", "-c", FSNAME, fid)) == ["1 links/c/h", "1 links/c/f2"]
    assert lines(nacre_cli("path2fid", "-p", os.path.join(top, "c", "h"))) == \
        [f"{pc}/h\t{pc}/f2"]


def test_root_and_errors(fs, nacre_cli):
    mnt = str(fs.mounts[0].path)
    root = fid_of(nacre_cli, mnt)
    assert root == "[0x200000007:0x1:0x0]"
    # lfs's quirks for the root: "/" by FSNAME, MOUNT// by mount point
    assert lines(nacre_cli("fid2path", FSNAME, root)) == ["/"]
    assert lines(nacre_cli("fid2path", mnt, root)) == [f"{mnt}//"]
    # a FID that does not exist: lfs's message, the errno as exit code; the others print
    f = os.path.join(mnt, "known")
    open(f, "wb").close()
    r = nacre_cli("fid2path", mnt, "[0x200000400:0xfffffff:0x0]", fid_of(nacre_cli, f))
    assert r.returncode == errno.ENOENT
    assert r.stderr == (f"nacre fid2path: cannot find {mnt} [0x200000400:0xfffffff:0x0]: "
                        "No such file or directory\n")
    assert r.stdout == f"{f}\n"
    r = nacre_cli("fid2path", FSNAME, "junk")
    assert r.returncode == errno.EINVAL and "invalid FID 'junk'" in r.stderr
    r = nacre_cli("fid2path", "nosuchfs", root)
    assert r.returncode == errno.ENODEV
    assert r.stderr.startswith("nacre fid2path: cannot resolve mount point for 'nosuchfs'")
    # a symbolic link: path2fid names the link itself, not its target (lfs: O_NOFOLLOW);
    # --parents refuses it as lfs's open with O_NOFOLLOW does
    ln = os.path.join(mnt, "sym")
    os.symlink("known", ln)
    lfid = fid_of(nacre_cli, ln)
    assert lfid != fid_of(nacre_cli, f)
    assert lines(nacre_cli("fid2path", FSNAME, lfid)) == ["sym"]
    r = nacre_cli("path2fid", "-p", ln)
    assert r.returncode == errno.ELOOP
    assert r.stderr == (f"nacre path2fid: cannot get parent fid for '{ln}': "
                        "Too many levels of symbolic links\n")
    r = nacre_cli("path2fid", "/tmp")
    assert r.returncode == errno.ENOTTY and "not on a nacre file system" in r.stderr
    r = nacre_cli("path2fid", "-p", mnt)  # the root has no parent
    assert r.returncode == errno.ENOENT
    assert r.stderr == (f"nacre path2fid: cannot get parent fid for '{mnt}': "
                        "No such file or directory\n")


def test_links_hidden_without_search_permission(fs, nacre_cli):
    """A user sees the links whose directories it may search, as fid2path shows a path only
    to someone who could have walked it."""
    mnt = str(fs.mounts[0].path)
    top = os.path.join(mnt, "perm")
    os.makedirs(os.path.join(top, "shut"))
    os.makedirs(os.path.join(top, "open"))
    os.chmod(os.path.join(top, "shut"), 0o700)
    f = os.path.join(top, "shut", "f")
    open(f, "wb").close()
    os.link(f, os.path.join(top, "open", "g"))
    fid = fid_of(nacre_cli, f)
    nobody = dict(user=65534, group=65534, extra_groups=[])
    assert lines(nacre_cli("fid2path", FSNAME, fid)) == ["perm/shut/f", "perm/open/g"]
    assert lines(nacre_cli("fid2path", FSNAME, fid, **nobody)) == ["perm/open/g"]
    assert lines(nacre_cli("path2fid", "-p", os.path.join(top, "open", "g"), **nobody)) == \
        [f"{fid_of(nacre_cli, os.path.join(top, 'open'))}/g"]
    os.unlink(os.path.join(top, "open", "g"))
    r = nacre_cli("fid2path", FSNAME, fid, **nobody)
    assert r.returncode == errno.EACCES and "Permission denied" in r.stderr
