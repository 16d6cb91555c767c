"""job_stats (Lustre's mdt.*.job_stats): the MDS counts each job's metadata operations from
the job id its requests carry, a mount's -o jobid=procname_uid ("touch.0") or jobid=VAR
(the caller's SLURM_JOB_ID); get_param prints them in Lustre's YAML and set_param clears
them."""
import os
import re
import subprocess
import sys

import pytest

from conftest import Cluster, binary, dir_fsync_errno, finish, free_port, start_cluster

FS = "jobfs"


class JobCluster(Cluster):
    def __init__(self, **kw):
        super().__init__(fsname=FS, **kw)
        self.mds_mport = free_port()
        self.oss_mport = free_port()

    def mds_argv(self, fmt):
        return super().mds_argv(fmt) + ["--metrics-addr", f"127.0.0.1:{self.mds_mport}"]

    def oss_argv(self, j, fmt):
        return super().oss_argv(j, fmt) + ["--metrics-addr", f"127.0.0.1:{self.oss_mport}"]


@pytest.fixture(scope="module")
def jc():
    c = start_cluster(JobCluster, osts=1, oss=1)
    yield c
    finish(c)


def nacre(c, *args):
    return subprocess.run([binary("nacre"), *args[:1], "--mount", str(c.mounts[-1].path),
                           "--metrics", f"127.0.0.1:{c.mds_mport}",
                           "--metrics", f"127.0.0.1:{c.oss_mport}", *args[1:]],
                          capture_output=True, text=True, timeout=60)


def job_stats(c, param=f"mdt.{FS}-MDT0000.job_stats"):
    """{job_id: {op: samples}} (and {job_id: {op + "_sum": sum}}) from get_param PARAM."""
    r = nacre(c, "get_param", param)
    assert r.returncode == 0, r.stderr
    if r.stdout == f"{param}=job_stats:\n":
        return {}  # one line: lctl prints it after the name
    lines = r.stdout.splitlines()
    assert lines[0] == f"{param}=" and lines[1] == "job_stats:", r.stdout
    jobs, cur = {}, None
    for ln in lines[2:]:
        m = re.fullmatch(r"- job_id: {10}(\S+)", ln)
        if m:
            cur = jobs.setdefault(m.group(1), {})
            continue
        if re.fullmatch(r"  snapshot_time: {3}\d+", ln):
            continue
        m = re.fullmatch(r"  (\w+): +\{ samples: +(\d+), unit: (usecs|bytes)"
                         r"(, min: +\d+, max: +\d+, sum: +(\d+), sumsq: +\d+)? \}", ln)
        assert m and cur is not None, f"not Lustre's job_stats line: {ln!r}\n{r.stdout}"
        assert (int(m.group(2)) > 0) == (m.group(4) is not None), ln
        cur[m.group(1)] = int(m.group(2))
        cur[m.group(1) + "_sum"] = int(m.group(5) or 0)
    return jobs


def run_job(args, env_extra):
    env = {k: v for k, v in os.environ.items() if k != "SLURM_JOB_ID"}
    env.update(env_extra)
    subprocess.run(args, env=env, check=True, timeout=60)


def test_two_jobs_counted_apart_then_cleared(jc):
    m = jc.mount(opts=["jobid=SLURM_JOB_ID"])
    top = m.path / "jobs"
    top.mkdir()
    for i in range(4):
        (top / f"old{i}").write_bytes(b"x")
    assert dir_fsync_errno(top) is None
    r = nacre(jc, "set_param", "mdt.*.job_stats=clear")
    assert r.returncode == 0 and r.stdout == f"mdt.{FS}-MDT0000.job_stats=clear\n", r.stderr
    assert job_stats(jc) == {}
    # job 4242 (SLURM_JOB_ID): 5 files made, 2 directories, 2 removed, 1 renamed
    script = (f"import os\np={str(top)!r}\n"
              "for i in range(5):\n    open(f'{p}/new{i}', 'w').close()\n"
              "os.mkdir(f'{p}/d0'); os.mkdir(f'{p}/d1')\n"
              "os.unlink(f'{p}/old0'); os.unlink(f'{p}/old1')\n"
              "os.rename(f'{p}/old2', f'{p}/d0/moved')\n"
              "fd = os.open(p, os.O_RDONLY | os.O_DIRECTORY); os.fsync(fd); os.close(fd)\n")
    run_job([sys.executable, "-c", script], {"SLURM_JOB_ID": "4242"})
    # touch without SLURM_JOB_ID: the command name and uid (Lustre's %e.%u)
    run_job(["touch", *(str(top / f"t{i}") for i in range(3))], {})
    assert dir_fsync_errno(top) is None
    jobs = job_stats(jc)
    assert "4242" in jobs and "touch.0" in jobs, jobs
    a, t = jobs["4242"], jobs["touch.0"]
    assert (a["mknod"], a["mkdir"], a["unlink"], a["rename"]) == (5, 2, 2, 1), a
    assert a["open"] >= 5 and a["close"] >= 5 and a["rmdir"] == 0 and a["link"] == 0, a
    assert (t["mknod"], t["mkdir"], t["unlink"], t["rename"]) == (3, 0, 0, 0), t
    assert t["open"] >= 3 and t["close"] >= 3 and t["setattr"] >= 3, t  # touch sets times
    # Lustre's operation list, in its order, for each job
    assert [k for k in a if not k.endswith("_sum")] == [
        "open", "close", "mknod", "link", "unlink", "mkdir", "rmdir", "rename", "getattr",
        "setattr", "getxattr", "setxattr", "statfs", "sync"]
    r = nacre(jc, "set_param", "mdt.*.job_stats=bogus")
    assert r.returncode == 22, r
    r = nacre(jc, "set_param", "mdt.*.job_stats=clear")
    assert r.returncode == 0, r.stderr
    assert job_stats(jc) == {}
    m.unmount()
    jc.mounts.remove(m)


def test_object_io_is_counted_per_job_on_the_ost(jc):
    """obdfilter.*.job_stats: the bytes a job wrote and another read, each under the job of
    the process that opened the file."""
    w = jc.mount(opts=["jobid=SLURM_JOB_ID"])
    r_ = jc.mount(opts=["jobid=SLURM_JOB_ID"])
    ost = f"obdfilter.{FS}-OST0000.job_stats"
    assert nacre(jc, "set_param", f"{ost}=clear").returncode == 0
    path = w.path / "data"
    size = 3 * 1024 * 1024 + 123
    run_job([sys.executable, "-c",
             f"import os\nfd = os.open({str(path)!r}, os.O_WRONLY | os.O_CREAT, 0o644)\n"
             f"os.write(fd, b'j' * {size}); os.fsync(fd); os.close(fd)\n"],
            {"SLURM_JOB_ID": "777"})
    run_job([sys.executable, "-c",
             f"data = open({str(r_.path / 'data')!r}, 'rb').read()\nassert len(data) == {size}\n"],
            {"SLURM_JOB_ID": "778"})
    jobs = job_stats(jc, ost)
    assert "777" in jobs and "778" in jobs, jobs
    assert jobs["777"]["write_bytes_sum"] == size and jobs["777"]["write"] >= 1, jobs
    assert jobs["777"]["read_bytes"] == 0, jobs["777"]
    assert jobs["778"]["read_bytes_sum"] == size and jobs["778"]["write_bytes"] == 0, jobs
    assert [k for k in jobs["777"] if not k.endswith("_sum")] == [
        "read_bytes", "write_bytes", "read", "write", "getattr", "punch", "sync", "prealloc",
        "get_info"]
    assert nacre(jc, "set_param", f"{ost}=clear").returncode == 0
    assert job_stats(jc, ost) == {}
    for m in (w, r_):
        m.unmount()
        jc.mounts.remove(m)


def test_jobid_option_is_checked(jc):
    r = subprocess.run([binary("nacre-mount"), jc.spec, str(jc.dir / "nomnt"), "-o",
                        f"key_file={jc.key},jobid=1BAD-NAME", "-f"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "jobid=1BAD-NAME" in r.stderr and "SLURM_JOB_ID" in r.stderr
