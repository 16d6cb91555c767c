"""bench/scaling end to end on its smallest setting (two shaped OSS links, one repetition):
the namespaces, `nacre cluster up` with an admin client (root makes the benchmark's
directories, where root is squashed on any other client), both measurements and the cleanup.
The figures are not judged here."""
import os
import re
import subprocess

import pytest

from conftest import BUILD, REPO, mounted_dirs, require_fuse


def test_scaling_smoke(tmp_path):
    if os.geteuid() != 0:
        pytest.fail("bench/scaling needs root (network namespaces, tc, FUSE)")
    require_fuse()
    work = tmp_path / "w"
    work.mkdir()
    # not the test fixtures' admin client name: the script must stand on its own
    env = {k: v for k, v in os.environ.items() if k != "NACRE_CLIENT_NAME"}
    argv = [str(REPO / "bench" / "scaling"), "--build", str(BUILD), "--no-build", "--n", "2",
            "--reps", "1", "--seconds", "2", "--workdir", str(work)]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    try:
        out, err = p.communicate(timeout=240)
    finally:
        if p.poll() is None:
            p.terminate()  # the script's trap removes what it made
            try:
                p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
    assert p.returncode == 0, f"{' '.join(argv)} failed:\n{out}\n{err}"
    rows = [ln for ln in out.splitlines() if re.match(r"\|\s*2\s*\|", ln)]
    assert rows, out
    figures = [float(x) for x in re.findall(r"\d+\.\d+", rows[0])]
    assert figures and all(f >= 0 for f in figures) and max(figures) > 0, rows
    assert not any(str(work) in d for d in mounted_dirs()), mounted_dirs()
    assert list(work.iterdir()) == []
