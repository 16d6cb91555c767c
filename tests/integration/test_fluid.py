"""nacre-mount --fluid-config: Fluid ThinRuntime config.json parsing (--dry-run on real-shaped
files, both config paths, secrets by file, read-only) and a real foreground mount that
SIGTERM unmounts without leaving a dead mount."""
import json
import os
import signal
import subprocess
import time

from conftest import binary, mounted_dirs, wait_for


def fluid(etc, *args):
    env = dict(os.environ, NACRE_FLUID_ETC=str(etc))
    return subprocess.run([binary("nacre-mount"), "--fluid-config", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=30)


def fields(out):
    return dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)


def thin_config(mount_point, target, **kw):
    m = {"mountPoint": mount_point, "name": "nacre", "path": "/", "readOnly": kw.get("ro", False),
         "shared": False, "options": kw.get("options", {})}
    return {"mounts": [m], "targetPath": str(target),
            "runtimeOptions": kw.get("runtime", {}),
            "accessModes": kw.get("modes", ["ReadOnlyMany"])}


def test_fluid_parser(tmp_path):
    etc = tmp_path / "fluid"
    (etc / "config").mkdir(parents=True)
    (etc / "secrets" / "nacre-secret").mkdir(parents=True)
    (etc / "secrets" / "nacre-secret" / "timeout").write_text("12\n")
    target = tmp_path / "runtime-mnt" / "thin" / "default" / "ds" / "thin-fuse"

    # Fluid >= 1.1 path, nacre:// form with a subdir, a secret by file, ReadOnlyMany.
    cfg = thin_config("nacre://mds1:9500/demo/team/a", target,
                      options={"key_file": "/etc/nacre/demo.key",
                               "timeout": str(etc / "secrets" / "nacre-secret" / "timeout")},
                      runtime={"attr_timeout": "2", "timeout": "99"})
    (etc / "config" / "config.json").write_text(json.dumps(cfg))
    r = fluid(etc, "--dry-run")
    assert r.returncode == 0, r.stderr
    f = fields(r.stdout)
    assert f["config"] == str(etc / "config" / "config.json")
    assert f["spec"] == "mds1:9500:/demo/team/a"
    assert f["target"] == str(target)
    assert f["read-only"] == "yes"
    opts = f["options"].split(",")
    assert "ro" in opts and "key_file=/etc/nacre/demo.key" in opts and "attr_timeout=2" in opts
    # The dataset's option wins over the runtime's; the secret's value is not printed.
    # (compared whole: the temporary path itself may contain "12" or "99")
    secret = etc / "secrets" / "nacre-secret" / "timeout"
    assert [o for o in opts if o.startswith("timeout=")] == [f"timeout=<secret from {secret}>"]

    # Before Fluid 1.1: /etc/fluid/config.json. Lustre-style mount point, read-write.
    (etc / "config" / "config.json").unlink()
    cfg = thin_config("mds1@tcp:/demo/sub", target, modes=["ReadWriteMany"])
    (etc / "config.json").write_text(json.dumps(cfg))
    f = fields(fluid(etc, "--dry-run").stdout)
    assert f["config"] == str(etc / "config.json")
    assert f["spec"] == "mds1@tcp:/demo/sub" and f["read-only"] == "no"
    # readOnly on the mount makes it read-only whatever the access modes.
    cfg = thin_config("mds1@tcp:/demo", target, modes=["ReadWriteMany"], ro=True)
    (etc / "config.json").write_text(json.dumps(cfg))
    assert fields(fluid(etc, "--dry-run").stdout)["read-only"] == "yes"

    # Errors name the file and what is wrong.
    bad = tmp_path / "bad.json"
    bad.write_text('{"mounts": [\n  {"mountPoint": "nacre://h/fs",}\n')
    r = fluid(etc, bad, "--dry-run")
    assert r.returncode == 1 and f"{bad}:2:" in r.stderr and "not valid JSON" in r.stderr, r.stderr
    bad.write_text(json.dumps(thin_config("s3://bucket", target)))
    r = fluid(etc, bad, "--dry-run")
    assert r.returncode == 1 and "not a nacre file system" in r.stderr
    missing = dict(thin_config("nacre://h/fs", target))
    missing["mounts"][0]["options"] = {"secret": str(etc / "secrets" / "nope" / "k")}
    bad.write_text(json.dumps(missing))
    r = fluid(etc, bad, "--dry-run")
    assert r.returncode == 1 and "cannot read the secret file" in r.stderr
    r = fluid(tmp_path / "empty", "--dry-run")
    assert r.returncode == 1 and "no Fluid config" in r.stderr


def test_fluid_mount_and_sigterm(make_cluster, tmp_path):
    c = make_cluster(osts=1)
    etc = tmp_path / "fluid"
    (etc / "config").mkdir(parents=True)
    target = c.dir / "runtime-mnt" / "thin" / "ns" / "ds" / "thin-fuse"
    host, port = c.mds_addr.split(":")
    cfg = thin_config(f"{host}@tcp:{port}:/{c.fsname}", target, modes=["ReadWriteMany"],
                      options={"key_file": str(c.key)})
    (etc / "config" / "config.json").write_text(json.dumps(cfg))
    log = open(c.dir / "fluid.log", "wb")
    p = subprocess.Popen([binary("nacre-mount"), "--fluid-config"], stdout=log, stderr=log,
                         env=dict(os.environ, NACRE_FLUID_ETC=str(etc)))
    try:
        wait_for(lambda: mounted_dirs().get(str(target)) == "fuse.nacre" or p.poll() is not None,
                 20, "the Fluid mount")
        assert p.poll() is None, (c.dir / "fluid.log").read_text()
        (target / "hello.txt").write_text("through fluid\n")
        assert (c.mounts[0].path / "hello.txt").read_text() == "through fluid\n"
        p.send_signal(signal.SIGTERM)
        assert p.wait(15) == 0
        assert str(target) not in mounted_dirs()
        os.stat(target)  # not a dead mount: a plain directory again
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if str(target) in mounted_dirs():
            subprocess.run(["umount", "-l", str(target)])
        log.close()
