"""Fixtures for nacre integration tests: real servers on 127.0.0.1, mounted with FUSE.

Binaries come from $NACRE_BUILD (default <repo>/build). Every cluster lives in its own
temporary directory; ports are ephemeral. When a test fails, the daemons' logs and the commands
that reproduce the cluster are attached to the report. Daemon logs are checked for sanitizer
reports at teardown. Where FUSE is missing the tests fail: they never skip.
"""
import contextlib
import errno
import functools
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("NACRE_BUILD", REPO / "build")).resolve()
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "runtime error:", "ThreadSanitizer")
# The fixtures' own mounts and tools are admin clients, as the mount of `nacre up` is: the
# nodemap rule local-admin of a new file system matches this client name, so tests running
# as root keep root's powers (docs/security.md, "Nodemaps"). A test wanting a squashed client
# mounts with client_name=<another name>.
ADMIN_CLIENT = "nacre-up"
os.environ.setdefault("NACRE_CLIENT_NAME", ADMIN_CLIENT)


def binary(name):
    path = BUILD / name
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is not built: run `cmake -B {BUILD} && cmake --build {BUILD}` "
                    f"(or set NACRE_BUILD to the build directory)")
    return str(path)


@functools.lru_cache(maxsize=None)
def sanitized_build():
    """Whether the build under test has ASan (or TSan) in it: such a run takes two to three
    times as long, so the longest tests run shorter there (the same paths, less of them)."""
    r = subprocess.run(["ldd", binary("nacre-mds")], capture_output=True, text=True)
    return "libasan" in r.stdout or "libtsan" in r.stdout



def as_user(fn, uid=65534, gid=65534, groups=()):
    """Runs fn() in a forked child as uid/gid with supplementary groups; returns its errno
    (0 = success, 255 = another failure)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 0
        try:
            os.setgroups(list(groups))
            os.setgid(gid)
            os.setuid(uid)
            fn()
        except OSError as e:
            code = e.errno
        except BaseException:
            code = 255
        os.write(w, bytes([code & 0xff]))
        os._exit(0)
    os.close(w)
    code = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    return code[0] if code else 255


def load_libnacre():
    """libnacre.so of the build under test, loaded into this python with ctypes. A sanitizer
    build's library needs the ASan runtime loaded first, which python is not: such tests
    skip there (the normal build runs them)."""
    import ctypes
    lib = BUILD / "libnacre.so"
    ldd = subprocess.run(["ldd", str(lib)], capture_output=True, text=True).stdout
    if "libasan" in ldd or "libubsan" in ldd:
        pytest.skip("libnacre is built with sanitizers: it cannot be loaded into python")
    return ctypes.CDLL(str(lib))

_ports_given = set()


def free_port():
    """A port nobody listens on right now (bind to 0, read it, close), and none this run
    handed out before: a test that takes a metrics port and then starts a cluster asks twice
    before anything binds, and the kernel gives a just-closed port out again."""
    for _ in range(1000):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _ports_given:
            _ports_given.add(port)
            return port
    pytest.fail("no free TCP port on 127.0.0.1 that this run has not handed out already")


def require_fuse():
    if not os.path.exists("/dev/fuse"):
        pytest.fail("FUSE is not available: /dev/fuse is missing (run `modprobe fuse`, or give "
                    "the container --device /dev/fuse --cap-add SYS_ADMIN)")
    if not shutil.which("fusermount3"):
        pytest.fail("fusermount3 is missing: apt-get install fuse3")


# The kernel offers FUSE over io_uring to new mounts only while this says Y (Linux 6.14+).
FUSE_RING_PARAM = Path("/sys/module/fuse/parameters/enable_uring")


@contextlib.contextmanager
def fuse_ring(on):
    """Mounts made inside get the io_uring transport (on) or /dev/fuse (off); yields whether
    the kernel can offer it at all. Mounts keep what they negotiated."""
    if not FUSE_RING_PARAM.exists():
        yield False
        return
    old = FUSE_RING_PARAM.read_text().strip()
    FUSE_RING_PARAM.write_text("Y" if on else "N")
    try:
        yield True
    finally:
        FUSE_RING_PARAM.write_text(old)


def session_wb_opts():
    """NACRE_TEST_WB=on mounts every test mount with -o wb=on (metadata write-back), to run
    the suites with it (docs/writeback.md); off or unset: each mount as its test asks."""
    mode = os.environ.get("NACRE_TEST_WB", "off")
    if mode not in ("on", "off"):
        pytest.exit(f"NACRE_TEST_WB={mode}: use on or off", 2)
    return ["wb=on"] if mode == "on" else []


def session_ring_mode():
    """NACRE_TEST_FUSE_RING: on (the default; io_uring where the kernel has it), off, keep."""
    return os.environ.get("NACRE_TEST_FUSE_RING", "on")


@pytest.fixture(scope="session", autouse=True)
def fuse_transport():
    mode = session_ring_mode()
    if mode not in ("on", "off", "keep"):
        pytest.exit(f"NACRE_TEST_FUSE_RING={mode}: use on, off or keep", 2)
    if mode == "keep":
        yield
        return
    with fuse_ring(mode == "on"):
        yield


def mounted_dirs():
    out = {}
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3:
                d = parts[1].replace("\\040", " ")
                out[d] = parts[2]
    return out


def wait_for(pred, timeout, what, interval=0.05):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def daemon_env():
    env = dict(os.environ)
    # Daemons are killed with -9 in some tests: leak reports there would be noise.
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
    return env


class Proc:
    def __init__(self, role, argv, log, env=None):
        self.role, self.argv, self.log = role, argv, Path(log)
        self.env = dict(env or {})  # added to daemon_env(), e.g. NACRE_FAULT
        self.p = None

    def start(self):
        with open(self.log, "ab") as lf:
            envs = "".join(f"{k}={shlex.quote(v)} " for k, v in self.env.items())
            lf.write(f"=== {time.strftime('%H:%M:%S')} {envs}{shlex.join(self.argv)}\n".encode())
            lf.flush()
            self.p = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=lf, stderr=lf,
                                      env={**daemon_env(), **self.env},
                                      start_new_session=True)
        return self

    def alive(self):
        return self.p is not None and self.p.poll() is None

    def kill(self, sig=signal.SIGKILL):
        if self.alive():
            self.p.send_signal(sig)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(5)

    def text(self):
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""


class Mount:
    def __init__(self, cluster, path, proc):
        self.cluster, self.path, self.proc = cluster, Path(path), proc

    def __fspath__(self):
        return str(self.path)

    def __truediv__(self, other):
        return self.path / other

    def unmount(self):
        if str(self.path) in mounted_dirs():
            r = subprocess.run(["fusermount3", "-u", str(self.path)], capture_output=True)
            if r.returncode != 0:
                subprocess.run(["fusermount3", "-u", "-z", str(self.path)], capture_output=True)
        if self.proc.alive():
            try:
                self.proc.p.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class Cluster:
    """One MDS, OSTs spread over OSS processes (ost i on oss i % noss), any number of mounts.
    mds_args and oss_args are added to every start of those daemons (--allow-fault-injection,
    --recovery-window 30...), env to their environment (NACRE_FAULT); tests may change them
    between restarts."""

    def __init__(self, osts=2, oss=None, fsname="testfs", ost_dirs=None, mds_args=(),
                 oss_args=(), env=None, prefix="nacre-it-"):
        require_fuse()
        # Under /tmp with mode 0755 (pytest's tmp is 0700) so non-root children can reach it.
        self.dir = Path(tempfile.mkdtemp(prefix=prefix))
        os.chmod(self.dir, 0o755)
        self.fsname = fsname
        self.nosts = osts
        self.noss = oss or osts
        self.key = self.dir / "cluster.key"
        self.key.write_text(secrets.token_hex(32) + "\n")
        os.chmod(self.key, 0o600)
        self.mds_port = free_port()
        self.oss_ports = [free_port() for _ in range(self.noss)]
        self.ost_dirs = ost_dirs or {}
        self.mds = None
        self.oss = [None] * self.noss
        self.mounts = []
        self.extra = []  # other processes started by tests, for log collection
        self.mds_args, self.oss_args = list(mds_args), list(oss_args)
        self.env = dict(env or {})

    # ---- addresses and paths
    @property
    def mds_addr(self):
        return f"127.0.0.1:{self.mds_port}"

    @property
    def spec(self):
        return f"{self.mds_addr}:/{self.fsname}"

    def ost_dir(self, i):
        return Path(self.ost_dirs.get(i, self.dir / f"ost{i}"))

    def osts_of(self, j):
        return [i for i in range(self.nosts) if i % self.noss == j]

    def oss_of(self, ost):
        return ost % self.noss

    # ---- daemons
    def mds_argv(self, fmt):
        argv = [binary("nacre-mds"), "--fsname", self.fsname, "--data", str(self.dir / "mdt"),
                "--listen", self.mds_addr, "--key-file", str(self.key)] + self.mds_args
        return argv + (["--format"] if fmt else [])

    def oss_argv(self, j, fmt):
        argv = [binary("nacre-oss"), "--fsname", self.fsname, "--mds", self.mds_addr,
                "--listen", f"127.0.0.1:{self.oss_ports[j]}", "--key-file", str(self.key)]
        for i in self.osts_of(j):
            argv += ["--ost", f"{i}:{self.ost_dir(i)}"]
        return argv + self.oss_args + (["--format"] if fmt else [])

    def start_mds(self, fmt=True):
        log = self.dir / "mds.log"
        before = log.stat().st_size if log.exists() else 0  # a restart appends to it
        self.mds = Proc("mds", self.mds_argv(fmt), log, self.env).start()
        wait_for(lambda: "nacre-mds: serving" in self.mds.text()[before:] or
                 not self.mds.alive(), 15, f"nacre-mds to print 'serving' in {self.mds.log}")
        assert self.mds.alive(), f"nacre-mds exited:\n{self.mds.text()}"

    def start_oss(self, j, fmt=True):
        self.oss[j] = Proc(f"oss{j}", self.oss_argv(j, fmt), self.dir / f"oss{j}.log",
                           self.env).start()
        return self.oss[j]

    def start(self):
        self.start_mds(fmt=True)
        for j in range(self.noss):
            self.start_oss(j, fmt=True)
        return self

    def targets(self, mnt=None):
        """Parsed nacre.targets of a mount: {("OST", 0): up, ...}."""
        mnt = mnt or self.mounts[0]
        text = os.getxattr(os.fspath(mnt), "nacre.targets").decode()
        out = {}
        for line in text.splitlines():
            f = line.split()
            if len(f) >= 3:
                out[(f[0], int(f[1]))] = f[2] == "1"
        return out

    def wait_osts_up(self, timeout=25, osts=None):
        osts = range(self.nosts) if osts is None else osts

        def all_up():
            for j, p in enumerate(self.oss):
                if p is not None and not p.alive():
                    raise AssertionError(f"nacre-oss {j} exited:\n{p.text()}")
            try:
                t = self.targets()
            except OSError:
                return False
            return all(t.get(("OST", i)) for i in osts)

        wait_for(all_up, timeout, f"OSTs {list(osts)} to be up")

    def wait_ost_down(self, i, timeout=20):
        wait_for(lambda: self.targets().get(("OST", i)) is False, timeout, f"OST{i} marked down")

    def mount(self, opts=(), name=None, wait=True, spec_suffix=""):
        mnt = self.dir / (name or f"mnt{len(self.mounts)}")
        mnt.mkdir(exist_ok=True)
        journal = [] if any(str(x).startswith("wb_journal_dir=") for x in opts) else \
            [f"wb_journal_dir={self.dir}/wbj-{mnt.name}"]  # write-back's, in the test's dir
        o = ",".join([f"key_file={self.key}"] + session_wb_opts() + journal + list(opts))
        argv = [binary("nacre-mount"), self.spec + spec_suffix, str(mnt), "-o", o, "-f"]
        p = Proc(f"mount-{mnt.name}", argv, self.dir / f"{mnt.name}.log").start()
        m = Mount(self, mnt, p)
        self.mounts.append(m)
        if wait:
            def ready():
                if not p.alive():
                    raise AssertionError(f"nacre-mount exited:\n{p.text()}")
                return str(mnt) in mounted_dirs()
            wait_for(ready, 20, f"{mnt} to be mounted")
        return m

    def procs(self):
        return [p for p in [self.mds, *self.oss, *[m.proc for m in self.mounts], *self.extra]
                if p is not None]

    # ---- diagnostics
    def reproduce(self):
        lines = [f"# cluster dir {self.dir}"]
        for p in self.procs():
            envs = "".join(f"{k}={shlex.quote(v)} " for k, v in p.env.items())
            lines.append(envs + shlex.join(p.argv) + " &")
        return "\n".join(lines)

    def logs(self, tail=80):
        out = []
        for p in self.procs():
            lines = p.text().splitlines()
            out.append(f"----- {p.role} ({p.log}) -----")
            out.extend(lines[-tail:])
        return "\n".join(out)

    def sanitizer_reports(self):
        bad = []
        for p in self.procs():
            text = p.text()
            if any(m in text for m in SANITIZER_MARKS):
                bad.append(f"{p.role}: {p.log}")
        return bad

    def stop(self):
        for m in reversed(self.mounts):
            m.unmount()
        for p in self.procs():
            p.kill(signal.SIGTERM)
        bad = self.sanitizer_reports()
        if not bad and not os.environ.get("NACRE_KEEP"):
            for i, d in self.ost_dirs.items():
                if str(d) in mounted_dirs():
                    subprocess.run(["umount", "-l", str(d)], capture_output=True)
            shutil.rmtree(self.dir, ignore_errors=True)
        return bad


class MetricsCluster(Cluster):
    """An MDS with a metrics endpoint, for its per-operation request counts."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.mds_mport = free_port()

    def mds_argv(self, fmt):
        return super().mds_argv(fmt) + ["--metrics-addr", f"127.0.0.1:{self.mds_mport}"]


def md_counts(c):
    """{operation: requests served} from the MDS's md_stats (c: a MetricsCluster)."""
    r = subprocess.run([binary("nacre"), "get_param", "--mount", c.mounts[0].path,
                        "--metrics", f"127.0.0.1:{c.mds_mport}", "mdt.*.md_stats"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    out = {}
    for ln in r.stdout.splitlines():
        m = re.match(r"(\w+) +(\d+) samples", ln)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def start_cluster(cls=None, **kw):
    """Starts, mounts and waits for a cluster of class cls (Cluster or a subclass)."""
    c = (cls or Cluster)(**kw)
    try:
        c.start()
        c.mount()
        c.wait_osts_up()
    except BaseException:
        print(c.logs())
        print("reproduce with:\n" + c.reproduce())
        c.stop()
        raise
    return c


def finish(c):
    bad = c.stop()
    if bad:
        pytest.fail("sanitizer reports in daemon logs (kept in %s): %s\n%s"
                    % (c.dir, ", ".join(bad), c.logs(200)))


@pytest.fixture(scope="module")
def cluster():
    """A module-wide cluster: 4 OSTs on 2 OSS processes, mounted once (cluster.mounts[0])."""
    c = start_cluster(osts=4, oss=2)
    yield c
    finish(c)


@pytest.fixture(scope="module")
def mnt(cluster):
    return cluster.mounts[0].path


@pytest.fixture
def make_cluster():
    """Factory for a private cluster per test (restart and error tests)."""
    made = []

    def make(start=True, cls=None, **kw):
        c = start_cluster(cls, **kw) if start else (cls or Cluster)(**kw)
        made.append(c)
        return c

    yield make
    errors = []
    for c in made:
        bad = c.stop()
        if bad:
            errors.append("sanitizer reports: %s\n%s" % (", ".join(bad), c.logs(200)))
    if errors:
        pytest.fail("\n".join(errors))


@pytest.fixture
def nacre_cli():
    """Runs the nacre CLI: returns a CompletedProcess with text output."""
    exe = binary("nacre")

    def run(*args, check=False, timeout=60, env=None, **kw):
        r = subprocess.run([exe, *map(str, args)], capture_output=True, text=True,
                           timeout=timeout, env=env or daemon_env(), **kw)
        if check and r.returncode != 0:
            raise AssertionError(f"nacre {shlex.join(map(str, args))} failed "
                                 f"({r.returncode}):\n{r.stdout}{r.stderr}")
        return r

    return run


def _clusters_of(item):
    out = []
    for v in getattr(item, "funcargs", {}).values():
        if isinstance(v, Cluster):
            out.append(v)
        elif isinstance(v, Mount):
            out.append(v.cluster)
    return out


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed and call.when in ("call", "setup"):
        for c in _clusters_of(item):
            rep.sections.append((f"nacre logs ({c.dir})", c.logs()))
            rep.sections.append(("reproduce", c.reproduce() + "\nthen: " +
                                 f"/usr/bin/python3 -m pytest -x '{item.nodeid}'"))


def errno_of(fn, *args, **kw):
    """Runs fn; returns ("ok", value) or ("err", errno name)."""
    try:
        return ("ok", fn(*args, **kw))
    except OSError as e:
        return ("err", errno.errorcode.get(e.errno, e.errno))


def dir_fsync_errno(path):
    """fsync of the directory at path: None when it succeeds, else the errno."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
        return None
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)


def run_bench_script(argv, timeout):
    """Runs a bench/ script as a user would (without the fixtures' admin client name) and
    returns (returncode, stdout, stderr, pid). On a timeout it is stopped with SIGTERM, so its
    trap removes what it made (SIGKILL would not)."""
    env = {k: v for k, v in os.environ.items() if k != "NACRE_CLIENT_NAME"}
    p = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    out = err = ""
    try:
        out, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.terminate()
            try:
                out, err = p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
    return p.returncode, out, err, p.pid
