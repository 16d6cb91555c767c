"""Changelogs (docs/changelog.md): a record per namespace change in lfs changelog's format,
users registered, cleared and deregistered, the size cap's eviction, and a Robinhood-style
consumer whose mirror of the namespace stays exact through mixed operations and a kill -9 of
the MDS."""
import os
import random
import re
import signal
import stat
import subprocess
import time

import pytest

from conftest import wait_for

# The consumer's operation count: ~2000 keeps CI fast; NACRE_CL_OPS=10000 for the long run
# (run by hand on the 2-core development machine: passed, 25 s, about 10,500 records).
CONSUMER_OPS = int(os.environ.get("NACRE_CL_OPS", "2000"))

FID = r"\[0x[0-9a-f]+:0x[0-9a-f]+:0x[0-9a-f]+\]"
HEAD = r"(\d+) (\d\d)([A-Z]+) *(\d\d:\d\d:\d\d\.\d{9}) (\d{4}\.\d\d\.\d\d) 0x([0-9a-f]+) t=(" + FID + ")"
LINE = re.compile("^" + HEAD + r"(?: j=(\S+))?(?: ef=0x([0-9a-f]+))?(?: u=(\d+):(\d+))?(?: x=(\S+))?"
                  r"(?: p=(" + FID + r"))?(?: (\S+))?"
                  r"(?: s=(" + FID + r") sp=(" + FID + r") (\S+))?$")
ZERO = "[0x0:0x0:0x0]"


def parse(line):
    m = LINE.match(line)
    assert m, f"not an lfs changelog line: {line!r}"
    g = m.groups()
    return {"index": int(g[0]), "num": int(g[1]), "type": g[2], "time": g[3], "date": g[4],
            "flags": int(g[5], 16), "t": g[6], "j": g[7], "ef": g[8], "uid": g[9], "gid": g[10],
            "x": g[11], "p": g[12], "name": g[13], "s": g[14], "sp": g[15], "sname": g[16],
            "line": line}


@pytest.fixture
def cl(nacre_cli):
    """Runs a changelog verb with the cluster's key: cl(cluster, verb, *args)."""
    def run(c, verb, *args, check=True):
        return nacre_cli(verb, "--key-file", c.key, *args, check=check)
    return run


def cluster(make_cluster, **kw):
    """A private cluster whose file system name no other mount on the machine uses (a
    FSNAME argument names the first mount of that name)."""
    name = "cl" + "".join(random.choice("abcdefghjkmnpqrstuvwxyz") for _ in range(6))
    return make_cluster(osts=1, fsname=name, **kw)


def records(cl, c, *args):
    out = cl(c, "changelog", c.fsname, *args).stdout
    return [parse(x) for x in out.splitlines()]


def fid(nacre_cli, path):
    return nacre_cli("path2fid", path, check=True).stdout.strip()


def test_every_record_type_in_lfs_format(make_cluster, cl, nacre_cli):
    c = cluster(make_cluster)
    m = c.mount(opts=["jobid=disable"], name="plain").path  # exact lines: no j= (test_job_ids)
    out = cl(c, "changelog_register", m).stdout
    assert out == f"{c.fsname}-MDT0000: Registered changelog userid 'cl1'\n"
    root = fid(nacre_cli, m)
    assert records(cl, c) == []  # nothing happened yet

    (m / "f1").write_bytes(b"data")                         # CREAT, CLOSE (written)
    os.mkdir(m / "d")                                       # MKDIR
    os.link(m / "f1", m / "d" / "hl")                       # HLINK
    os.symlink("f1", m / "sl")                              # SLINK
    os.mkfifo(m / "fifo")                                   # MKNOD
    os.rename(m / "f1", m / "d" / "f2")                     # RENME
    (m / "victim").write_bytes(b"")                         # CREAT
    os.rename(m / "sl", m / "victim")                       # RENME over a file: t=, 0x1
    os.truncate(m / "d" / "f2", 1)                          # TRUNC
    os.chmod(m / "d" / "f2", 0o600)                         # SATTR
    os.setxattr(m / "d" / "f2", "user.k", b"v")             # XATTR
    os.utime(m / "d" / "f2", (1, 2))                        # MTIME
    nacre_cli("hsm_set", "--norelease", m / "d" / "f2", check=True)  # HSM (state)
    nacre_cli("setstripe", "-c", 1, m / "lay", check=True)  # CREAT, LYOUT
    os.unlink(m / "d" / "hl")                               # UNLNK, another name left
    os.unlink(m / "d" / "f2")                               # UNLNK of the last name: 0x1
    os.unlink(m / "fifo")
    os.rmdir(m / "d")                                       # RMDIR 0x1

    f1, d = None, None
    recs = records(cl, c)
    got = [(r["num"], r["type"]) for r in recs]
    for r in recs:
        assert r["date"] == time.strftime("%Y.%m.%d", time.gmtime()) or \
            r["date"] == time.strftime("%Y.%m.%d", time.gmtime(time.time() - 60))
    names = {"CREAT": 1, "MKDIR": 2, "HLINK": 3, "SLINK": 4, "MKNOD": 5, "UNLNK": 6,
             "RMDIR": 7, "RENME": 8, "CLOSE": 11, "LYOUT": 12, "TRUNC": 13, "SATTR": 14,
             "XATTR": 15, "HSM": 16, "MTIME": 17}
    for num, t in got:
        assert names[t] == num, (num, t)
    kinds = [t for _, t in got]
    assert kinds == ["CREAT", "CLOSE", "MKDIR", "HLINK", "SLINK", "MKNOD", "RENME", "CREAT",
                     "RENME", "TRUNC", "SATTR", "XATTR", "MTIME", "HSM", "CREAT", "LYOUT",
                     "UNLNK", "UNLNK", "UNLNK", "RMDIR"], recs
    assert [r["index"] for r in recs] == list(range(1, len(recs) + 1))
    by = {i: r for i, r in enumerate(recs)}
    f1 = by[0]["t"]
    d = by[2]["t"]
    # exact lines, time aside
    def tail(r):
        return re.split(" +", r["line"], maxsplit=4)[4]  # %-5s pads short type names
    assert tail(by[0]) == f"0x0 t={f1} p={root} f1"
    assert tail(by[1]) == f"0x0 t={f1}"
    assert tail(by[2]) == f"0x0 t={d} p={root} d"
    assert tail(by[3]) == f"0x0 t={f1} p={d} hl"
    sl = by[4]["t"]
    assert tail(by[4]) == f"0x0 t={sl} p={root} sl"
    fifo = by[5]["t"]
    assert tail(by[5]) == f"0x0 t={fifo} p={root} fifo"
    assert tail(by[6]) == f"0x0 t={ZERO} p={d} f2 s={f1} sp={root} f1"
    victim = by[7]["t"]
    assert tail(by[8]) == f"0x1 t={victim} p={root} victim s={sl} sp={root} sl"
    for i in range(9, 14):
        assert tail(by[i]).startswith("0x") and by[i]["t"] == f1 and by[i]["p"] is None
    assert by[13]["flags"] == 5 << 7  # HSM event STATE, no error, not dirty
    lay = by[14]["t"]
    assert tail(by[15]) == f"0x0 t={lay}"
    assert tail(by[16]) == f"0x0 t={f1} p={d} hl"
    assert tail(by[17]) == f"0x1 t={f1} p={d} f2"
    assert tail(by[18]) == f"0x1 t={fifo} p={root} fifo"
    assert tail(by[19]) == f"0x1 t={d} p={root} d"
    # the line as lfs prints it, whole
    assert re.match(r"^1 01CREAT \d\d:\d\d:\d\d\.\d{9} \d{4}\.\d\d\.\d\d 0x0 t=" +
                    re.escape(f1) + " p=" + re.escape(root) + " f1$", by[0]["line"])

    # START and END select; a path inside the mount names the file system too
    assert [r["index"] for r in records(cl, c, 5, 7)] == [5, 6, 7]
    assert [r["index"] for r in records(cl, c, 19)] == [19, 20]

    # OPEN is off by default, as ATIME; the mask turns it on; extras add u= and x=
    out = cl(c, "changelog_mask", m).stdout
    assert "OPEN" not in out.split("\n")[0] and "ATIME" not in out and " CLOSE " in out
    cl(c, "changelog_mask", "--extra", "uidgid,xattr", m, "+OPEN")
    (m / "o").write_bytes(b"x")
    with open(m / "o", "rb") as fh:
        fh.read()
    os.setxattr(m / "o", "user.z", b"1")
    recs = records(cl, c, 21)
    kinds = [r["type"] for r in recs]
    assert kinds[0] == "CREAT" and "OPEN" in kinds and kinds[-1] == "XATTR", kinds
    o = recs[0]["t"]
    assert tail(recs[0]) == f"0x0 t={o} ef=0x1 u=0:0 p={root} o"
    assert tail(recs[-1]) == f"0x0 t={o} ef=0x9 u=0:0 x=user.z"
    out = cl(c, "changelog_mask", m, "-OPEN", "-CLOSE").stdout
    assert "OPEN" not in out.split("\n")[0] and "CLOSE" not in out.split("\n")[0]
    assert "changelog_extra=uidgid,xattr" in out
    out = cl(c, "changelog_mask", m, "CREAT", "UNLNK").stdout
    assert out.split("\n")[0] == f"mdd.{c.fsname}-MDT0000.changelog_mask=MARK CREAT UNLNK"


def test_register_clear_deregister(make_cluster, cl, nacre_cli):
    c = cluster(make_cluster)
    m = c.mounts[0].path
    (m / "before").write_bytes(b"")  # no user: no record, and nothing to keep
    assert cl(c, "changelog_register", c.fsname).stdout.endswith("'cl1'\n")
    assert cl(c, "changelog_register", c.spec).stdout.endswith("'cl2'\n")
    assert records(cl, c) == []
    for i in range(6):
        os.mkdir(m / f"d{i}")
    assert [r["index"] for r in records(cl, c)] == [1, 2, 3, 4, 5, 6]
    cl(c, "changelog_clear", m, "cl1", 4)
    assert len(records(cl, c)) == 6  # cl2 still needs them
    cl(c, "changelog_clear", m, "cl2", 2)
    assert [r["index"] for r in records(cl, c)] == [3, 4, 5, 6]
    r = cl(c, "changelog_clear", m, "cl2", 99, check=False)
    assert r.returncode != 0 and "record out of range: 99" in r.stderr
    r = cl(c, "changelog_clear", m, "cl9", 1, check=False)
    assert r.returncode != 0 and "no changelog user: cl9" in r.stderr
    # deregistering cl2 leaves cl1's position: 5 and 6
    out = cl(c, "changelog_deregister", m, "cl2").stdout
    assert out == f"{c.fsname}-MDT0000: Deregistered changelog user #2\n"
    assert [r["index"] for r in records(cl, c)] == [5, 6]
    cl(c, "changelog_clear", m, "cl1", 0)  # 0: everything current
    assert records(cl, c) == []
    # indexes go on after a purge; a new user gets a new id
    os.mkdir(m / "after")
    assert [r["index"] for r in records(cl, c)] == [7]
    assert cl(c, "changelog_register", m).stdout.endswith("'cl3'\n")
    cl(c, "changelog_deregister", m, "1")
    cl(c, "changelog_deregister", m, "cl3")
    assert records(cl, c) == []  # the last user gone: everything freed, nothing written
    os.mkdir(m / "quiet")
    assert records(cl, c) == []
    r = cl(c, "changelog_deregister", m, "cl3", check=False)
    assert r.returncode != 0 and "no changelog user cl3" in r.stderr
    # a client key may not manage changelogs
    key = c.dir / "client.key"
    nacre_cli("key", "issue", "--mds", c.spec, "--key-file", c.key, "-o", key, "alice",
              check=True)
    r = nacre_cli("changelog_register", "--key-file", key, m)
    assert r.returncode != 0 and "cluster key or an admin key" in r.stderr
    # no key given: the key of the mount named (or run in) is used
    env = {k: v for k, v in os.environ.items() if k != "NACRE_KEY_FILE"}
    r = nacre_cli("changelog_register", m, env=env)
    assert r.returncode == 0 and r.stdout.endswith("'cl4'\n"), r.stderr
    r = nacre_cli("changelog_deregister", c.fsname, "cl4", env=env)
    assert r.returncode == 0, r.stderr


def test_size_cap_evicts_the_oldest_user(make_cluster, cl):
    c = cluster(make_cluster, mds_args=["--changelog-max-records", "20"])
    m = c.mounts[0].path
    cl(c, "changelog_register", m)  # cl1 never clears
    cl(c, "changelog_register", m)  # cl2 keeps up
    for i in range(15):
        os.mkdir(m / f"a{i}")
    cl(c, "changelog_clear", m, "cl2", 0)
    assert len(records(cl, c)) == 15
    for i in range(10):
        os.mkdir(m / f"b{i}")
    wait_for(lambda: "changelog user cl1 deregistered" in c.mds.text(), 5, "the eviction log")
    line = [x for x in c.mds.text().splitlines() if "changelog user cl1 deregistered" in x][0]
    assert "over the cap of 20" in line and "--changelog-max-records" in line
    r = cl(c, "changelog_clear", m, "cl1", 0, check=False)
    assert "no changelog user: cl1" in r.stderr
    # cl2 had cleared 15: what is left is what it has not seen
    assert [r["index"] for r in records(cl, c)] == list(range(16, 26))
    cl(c, "changelog_clear", m, "cl2", 0)
    for i in range(30):  # one user that keeps up is never evicted
        os.mkdir(m / f"c{i}")
        if i % 10 == 9:
            cl(c, "changelog_clear", m, "cl2", 0)
    assert "cl2 deregistered" not in c.mds.text()


# ---- a Robinhood-style consumer ----

class Mirror:
    """The namespace as the changelog tells it: FID -> set of (parent FID, name)."""

    def __init__(self, root):
        self.names = {root: set()}
        self.root = root

    def apply(self, r):
        t = r["type"]
        if t in ("CREAT", "MKDIR", "HLINK", "SLINK", "MKNOD"):
            self.names.setdefault(r["t"], set()).add((r["p"], r["name"]))
        elif t in ("UNLNK", "RMDIR"):
            self.names.get(r["t"], set()).discard((r["p"], r["name"]))
            if r["flags"] & 1:
                self.names.pop(r["t"], None)
        elif t == "RENME":
            if r["t"] != ZERO:
                self.names.get(r["t"], set()).discard((r["p"], r["name"]))
                if r["flags"] & 1:
                    self.names.pop(r["t"], None)
            s = self.names.setdefault(r["s"], set())
            s.discard((r["sp"], r["sname"]))
            s.add((r["p"], r["name"]))

    def entries(self):
        return {(p, n): f for f, names in self.names.items() for p, n in names}


class Consumer:
    """Reads from its last cleared index + 1, applies, clears: what a policy engine does."""

    def __init__(self, cl, c, user, root):
        self.cl, self.c, self.user = cl, c, user
        self.mirror = Mirror(root)
        self.last = 0
        self.applied = 0
        self.log = []

    def poll(self):
        recs = records(self.cl, self.c, self.last + 1)
        for r in recs:
            assert r["index"] > self.last, "records out of order or repeated"
            self.mirror.apply(r)
            self.log.append(r)
            self.last = r["index"]
            self.applied += 1
        if recs:
            self.cl(self.c, "changelog_clear", self.c.fsname, self.user, self.last)
        return len(recs)


def fid_of(path):
    f = os.getxattr(path, "nacre.fid", follow_symlinks=False).decode().strip()
    return f if f.startswith("[") else f"[{f}]"


def actual(m, root):
    """{(parent FID, name): FID} of the mount, walked."""
    out = {}
    for d, dirs, files in os.walk(m):
        pf = root if d == str(m) else fid_of(d)
        for n in dirs + files:
            out[(pf, n)] = fid_of(os.path.join(d, n))
    return out


def mixed_ops(m, rng, n, state):
    """n random creates, mkdirs, hard and symbolic links, renames (within and across
    directories, over existing files), unlinks and rmdirs."""
    files, dirs = state.setdefault("files", []), state.setdefault("dirs", [str(m)])
    for _ in range(n):
        state["seq"] = state.get("seq", 0) + 1
        name = f"n{state['seq']}"
        op = rng.random()
        try:
            if op < 0.30 or not files:
                p = os.path.join(rng.choice(dirs), name)
                with open(p, "wb") as fh:
                    fh.write(b"x")
                files.append(p)
            elif op < 0.40:
                p = os.path.join(rng.choice(dirs), name)
                os.mkdir(p)
                dirs.append(p)
            elif op < 0.45:
                p = os.path.join(rng.choice(dirs), name)
                os.link(rng.choice(files), p)
                files.append(p)
            elif op < 0.50:
                p = os.path.join(rng.choice(dirs), name)
                os.symlink("target", p)
                files.append(p)
            elif op < 0.70:
                src = rng.choice(files)
                if rng.random() < 0.3 and len(files) > 2:
                    dst = rng.choice(files)  # over an existing name
                    if dst == src:
                        continue
                    files.remove(dst)
                else:
                    dst = os.path.join(rng.choice(dirs), name)
                os.rename(src, dst)
                files.remove(src)
                files.append(dst)
            elif op < 0.72 and len(dirs) > 1:
                src = rng.choice(dirs[1:])
                dst = os.path.join(rng.choice(dirs), name)
                if dst.startswith(src + "/"):
                    continue
                os.rename(src, dst)
                # everything below moved with it
                files[:] = [dst + f[len(src):] if f.startswith(src + "/") else f
                            for f in files]
                dirs[:] = [dst + x[len(src):] if x == src or x.startswith(src + "/") else x
                           for x in dirs]
            elif op < 0.95:
                p = rng.choice(files)
                os.unlink(p)
                files.remove(p)
            elif len(dirs) > 1:
                p = rng.choice(dirs[1:])
                if os.listdir(p):
                    continue
                os.rmdir(p)
                dirs.remove(p)
        except FileNotFoundError:
            raise


def test_consumer_mirror_through_mixed_ops_and_mds_restart(make_cluster, cl, nacre_cli):
    c = cluster(make_cluster, mds_args=["--recovery-window", "10"])
    m = c.mounts[0].path
    root = fid(nacre_cli, m)
    cl(c, "changelog_register", m)
    cons = Consumer(cl, c, "cl1", root)
    rng = random.Random(16)
    state = {}
    half = CONSUMER_OPS // 2
    for _ in range(4):
        mixed_ops(m, rng, half // 4, state)
        cons.poll()
    assert cons.mirror.entries() == actual(m, root)

    # kill -9 with records the consumer has not read: they are still there after the
    # restart, and the consumer goes on from its last cleared index
    mixed_ops(m, rng, 100, state)
    os.sync()
    last_before = records(cl, c)[-1]["index"]
    c.mds.kill(signal.SIGKILL)
    c.start_mds(fmt=False)
    wait_for(lambda: os.path.isdir(m), 30, "the mount back")
    recs = records(cl, c, cons.last + 1)
    assert recs and recs[0]["index"] == cons.last + 1 and recs[-1]["index"] >= last_before
    for _ in range(4):
        mixed_ops(m, rng, (CONSUMER_OPS - half - 100) // 4, state)
        cons.poll()
    while cons.poll():
        pass
    a = actual(m, root)
    if cons.mirror.entries() != a:
        bad = set(a.items()) ^ set(cons.mirror.entries().items())
        keys = {x[1] for x in bad} | {x[0][1] for x in bad}
        print("mirror and namespace differ:", bad)  # the records that explain it:
        print("\n".join(r["line"] for r in cons.log if any(k in r["line"] for k in keys)))
    assert cons.mirror.entries() == a
    assert cons.applied >= CONSUMER_OPS * 0.9
    # everything read was cleared, and freed
    assert records(cl, c) == []


def test_follow_prints_records_as_they_come(make_cluster, cl, nacre_cli):
    import subprocess
    from conftest import binary, daemon_env
    c = cluster(make_cluster)
    m = c.mounts[0].path
    cl(c, "changelog_register", m)
    os.mkdir(m / "first")
    p = subprocess.Popen([binary("nacre"), "changelog", "--follow", "--key-file", str(c.key),
                          str(m)], stdout=subprocess.PIPE, text=True, env=daemon_env())
    try:
        assert parse(p.stdout.readline().rstrip("\n"))["name"] == "first"
        os.mkdir(m / "second")  # after the follower reached the end
        r = parse(p.stdout.readline().rstrip("\n"))
        assert (r["index"], r["type"], r["name"]) == (2, "MKDIR", "second")
    finally:
        p.send_signal(signal.SIGINT)
        assert p.wait(10) == 0


def test_hsm_events(make_cluster, cl, nacre_cli):
    """HSM records carry the event in the flags as Lustre packs them: archive 0, release 3,
    restore 1, remove 4 (bits 7..9), the error in bits 0..6."""
    from test_hsm import start_copytool
    c = cluster(make_cluster)
    m = c.mounts[0].path
    (c.dir / "archive").mkdir()
    ct = start_copytool(c, ["--backend", f"posix:{c.dir / 'archive'}"], bw=0)
    (m / "f").write_bytes(b"hsm data")
    f = fid(nacre_cli, m / "f")
    cl(c, "changelog_register", m)

    def hsm_flags():
        return [r["flags"] for r in records(cl, c) if r["type"] == "HSM" and r["t"] == f]

    nacre_cli("hsm_archive", m / "f", check=True)
    wait_for(lambda: hsm_flags() == [0 << 7], 20, "the ARCHIVE record")
    nacre_cli("hsm_release", m / "f", check=True)
    assert hsm_flags() == [0, 3 << 7]
    assert (m / "f").read_bytes() == b"hsm data"  # an implicit restore
    wait_for(lambda: len(hsm_flags()) == 3, 20, "the RESTORE record")
    assert hsm_flags()[2] == 1 << 7
    nacre_cli("hsm_remove", m / "f", check=True)
    wait_for(lambda: len(hsm_flags()) == 4, 20, "the REMOVE record")
    assert hsm_flags()[3] == 4 << 7
    line = [r for r in records(cl, c) if r["type"] == "HSM"][0]["line"]
    assert re.match(r"^\d+ 16HSM   \d\d:\d\d:\d\d\.\d{9} \d{4}\.\d\d\.\d\d 0x0 t=" +
                    re.escape(f) + "$", line), line
    # an import's stubs appear as creates
    (c.dir / "imp").mkdir()
    (c.dir / "imp" / "x.bin").write_bytes(b"imported")
    os.mkdir(m / "imp")
    nacre_cli("hsm", "import", "--archive-id", 1, "--backend", f"posix:{c.dir / 'imp'}",
              m / "imp", check=True)
    stub = fid(nacre_cli, m / "imp" / "x.bin")
    since_import = [r for r in records(cl, c) if r["t"] == stub]
    r = since_import[0]
    assert (r["type"], r["p"], r["name"]) == ("CREAT", fid(nacre_cli, m / "imp"), "x.bin")
    # then the import records where the stub came from (trusted.nacre.hsm_origin): XATTR
    assert [x["type"] for x in since_import[1:]] == ["XATTR"], since_import
    ct.kill(signal.SIGKILL)  # its long poll would hold the teardown's SIGTERM for seconds


def test_policy_scans_only_after_changes(make_cluster):
    """The built-in HSM policy reads every inode once, at start, then only the inodes the
    changelog's hook fed it: a quiet file system costs it nothing."""
    c = cluster(make_cluster, mds_args=["--hsm-archive-age", "3", "--hsm-policy-period", "1",
                                        "--log-level", "debug"])
    m = c.mounts[0].path

    def scans():
        return len(re.findall(r"policy: scan \d+", c.mds.text()))

    def reads():
        return len(re.findall(r"policy: \d+ changed inodes read", c.mds.text()))
    wait_for(lambda: scans() >= 1, 10, "the first policy scan")
    time.sleep(3.5)
    assert scans() == 1 and reads() == 0, c.mds.text()[-2000:]  # nothing changed
    (m / "f").write_bytes(b"x")  # a change: the next run reads f, and archives it at 3 s
    wait_for(lambda: reads() >= 1, 10, "the changed inode read")
    wait_for(lambda: "policy: archiving 1 files" in c.mds.text(), 15, "f to come of age")
    n = reads()
    time.sleep(3.5)
    # the archive request waits for a copytool that is not there: nothing changes
    assert reads() == n and scans() == 1, c.mds.text()[-2000:]


def test_job_ids(make_cluster, cl, nacre_cli):
    """A record carries the caller's job id as Lustre's default jobid_name makes it, the
    command name and the uid (j=mkdir.60001), after t=; a mount with jobid=disable sends
    none, and its records have no j=."""
    c = cluster(make_cluster)
    m = c.mounts[0].path
    os.chmod(m, 0o777)
    quiet = c.mount(opts=["jobid=disable"], name="nojob").path
    cl(c, "changelog_register", m)
    subprocess.run(["touch", str(m / "a")], check=True)
    subprocess.run(["setpriv", "--reuid", "60001", "--regid", "60001", "--clear-groups",
                    "mkdir", str(m / "b")], check=True)
    subprocess.run(["touch", str(quiet / "c")], check=True)
    recs = {r["name"]: r for r in records(cl, c) if r["type"] in ("CREAT", "MKDIR")}
    assert recs["a"]["j"] == "touch.0", recs["a"]["line"]
    assert recs["b"]["j"] == "mkdir.60001", recs["b"]["line"]
    assert recs["b"]["flags"] & 0x4000 == 0  # the low 12 bits only, as lfs prints them
    assert re.search(r" t=\S+ j=mkdir\.60001 ", recs["b"]["line"]), recs["b"]["line"]
    assert recs["c"]["j"] is None, recs["c"]["line"]


def test_a_file_written_before_an_mds_restart_is_noted_at_its_close(make_cluster, cl):
    # the open table that knew the handle wrote went with the MDS: the re-opened writer's
    # close is noted all the same (an HSM policy finds changed files by their CLOSE)
    c = cluster(make_cluster, mds_args=["--recovery-window", "10"])
    m = c.mounts[0].path
    cl(c, "changelog_register", m)
    with open(m / "w", "wb") as f:
        f.write(b"x" * 1000)
        f.flush()
        os.fsync(f.fileno())  # its size is at the MDS before the restart
        c.mds.kill(signal.SIGKILL)
        c.start_mds(fmt=False)
        os.fstat(f.fileno())
    wait_for(lambda: "CLOSE" in [r["type"] for r in records(cl, c)], 20,
             "the CLOSE record of the file written before the restart")
