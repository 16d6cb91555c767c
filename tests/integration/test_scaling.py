"""bench/scaling end to end on its smallest setting (two shaped OSS links, one repetition):
the namespaces, `nacre cluster up` with an admin client (root makes the benchmark's
directories, where root is squashed on any other client), both measurements and the cleanup.
The figures are not judged here."""
import os
import re

import pytest

from conftest import BUILD, REPO, mounted_dirs, require_fuse, run_bench_script


def test_scaling_smoke(tmp_path):
    if os.geteuid() != 0:
        pytest.fail("bench/scaling needs root (network namespaces, tc, FUSE)")
    require_fuse()
    work = tmp_path / "w"
    work.mkdir()
    argv = [REPO / "bench" / "scaling", "--build", BUILD, "--no-build", "--n", "2",
            "--reps", "1", "--seconds", "2", "--workdir", work]
    rc, out, err, _ = run_bench_script(argv, 240)
    assert rc == 0, f"bench/scaling failed:\n{out}\n{err}"
    rows = [ln for ln in out.splitlines() if re.match(r"\|\s*2\s*\|", ln)]
    assert rows, out
    figures = [float(x) for x in re.findall(r"\d+\.\d+", rows[0])]
    assert figures and all(f >= 0 for f in figures) and max(figures) > 0, rows
    assert not any(str(work) in d for d in mounted_dirs()), mounted_dirs()
    assert list(work.iterdir()) == []
