"""nacre-bench smoke tests: small IOR-style runs over the FUSE mount (-a POSIX) and libnacre
(-a NACRE) on the shared test cluster, their output format, the data check, and --md."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import binary, daemon_env

TABLE_HEAD = ("access    bw(MiB/s)  IOPS       Latency(s)  block(KiB) xfer(KiB)  open(s)    "
              "wr/rd(s)   close(s)   total(s)   iter")
NUM = r"\d+(?:\.\d+)?"
ROW = re.compile(rf"^(write|read) {{2,}}{NUM} +{NUM} +{NUM} +{NUM} +{NUM} +{NUM} +{NUM} +{NUM}"
                 rf" +{NUM} +\d+$", re.M)
MD_ROW = re.compile(r"^   (File creation|File stat|File read|File removal|Tree creation|"
                    r"Tree removal) +:(?: +\d+\.\d{3}){4}$", re.M)


def bench(*args, ok=True, timeout=120):
    r = subprocess.run([binary("nacre-bench"), *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, env=daemon_env())
    if ok:
        assert r.returncode == 0, f"nacre-bench {' '.join(map(str, args))} failed " \
                                  f"({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r


def check_ior_output(out, api, write=True, read=True, reps=1):
    lines = out.splitlines()
    assert lines[0] == "nacre-bench-0.1.0: MPI Coordinated Test of Parallel I/O"
    assert re.search(rf"^api                 : {api}$", out, re.M)
    assert TABLE_HEAD in lines
    rows = ROW.findall(out)
    assert rows.count("write") == reps * write and rows.count("read") == reps * read, out
    if write:
        assert re.search(r"^Max Write: \d+\.\d\d MiB/sec \(\d+\.\d\d MB/sec\)$", out, re.M), out
    if read:
        assert re.search(r"^Max Read:  \d+\.\d\d MiB/sec \(\d+\.\d\d MB/sec\)$", out, re.M), out
    assert "\nSummary of all tests:\nOperation   Max(MiB)   Min(MiB)" in out
    assert re.search(rf"^(write|read) +{NUM}.* {api} +0$", out, re.M), out


def test_posix_write_read_verified(mnt):
    d = mnt / "bench-posix"
    d.mkdir()
    r = bench("-a", "POSIX", "-b", "4m", "-t", "1m", "-w", "-r", "-W", "-R", "-o", d / "f")
    check_ior_output(r.stdout, "POSIX")
    assert "Verification: passed (write, read)" in r.stdout
    assert re.search(r"^remove +-", r.stdout, re.M)
    assert not os.listdir(d), "the test file was not removed without -k"


def test_nacre_api_and_cross_check(cluster, mnt):
    """Written through libnacre (4 stripes worth of 1 MiB transfers, a file per rank and two
    repetitions), read back through the FUSE mount with the same pattern check."""
    (mnt / "bench-nacre").mkdir()
    r = bench("-a", "NACRE", "--mds", cluster.spec, "--key-file", cluster.key, "-b", "4m",
              "-t", "1m", "-s", "2", "-F", "-i", "2", "-w", "-r", "-W", "-R", "-k",
              "-o", "/bench-nacre/f")
    check_ior_output(r.stdout, "NACRE", reps=2)
    assert "Verification: passed" in r.stdout
    f = mnt / "bench-nacre" / "f.00000000"
    assert f.stat().st_size == 8 << 20
    r = bench("-a", "POSIX", "-b", "4m", "-t", "1m", "-s", "2", "-F", "-r", "-R",
              "-o", mnt / "bench-nacre" / "f")
    check_ior_output(r.stdout, "POSIX", write=False)
    assert "Verification: passed (read)" in r.stdout
    # The key and spec may come from the environment instead.
    env = dict(daemon_env(), NACRE_SPEC=cluster.spec, NACRE_KEY_FILE=str(cluster.key))
    r = subprocess.run([binary("nacre-bench"), "-a", "NACRE", "-b", "1m", "-t", "256k", "-r",
                        "-o", "/bench-nacre/f.00000000"], capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    shutil.rmtree(mnt / "bench-nacre")


def test_corrupt_data_is_reported(mnt):
    d = mnt / "bench-bad"
    d.mkdir()
    bench("-b", "1m", "-t", "64k", "-w", "-W", "-k", "-o", d / "f")
    with open(d / "f", "r+b") as fh:
        fh.seek(300000)
        fh.write(b"\xff" * 8)
    r = bench("-b", "1m", "-t", "64k", "-r", "-R", "-o", d / "f", ok=False)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "data check failed" in r.stderr and "at offset 300000:" in r.stderr, r.stderr
    assert "Verification: FAILED" in r.stdout
    shutil.rmtree(d)


def test_usage_errors():
    r = bench("-b", "3m", "-t", "2m", ok=False)
    assert r.returncode == 2 and "not a multiple" in r.stderr
    r = bench("-a", "CEPH", ok=False)
    assert r.returncode == 2 and "unknown API" in r.stderr


@pytest.mark.parametrize("unique", [False, True])
def test_md(mnt, unique):
    d = mnt / f"bench-md-{int(unique)}"
    d.mkdir()
    args = ["--md", "-n", "50", "-d", d, "-w", "100"] + (["-u"] if unique else [])
    r = bench(*args)
    out = r.stdout
    assert out.startswith("-- started at ")
    assert "nacre-bench-0.1.0 was launched with 1 total task(s) on 1 node(s)" in out
    assert "\n1 tasks, 50 files\n" in out
    assert "SUMMARY rate: (of 1 iterations)" in out
    rows = MD_ROW.findall(out)
    assert rows == ["File creation", "File stat", "File read", "File removal",
                    "Tree creation", "Tree removal"], out
    assert re.search(r"^-- finished at .* --$", out, re.M)
    assert not os.listdir(d), "the metadata test left files behind"
    d.rmdir()


def test_mpi_two_ranks_shared_file(mnt):
    exe = binary("nacre-bench")
    linked = subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
    if "libmpi" not in linked or not shutil.which("mpirun"):
        pytest.skip("nacre-bench was built without MPI (optional: libopenmpi-dev)")
    d = mnt / "bench-mpi"
    d.mkdir()
    r = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", exe,
                        "-b", "2m", "-t", "1m", "-C", "-w", "-r", "-W", "-R", "-o", d / "f"],
                       capture_output=True, text=True, timeout=120, env=daemon_env())
    assert r.returncode == 0, r.stdout + r.stderr
    check_ior_output(r.stdout, "POSIX")
    assert re.search(r"^tasks +: 2$", r.stdout, re.M)
    assert "Verification: passed" in r.stdout
    shutil.rmtree(d)
