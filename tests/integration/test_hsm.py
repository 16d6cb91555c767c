"""HSM end to end, with real processes, over each backend — posix, azure (Azurite) and s3
(s3rver), one server pair per module from tests/hsm-servers/start: archive, release,
transparent restore (0 bytes to 100 MiB striped over 4 OSTs), dirty, remove, cancel, a
copytool killed mid-action, a backend that goes down and comes back, import of a 1,000-object
tree written by another client, bulk restore, lfs's output formats, and import round trips
(archive names, archive locations, re-import, metadata styles)."""
import concurrent.futures
import contextlib
import errno
import hashlib
import os
import re
import secrets
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO, Proc, binary, finish, wait_for

BW = 20  # MB/s per transfer of the module's copytool: big files take seconds, small ones not
BACKENDS = ["posix", "azure", "s3"]


class PosixStore:
    """The posix backend's directory, read and written as another tool would."""
    name = "posix"

    def __init__(self, root):
        self.root = Path(root)

    def url(self, prefix):
        (self.root / prefix).mkdir(parents=True, exist_ok=True)
        return f"posix:{self.root / prefix}"

    def ct_args(self, prefix, endpoint=None):
        return ["--backend", self.url(prefix)]

    def put(self, key, data, meta):
        p = self.root / key
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        if meta:
            (p.parent / f".{p.name}.nacre-meta").write_text(
                "".join(f"{k}={v}\n" for k, v in meta.items()))

    def read(self, key):
        p = self.root / key
        side = p.parent / f".{p.name}.nacre-meta"
        meta = dict(line.split("=", 1) for line in side.read_text().splitlines()) \
            if side.exists() else {}
        return p.read_bytes(), meta

    def exists(self, key):
        return (self.root / key).exists()

    def keys(self, prefix):
        base = self.root / prefix
        return sorted(str(p.relative_to(self.root)) for p in base.rglob("*")
                      if p.is_file() and not p.name.startswith("."))


def cloud_store(name, servers, creds):
    import test_hsm_backends as tb
    if name == "azure":
        st = tb.Azure(servers["AZURITE_ENDPOINT"])
    else:
        st = tb.S3(servers["S3_ENDPOINT"])
    st.create()
    creds.write_text("".join(f'{k}="{v}"\n' for k, v in st.env.items()))
    os.chmod(creds, 0o600)

    def ct_args(prefix, endpoint=None):
        return ["--backend", st.url(prefix), "--endpoint", endpoint or st.endpoint,
                "--credentials", str(creds)]

    def exists(key):
        return key in st.keys(key)
    st.ct_args, st.exists = ct_args, exists
    return st


@pytest.fixture(scope="module")
def servers():
    start = REPO / "tests/hsm-servers/start"
    res = subprocess.run([str(start)], capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        pytest.fail(f"tests/hsm-servers/start failed:\n{res.stdout}\n{res.stderr}")
    info = dict(line.split("=", 1) for line in res.stdout.split() if "=" in line)
    yield info
    subprocess.run([str(REPO / "tests/hsm-servers/stop"), info["HSM_SERVERS_DIR"]], timeout=60)


def start_copytool(c, backend_args, archive_id=1, name="ct", bw=BW, threads=2):
    argv = [binary("nacre-copytool"), "--mds", c.spec, "--key-file", str(c.key),
            "--archive-id", str(archive_id), *backend_args, "--threads", str(threads)]
    if bw:
        argv += ["--bandwidth", str(bw)]
    p = Proc(name, argv, c.dir / f"{name}.log").start()
    c.extra.append(p)
    wait_for(lambda: "serving archive" in p.text() or not p.alive(), 15, f"{name} to start")
    assert p.alive(), p.text()
    return p


def tmpfs_osts(c, n, size):
    # private tmpfs OSTs: `nacre df` then shows exactly what release frees
    for i in range(n):
        d = c.dir / f"tmpfs-ost{i}"
        d.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(d)],
                       check=True)
        c.ost_dirs[i] = d


@pytest.fixture(scope="module", params=BACKENDS)
def hsm(request):
    from conftest import Cluster
    c = Cluster(osts=4, oss=2)
    tmpfs_osts(c, 4, "300m")
    orig = c.mds_argv
    c.mds_argv = lambda fmt: orig(fmt) + ["--hsm-timeout", "30", "--hsm-remove-on-unlink",
                                          "--hsm-grace", "600"]
    try:
        c.start()
        c.mount()
        c.wait_osts_up()
        if request.param == "posix":
            c.store = PosixStore(c.dir / "archive")
        else:
            c.store = cloud_store(request.param, request.getfixturevalue("servers"),
                                  c.dir / "creds")
        c.backend = request.param
        c.prefix = "main-" + secrets.token_hex(3)  # objects are PREFIX/PATH
        c.ct = start_copytool(c, c.store.ct_args(c.prefix))
    except BaseException:
        print(c.logs())
        c.stop()
        raise
    yield c
    finish(c)


@pytest.fixture
def mnt(hsm):
    return hsm.mounts[0].path


def obj(hsm, name):
    return f"{hsm.prefix}/{name}"


def nacre(*args, check=True, timeout=120):
    r = subprocess.run([binary("nacre"), *map(str, args)], capture_output=True, text=True,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"nacre {args} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r


def state(path):
    out = nacre("hsm_state", path).stdout
    m = re.match(r"^(.*): \(0x([0-9a-f]{8})\)(.*)\n$", out)
    assert m, out
    return int(m.group(2), 16), m.group(3)


def wait_state(path, want_bits, unwanted=0, timeout=60):
    def ok():
        s, _ = state(path)
        return (s & want_bits) == want_bits and not (s & unwanted)
    wait_for(ok, timeout, f"{path} HSM state with 0x{want_bits:x}", interval=0.2)


EXISTS, DIRTY, RELEASED, ARCHIVED, NORELEASE = 0x1, 0x2, 0x4, 0x8, 0x10


def write_random(path, size, seed=0):
    data = hashlib.sha256(str(seed).encode()).digest() * (size // 32 + 1)
    data = bytes(data[:size])
    Path(path).write_bytes(data)
    return data


def drop_caches():
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        pass


def ost_used_kb(c):
    return sum(st for _, st in ost_usage(c))


def ost_usage(c):
    text = os.getxattr(os.fspath(c.mounts[0].path), "nacre.targets").decode()
    out = []
    for line in text.splitlines():
        f = line.split()
        if f[0] == "OST":
            out.append((int(f[1]), int(f[4]) - int(f[5])))
    return out


def test_archive_release_read_restores(hsm, mnt):
    f = mnt / "a1"
    before = ost_used_kb(hsm)
    nacre("setstripe", "-c", 4, "-S", "1M", f)
    data = write_random(f, 24 << 20, seed=1)
    st0 = os.stat(f)
    nacre("hsm_archive", f)
    wait_state(f, EXISTS | ARCHIVED)
    assert nacre("hsm_state", f).stdout == f"{f}: (0x00000009) exists archived, archive_id:1\n"
    got, meta = hsm.store.read(obj(hsm, "a1"))  # as another client sees it
    assert got == data
    assert meta["permissions"] == "0644" and meta["owner"] == "0", meta
    assert meta["nacre_fid"].startswith("[0x"), meta

    # objects on the OSTs before release
    fid = os.getxattr(f, "nacre.fid").decode().strip("[]").split(":")
    oid = fid[1][2:]
    objs = lambda: [p for i in range(4) for p in (hsm.ost_dir(i) / "O").rglob(f"*-{oid}-*")]
    assert objs()
    # OSTs report their space in heartbeats every 2 s: wait until the file's 24 MiB show.
    used0 = wait_for(lambda: (lambda u: u if u >= before + 20 * 1024 else 0)(ost_used_kb(hsm)),
                     30, "the OSTs to report the file's space")
    nacre("hsm_release", f)
    assert nacre("hsm_state", f).stdout == \
        f"{f}: (0x0000000d) released exists archived, archive_id:1\n"
    wait_for(lambda: not objs(), 45, "the released objects to be destroyed")
    wait_for(lambda: ost_used_kb(hsm) < used0 - 20 * 1024, 45, "the OSTs to report space back")
    df = nacre("df", mnt).stdout
    used = [int(l.split()[2]) for l in df.splitlines() if "[OST:" in l]
    assert sum(used) < used0 - 20 * 1024, df
    st1 = os.stat(f)
    for k in ("st_size", "st_mode", "st_uid", "st_gid", "st_mtime_ns"):
        assert getattr(st1, k) == getattr(st0, k), k
    ls = subprocess.run(["ls", "-l", str(f)], capture_output=True, text=True).stdout
    assert str(24 << 20) in ls
    # As Lustre: one block (du shows what is on disk), and a layout with no objects.
    assert st1.st_blocks == 1, st1
    du = subprocess.run(["du", "-k", str(f)], capture_output=True, text=True).stdout
    assert du.split()[0] in ("0", "1"), du
    gs = nacre("getstripe", f).stdout
    assert "lmm_pattern:       released\n" in gs and "lmm_layout_gen:    0\n" in gs, gs
    assert "obdidx" not in gs, gs
    assert nacre("getstripe", "-L", f).stdout == "released\n\n"
    assert nacre("getstripe", "-g", f).stdout == "0\n\n"
    assert nacre("getstripe", "-q", f).stdout == f"{f}\n\n"  # no objects to show

    drop_caches()
    assert f.read_bytes() == data  # the open waits for the restore
    s, _ = state(f)
    assert s == EXISTS | ARCHIVED, hex(s)
    assert objs()
    assert "RESTORE" in hsm.ct.text()


def test_write_sets_dirty_and_release_refused(hsm, mnt):
    f = mnt / "d1"
    write_random(f, 100000, seed=2)
    nacre("hsm_archive", f)
    wait_state(f, EXISTS | ARCHIVED)
    with open(f, "ab") as fp:
        fp.write(b"more")
    s, text = state(f)
    assert s & DIRTY and "dirty" in text
    r = nacre("hsm_release", f, check=False)
    assert r.returncode != 0
    assert "dirty" in r.stderr and str(f) in r.stderr
    # archiving again makes it clean and releasable
    nacre("hsm_archive", f)
    wait_state(f, EXISTS | ARCHIVED, DIRTY)
    nacre("hsm_release", f)
    assert f.read_bytes()[-4:] == b"more"


def test_release_refused_when_not_archived_or_norelease(hsm, mnt):
    f = mnt / "n1"
    write_random(f, 1000, seed=3)
    r = nacre("hsm_release", f, check=False)
    assert r.returncode != 0 and "not archived" in r.stderr
    nacre("hsm_archive", f)
    wait_state(f, EXISTS | ARCHIVED)
    nacre("hsm_set", "--norelease", f)
    assert "never_release" in nacre("hsm_state", f).stdout
    r = nacre("hsm_release", f, check=False)
    assert r.returncode != 0 and "norelease" in r.stderr
    nacre("hsm_clear", "--norelease", f)
    nacre("hsm_release", f)
    assert state(f)[0] & RELEASED


def test_release_refused_while_open_for_reading(hsm, mnt):
    # A reader keeps the layout it opened with and destroyed objects read as holes: release
    # must wait for the last close, or that reader would see zeros instead of a restore.
    f = mnt / "o1"
    data = write_random(f, 3 << 20, seed=12)
    nacre("hsm_archive", f)
    wait_state(f, EXISTS | ARCHIVED)
    with open(f, "rb") as fp:
        assert fp.read(4096) == data[:4096]
        r = nacre("hsm_release", f, check=False)
        assert r.returncode != 0 and "open" in r.stderr and str(f) in r.stderr, r.stderr
        drop_caches()
        assert fp.read() == data[4096:]  # still the file's data
    assert not state(f)[0] & RELEASED
    # the kernel sends the close to the MDS asynchronously: the release may need a retry
    wait_for(lambda: nacre("hsm_release", f, check=False).returncode == 0, 10,
             "the release after the last close")
    assert state(f)[0] & RELEASED
    drop_caches()
    assert f.read_bytes() == data


def test_remove(hsm, mnt):
    f = mnt / "r1"
    write_random(f, 5000, seed=4)
    nacre("hsm_archive", f)
    wait_state(f, EXISTS | ARCHIVED)
    assert hsm.store.exists(obj(hsm, "r1"))
    nacre("hsm_remove", f)
    wait_for(lambda: nacre("hsm_state", f).stdout == f"{f}: (0x00000000)\n", 30,
             "the archive copy to be removed")
    assert not hsm.store.exists(obj(hsm, "r1"))


def test_unlink_removes_archive_copy(hsm, mnt):
    f = mnt / "u1"
    write_random(f, 5000, seed=5)
    nacre("hsm_archive", f)
    wait_state(f, EXISTS | ARCHIVED)
    assert hsm.store.exists(obj(hsm, "u1"))
    os.unlink(f)
    wait_for(lambda: not hsm.store.exists(obj(hsm, "u1")), 30, "REMOVE after unlink")


def test_action_and_cancel_mid_transfer(hsm, mnt):
    f = mnt / "big1"
    write_random(f, 120 << 20, seed=6)
    assert nacre("hsm_action", f).stdout == f"{f}: NOOP\n"
    nacre("hsm_archive", f)

    def running():
        out = nacre("hsm_action", f).stdout
        m = re.match(rf"^{re.escape(str(f))}: ARCHIVE running \((\d+) bytes moved\)\n$", out)
        return m and int(m.group(1)) > 0
    wait_for(running, 30, "the archive to be running", interval=0.2)
    lst = nacre("hsm", "list", mnt).stdout
    assert re.search(r"action=ARCHIVE archive#=1 .*status=STARTED done=\d+ total=125829120",
                     lst), lst
    nacre("hsm_cancel", f)
    wait_for(lambda: nacre("hsm_action", f).stdout == f"{f}: NOOP\n", 30, "the cancel")
    s, _ = state(f)
    assert not s & ARCHIVED
    assert "canceled" in hsm.ct.text()
    assert "status=CANCELED" in nacre("hsm", "list", mnt).stdout
    # neither the object nor a temporary copy is left
    assert not [k for k in hsm.store.keys(hsm.prefix) if "big1" in k]


def test_copytool_killed_mid_action(hsm, mnt):
    f = mnt / "big2"
    data = write_random(f, 64 << 20, seed=7)
    nacre("hsm_archive", f)
    wait_for(lambda: "running" in nacre("hsm_action", f).stdout, 30, "archive running",
             interval=0.2)
    hsm.ct.kill()  # SIGKILL: no chance to remove its temporary copy
    if hsm.backend == "posix":
        temps = lambda: list((hsm.store.root / hsm.prefix).rglob("*.nacre-tmp-*"))  # noqa
        assert [p for p in temps() if p.name.startswith("big2.")], \
            "the killed copytool left no temporary: it was not mid-copy"
    # the coordinator takes the action back when the agent's connection drops
    wait_for(lambda: "waiting" in nacre("hsm_action", f).stdout, 30, "action back to WAITING",
             interval=0.2)
    hsm.ct = start_copytool(hsm, hsm.store.ct_args(hsm.prefix), name="ct2", bw=0)
    wait_state(f, EXISTS | ARCHIVED, timeout=60)
    assert hsm.store.read(obj(hsm, "big2"))[0] == data
    if hsm.backend == "posix":
        # the new copytool removed the dead one's temporary when it started
        wait_for(lambda: not temps(), 30, "the killed copytool's temporary to be removed")
        assert "leftovers of interrupted copies" in hsm.ct.text()
    assert [k for k in hsm.store.keys(hsm.prefix) if "big2" in k] == [obj(hsm, "big2")]
    nacre("hsm_release", f)
    drop_caches()
    assert f.read_bytes() == data


def test_restore_recursive(hsm, mnt):
    d = mnt / "rr"
    (d / "sub").mkdir(parents=True)
    files = [d / f"f{i}" for i in range(4)] + [d / "sub" / "g"]
    datas = [write_random(p, 200000 + i, seed=10 + i) for i, p in enumerate(files)]
    nacre("hsm_archive", *files)
    for p in files:
        wait_state(p, EXISTS | ARCHIVED)
    nacre("hsm_release", *files)
    for p in files:
        assert state(p)[0] & RELEASED
    r = nacre("hsm_restore", "-r", d)
    assert "5/5 files restored" in r.stderr
    for p, data in zip(files, datas):
        assert not state(p)[0] & RELEASED
        assert p.read_bytes() == data


def test_import_1000_objects_then_read(hsm, mnt):
    """Another client writes 1,000 objects under nested prefixes, a third of them with the
    AMLFS metadata keys and the rest with none; import makes released stubs with that
    metadata (or defaults) and the first read of a file brings its bytes back."""
    pre = "imp-" + secrets.token_hex(3)
    objs = {}
    for i in range(1000):
        name = f"d{i % 10}/e{i % 7}/f{i:04d}.bin"
        data = hashlib.sha256(f"{pre}{i}".encode()).digest() * (i % 50)
        if i == 999:
            data = b"W" * 300000
        meta = {} if i % 3 else {"owner": str(1000 + i % 5), "group": str(2000 + i % 3),
                                 "permissions": "0640", "modtime": "2021-02-03T04:05:06Z"}
        objs[name] = (data, meta)
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda kv: hsm.store.put(f"{pre}/{kv[0]}", kv[1][0], kv[1][1]),
                    objs.items()))
    ct2 = start_copytool(hsm, hsm.store.ct_args(pre), archive_id=2, name=f"ct-{pre}", bw=0,
                         threads=4)
    dest = mnt / pre
    dest.mkdir()
    r = nacre("hsm", "import", "--archive-id", 2, *hsm.store.ct_args(pre), dest, timeout=300)
    # posix lists directories; blob stores have none, only names with slashes
    want = "80 directories" if hsm.backend == "posix" else ""
    assert f"import: 1000 files, {want}" in r.stderr, r.stderr
    assert len(list(dest.glob("d*/e*"))) == 70
    t0 = time.time()
    for name, (data, meta) in objs.items():
        st = os.stat(dest / name)
        assert st.st_size == len(data), name
        if meta:
            assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == \
                (int(meta["owner"]), int(meta["group"]), 0o640), name
            assert st.st_mtime == 1612325106, name
        else:  # defaults: the importer's uid/gid, 0644
            assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (0, 0, 0o644), name
            assert 1600000000 < st.st_mtime <= t0 + 5, name
    w = dest / "d9/e5/f0999.bin"
    assert nacre("hsm_state", w).stdout == \
        f"{w}: (0x0000000d) released exists archived, archive_id:2\n"
    # the first read of each sampled file restores it: every directory, both kinds of meta
    sample = sorted(objs)[::17] + ["d9/e5/f0999.bin", "d0/e0/f0000.bin"]
    for name in sample:
        assert (dest / name).read_bytes() == objs[name][0], name
    assert not state(w)[0] & RELEASED
    assert state(dest / "d1/e1/f0001.bin")[0] & RELEASED  # not read: still a stub
    assert "RESTORE" in ct2.text()
    ct2.kill()


@pytest.mark.parametrize("size", [0, 1, 4097, (3 << 20) + 7, 100 << 20])
def test_sizes_striped_over_4_osts(hsm, mnt, size):
    f = mnt / f"sz{size}"
    nacre("setstripe", "-c", 4, "-S", "1M", f)
    data = os.urandom(size)
    f.write_bytes(data)
    nacre("hsm_archive", f)
    wait_state(f, EXISTS | ARCHIVED, timeout=120)
    got, _ = hsm.store.read(obj(hsm, f.name))
    assert hashlib.sha256(got).digest() == hashlib.sha256(data).digest()
    nacre("hsm_release", f)
    assert state(f)[0] & RELEASED
    assert os.stat(f).st_size == size
    drop_caches()
    got = f.read_bytes()
    assert len(got) == size and hashlib.sha256(got).digest() == hashlib.sha256(data).digest()
    assert state(f)[0] == EXISTS | ARCHIVED
    if size >= 100 << 20:
        os.unlink(f)  # keep the tmpfs OSTs roomy


class TcpGate:
    """A TCP forwarder to a backend on a fixed port that can be shut (connections refused
    and the open ones cut) and opened again: the backend goes down and comes back."""

    def __init__(self, endpoint):
        hostport = endpoint.split("//", 1)[1].split("/", 1)
        self.up_host, self.up_port = hostport[0].split(":")[0], int(hostport[0].split(":")[1])
        self.path = "/" + hostport[1] if len(hostport) > 1 else ""
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.lsock, self.conns, self.lock = None, [], threading.Lock()
        self.open()

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}{self.path}"

    def open(self):
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", self.port))
        ls.listen(64)
        self.lsock = ls
        threading.Thread(target=self._accept, args=(ls,), daemon=True).start()

    def shut(self):
        ls, self.lsock = self.lsock, None
        ls.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked on it: close alone does not
        ls.close()
        with self.lock:
            for c in self.conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()
            self.conns = []

    def _accept(self, ls):
        while True:
            try:
                c, _ = ls.accept()
            except OSError:
                return
            u = socket.create_connection((self.up_host, self.up_port))
            with self.lock:
                self.conns += [c, u]
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def failed_in_list(mnt, fid, action):
    for line in nacre("hsm", "list", mnt).stdout.splitlines():
        if f"fid={fid}" in line and f"action={action}" in line and "status=FAILED" in line:
            return line
    return None


def test_backend_down_then_back(hsm, mnt):
    if hsm.backend == "posix":
        pytest.skip("a directory does not go down; the cloud backends cover this")
    gate = TcpGate(hsm.store.endpoint)
    pre = "down-" + secrets.token_hex(3)
    ct3 = start_copytool(hsm, hsm.store.ct_args(pre, gate.endpoint), archive_id=3,
                         name=f"ct-{pre}", bw=0)
    try:
        f, g = mnt / "down-f", mnt / "down-g"
        fdata = write_random(f, 3 << 20, seed=30)
        gdata = write_random(g, 2 << 20, seed=31)
        nacre("hsm_archive", "--archive", 3, f)
        wait_state(f, EXISTS | ARCHIVED)
        nacre("hsm_release", f)
        st_f = os.stat(f)

        gate.shut()
        nacre("hsm_archive", "--archive", 3, g)
        nacre("hsm_restore", f)
        gfid = os.getxattr(g, "nacre.fid").decode()
        ffid = os.getxattr(f, "nacre.fid").decode()
        ga = wait_for(lambda: failed_in_list(mnt, gfid, "ARCHIVE"), 90, "ARCHIVE to fail")
        fr = wait_for(lambda: failed_in_list(mnt, ffid, "RESTORE"), 90, "RESTORE to fail")
        assert " error=" in ga and " error=" in fr, (ga, fr)
        # the copytool's log says which service could not be reached
        assert f"127.0.0.1:{gate.port}" in ct3.text(), ct3.text()[-2000:]
        assert re.search(r"ARCHIVE .* failed: ", ct3.text())
        # nacre's data and state are untouched
        assert g.read_bytes() == gdata
        assert not state(g)[0] & ARCHIVED
        assert state(f)[0] == EXISTS | ARCHIVED | RELEASED
        assert os.stat(f).st_size == st_f.st_size and os.stat(f).st_mtime == st_f.st_mtime

        gate.open()  # back: new requests succeed
        nacre("hsm_archive", "--archive", 3, g)
        wait_state(g, EXISTS | ARCHIVED)
        assert hsm.store.read(f"{pre}/down-g")[0] == gdata
        nacre("hsm_restore", f)
        wait_state(f, EXISTS | ARCHIVED, RELEASED)
        drop_caches()
        assert f.read_bytes() == fdata
    finally:
        ct3.kill()
        if gate.lsock:
            gate.shut()


def test_open_without_copytool_times_out(make_cluster):
    c = make_cluster(start=False, osts=1)
    c.start()
    c.mount(opts=["timeout=3"])
    c.wait_osts_up()
    m = c.mounts[0].path
    arch = c.dir / "archive"
    arch.mkdir()
    ct = start_copytool(c, ["--backend", f"posix:{arch}"], bw=0)
    f = m / "t1"
    write_random(f, 4096, seed=20)
    nacre("hsm_archive", f)
    wait_state(f, EXISTS | ARCHIVED)
    nacre("hsm_release", f)
    ct.kill()
    t0 = time.monotonic()
    with pytest.raises(OSError) as e:
        f.read_bytes()
    assert e.value.errno == 5  # EIO
    assert time.monotonic() - t0 < 30
    wait_for(lambda: "did not finish within" in c.mounts[0].proc.text(), 10,
             "a log line naming the file")


def test_restore_recursive_bounded_and_names_failures(make_cluster):
    c = make_cluster(start=False, osts=1)
    c.start()
    c.mount()
    c.wait_osts_up()
    d = c.mounts[0].path / "rb"
    d.mkdir()
    arch = c.dir / "archive"
    arch.mkdir()
    ct = start_copytool(c, ["--backend", f"posix:{arch}"], bw=0)
    files = [d / f"f{i}" for i in range(3)]
    datas = [write_random(p, 100000 + i, seed=30 + i) for i, p in enumerate(files)]
    nacre("hsm_archive", *files)
    for p in files:
        wait_state(p, EXISTS | ARCHIVED)
    nacre("hsm_release", *files)
    ct.kill()
    # no copytool: the wait ends at --timeout, naming every file and why
    t0 = time.monotonic()
    r = nacre("hsm_restore", "-r", "--timeout", 3, d, check=False)
    assert r.returncode == 1
    assert time.monotonic() - t0 < 20
    assert "3 of 3 files still released after" in r.stderr and "--timeout 3" in r.stderr, \
        r.stderr
    for p in files:
        assert f"  {p}: RESTORE waiting: is a copytool running" in r.stderr, r.stderr
    assert "0/3 files restored" in r.stderr
    assert "--timeout" in nacre("hsm_restore", "--timeout", 3, files[0], check=False).stderr
    # a copytool again, but one archive copy is gone: that restore fails, the wait does not
    # last until the timeout, and the failed file is named
    (arch / "rb" / "f0").unlink()
    start_copytool(c, ["--backend", f"posix:{arch}"], bw=0, name="ct2")
    t0 = time.monotonic()
    r = nacre("hsm_restore", "-r", "--timeout", 120, d, check=False)
    assert r.returncode == 1
    assert time.monotonic() - t0 < 60
    assert "1 of 3 files could not be restored" in r.stderr, r.stderr
    assert f"  {files[0]}: no restore queued: it failed" in r.stderr, r.stderr
    assert "2/3 files restored" in r.stderr and ", 1 failed" in r.stderr, r.stderr
    for p, data in list(zip(files, datas))[1:]:
        assert p.read_bytes() == data


@contextlib.contextmanager
def up_with_archive(tmp_path, arch, fsname, osts, dest):
    """`nacre up` with a copytool on posix:ARCH importing into DEST; yields (dir, mount,
    the up command's result) and takes the cluster down after."""
    from test_cli import _free_base_port
    d = tmp_path / "up"
    mnt = d / "mnt"
    try:
        r = nacre("up", "--dir", d, "--osts", osts, "--port", _free_base_port(3),
                  "--fsname", fsname, "--hsm-backend", f"posix:{arch}", "--hsm-import", dest,
                  timeout=120)
        yield d, mnt, r
    finally:
        nacre("down", "--dir", d, check=False, timeout=60)
        subprocess.run(["fusermount3", "-u", "-z", str(mnt)], capture_output=True)


def test_nacre_up_with_hsm_backend_and_import(tmp_path):
    """`nacre up --hsm-backend URL --hsm-import DESTDIR`: a copytool starts with the
    cluster, the archive appears as released stubs, and reads restore them."""
    arch = tmp_path / "archive"
    (arch / "models" / "v1").mkdir(parents=True)
    (arch / "models" / "v1" / "w.bin").write_bytes(b"W" * 300000)
    (arch / "models" / "v1" / ".w.bin.nacre-meta").write_text(
        "owner=1234\ngroup=4321\npermissions=0640\nmodtime=2021-02-03T04:05:06Z\n")
    (arch / "readme.txt").write_bytes(b"hello archive\n")
    with up_with_archive(tmp_path, arch, "hsmup", 2, "data") as (d, mnt, r):
        assert re.search(r"copytool for archive 1 on posix:", r.stdout), r.stdout
        assert "imported posix:" in r.stdout, r.stdout
        roles = [l.split()[0] for l in (d / "cluster.pids").read_text().splitlines()]
        assert "copytool" in roles
        w = mnt / "data" / "models" / "v1" / "w.bin"
        st = os.stat(w)
        assert (st.st_size, st.st_uid, st.st_gid, st.st_mode & 0o7777) == \
            (300000, 1234, 4321, 0o640)
        assert nacre("hsm_state", w).stdout == \
            f"{w}: (0x0000000d) released exists archived, archive_id:1\n"
        assert w.read_bytes() == b"W" * 300000
        assert (mnt / "data" / "readme.txt").read_bytes() == b"hello archive\n"
        # changed and archived: back to the object it came from, no data/readme.txt object
        (mnt / "data" / "readme.txt").write_bytes(b"changed\n")
        nacre("hsm_archive", mnt / "data" / "readme.txt")
        wait_state(mnt / "data" / "readme.txt", EXISTS | ARCHIVED, DIRTY)
        assert (arch / "readme.txt").read_bytes() == b"changed\n"
        assert not (arch / "data").exists()
        # the copytool archives too
        f = mnt / "new"
        f.write_bytes(b"new data")
        nacre("hsm_archive", f)
        wait_state(f, EXISTS | ARCHIVED)
        assert (arch / "new").read_bytes() == b"new data"
        # the directory remembers its backend: asking again only finds the cluster running
        r = nacre("up", "--dir", d, "--hsm-import", "x", check=False)
        assert r.returncode != 0 and "already running" in r.stderr, r.stderr
        r = nacre("up", "--dir", tmp_path / "fresh", "--hsm-import", "x", check=False)
        assert r.returncode != 0 and "need --hsm-backend" in r.stderr, r.stderr


def test_nacre_up_imports_into_the_root(tmp_path):
    """`--hsm-import /` is the new file system's root (not the host's /), as is the mount
    point itself; the import lands at the top of the mount."""
    arch = tmp_path / "archive"
    (arch / "top").mkdir(parents=True)
    (arch / "top" / "a.txt").write_bytes(b"at the root\n")
    with up_with_archive(tmp_path, arch, "rootimp", 1, "/") as (d, mnt, r):
        assert f"into {mnt} " in r.stdout, r.stdout
        assert (mnt / "top" / "a.txt").read_bytes() == b"at the root\n"
        # nacre down stops the copytool before the servers: it ends on SIGTERM itself
        # (it was killed after 10 s while its MDS went away beside it)
        t0 = time.monotonic()
        r = nacre("down", "--dir", d, timeout=60)
        assert time.monotonic() - t0 < 8, r.stdout + r.stderr
        assert "did not stop" not in r.stderr, r.stderr
        assert "ct: stopping after the 0 actions it holds" in (d / "copytool.log").read_text()


# ---- import round trips: the archive-name rule (an imported file archives back to the
# object it came from; a rename moves nothing), the archive location recorded per file and
# checked by the copytool, re-import into a populated tree (skip, --update), and the
# metadata styles the copytool writes (--meta-style). docs/CONTRACTS.md has the rule
# ("Archive names", "Archive locations").

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
    why = (f"x.bin is in {st.url(pre_a)} (imported from or archived to there), this copytool "
           f"serves {st.url(pre_b)}: run a copytool for archive 4 on {st.url(pre_a)}")
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
