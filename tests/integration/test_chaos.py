"""The chaos run, short: tests/chaos/run for 2 minutes with a fixed seed (servers killed and
stopped under a mixed workload on three mounts; everything checked through a fresh mount).
The long run and how to reproduce a failure: docs/recovery.md, "Chaos"."""
import os
import subprocess

from conftest import BUILD, REPO, binary, require_fuse

SEED = 20261201


def test_chaos_two_minutes():
    require_fuse()
    for name in ("nacre-mds", "nacre-oss", "nacre-mount", "nacre"):
        binary(name)
    env = dict(os.environ, NACRE_BUILD=str(BUILD))
    r = subprocess.run([str(REPO / "tests" / "chaos" / "run"), "--minutes", "2", "--seed",
                        str(SEED)], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, f"tests/chaos/run failed ({r.returncode}):\n" \
                              f"{r.stdout[-12000:]}\n{r.stderr[-4000:]}"
