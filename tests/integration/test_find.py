"""nacre find: the MDS's scan with lfs find's options gives what GNU find gives through the
mount, for every test and its negation; the Lustre-only tests against getstripe and
hsm_state; a directory the caller may not search; bad input."""
import os
import re
import stat
import subprocess
import time

import pytest

from conftest import binary, daemon_env

NOW = int(time.time())
DAY = 86400


def run(argv, **kw):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=120,
                          env=daemon_env(), **kw)


def nacre_find(*args, **kw):
    return run([binary("nacre"), "find", *args], **kw)


def gnu_find(*args, **kw):
    return run(["find", *args], **kw)


@pytest.fixture(scope="module")
def tree(cluster):
    """A few hundred entries of every type, owner, mode, age and layout."""
    mnt = cluster.mounts[0].path
    top = mnt / "ft"
    top.mkdir()
    os.chmod(top, 0o755)
    nacre = binary("nacre")
    dirs = [top]
    for i in range(5):
        d = top / f"dir{i}"
        d.mkdir()
        dirs.append(d)
        for j in range(2):
            e = d / f"sub{j}x"
            e.mkdir()
            dirs.append(e)
    deep = top / "dir1" / "a" / "b" / "c"
    deep.mkdir(parents=True)
    dirs.append(deep)
    sizes = [0, 1, 511, 512, 1023, 1024, 1025, 2048, 4096, 5000, 1 << 20, (1 << 20) + 3]
    modes = [0o644, 0o600, 0o755, 0o4755, 0o2750, 0o444, 0o640, 0o700]
    owners = [(0, 0), (1000, 100), (1001, 1000), (65534, 65534)]
    ages = [0, 1, 2, 5, 10, 40, 400]
    names = ["alpha{}.txt", "Beta_x{}.dat", ".hid{}", "x{}", "data{}.TXT", "plain{}"]
    n = 0
    for k in range(200):
        d = dirs[k % len(dirs)]
        f = d / names[k % len(names)].format(k)
        f.write_bytes(b"")
        os.truncate(f, sizes[k % len(sizes)])
        os.chown(f, *owners[k % len(owners)])
        os.chmod(f, modes[k % len(modes)])
        age = ages[k % len(ages)] * DAY + 3620 + (k % 7) * 60  # off minute boundaries
        os.utime(f, (NOW - age - 120 * DAY * (k % 2), NOW - age))
        n += 1
    # layouts: set on new empty files through setstripe
    for c, idx in [(1, 0), (2, 1), (4, -1), (2, 3), (1, 2)]:
        f = top / f"striped_c{c}_i{idx}"
        subprocess.run([nacre, "setstripe", "-c", str(c), "-i", str(idx), str(f)], check=True)
        with open(f, "wb") as fh:
            fh.write(b"s" * (c * 1024 * 1024 + 10))  # objects on every stripe
    f = top / "big_stripe"
    subprocess.run([nacre, "setstripe", "-S", "2M", "-c", "1", str(f)], check=True)
    f.write_bytes(b"b" * 100)
    # the other types
    os.symlink("alpha0.txt", top / "link_to_alpha")
    os.symlink("/nowhere", top / "dir0" / "dangling")
    os.mkfifo(top / "fifo1")
    os.mknod(top / "dir2" / "null_dev", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    os.mknod(top / "dir2" / "blk_dev", stat.S_IFBLK | 0o600, os.makedev(7, 0))
    os.mknod(top / "dir3" / "sock1", stat.S_IFSOCK | 0o644)
    os.link(top / "alpha0.txt", top / "dir4" / "hardlink_alpha")
    (top / "dir2" / "emptyd").mkdir()
    for d in dirs[1:]:
        os.chmod(d, 0o755)
    os.chmod(top / "dir4", 0o1777)
    os.utime(top / "dir3", (NOW - 3 * DAY - 600, NOW - 3 * DAY - 600))
    ref = top / "dir0" / "ref"
    ref.write_bytes(b"r")
    os.utime(ref, (NOW - 3 * DAY, NOW - 3 * DAY))
    return top


def lines(out, sep="\n"):
    return sorted(x for x in out.split(sep) if x)


def same(top, ours, gnu=None, sep="\n"):
    """nacre find TOP OURS... and find TOP GNU... print the same set of lines."""
    gnu = ours if gnu is None else gnu
    a = nacre_find(top, *ours)
    b = gnu_find(top, *gnu)
    assert b.returncode == 0, b.stderr
    assert a.returncode == 0, f"nacre find {ours}: {a.stderr}"
    la, lb = lines(a.stdout, sep), lines(b.stdout, sep)
    assert la == lb, (f"nacre find {ours} vs find {gnu}:\nonly nacre: {set(la) - set(lb)}\n"
                      f"only find: {set(lb) - set(la)}")
    return la


# (our options, GNU find's options); each is checked as is and negated with "!"
CASES = [
    (["-name", "*x*"], None),
    (["--name", "alpha*"], ["-name", "alpha*"]),
    (["-name", "*.[tT]?T"], None),
    (["-iname", "*.txt"], None),
    (["-type", "f"], None),
    (["-t", "d"], ["-type", "d"]),
    (["--type", "l"], ["-type", "l"]),
    (["-type", "p"], None),
    (["-type", "s"], None),
    (["-type", "c"], None),
    (["-type", "b"], None),
    (["-size", "+1k"], None),
    (["-size", "-2k"], None),
    (["-size", "1k"], None),
    (["-size", "+1000c"], None),
    (["-size", "0c"], None),
    (["--size", "-1M"], ["-size", "-1M"]),
    (["-size", "2M"], None),
    (["-mtime", "+5"], None),
    (["-mtime", "-3"], None),
    (["--mtime", "10"], ["-mtime", "10"]),
    (["-atime", "+100"], None),
    (["-ctime", "-1"], None),
    (["-mmin", "-120"], None),
    (["-mmin", "+1500"], None),
    (["-amin", "+60"], None),
    (["-cmin", "-600"], None),
    (["-uid", "1000"], None),
    (["--gid", "100"], ["-gid", "100"]),
    (["-user", "root"], None),
    (["-group", "root"], None),
    (["-perm", "644"], None),
    (["-perm", "-4000"], None),
    (["-perm", "/022"], None),
    (["-perm", "-444"], None),
    (["-empty"], None),
    (["--empty", "-type", "d"], ["-empty", "-type", "d"]),
    (["-links", "2"], None),
    (["-links", "+2"], None),
    (["-links", "-2"], None),
    (["-path", "*dir1*"], None),
    (["-path", "*/sub?x/*.txt"], None),
    (["-ipath", "*DIR2/*"], None),
]


@pytest.mark.parametrize("ours,gnu", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_predicate_and_negation_match_gnu_find(tree, ours, gnu):
    gnu = gnu or ours
    got = same(tree, ours, gnu)
    assert got, f"{ours} matched nothing: the tree does not exercise it"
    same(tree, ["!", *ours], ["!", *gnu])


def test_newer_and_depth_match_gnu_find(tree):
    ref = tree / "dir0" / "ref"
    assert same(tree, ["-newer", ref])
    assert same(tree, ["!", "-newer", ref])
    for d in ["0", "1", "2", "4"]:
        assert same(tree, ["-maxdepth", d])
        assert same(tree, ["-mindepth", d])
    assert same(tree, ["-maxdepth", "2", "-mindepth", "2", "-type", "f", "-name", "*a*"],
                ["-maxdepth", "2", "-mindepth", "2", "-type", "f", "-name", "*a*"])
    assert same(tree, ["-type", "f", "-size", "+511c", "!", "-name", "*.txt", "-user", "root"])


def test_newer_xy_matches_gnu_find(tree):
    ref = tree / "dir0" / "ref"
    for x in "amc":
        for y in "amc":
            assert same(tree, [f"-newer{x}{y}", ref]) is not None
    t1 = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(NOW - 6 * DAY))
    t2 = time.strftime("%Y-%m-%d", time.localtime(NOW - DAY))
    between = same(tree, ["-newermt", t1, "!", "-newermt", t2, "-type", "f"])
    assert between and len(between) < len(same(tree, ["-type", "f"]))
    assert same(tree, ["-newerat", f"@{NOW - 100 * DAY}"])
    same(tree, ["!", "-newerct", f"@{NOW + DAY}"])
    # a !-newerXY and a -newer together, each kept apart
    same(tree, ["-newer", ref, "!", "-newermt", t2])


EXPRESSIONS = [
    ["-name", "*.txt", "-o", "-name", "*.dat"],
    ["!", "(", "-name", "*.txt", "-o", "-name", "*.dat", ")"],
    ["(", "-name", "alpha*", "-o", "-type", "d", ")", "-size", "-1"],
    ["-type", "f", "-a", "(", "-user", "root", "-o", "-perm", "-4000", ")", "!", "-empty"],
    ["-size", "+1k", "-size", "-5k"],
    ["-name", "*x*", "-or", "-not", "-name", "*a*", "-and", "-type", "f"],
    ["-maxdepth", "1", "(", "-type", "d", "-o", "-name", "x*", ")"],
    ["(", "(", "-name", "*1*", "-o", "-name", "*2*", ")", "!", "(", "-type", "d", ")", ")",
     "-o", "-empty"],
    ["!", "!", "-name", "*x*", "-newermt", "@1", "!", "-newermt", "@1"],
    ["-type", "l", "-o", "-type", "p", "-o", "-type", "s", "-o", "-links", "+1", "-type", "f"],
]


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=[" ".join(e) for e in EXPRESSIONS])
def test_expressions_match_gnu_find(tree, expr):
    """-o, -a, !, parentheses and a test given twice: evaluated on the MDS as find would."""
    got = same(tree, expr)
    assert got or "-newermt" in expr, f"{expr} matched nothing: the tree does not exercise it"
    same(tree, ["!", "(", *expr, ")"])


def test_expression_with_action_and_a_file_start(tree):
    same(tree, ["(", "-name", "a*", "-o", "-name", "B*", ")", "-print0"], sep="\0")
    same(tree / "alpha0.txt", ["-name", "zz", "-o", "-size", "-1"])
    r = nacre_find(tree, "-name", "alpha1*", "-o", "-name", "Beta_x1*", tree / "dir0")
    assert r.returncode == 0
    assert lines(r.stdout) == sorted(lines(gnu_find(tree, "-name", "alpha1*", "-o", "-name",
                                                    "Beta_x1*").stdout) +
                                     lines(gnu_find(tree / "dir0", "-name", "alpha1*", "-o",
                                                    "-name", "Beta_x1*").stdout))


def test_birth_time(cluster):
    """--btime, --Bmin and -newerBt test when the MDS made each file (its birth time), not
    the times a later change moves."""
    top = cluster.mounts[0].path / "bt"
    top.mkdir()
    for i in range(3):
        (top / f"old{i}").write_bytes(b"o")
    t = int(time.time()) + 1
    while time.time() < t + 0.05:
        time.sleep(0.05)
    for i in range(2):
        (top / f"new{i}").write_bytes(b"n")
    os.utime(top / "old0", (t + 100, t + 100))  # times moved: not its birth
    (top / "old1").write_bytes(b"changed")
    def found(*args):
        r = nacre_find(top, "-type", "f", *args)
        assert r.returncode == 0, r.stderr
        return [os.path.basename(x) for x in lines(r.stdout)]
    assert found("-newerBt", f"@{t}") == ["new0", "new1"]
    assert found("!", "-newerBt", f"@{t}") == ["old0", "old1", "old2"]
    assert found("-newermt", f"@{t}") == ["new0", "new1", "old0", "old1"]  # for contrast
    assert found("--btime", "-1") == ["new0", "new1", "old0", "old1", "old2"]
    assert found("-B", "+0") == []
    assert found("--Bmin", "-10", "-name", "old*") == ["old0", "old1", "old2"]
    assert found("-newerBt", f"@{t}", "-o", "-name", "old2") == ["new0", "new1", "old2"]


def test_blocks_projid_mdt_index_lazy(tree):
    """The Lustre-only tests: --blocks against st_blocks, --projid against nacre project,
    --mdt-index (one MDT: index 0), --lazy changes nothing."""
    def walk():
        for d, sub, files in os.walk(tree):
            for n in sub + files:
                yield os.path.join(d, n)
    used = {p: os.lstat(p).st_blocks * 512 for p in walk()}
    used[str(tree)] = os.lstat(tree).st_blocks * 512
    r = nacre_find(tree, "--blocks", "+4", "-type", "f")
    assert r.returncode == 0, r.stderr
    want = sorted(p for p, b in used.items() if b > 4096 and os.path.isfile(p)
                  and not os.path.islink(p))
    assert want and lines(r.stdout) == want
    r = nacre_find(tree, "-b", "-1b", "-type", "f")  # no block at all: empty or sparse
    assert lines(r.stdout) == sorted(p for p, b in used.items() if b == 0 and
                                     os.path.isfile(p) and not os.path.islink(p))
    proj = tree / "dir3"
    r = run([binary("nacre"), "project", "-p", "4242", "-s", "-r", proj])
    assert r.returncode == 0, r.stderr
    r = nacre_find(tree, "--projid", "4242")
    got = lines(r.stdout)
    assert got and got == lines(gnu_find(proj).stdout)
    r = nacre_find(tree, "!", "--projid", "4242", "-type", "f")
    assert not set(lines(r.stdout)) & set(got)
    everything = lines(nacre_find(tree).stdout)
    for args in (["--mdt-index", "0"], ["-m", "nacre-MDT0000"], ["!", "--mdt-index", "1"],
                 ["--lazy"], ["-l", "--mdt", "0,3"]):
        r = nacre_find(tree, *args)
        assert r.returncode == 0 and lines(r.stdout) == everything, (args, r.stderr)
    for args in (["--mdt-index", "1"], ["!", "-m", "0"]):
        r = nacre_find(tree, *args)
        assert r.returncode == 0 and r.stdout == "", (args, r.stdout[:200])


def test_outputs_match_gnu_find(tree):
    same(tree, ["-print0"], sep="\0")
    same(tree, ["-0", "-type", "f"], ["-type", "f", "-print0"], sep="\0")
    same(tree, ["-P"], ["-print"])
    fmt = "%p %f %s %u %U %g %G %m %M %n %i %y %d %l|%t|%a|%c %%\\t.\\n"
    same(tree, ["--printf", fmt], ["-printf", fmt])
    # -ls: the same fields (GNU widens its columns as it goes; compare the words)
    a = nacre_find(tree, "-ls")
    b = gnu_find(tree, "-ls")
    assert a.returncode == 0 and b.returncode == 0
    assert sorted(" ".join(x.split()) for x in a.stdout.splitlines()) == \
        sorted(" ".join(x.split()) for x in b.stdout.splitlines())
    # a trailing slash and a relative path are kept as typed, as find does
    rel = os.path.relpath(tree / "dir1")
    same(rel, ["-name", "*"], ["-name", "*"])
    same(str(tree) + "/", ["-type", "d"])


def test_files_and_symlinks_as_starting_points(tree):
    """As find (and lfs find): a file is tested itself; a symlink is not followed."""
    for p in [tree / "alpha0.txt", tree / "link_to_alpha", tree / "fifo1",
              tree / "dir2" / "null_dev"]:
        for pred in [[], ["-type", "f"], ["-name", "*a*"], ["!", "-size", "0c"],
                     ["-printf", "%p %f %s %y %d\\n"]]:
            same(p, pred)
    r = nacre_find(tree / "alpha0.txt", tree / "dir3", "-maxdepth", "0")
    assert r.returncode == 0 and r.stdout == f"{tree / 'alpha0.txt'}\n{tree / 'dir3'}\n"
    rel = os.path.relpath(tree / "dir1" / "a")
    same(rel, [])


def getstripe(path, opt):
    return run([binary("nacre"), "getstripe", opt, path]).stdout.strip()


def test_layout_predicates_agree_with_getstripe(tree):
    files = [p for p in tree.rglob("*") if p.is_file() and not p.is_symlink()]
    assert len(files) > 150
    info = {str(p): (int(getstripe(p, "-c")), int(getstripe(p, "-S")), getstripe(p, "-i"))
            for p in files if p.name.startswith(("striped", "big_stripe"))}
    ours = set(lines(nacre_find(tree, "-type", "f", "--stripe-count", "2").stdout))
    assert ours == {p for p, v in info.items() if v[0] == 2}
    ours = set(lines(nacre_find(tree, "-type", "f", "-c", "+1").stdout))
    assert ours == {p for p, v in info.items() if v[0] > 1}
    ours = set(lines(nacre_find(tree, "-type", "f", "--stripe-size", "2M").stdout))
    assert ours == {str(tree / "big_stripe")}
    ours = set(lines(nacre_find(tree, "-type", "f", "!", "-S", "-2M", "-name", "big*").stdout))
    assert ours == {str(tree / "big_stripe")}
    # --ost: files with an object on OST 3, by index, by name, in a list
    def osts(p):
        out = run([binary("nacre"), "getstripe", p]).stdout
        return {int(m) for m in re.findall(r"^\t +(\d+)\t", out, re.M)}
    all_osts = {str(p): osts(p) for p in files}
    want3 = {p for p, o in all_osts.items() if 3 in o}
    assert want3
    assert set(lines(nacre_find(tree, "--ost", "3").stdout)) == want3
    assert set(lines(nacre_find(tree, "-O", "testfs-OST0003").stdout)) == want3
    assert set(lines(nacre_find(tree, "-i", "3").stdout)) == want3
    want12 = {p for p, o in all_osts.items() if o & {1, 2}}
    assert set(lines(nacre_find(tree, "--ost", "1,testfs-OST0002").stdout)) == want12
    notw = set(lines(nacre_find(tree, "-type", "f", "!", "--ost", "3").stdout))
    assert notw == {str(p) for p in files} - want3
    # %L directives against getstripe and path2fid
    out = nacre_find(tree, "-name", "striped_c*", "--printf", "%p %LF %Lc %LS %Li\\n").stdout
    for line in lines(out):
        p, fid, c, s, i = line.split()
        assert fid == run([binary("nacre"), "path2fid", p]).stdout.strip()
        assert (int(c), int(s), i) == info[p]
    # --fid finds exactly that file; --layout raid0: every file with a layout
    fid = run([binary("nacre"), "path2fid", tree / "plain17"]).stdout.strip()
    assert lines(nacre_find(tree, "--fid", fid).stdout) == [str(tree / "plain17")]
    assert lines(nacre_find(tree, "-type", "f", "!", "--fid", fid).stdout) == \
        sorted(set(lines(gnu_find(tree, "-type", "f").stdout)) - {str(tree / "plain17")})
    raid0 = set(lines(nacre_find(tree, "-type", "f", "-L", "raid0").stdout))
    assert raid0 == {str(p) for p in files}
    # no pools in nacre: --pool matches nothing, ! --pool everything
    assert nacre_find(tree, "--pool", "fast").stdout == ""
    assert len(lines(nacre_find(tree, "!", "--pool", "fast").stdout)) == \
        len(lines(gnu_find(tree).stdout))


def test_hsm_predicates(tree):
    nacre = binary("nacre")
    h = tree / "hsm"
    h.mkdir()
    for name, flags in [("arch", ["--exists", "--archived"]), ("dirty", ["--exists", "--dirty"]),
                        ("noarch", ["--noarchive"]), ("plain", [])]:
        (h / name).write_bytes(b"data")
        if flags:
            subprocess.run([nacre, "hsm_set", *flags, str(h / name)], check=True)
    # a released stub, as an import makes it
    val = f"4096 644 0 0 {NOW} 0 1".encode() + b"\0stub\0archive/stub\0"
    os.setxattr(h, "nacre.hsm_import", val)
    st = run([nacre, "hsm_state", h / "stub"]).stdout
    assert "released" in st, st

    def f(*a):
        return {os.path.basename(x) for x in lines(nacre_find(h, *a).stdout)}
    assert f("--hsm-state", "exists") == {"arch", "dirty", "stub"}
    assert f("--hsm-state", "archived") == {"arch", "stub"}
    assert f("--hsm-state", "exists,archived") == {"arch", "stub"}
    assert f("--hsm", "released") == {"stub"}
    assert f("--hsm-state", "dirty") == {"dirty"}
    assert f("--hsm-state", "noarchive") == {"noarch"}
    assert f("-type", "f", "!", "--hsm-state", "exists") == {"noarch", "plain"}
    assert f("--layout", "released") == {"stub"}
    assert f("-type", "f", "!", "-L", "released") == {"arch", "dirty", "noarch", "plain"}
    assert f("-type", "f", "--size", "4k") == {"stub"}


def test_unreadable_directory_is_skipped_with_exit_1(tree):
    sec = tree / "secret"
    sec.mkdir()
    (sec / "inside").write_bytes(b"x")
    os.chmod(sec, 0o700)
    try:
        kw = dict(user=65534, group=65534, extra_groups=[])
        a = nacre_find(tree, "-name", "*s*", **kw)
        b = gnu_find(tree, "-name", "*s*", **kw)
        assert b.returncode == 1 and a.returncode == 1, (a.stderr, b.stderr)
        assert lines(a.stdout) == lines(b.stdout)
        assert str(sec) in a.stdout  # the directory itself is listed, not its entries
        assert "inside" not in a.stdout
        assert a.stderr.strip() == f"nacre: find: '{sec}': Permission denied"
        # root may: the same tree in full
        same(tree, ["-name", "ins*"])
    finally:
        os.chmod(sec, 0o755)


def test_bad_input(tree):
    r = nacre_find(tree, "--bogus", "1")
    assert r.returncode != 0 and "unknown option '--bogus'" in r.stderr
    r = nacre_find(tree, "-size", "+1q")
    assert r.returncode != 0 and "invalid value '+1q' for --size" in r.stderr
    r = nacre_find(tree, "-type", "z")
    assert r.returncode != 0 and "--type" in r.stderr
    r = nacre_find(tree, "-name")
    assert r.returncode != 0 and "needs a value" in r.stderr
    r = nacre_find(tree, "--printf", "%Q")
    assert r.returncode != 0 and "unknown directive" in r.stderr
    r = nacre_find("/tmp")
    assert r.returncode != 0 and "not on a nacre file system" in r.stderr
    r = nacre_find(tree / "nonexistent")
    assert r.returncode != 0 and "No such file or directory" in r.stderr
    r = nacre_find(tree, "-newermB", tree / "alpha0.txt")  # FUSE gives no birth time
    assert r.returncode != 0 and "does not give its birth time" in r.stderr, r.stderr
    r = nacre_find(tree, "-newermt", "yesterday-ish")
    assert r.returncode != 0 and "invalid date 'yesterday-ish'" in r.stderr
    r = nacre_find(tree, "-newermm", tree / "nonexistent")
    assert r.returncode != 0 and "cannot stat" in r.stderr
    r = nacre_find(tree, "-newermt", "@1", "-o", *sum([["-name", "x"] for _ in range(16)], []))
    assert r.returncode != 0 and "at most 16 tests" in r.stderr
    for args, why in [(["(", "-name", "a"], "without its ')'"),
                      (["-name", "a", ")"], "without its '('"),
                      (["(", ")"], "without its '('"),
                      (["-name", "a", "-o"], "ends where a test was expected"),
                      (["-name", "a", "-o", "-name", "b", "-print"], "in parentheses"),
                      (["(", "-path", "x", ")"], "tested here"),
                      (["-path", "x", "-o", "-name", "y"], "cannot be alternatives"),
                      (["(", "-name", "a", "-print", ")"], "after the tests"),
                      (["!", "(", "-maxdepth", "1", ")"], "without a test")]:
        r = nacre_find(tree, *args)
        assert r.returncode != 0 and why in r.stderr, (args, r.stderr)
    r = nacre_find(tree, "-path", "a", "-ipath", "b")
    assert r.returncode != 0 and "given twice" in r.stderr
    r = nacre_find(tree, "--links", "x")
    assert r.returncode != 0 and "invalid value 'x' for --links" in r.stderr
    r = nacre_find(tree, "--projid", "-1")
    assert r.returncode != 0 and "--projid" in r.stderr
    r = nacre_find(tree, "!", "--lazy")
    assert r.returncode != 0 and "cannot negate" in r.stderr
    r = nacre_find("--help")
    assert r.returncode == 0 and "--stripe-count" in r.stdout


def test_many_pages(cluster):
    """More entries than one page holds: every one comes, once."""
    top = cluster.mounts[0].path / "pages"
    top.mkdir()
    for i in range(30):
        d = top / f"d{i:02d}"
        d.mkdir()
        for j in range(60):
            (d / ("n" * 150 + f"{j:03d}")).write_bytes(b"")
    same(top, ["-type", "f"])
    a = lines(nacre_find(top).stdout)
    assert len(a) == 1 + 30 + 30 * 60 and len(set(a)) == len(a)


def test_nodemap_squash_and_id_maps(cluster, tree):
    """Root squashed by the default nodemap is skipped where root is not; a client with id
    maps tests and sees its own ids."""
    def nodemap(*args):
        run([binary("nacre"), "nodemap", "--mds", cluster.spec, "--key-file", cluster.key,
             *args]).check_returncode()
    sec = tree / "rootonly"
    sec.mkdir()
    (sec / "f").write_bytes(b"")
    os.chmod(sec, 0o700)
    own = tree / "owned"
    own.mkdir()
    (own / "m").write_bytes(b"")
    os.chown(own / "m", 5003, 6004)
    sq = cluster.mount(opts=["client_name=plain-node"])
    try:
        p = sq.path / "ft"
        r = nacre_find(p, "-name", "rootonly*")
        assert r.returncode == 1 and r.stdout == f"{p}/rootonly\n", r
        assert r.stderr == f"nacre: find: '{p}/rootonly': Permission denied\n"
    finally:
        sq.unmount()
    nodemap("add", "fmapped", "--client", "fmapped-node", "--range", "127.0.0.0/8")
    nodemap("modify", "fmapped", "--map_uid", "1000:5000:10")
    nodemap("modify", "fmapped", "--property", "map_gid", "--value", "1000:6000:10")
    m = cluster.mount(opts=["client_name=fmapped-node"])
    try:
        p = m.path / "ft" / "owned"
        r = nacre_find(p, "-uid", "1003", "-gid", "1004", "--printf", "%f %U %G\\n")
        assert r.returncode == 0 and r.stdout == "m 1003 1004\n", r
        assert nacre_find(p, "-uid", "5003").stdout == ""
        # the tests of an expression are the client's ids too
        r = nacre_find(p, "(", "-uid", "1003", "-o", "-uid", "5003", ")", "-type", "f")
        assert r.returncode == 0 and r.stdout == f"{p}/m\n", r
        assert nacre_find(p, "-gid", "6004", "-o", "-uid", "5003").stdout == ""
    finally:
        m.unmount()
        nodemap("del", "fmapped")
