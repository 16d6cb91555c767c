"""libnacre-preload.so: programs run with LD_PRELOAD read and write files of a nacre mount
through libnacre, and what they write is what any other process reads through the mount.
Every test checks the bytes through the mount without the library (and through a second
mount), and that the library did serve the calls (NACRE_PRELOAD_REPORT)."""
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import BUILD, as_user, wait_for
from test_recovery import RecoveryCluster, sha256_of
from test_tools import assert_same_tree, make_tree

LIB = BUILD / "libnacre-preload.so"

pytestmark = pytest.mark.skipif(
    not LIB.exists(), reason="libnacre-preload.so is not built (a sanitizer build has none)")


def preloaded(argv, check=True, **kw):
    env = dict(os.environ, LD_PRELOAD=str(LIB), NACRE_PRELOAD_REPORT="1",
               NACRE_PRELOAD_DEBUG="1")
    env.update(kw.pop("env", {}))
    r = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300,
                       env=env, **kw)
    if check:
        assert r.returncode == 0, f"{argv} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r


def served(stderr, what):
    """Sum over the report lines of the processes of how many `what` calls were served."""
    return sum(int(n) for n in re.findall(rf"\b{what} (\d+)", stderr))


def test_dd_writes_and_reads_striped_file_seen_by_other_mount(cluster, mnt, tmp_path,
                                                               nacre_cli):
    other = cluster.mount()
    src = tmp_path / "src"
    src.write_bytes(os.urandom(24 * 1024 * 1024 + 4097))
    nacre_cli("setstripe", "-c", "2", "-S", "1M", mnt / "pl-dd", check=True)
    r = preloaded(["dd", f"if={src}", f"of={mnt / 'pl-dd'}", "bs=1M", "conv=notrunc"])
    assert served(r.stderr, "write") >= 25, r.stderr
    # the size and the bytes through this mount's kernel path and through another mount
    assert os.stat(mnt / "pl-dd").st_size == src.stat().st_size
    assert (mnt / "pl-dd").read_bytes() == src.read_bytes()
    assert (other / "pl-dd").read_bytes() == src.read_bytes()
    out = tmp_path / "back"
    r = preloaded(["dd", f"if={other / 'pl-dd'}", f"of={out}", "bs=4M"])
    assert served(r.stderr, "read") >= 7, r.stderr
    assert out.read_bytes() == src.read_bytes()


PY_FILE_IO = r"""
import mmap, os, sys
d = sys.argv[1]
p = os.path.join(d, "pl-py")
fd = os.open(p, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
assert os.write(fd, b"a" * 5000) == 5000
assert os.fstat(fd).st_size == 5000
assert os.lseek(fd, 0, os.SEEK_CUR) == 5000
assert os.lseek(fd, -1000, os.SEEK_END) == 4000
assert os.writev(fd, [b"xy", b"", b"z" * 10]) == 12
assert os.pwrite(fd, b"Q", 100) == 1
assert os.pread(fd, 4, 98) == b"aaQa"
os.lseek(fd, 3998, os.SEEK_SET)
buf1, buf2 = bytearray(3), bytearray(20)
assert os.readv(fd, [buf1, buf2]) == 3 + 20
assert bytes(buf1) == b"aax" and bytes(buf2) == b"y" + b"z" * 10 + b"a" * 9
# a duplicate shares the handle and the offset
fd2 = os.dup(fd)
os.lseek(fd, 0, os.SEEK_SET)
assert os.read(fd2, 3) == b"aaa"
assert os.lseek(fd, 0, os.SEEK_CUR) == 3
os.close(fd)
assert os.pread(fd2, 2, 4000) == b"xy"
# a forked child reads through the kernel what the parent wrote, at the shared offset
os.pwrite(fd2, b"fork", 0)
pid = os.fork()
if pid == 0:
    ok = os.pread(fd2, 4, 0) == b"fork" and os.lseek(fd2, 0, os.SEEK_CUR) == 3
    os._exit(0 if ok else 1)
assert os.waitpid(pid, 0)[1] == 0
# ftruncate goes to the kernel; the next write comes back through libnacre
os.ftruncate(fd2, 4500)
assert os.fstat(fd2).st_size == 4500
os.pwrite(fd2, b"tail", 4500)
assert os.fstat(fd2).st_size == 4504
os.fsync(fd2)
# a mapping reads the kernel's pages: the file is the kernel's from then on
m = mmap.mmap(fd2, 4504, prot=mmap.PROT_READ)
assert m[0:4] == b"fork" and m[4500:4504] == b"tail" and m[100:101] == b"Q"
m.close()
assert os.pread(fd2, 4, 4500) == b"tail"
os.close(fd2)
# reading a file opened read-only, and writing to it: EBADF as the kernel says
fd = os.open(p, os.O_RDONLY)
try:
    os.write(fd, b"no")
    raise SystemExit("write to an O_RDONLY descriptor succeeded")
except OSError as e:
    assert e.errno == 9, e
with open(p, "rb") as f:  # python's buffered io uses read(2)
    data = f.read()
assert len(data) == 4504 and data[:4] == b"fork" and data[-4:] == b"tail"
os.close(fd)
print("ok")
"""


def test_python_file_io(cluster, mnt):
    other = cluster.mount()
    r = preloaded([sys.executable, "-c", PY_FILE_IO, mnt])
    assert r.stdout.strip() == "ok", r.stderr
    for what in ("open", "read", "write", "lseek", "fstat", "dup", "fsync", "to-kernel"):
        assert served(r.stderr, what) > 0, f"no {what} served:\n{r.stderr}"
    data = (other / "pl-py").read_bytes()
    assert len(data) == 4504 and data[:4] == b"fork" and data[100:101] == b"Q"
    assert data[4000:4012] == b"xy" + b"z" * 10 and data[-4:] == b"tail"


def test_cp_tar_rsync_preloaded(cluster, mnt, tmp_path):
    local = tmp_path / "tree"
    make_tree(local)
    dst = mnt / "pl-cp"
    r = preloaded(["cp", "-a", local, dst])
    assert served(r.stderr, "write") > 0, r.stderr
    assert_same_tree(local, dst)
    tarball = mnt / "pl.tar"
    r = preloaded(["tar", "-C", dst, "-cf", tarball, "."])
    assert served(r.stderr, "read") > 0 and served(r.stderr, "write") > 0, r.stderr
    out = tmp_path / "untar"
    out.mkdir()
    preloaded(["tar", "-C", out, "-xf", tarball])
    assert_same_tree(local, out)
    rs = mnt / "pl-rsync"
    preloaded(["rsync", "-aH", f"{local}/", f"{rs}/"])
    assert_same_tree(local, rs)
    (local / "big.bin").write_bytes(os.urandom(2 * 1024 * 1024))
    preloaded(["rsync", "-aH", "--delete", f"{local}/", f"{rs}/"])
    assert_same_tree(local, rs)
    other = cluster.mount()
    assert_same_tree(local, other / "pl-rsync")


def test_shell_redirections_share_the_offset(mnt):
    """A shell's redirection is inherited by the commands it starts: they write one after
    the other at the offset they share, as without the library."""
    f = mnt / "pl-sh"
    script = (f"{{ /bin/echo one; printf 'two\\n'; /bin/echo three; }} > {f}; "
              f"/bin/echo four >> {f}; exec 3<{f}; read -r a <&3; /bin/cat <&3; exec 3<&-")
    r = preloaded(["bash", "-c", script])
    assert f.read_text() == "one\ntwo\nthree\nfour\n"
    assert r.stdout == "two\nthree\nfour\n", r.stdout


def test_without_the_key_files_go_through_the_kernel(cluster, mnt):
    """A user who cannot read the mount's key gets no connection of their own: the library
    says so (NACRE_PRELOAD_DEBUG) and leaves the files to the kernel, which serves them."""
    d = mnt / "pl-nokey"
    d.mkdir()
    os.chmod(d, 0o777)
    assert oct(os.stat(cluster.key).st_mode & 0o777) == "0o600"
    out = []

    def child():
        r = preloaded(["dd", "if=/dev/zero", f"of={d / 'f'}", "bs=64k", "count=16"])
        out.append(r.stderr)
        if "cannot connect" not in r.stderr or served(r.stderr, "write") != 0:
            raise OSError(5, r.stderr)
    rc = as_user(child)
    assert rc == 0
    assert os.stat(d / "f").st_size == 1024 * 1024


def test_ior_and_mdtest_style_runs_and_an_mpi_job(mnt):
    """nacre-bench's IOR-style data test (two MPI ranks, one shared file, verified) and its
    mdtest-style test with data, every rank preloaded."""
    exe = BUILD / "nacre-bench"
    d = mnt / "pl-bench"
    d.mkdir()
    r = preloaded([exe, "--md", "-n", "200", "-u", "-w", "3000", "-d", d])
    assert "File creation" in r.stdout and "File removal" in r.stdout, r.stdout
    assert served(r.stderr, "write") >= 200 and served(r.stderr, "read") >= 200, r.stderr
    linked = subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
    if "libmpi" not in linked or not shutil.which("mpirun"):
        pytest.skip("nacre-bench was built without MPI (optional: libopenmpi-dev)")
    env = dict(os.environ, NACRE_PRELOAD_REPORT="1")
    r = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
                        "-x", f"LD_PRELOAD={LIB}", "-x", "NACRE_PRELOAD_REPORT", exe,
                        "-b", "8m", "-t", "1m", "-C", "-w", "-r", "-W", "-R", "-e", "-k",
                        "-o", d / "shared"], capture_output=True, text=True, timeout=180,
                       env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Verification: passed" in r.stdout, r.stdout
    # each rank wrote 8 MiB and read it back twice (verify, read phase)
    assert served(r.stdout + r.stderr, "write") >= 16, r.stdout + r.stderr
    assert os.stat(d / "shared").st_size == 16 * 1024 * 1024


def test_exit_without_close_keeps_what_was_written(cluster, mnt):
    """os._exit skips destructors: the library still sends what the process wrote, as the
    kernel's page cache would have kept it."""
    script = ("import os, sys\n"
              "fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)\n"
              "os.write(fd, bytes(range(256)) * 12288)\n"
              "os._exit(0)\n")
    r = preloaded([sys.executable, "-c", script, mnt / "pl-exit"])
    assert served(r.stderr, "write") == 1, r.stderr
    other = cluster.mount()
    assert (other / "pl-exit").read_bytes() == bytes(range(256)) * 12288


PAUSING_WRITER = r"""
import hashlib, json, os, random, sys, time
path, mib, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = random.Random(5)
h = hashlib.sha256()
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(mib):
    if i == mib // 2:
        open(go + ".half", "w").close()
        while not os.path.exists(go):  # the servers are killed and started meanwhile
            time.sleep(0.05)
    block = rng.randbytes(1 << 20)
    h.update(block)
    mv = memoryview(block)
    while mv:
        mv = mv[os.write(fd, mv):]
os.fsync(fd)
os.close(fd)
print(json.dumps({"sha256": h.hexdigest()}))
"""


def test_preloaded_writer_survives_oss_kill9_and_mds_restart(make_cluster, nacre_cli, tmp_path):
    """libnacre's recovery under the library: half a striped file written (some of it still
    in write-behind), an OSS and the MDS killed with -9 and started again, then the rest,
    fsync and close. Every byte and the size through another mount."""
    mib = 64
    c = make_cluster(cls=RecoveryCluster, osts=4, oss=2)
    path = c.mounts[0].path / "pl-recover"
    nacre_cli("setstripe", "-c", 4, "-S", "1M", path, check=True)
    go = tmp_path / "go"
    env = dict(os.environ, LD_PRELOAD=str(LIB), NACRE_PRELOAD_REPORT="1")
    p = subprocess.Popen([sys.executable, "-c", PAUSING_WRITER, str(path), str(mib), str(go)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    wait_for(lambda: os.path.exists(f"{go}.half") or p.poll() is not None, 120,
             "the writer to get half way")
    c.oss[1].kill(signal.SIGKILL)
    c.mds.kill(signal.SIGKILL)
    time.sleep(1.0)
    c.start_oss(1, fmt=False)
    c.start_mds(fmt=False)
    go.touch()
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, f"the preloaded writer failed ({p.returncode}):\n{err}\n{out}"
    assert served(err, "write") >= mib, err
    want = json.loads(out.strip().splitlines()[-1])["sha256"]
    other = c.mount().path
    assert os.path.getsize(other / "pl-recover") == mib << 20
    assert sha256_of(other / "pl-recover") == want
    assert hashlib.sha256((c.mounts[0].path / "pl-recover").read_bytes()).hexdigest() == want
    # two sessions came back with their opens: the mount's and the library's
    assert len(re.findall(r"client \S+ \(\w+\) recovered:", c.mds.text())) == 2, c.mds.text()
