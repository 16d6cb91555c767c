"""The chaos run, short: tests/chaos/run for 2 minutes (1 in a sanitizer build) with a fixed seed (servers killed and
stopped under a mixed workload on three mounts; everything checked through a fresh mount).
The long run and how to reproduce a failure: docs/recovery.md, "Chaos"."""
import os
import subprocess

from conftest import BUILD, REPO, binary, require_fuse, sanitized_build

SEED = 20261201


def test_chaos_short():
    require_fuse()
    for name in ("nacre-mds", "nacre-oss", "nacre-mount", "nacre"):
        binary(name)
    env = dict(os.environ, NACRE_BUILD=str(BUILD))
    minutes = "1" if sanitized_build() else "2"
    r = subprocess.run([str(REPO / "tests" / "chaos" / "run"), "--minutes", minutes, "--seed",
                        str(SEED)], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, f"tests/chaos/run failed ({r.returncode}):\n" \
                              f"{r.stdout[-12000:]}\n{r.stderr[-4000:]}"
