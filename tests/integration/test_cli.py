"""The nacre CLI: output shapes match lfs; up/down manage a whole cluster."""
import os
import re
import signal
import socket
import subprocess
import tempfile
import time

from conftest import mounted_dirs, wait_for

FILE_HEAD = re.compile(
    r"^(?P<path>.+)\n"
    r"lmm_stripe_count:  (?P<count>-?\d+)\n"
    r"lmm_stripe_size:   (?P<size>\d+)\n"
    r"lmm_pattern:       raid0\n"
    r"lmm_layout_gen:    (?P<gen>\d+)\n"
    r"lmm_stripe_offset: (?P<offset>\d+)\n"
    r"\tobdidx\t\t objid\t\t objid\t\t group\n"
    r"(?P<rows>(?:\t[ \d]{6}\t[ \d]{14}\t[ 0-9a-fx]{13}\t {13}0\n)+)"
    r"\n$")
LFS_HDR = "%-20s %11s %11s %11s %4s %s"  # lfs.c: UUF" "CSF" "CSF" "CSF" "RSF" %-s"
DIR_LINE = "stripe_count:  {c} stripe_size:   {s} pattern:       raid0 stripe_offset: {i}"


def rows(m):
    return [tuple(x.strip() for x in r.split("\t")[1:]) for r in m.group("rows").splitlines()]


def fid_oid(fid):
    return int(fid.strip("[]").split(":")[1], 16)


def test_getstripe_plain_file(mnt, nacre_cli):
    f = os.path.join(mnt, "cli-file")
    nacre_cli("setstripe", "-c", 2, "-S", "128K", f, check=True)
    out = nacre_cli("getstripe", f, check=True).stdout
    m = FILE_HEAD.match(out)
    assert m, f"getstripe output does not match lfs's format:\n{out!r}"
    assert m.group("path") == f and m.group("count") == "2" and m.group("size") == "131072"
    r = rows(m)
    assert len(r) == 2
    fid = nacre_cli("path2fid", f, check=True).stdout.strip()
    oid = fid_oid(fid)
    osts = [int(x[0]) for x in r]
    assert len(set(osts)) == 2 and all(0 <= o < 4 for o in osts)
    assert m.group("offset") == str(osts[0])
    for idx, objid, hexid, group in r:
        assert int(objid) == oid and int(hexid, 16) == oid and group == "0"
    # Bare values.
    assert nacre_cli("getstripe", "-c", f, check=True).stdout == "2\n\n"
    assert nacre_cli("getstripe", "-S", f, check=True).stdout == "131072\n\n"
    assert nacre_cli("getstripe", "-i", f, check=True).stdout == f"{osts[0]}\n\n"
    # -v adds the identity lines.
    v = nacre_cli("getstripe", "-v", f, check=True).stdout.splitlines()
    seq = fid.strip("[]").split(":")[0]
    assert v[1] == "lmm_magic:         0x0BD10BD0"
    assert v[2] == f"lmm_seq:           {seq}"
    assert v[3] == f"lmm_object_id:     {hex(oid)}"
    assert v[4] == f"lmm_fid:           {fid}"
    assert v[5] == "lmm_stripe_count:  2"
    # YAML.
    y = nacre_cli("getstripe", "-y", f, check=True).stdout.splitlines()
    assert y[:3] == ["lmm_stripe_count:  2", "lmm_stripe_size:   131072",
                     "lmm_pattern:       raid0"]
    assert y[5] == "lmm_objects:"
    assert y[6] == f"      - l_ost_idx: {osts[0]}"
    assert y[7] == f"        l_fid:     {fid.strip('[]')}"


def test_setstripe_sizes_and_errors(mnt, nacre_cli):
    f = os.path.join(mnt, "cli-size")
    nacre_cli("setstripe", "-S", "64", f, check=True)  # a bare value below 4096 is KiB
    assert nacre_cli("getstripe", "-S", f, check=True).stdout == "65536\n\n"
    r = nacre_cli("setstripe", "-S", "100K", os.path.join(mnt, "cli-bad"))
    assert r.returncode != 0 and "64K" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(mnt, "cli-bad"))
    r = nacre_cli("setstripe", "-c", "abc", os.path.join(mnt, "cli-bad"))
    assert r.returncode != 0 and "stripe count" in r.stderr, r.stderr
    # An existing empty file may get a layout; one with data may not.
    with open(f, "wb") as fh:
        fh.write(b"data")
    r = nacre_cli("setstripe", "-c", 2, f)
    assert r.returncode != 0
    assert f"cannot change the layout of {f}: it already has data (use a new file)" in r.stderr
    e = os.path.join(mnt, "cli-empty")
    open(e, "wb").close()
    nacre_cli("setstripe", "-c", 3, e, check=True)
    assert nacre_cli("getstripe", "-c", e, check=True).stdout == "3\n\n"
    # Not nacre.
    with tempfile.TemporaryDirectory() as d:
        r = nacre_cli("getstripe", d)
        assert r.returncode != 0 and f"{d} is not on a nacre file system" in r.stderr
        r = nacre_cli("setstripe", "-c", 1, os.path.join(d, "x"))
        assert r.returncode != 0 and "is not on a nacre file system" in r.stderr
    r = nacre_cli("getstripe", os.path.join(mnt, "does-not-exist"))
    assert r.returncode != 0 and "does-not-exist" in r.stderr


def test_directory_default(mnt, nacre_cli):
    """As lfs prints them: -d shows the directory alone, unnamed, then a blank line; a
    directory nobody gave a default shows the built-in one with lfs's unset pattern 0."""
    d = os.path.join(mnt, "cli-dir")
    os.mkdir(d)
    unset = "stripe_count:  1 stripe_size:   1048576 pattern:       0 stripe_offset: -1"
    out = nacre_cli("getstripe", "-d", d, check=True).stdout
    assert out == unset + "\n\n"
    nacre_cli("setstripe", "-c", 2, "-S", "256K", d, check=True)
    out = nacre_cli("getstripe", "-d", d, check=True).stdout
    assert out == DIR_LINE.format(c=2, s=262144, i=-1) + "\n\n"
    with open(os.path.join(d, "child"), "wb") as fh:
        fh.write(b"x")
    assert nacre_cli("getstripe", "-c", os.path.join(d, "child"), check=True).stdout == "2\n\n"
    assert nacre_cli("getstripe", "-S", os.path.join(d, "child"),
                     check=True).stdout == "262144\n\n"
    # A bare value of a directory is the directory's alone (lfs: depth 0).
    assert nacre_cli("getstripe", "-c", d, check=True).stdout == "2\n\n"
    assert nacre_cli("getstripe", "-S", d, check=True).stdout == "262144\n\n"
    # Without -d the directory is named and its entries follow.
    out = nacre_cli("getstripe", d, check=True).stdout
    assert out.startswith(f"{d}\n" + DIR_LINE.format(c=2, s=262144, i=-1) + "\n\n")
    assert f"{d}/child\nlmm_stripe_count:  2\n" in out
    # -r descends.
    os.mkdir(os.path.join(d, "sub"))
    with open(os.path.join(d, "sub", "deep"), "wb") as fh:
        fh.write(b"y")
    out = nacre_cli("getstripe", "-r", d, check=True).stdout
    assert f"{d}/sub/deep\nlmm_stripe_count:  2\n" in out
    # -d removes the default.
    nacre_cli("setstripe", "-d", d, check=True)
    out = nacre_cli("getstripe", "-d", d, check=True).stdout
    assert out == unset + "\n\n"
    # Several paths: each shown.
    out = nacre_cli("getstripe", "-d", d, os.path.join(d, "child"), check=True).stdout
    assert out.count("stripe_count:") == 2


def test_setstripe_index_checked_against_the_osts(mnt, nacre_cli):
    """lfs refuses a stripe index the file system has no OST for (EINVAL), on a new file,
    an empty file and a directory, with a message naming the index."""
    for path, mk in ((os.path.join(mnt, "idx-new"), None),
                     (os.path.join(mnt, "idx-empty"), "file"),
                     (os.path.join(mnt, "idx-dir"), "dir")):
        if mk == "file":
            open(path, "wb").close()
        elif mk == "dir":
            os.mkdir(path)
        r = nacre_cli("setstripe", "-i", 7, path)
        assert r.returncode != 0, r.stdout
        assert "stripe index 7 is not an OST of this file system" in r.stderr, r.stderr
        if mk is None:
            assert not os.path.exists(path), "a refused setstripe left its new file behind"
        if mk == "dir":
            assert nacre_cli("getstripe", "-i", path, check=True).stdout == "-1\n\n"
    # An index that exists is taken.
    f = os.path.join(mnt, "idx-ok")
    nacre_cli("setstripe", "-i", 3, "-c", 1, f, check=True)
    assert nacre_cli("getstripe", "-i", f, check=True).stdout == "3\n\n"


def test_setstripe_values_checked(mnt, nacre_cli):
    """Each setstripe value is checked with a message naming the limit, and nothing is
    created: a size that is not a multiple of 64K, one of 4G or more, a count outside
    -1..128, and a pool (nacre has none)."""
    cases = (
        (("-S", "100000"), "invalid stripe size '100000': it must be a multiple of 64K"),
        (("-S", "32K"), "invalid stripe size '32K': it must be a multiple of 64K"),
        (("-S", "8G"), "invalid stripe size '8G': it must be below 4G"),
        (("-c", "-2"), "invalid stripe count '-2': use -1 (every OST), 0 (the default) or 1..128"),
        (("-c", "129"), "invalid stripe count '129'"),
        (("-p", "flash"), "pool 'flash' does not exist on this file system"),
        (("--pool", "flash"), "pool 'flash' does not exist on this file system"),
    )
    for args, message in cases:
        path = os.path.join(mnt, "refused")
        r = nacre_cli("setstripe", *args, path)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert message in r.stderr, (args, r.stderr)
        assert not os.path.exists(path), f"setstripe {args} created its file"
    # A count above the number of OSTs is taken as "every OST" by the MDS, as Lustre does.
    f = os.path.join(mnt, "count-clamped")
    nacre_cli("setstripe", "-c", 10, f, check=True)
    assert nacre_cli("getstripe", "-c", f, check=True).stdout == "4\n\n"


def test_df(cluster, mnt, nacre_cli):
    out = nacre_cli("df", mnt, check=True).stdout
    lines = out.split("\n")
    assert lines[0] == "UUID                   1K-blocks        Used   Available Use% Mounted on"
    assert re.match(r"^testfs-MDT0000_UUID +\d+ +\d+ +\d+ +\d+% " + re.escape(str(mnt)) +
                    r"\[MDT:0\]$", lines[1]), lines[1]
    total = 0
    for i in range(4):
        m = re.match(r"^testfs-OST%04x_UUID +(\d+) +(\d+) +(\d+) +(\d+)%% %s\[OST:%d\]$"
                     % (i, re.escape(str(mnt)), i), lines[2 + i])
        assert m, lines[2 + i]
        total += int(m.group(1))
    assert lines[6] == ""
    m = re.match(r"^filesystem_summary: +(\d+) +(\d+) +(\d+) +(\d+)% " + re.escape(str(mnt)) +
                 "$", lines[7])
    assert m, lines[7]
    assert int(m.group(1)) == total
    # Columns are right-aligned to lfs's widths (UUF "%-20s", CDF "%11llu", RDF "%3d%%").
    assert re.match(r"^testfs-OST0000_UUID  [ \d]{11} [ \d]{11} [ \d]{11} [ \d]{3}% ", lines[2])
    h = nacre_cli("df", "-h", mnt, check=True).stdout.split("\n")
    assert h[0] == LFS_HDR % ("UUID", "bytes", "Used", "Available", "Use%", "Mounted on")
    assert re.match(r"^testfs-OST0000_UUID +[\d.]+[KMGTP]? +[\d.]+[KMGTP]? +[\d.]+[KMGTP]? ",
                    h[2]), h[2]
    i = nacre_cli("df", "-i", mnt, check=True).stdout.split("\n")
    assert i[0] == LFS_HDR % ("UUID", "Inodes", "IUsed", "IFree", "IUse%", "Mounted on")
    # Without a path: every nacre mount, this one included (a dead mount elsewhere on the
    # machine is reported on stderr and makes the exit status 1, so only the output counts).
    out = nacre_cli("df").stdout
    assert f"{mnt}[OST:0]" in out


def test_df_inactive_ost(make_cluster, nacre_cli):
    c = make_cluster(osts=2, oss=2)
    m = c.mounts[0].path
    c.oss[1].kill(signal.SIGKILL)
    c.wait_ost_down(1)
    out = nacre_cli("df", m, check=True).stdout
    assert "OST0001             : inactive device\n" in out, out
    assert "testfs-OST0000_UUID" in out
    # lfs osts / lfs mdts
    assert nacre_cli("osts", m, check=True).stdout == \
        "OBDS:\n0: testfs-OST0000_UUID ACTIVE\n1: testfs-OST0001_UUID INACTIVE\n"
    assert nacre_cli("mdts", m, check=True).stdout == "MDTS:\n0: testfs-MDT0000_UUID ACTIVE\n"


def test_path2fid_fid2path(mnt, nacre_cli):
    os.makedirs(os.path.join(mnt, "p2f", "a"), exist_ok=True)
    f = os.path.join(mnt, "p2f", "a", "file")
    open(f, "wb").close()
    fid = nacre_cli("path2fid", f, check=True).stdout.strip()
    assert re.match(r"^\[0x[0-9a-f]+:0x[0-9a-f]+:0x[0-9a-f]+\]$", fid), fid
    out = nacre_cli("path2fid", f, mnt, check=True).stdout.splitlines()
    assert out[0] == f"{f}: {fid}"
    assert out[1] == f"{mnt}: [0x200000007:0x1:0x0]"
    assert nacre_cli("fid2path", mnt, fid, check=True).stdout == f"{f}\n"
    assert nacre_cli("fid2path", mnt, fid.strip("[]"), check=True).stdout == f"{f}\n"
    r = nacre_cli("fid2path", mnt, "[0x200000400:0xfffffff:0x0]")
    assert r.returncode != 0 and "0xfffffff" in r.stderr
    r = nacre_cli("fid2path", mnt, "junk")
    assert r.returncode != 0 and "invalid FID" in r.stderr


def test_help_and_version(nacre_cli):
    r = nacre_cli("--version", check=True)
    assert r.stdout.startswith("nacre ")
    r = nacre_cli("help", check=True)
    for verb in ("setstripe", "getstripe", "df", "path2fid", "fid2path", "up", "down"):
        assert verb in r.stdout
        h = nacre_cli(verb, "--help", check=True)
        assert h.stdout.startswith("usage: nacre " + verb)
    r = nacre_cli("frobnicate")
    assert r.returncode != 0 and "nacre help" in r.stderr


def test_up_refuses_a_dir_that_is_a_file(nacre_cli, tmp_path):
    f = tmp_path / "not-a-dir"
    f.write_text("x")
    r = nacre_cli("up", "--dir", f, "--osts", 1, "--port", 1, timeout=30)
    assert r.returncode == 1
    assert f"--dir {f} is not a directory" in r.stderr, r.stderr
    assert f.read_text() == "x"  # left alone


def test_a_name_two_mounts_share_is_refused_unless_inside_one(make_cluster, nacre_cli):
    a = make_cluster(osts=1, fsname="twin")
    b = make_cluster(osts=1, fsname="twin")
    ma, mb = str(a.mounts[0].path), str(b.mounts[0].path)
    for verb in (("recovery-status", "twin"), ("changelog_register", "--key-file", a.key,
                                               "twin")):
        r = nacre_cli(*verb, cwd="/")
        assert r.returncode == 1, r.stdout
        assert "2 mounted file systems are called twin" in r.stderr, r.stderr
        assert ma in r.stderr and mb in r.stderr, r.stderr
    # inside one of them, the name means that one
    r = nacre_cli("recovery-status", "twin", cwd=mb)
    assert r.returncode == 0, r.stderr
    # a verb given no path acts on the mount it runs in, and refuses to guess outside
    r = nacre_cli("hsm", "list", cwd=ma)
    assert r.returncode == 0, r.stderr
    r = nacre_cli("hsm", "list", cwd="/")
    assert r.returncode == 1 and "file systems are mounted" in r.stderr, r.stderr
    assert ma in r.stderr and mb in r.stderr
    # get_param: the servers' names (obdfilter.twin-OST0000...) are the mount's one is in,
    # and left out elsewhere, with the candidates said
    r = nacre_cli("get_param", "-n", "obdfilter.twin-OST0000.kbytestotal", cwd=mb)
    assert r.returncode == 0 and r.stdout.count("\n") == 1, r
    r = nacre_cli("get_param", "obdfilter.twin-OST0000.kbytestotal", cwd="/")
    assert r.returncode == 2, r
    assert "file system name 'twin' is mounted from several clusters" in r.stderr, r.stderr
    assert ma in r.stderr and mb in r.stderr, r.stderr


def _free_base_port(n):
    """A base port with n+1 consecutive free ports."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n >= 65000:
            continue
        ok = True
        for p in range(base, base + n + 1):
            with socket.socket() as t:
                try:
                    t.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise AssertionError("no free port range")


def test_up_and_down(nacre_cli):
    d = tempfile.mkdtemp(prefix="nacre-up-")
    port = _free_base_port(3)
    mnt = os.path.join(d, "mnt")
    try:
        r = nacre_cli("up", "--dir", d, "--osts", 2, "--port", port, "--fsname", "uptest",
                      timeout=90)
        assert r.returncode == 0, r.stdout + r.stderr
        assert re.search(r"^\[\d+\.\ds\] MDS up on 127\.0\.0\.1:%d" % port, r.stdout, re.M), \
            r.stdout
        assert os.path.exists(os.path.join(d, "cluster.key"))
        assert mnt in mounted_dirs()
        with open(os.path.join(mnt, "hello"), "wb") as f:
            f.write(b"hello nacre")
        with open(os.path.join(mnt, "hello"), "rb") as f:
            assert f.read() == b"hello nacre"
        df = nacre_cli("df", mnt, check=True).stdout
        assert "uptest-OST0001_UUID" in df
        # Again: says so, changes nothing, fails.
        r = nacre_cli("up", "--dir", d, "--osts", 2, "--port", port, timeout=30)
        assert r.returncode != 0 and "already running" in r.stderr, r.stdout + r.stderr
        assert f"nacre down --dir {d}" in r.stderr, r.stderr
        pids = [int(l.split()[1]) for l in open(os.path.join(d, "cluster.pids"))
                if not l.startswith("mountpoint")]
        r = nacre_cli("down", "--dir", d, timeout=60)
        assert r.returncode == 0, r.stderr
        assert mnt not in mounted_dirs()
        time.sleep(0.2)
        for pid in pids:
            assert not _alive(pid), f"pid {pid} still running after nacre down"
        # Down again is fine.
        r = nacre_cli("down", "--dir", d, timeout=30)
        assert r.returncode == 0, r.stderr
        # Up again on the same directory keeps the data.
        r = nacre_cli("up", "--dir", d, "--osts", 2, "--port", port, "--fsname", "uptest",
                      timeout=90)
        assert r.returncode == 0, r.stdout + r.stderr
        with open(os.path.join(mnt, "hello"), "rb") as f:
            assert f.read() == b"hello nacre"
    finally:
        nacre_cli("down", "--dir", d, timeout=60)
        subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
        subprocess.run(["rm", "-rf", d])


def _pids(d):
    return {l.split()[0]: int(l.split()[1]) for l in open(os.path.join(d, "cluster.pids"))
            if not l.startswith("mountpoint")}


def test_up_restarts_what_died(nacre_cli):
    """nacre up on a directory whose daemons died starts exactly those, and the mount if it
    is gone; a different cluster is refused; down still stops everything."""
    d = tempfile.mkdtemp(prefix="nacre-up-")
    port = _free_base_port(3)
    mnt = os.path.join(d, "mnt")
    try:
        r = nacre_cli("up", "--dir", d, "--osts", 2, "--port", port, timeout=90)
        assert r.returncode == 0, r.stdout + r.stderr
        with open(os.path.join(mnt, "f"), "wb") as f:
            f.write(b"kept across restarts")
            os.fsync(f.fileno())
        before = _pids(d)

        os.kill(before["mds"], signal.SIGKILL)
        time.sleep(0.2)
        r = nacre_cli("up", "--dir", d, timeout=90)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"restarting what is not running in {d}: mds\n" in r.stdout, r.stdout
        assert "MDS restarted" in r.stdout and "mount on" in r.stdout, r.stdout
        after = _pids(d)
        assert after["mds"] != before["mds"]
        assert {k: v for k, v in after.items() if k != "mds"} == \
            {k: v for k, v in before.items() if k != "mds"}
        with open(os.path.join(mnt, "f"), "rb") as f:  # the same mount, still working
            assert f.read() == b"kept across restarts"

        # an OSS and the mount die: both come back, the dead mount is replaced
        os.kill(after["oss1"], signal.SIGKILL)
        os.kill(after["mount"], signal.SIGKILL)
        time.sleep(0.2)
        r = nacre_cli("up", "--dir", d, timeout=90)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "restarting what is not running" in r.stdout and "oss1, mount" in r.stdout, \
            r.stdout
        with open(os.path.join(mnt, "f"), "rb") as f:
            assert f.read() == b"kept across restarts"
        with open(os.path.join(mnt, "g"), "wb") as f:
            f.write(b"new")

        # a running cluster cannot be changed by up
        r = nacre_cli("up", "--dir", d, "--osts", 3, timeout=30)
        assert r.returncode != 0 and "other options" in r.stderr, r.stdout + r.stderr

        pids = _pids(d)
        r = nacre_cli("down", "--dir", d, timeout=60)
        assert r.returncode == 0, r.stderr
        assert mnt not in mounted_dirs()
        time.sleep(0.2)
        for role, pid in pids.items():
            assert not _alive(pid), f"{role} (pid {pid}) still running after nacre down"
    finally:
        nacre_cli("down", "--dir", d, timeout=60)
        subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
        subprocess.run(["rm", "-rf", d])


def test_up_port_taken(nacre_cli):
    d = tempfile.mkdtemp(prefix="nacre-up-")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = nacre_cli("up", "--dir", d, "--osts", 1, "--port", port, timeout=30)
    subprocess.run(["rm", "-rf", d])
    assert r.returncode != 0
    assert str(port) in r.stderr and "--port" in r.stderr, r.stderr


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_df_inodes_summary_capped_by_free_objects(make_cluster, nacre_cli, tmp_path):
    """As lfs: a file needs an object, so the summary's free inodes are at most the OSTs'
    free objects (the used count unchanged); the MDT's row keeps its own figure."""
    small = tmp_path / "few-inodes"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,nr_inodes=2000", "tmpfs",
                    str(small)], check=True)
    try:
        c = make_cluster(osts=1, ost_dirs={0: small / "ost0"})
        m = c.mounts[0].path

        def ifree():
            rows = {l.split()[0]: l.split() for l in
                    nacre_cli("df", "-i", m, check=True).stdout.splitlines() if l.strip()}
            ost = rows.get("testfs-OST0000_UUID")
            return rows if ost and int(ost[1]) > 0 else None
        rows = wait_for(ifree, 30, "the OST to report its inodes")
        mdt, ost, summ = (rows["testfs-MDT0000_UUID"], rows["testfs-OST0000_UUID"],
                          rows["filesystem_summary:"])
        assert int(mdt[3]) > int(ost[3]), rows  # the MDT has more free inodes than objects
        assert int(summ[3]) == int(ost[3]), rows
        assert int(summ[2]) == int(mdt[2]), rows
        assert int(summ[1]) == int(mdt[2]) + int(ost[3]), rows
    finally:
        subprocess.run(["umount", "-l", str(small)], capture_output=True)
