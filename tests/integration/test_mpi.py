"""MPI-IO on a nacre mount with OpenMPI (ROMIO through OMPI_MCA_io=romio321): collective and
data-sieving writes (which take fcntl locks) verify byte-exact, PnetCDF non-blocking writes
read back, striping hints become the file's layout (docs/mpi-io.md), and bench/btio-run
works end to end on a tiny grid."""
import os
import shutil
import subprocess

import pytest

from conftest import BUILD, REPO, binary, mounted_dirs, require_fuse, run_bench_script

MPIRUN = shutil.which("mpirun")


def mpi_env(hints=None):
    env = dict(os.environ)
    env["OMPI_MCA_io"] = "romio321"
    # containers often forbid the cross-memory attach the shared-memory transport uses
    env["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none"
    env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    if hints:
        env["ROMIO_HINTS"] = str(hints)
    return env


def mpirun(prog, *args, hints=None, np=4, timeout=240):
    exe = binary(prog)
    if not os.path.exists(exe):
        pytest.fail(f"{exe} was not built: is libopenmpi-dev (and libpnetcdf-dev) installed?")
    argv = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(np), exe, *map(str, args)]
    r = subprocess.run(argv, env=mpi_env(hints), capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(argv)} failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout


@pytest.fixture(scope="module")
def mpimnt(cluster):
    if not MPIRUN:
        pytest.fail("mpirun not found: install openmpi-bin")
    d = cluster.mounts[0].path / "mpi"
    d.mkdir(exist_ok=True)
    return d


def expected(n):
    return bytes(((i * 7 + i // 4093) & 0xff) for i in range(n))


def test_collective_and_data_sieving_writes(mpimnt, tmp_path):
    hints = tmp_path / "hints"
    # data sieving on for independent writes: read-modify-write under F_SETLKW locks
    hints.write_text("romio_ds_write enable\nromio_cb_write enable\nind_wr_buffer_size 65536\n")
    out = mpirun("mpi_write_check", mpimnt / "ds.dat", 1000, 37, hints=hints)
    assert "ok" in out
    data = (mpimnt / "ds.dat").read_bytes()
    assert data == expected(2 * 1000 * 37 * 4)


def test_pnetcdf_nonblocking_write_reads_back(mpimnt):
    out = mpirun("pnetcdf_nb_check", mpimnt / "nb.nc", 33, 17, 12)
    assert out.strip().endswith("ok")


def test_striping_hints_set_the_layout(mpimnt, tmp_path, nacre_cli):
    hints = tmp_path / "hints"
    hints.write_text("striping_factor 2\nstriping_unit 131072\nromio_cb_write enable\n")
    out = mpirun("mpi_write_check", mpimnt / "striped.dat", 65536, 3, hints=hints)
    assert "ok" in out
    r = nacre_cli("getstripe", "-c", mpimnt / "striped.dat")
    assert r.stdout.strip() == "2", r.stdout + r.stderr
    r = nacre_cli("getstripe", "-S", mpimnt / "striped.dat")
    assert r.stdout.strip() == "131072", r.stdout + r.stderr
    assert os.stat(mpimnt / "striped.dat").st_blksize == 131072


def test_layout_of_a_file_mpi_created_empty(mpimnt, nacre_cli):
    # MPI_File_open(MODE_CREATE) leaves an empty file: its layout can still be set
    p = mpimnt / "empty.dat"
    p.touch()
    os.setxattr(p, "nacre.layout", b"stripe_count=3 stripe_size=262144")
    assert nacre_cli("getstripe", "-c", p).stdout.strip() == "3"
    out = mpirun("mpi_write_check", p, 4096, 5)
    assert "ok" in out
    assert nacre_cli("getstripe", "-c", p).stdout.strip() == "3"


def test_romio_hints_command(mpimnt, nacre_cli):
    r = nacre_cli("setstripe", "-c", "4", "-S", "2M", mpimnt / "h.dat")
    assert r.returncode == 0, r.stderr
    r = nacre_cli("romio-hints", "-N", "2", mpimnt / "h.dat")
    assert r.returncode == 0, r.stderr
    lines = dict(l.split(None, 1) for l in r.stdout.splitlines() if not l.startswith("#"))
    assert lines == {"striping_unit": "2097152", "striping_factor": "4",
                     "romio_cb_write": "enable", "cb_nodes": "4", "cb_config_list": "*:2"}
    r = nacre_cli("romio-hints", mpimnt / "new-file-here")
    assert "striping_unit 1048576" in r.stdout, r.stdout + r.stderr
    r = nacre_cli("romio-hints", "/tmp")
    assert r.returncode != 0 and "not on a nacre" in r.stderr


def test_btio_run_smoke(tmp_path):
    """bench/btio-run end to end on a tiny grid, one repetition: the namespaces, the shaped
    2-OSS cluster, an OMPIO and a ROMIO-with-hints row of each mode, and the cleanup. The
    ratios are not judged here."""
    if os.geteuid() != 0:
        pytest.fail("bench/btio-run needs root (network namespaces, tc, FUSE)")
    require_fuse()
    binary("btio")
    work = tmp_path / "w"
    work.mkdir()
    script = REPO / "bench" / "btio-run"
    # two rows of four: OMPIO with nothing set, and ROMIO with the hints and their layout
    argv = [str(script), "--build", str(BUILD), "--no-build", "--grid", "16,16,16", "--reps", "1",
            "--settings", "default hint+agg2", "--workdir", str(work)]
    rc, out, err, pid = run_bench_script(argv, 150)
    assert rc == 0, f"{' '.join(argv)} failed:\n{out}\n{err}"
    rows = [l.split("|")[1:-1] for l in out.splitlines() if l.startswith("| pnetcdf")]
    assert len(rows) == 4, out
    for r in rows:
        assert float(r[2]) > 0 and float(r[4]) > 0, out
    assert "| max network | 100 Mbit/s per OSS link | 11.9 |" in out, out
    # nothing left behind: namespaces (prefix nbt<pid>), mounts, the temporary directory
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"nbt{pid}-" not in netns, netns
    assert not any(str(work) in d for d in mounted_dirs()), mounted_dirs()
    assert list(work.iterdir()) == []
