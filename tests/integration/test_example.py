"""examples/basics.c, the first libnacre program a newcomer reads, works as it says: against a
real cluster it creates a file striped over two OSTs, reads back what it wrote, reports the
size and layout, and leaves nothing behind; a wrong spec or key is refused with the
library's sentence and a non-zero exit."""
import re
import subprocess

from conftest import binary, daemon_env


def run_example(*args):
    return subprocess.run([binary("nacre-example-basics"), *map(str, args)],
                          capture_output=True, text=True, timeout=60, env=daemon_env())


def test_example_basics(make_cluster):
    c = make_cluster(osts=2, fsname="example")
    m = c.mounts[0].path
    before = sorted(p.name for p in m.iterdir())
    r = run_example(c.spec, c.key)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    name = re.search(r"^created /(nacre-example-\d+)$", out, re.M).group(1)
    assert "read back: 3145728 bytes, the same" in out, out
    assert re.search(r"^size: 3145728$", out, re.M), out
    osts = re.search(r"^stripe_count: 2 stripe_size: 1048576 osts: (\d+) (\d+)$", out, re.M)
    assert osts and osts.group(1) != osts.group(2), out
    assert f"removed /{name}" in out, out
    # the file is gone for the FUSE mount too
    assert sorted(p.name for p in m.iterdir()) == before


def test_example_refuses_bad_spec_and_key(make_cluster, tmp_path):
    c = make_cluster(osts=1, fsname="exbad")
    r = run_example(c.spec.replace("/exbad", "/nosuchfs"), c.key)
    assert r.returncode == 1 and "cannot mount" in r.stderr and "nosuchfs" in r.stderr, r.stderr
    wrong = tmp_path / "wrong.key"
    wrong.write_text("00" * 32 + "\n")
    wrong.chmod(0o600)
    r = run_example(c.spec, wrong)
    assert r.returncode == 1 and "cannot mount" in r.stderr, r.stderr
    r = run_example()
    assert r.returncode == 2 and "usage:" in r.stderr, r.stderr
