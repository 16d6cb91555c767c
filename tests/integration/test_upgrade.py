"""nacre-mount --upgrade: a new nacre-mount process takes over the live /dev/fuse session of
the running one. Applications keep their open files (reading, writing, unlinked-but-open) and
their cluster locks; the mount never goes away; the old process exits without unmounting."""
import fcntl
import os
import signal
import struct
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import Proc, binary, daemon_env, free_port, fuse_ring, mounted_dirs, wait_for


@pytest.fixture(autouse=True)
def dev_fuse_transport():
    # A session on io_uring cannot be handed over (test_fuse_ring.py checks the refusal).
    with fuse_ring(False):
        yield

SIZE = 2 * 1024 * 1024

# Reads the file over and over through FUSE (the page cache is dropped before each pass) and
# checks every byte; counts passes in a file; exits 1 at the first error or wrong byte.
READER = r"""
import os, sys
path, count_file, stop_file, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
want = bytes((i * 31 + (i >> 12)) & 0xff for i in range(size))
fd = os.open(path, os.O_RDONLY)
passes = 0
while not os.path.exists(stop_file):
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    off = 0
    while off < size:
        n = min(256 * 1024, size - off)
        got = os.pread(fd, n, off)
        if got != want[off:off + n]:
            print(f"wrong bytes at {off} after {passes} passes", flush=True)
            sys.exit(1)
        off += n
    passes += 1
    with open(count_file + ".tmp", "w") as f:
        f.write(str(passes))
    os.replace(count_file + ".tmp", count_file)
os.close(fd)
print(f"passes {passes}", flush=True)
"""


def pattern(size):
    return bytes((i * 31 + (i >> 12)) & 0xff for i in range(size))


def mount_line(path):
    with open("/proc/self/mounts") as f:
        for line in f:
            if line.split()[1] == str(path):
                return line
    return None


def upgrade(c, m, extra=()):
    """Runs nacre-mount --upgrade in the foreground; returns the new process once it took
    over and the old one exited."""
    old = m.proc
    n = len(c.extra)
    argv = [binary("nacre-mount"), "--upgrade", str(m.path), "-f", *extra]
    p = Proc(f"upgrade{n}-{m.path.name}", argv, c.dir / f"{m.path.name}-upgrade{n}.log").start()
    c.extra.append(p)
    wait_for(lambda: "took over" in p.text() or not p.alive(), 60,
             f"nacre-mount --upgrade to take over {m.path}")
    assert p.alive(), f"--upgrade failed:\n{p.text()}\nold process:\n{old.text()}"
    wait_for(lambda: not old.alive(), 30, "the old nacre-mount to exit")
    assert old.p.returncode == 0, old.text()
    m.proc = p
    if old not in c.extra:
        c.extra.append(old)  # its log is still scanned for sanitizer reports
    return p


def bdi_read_ahead_kb(path):
    """read_ahead_kb of the mount's bdi, found through /proc/self/mountinfo."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            if parts[4] == str(path):
                dev = parts[2]
    for p in (f"/sys/class/bdi/{dev}/read_ahead_kb", f"/sys/class/bdi/{dev}-fuse/read_ahead_kb"):
        if os.path.exists(p):
            return int(open(p).read())
    return None


def read_count(path):
    try:
        return int(path.read_text())
    except (FileNotFoundError, ValueError):
        return 0


def test_reader_keeps_reading_across_upgrade(make_cluster, nacre_cli):
    c = make_cluster(osts=2)
    m = c.mounts[0]
    f = m.path / "striped"
    nacre_cli("setstripe", "-c", 2, "-S", "128K", f, check=True)
    f.write_bytes(pattern(SIZE))
    count, stop = c.dir / "reader.count", c.dir / "reader.stop"
    reader = subprocess.Popen([sys.executable, "-c", READER, str(f), str(count), str(stop),
                               str(SIZE)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        wait_for(lambda: read_count(count) >= 2 or reader.poll() is not None, 30,
                 "the reader's first passes")
        assert reader.poll() is None, reader.communicate()[0]
        before_line = mount_line(m.path)
        old_pid = m.proc.p.pid
        new = upgrade(c, m)
        after_upgrade = read_count(count)
        wait_for(lambda: read_count(count) >= after_upgrade + 3 or reader.poll() is not None,
                 30, "reader passes served by the new process")
        assert reader.poll() is None, reader.communicate()[0]
    finally:
        stop.write_text("")
        out = reader.communicate(timeout=60)[0]
    assert reader.returncode == 0, out
    assert not os.path.exists(f"/proc/{old_pid}/status") or \
        "zombie" in open(f"/proc/{old_pid}/status").read()
    assert mount_line(m.path) == before_line
    # the new process serves new files, and lists the old ones
    (m.path / "after").write_bytes(b"created after the upgrade")
    assert (m.path / "after").read_bytes() == b"created after the upgrade"
    assert sorted(os.listdir(m.path)) == ["after", "striped"]
    assert f.read_bytes() == pattern(SIZE)
    # the kernel readahead the first process raised is kept (and set again)
    assert bdi_read_ahead_kb(m.path) == 4096
    # a later stop unmounts, as the original process would
    new.kill(signal.SIGTERM)
    assert new.p.returncode == 0, new.text()
    wait_for(lambda: str(m.path) not in mounted_dirs(), 10, f"{m.path} unmounted")


def test_writer_across_upgrade(make_cluster):
    c = make_cluster(osts=2)
    m = c.mounts[0]
    a, b = os.urandom(3 * 1024 * 1024 + 17), os.urandom(1024 * 1024 + 5)
    fd = os.open(m.path / "w", os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        assert os.write(fd, a) == len(a)   # buffered by write-behind in the old process
        upgrade(c, m)
        assert os.write(fd, b) == len(b)
        os.fsync(fd)
    finally:
        os.close(fd)
    other = c.mount(name="mnt-check")
    assert (other.path / "w").read_bytes() == a + b
    assert (m.path / "w").read_bytes() == a + b
    # twice: the successor can hand over in turn
    upgrade(c, m)
    assert (m.path / "w").read_bytes() == a + b


def test_unlinked_open_file_survives_upgrade(make_cluster):
    c = make_cluster(osts=2)
    m = c.mounts[0]
    data = os.urandom(512 * 1024)
    p = m.path / "gone"
    fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
        os.unlink(p)
        upgrade(c, m)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        assert os.pread(fd, len(data), 0) == data
        os.pwrite(fd, b"more", len(data))
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        assert os.pread(fd, len(data) + 4, 0) == data + b"more"
        assert os.fstat(fd).st_size == len(data) + 4
    finally:
        os.close(fd)
    assert not p.exists()


def test_upgrade_of_something_else_fails_clearly(tmp_path):
    exe = binary("nacre-mount")
    r = subprocess.run([exe, "--upgrade", str(tmp_path)], capture_output=True, text=True,
                       timeout=30, env=daemon_env())
    assert r.returncode != 0
    assert f"{tmp_path} is not a mount point, so not a nacre mount" in r.stderr, r.stderr
    r = subprocess.run([exe, "--upgrade", "/proc"], capture_output=True, text=True,
                       timeout=30, env=daemon_env())
    assert r.returncode != 0
    assert "/proc is not a nacre mount (its file system type is proc)" in r.stderr, r.stderr
    r = subprocess.run([exe, "--upgrade", str(tmp_path / "missing")], capture_output=True,
                       text=True, timeout=30, env=daemon_env())
    assert r.returncode != 0 and "missing" in r.stderr, r.stderr


FL = "hhqqi4x"  # struct flock on x86-64 and aarch64 Linux


def setlk(fd, typ, cmd=fcntl.F_SETLK):
    fcntl.fcntl(fd, cmd, struct.pack(FL, typ, 0, 0, 0, 0))


def test_cluster_locks_are_handed_over(make_cluster):
    # The MDS drops a client's locks the moment its connection closes: they survive the old
    # process only if the new one took them over before.
    c = make_cluster(start=False, osts=2)
    mds_argv = c.mds_argv
    c.mds_argv = lambda fmt: mds_argv(fmt) + ["--lock-evict-timeout", "0"]
    c.start()
    m = c.mount()
    c.wait_osts_up()
    other = c.mount(name="mnt-other")
    (m.path / "lk").write_bytes(b"x" * 100)
    fd = os.open(m.path / "lk", os.O_RDWR)
    ofd = os.open(other.path / "lk", os.O_RDWR)
    try:
        setlk(fd, fcntl.F_WRLCK)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        upgrade(c, m)
        # the old process and its MDS connection are gone; the locks are not
        time.sleep(0.5)
        for attempt in (lambda: setlk(ofd, fcntl.F_WRLCK),
                        lambda: fcntl.flock(ofd, fcntl.LOCK_EX | fcntl.LOCK_NB)):
            try:
                attempt()
                raise AssertionError("a lock held across the upgrade was granted elsewhere")
            except BlockingIOError:
                pass
            except PermissionError:
                pass
        # released through the new process on close (flock by RELEASE, which the kernel
        # sends after close(2) returned)
        os.close(fd)
        fd = -1
        setlk(ofd, fcntl.F_WRLCK)

        def flock_free():
            try:
                fcntl.flock(ofd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                return False
        wait_for(flock_free, 10, "the flock lock released by the new process")
    finally:
        if fd >= 0:
            os.close(fd)
        os.close(ofd)


def test_upgrade_refused_while_a_lock_waits(make_cluster):
    c = make_cluster(osts=2)
    m = c.mounts[0]
    other = c.mount(name="mnt-other")
    (m.path / "lk").write_bytes(b"x")
    ofd = os.open(other.path / "lk", os.O_RDWR)
    fcntl.flock(ofd, fcntl.LOCK_EX)
    waiter = subprocess.Popen([sys.executable, "-c",
                               "import fcntl, sys; f = open(sys.argv[1], 'r+'); "
                               "fcntl.flock(f, fcntl.LOCK_EX); print('got it', flush=True)",
                               str(m.path / "lk")], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)  # the waiter is in its retry loop
        old = m.proc
        r = subprocess.run([binary("nacre-mount"), "--upgrade", str(m.path), "-f"],
                           capture_output=True, text=True, timeout=60, env=daemon_env())
        assert r.returncode != 0
        assert "wait for a cluster lock" in r.stderr, r.stderr
        assert old.alive()
        assert (m.path / "lk").read_bytes() == b"x"
        fcntl.flock(ofd, fcntl.LOCK_UN)
        assert waiter.communicate(timeout=30)[0].strip() == "got it"
    finally:
        os.close(ofd)
        if waiter.poll() is None:
            waiter.kill()
    # with the wait over, the upgrade goes through
    upgrade(c, m)
    assert (m.path / "lk").read_bytes() == b"x"


def test_failed_takeover_leaves_the_old_process_serving(make_cluster):
    c = make_cluster(osts=2)
    m = c.mounts[0]
    data = os.urandom(300 * 1024)
    fd = os.open(m.path / "kept", os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.write(fd, data)
        old = m.proc
        # the kernel decided at FUSE_INIT whether lock calls reach the process
        r = subprocess.run([binary("nacre-mount"), "--upgrade", str(m.path), "-f", "-o",
                            "localflock"], capture_output=True, text=True, timeout=120,
                           env=daemon_env())
        assert r.returncode != 0
        assert "cannot change in an upgrade" in r.stderr, r.stderr
        assert old.alive()
        # the new process cannot reach the MDS with this key: it gives up after the old
        # one stopped serving, which must then serve again
        bad_key = c.dir / "wrong.key"
        bad_key.write_text("00" * 32 + "\n")
        os.chmod(bad_key, 0o600)
        r = subprocess.run([binary("nacre-mount"), "--upgrade", str(m.path), "-f", "-o",
                            f"key_file={bad_key}"], capture_output=True, text=True, timeout=120,
                           env=daemon_env())
        assert r.returncode != 0
        assert "cannot take over: cannot mount" in r.stderr, r.stderr
        assert old.alive()
        assert "serving again" in old.text()
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        assert os.pread(fd, len(data), 0) == data
        (m.path / "new").write_bytes(b"still served")
        assert (m.path / "new").read_bytes() == b"still served"
        upgrade(c, m)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        assert os.pread(fd, len(data), 0) == data
    finally:
        os.close(fd)


def test_upgrade_as_daemon_keeps_metrics(make_cluster):
    c = make_cluster(osts=2)
    port = free_port()
    m = c.mount(opts=[f"metrics_addr=127.0.0.1:{port}"], name="mnt-metrics")
    url = f"http://127.0.0.1:{port}/metrics"
    assert b"nacre_client_open_files" in urllib.request.urlopen(url, timeout=10).read()
    (m.path / "f").write_bytes(b"daemon")
    old = m.proc
    # without -f, as systemd or an operator runs it: returns once the new daemon serves
    r = subprocess.run([binary("nacre-mount"), "--upgrade", str(m.path)], capture_output=True,
                       text=True, timeout=120, env=daemon_env())
    assert r.returncode == 0, r.stderr
    wait_for(lambda: not old.alive(), 30, "the old nacre-mount to exit")
    assert (m.path / "f").read_bytes() == b"daemon"

    def new_pid():
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    argv = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
                except OSError:
                    continue
                if b"--upgrade" in argv and str(m.path).encode() in argv:
                    return int(d)
        return None
    pid = wait_for(new_pid, 10, "the new nacre-mount daemon")

    # the metrics port is served again once the old process let go of it
    def metrics():
        try:
            return b"nacre_client_read_bytes_total" in urllib.request.urlopen(url, timeout=5).read()
        except OSError:
            return False
    wait_for(metrics, 20, "metrics served by the new process")
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: str(m.path) not in mounted_dirs(), 20, f"{m.path} unmounted")
    wait_for(lambda: not os.path.exists(f"/proc/{pid}"), 20, "the new daemon to exit")
