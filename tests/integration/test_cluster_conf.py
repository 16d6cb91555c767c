"""`nacre cluster up|down|status CONFIG` on network namespaces (mds, oss1, oss2, client, and
mds2 for the MDS's failover partner) joined by a bridge that lives in one more namespace, so
the host's own network is untouched.

The remote shell is `nsenter --net=/run/netns/{host}`: like `ip netns exec {host}` it runs the
command in the host's network namespace, but it keeps the shared mount namespace (ip netns
exec makes a private one), so the client's FUSE mount is visible to every "host" and to this
test, as on real machines where each host sees its own mounts.
"""
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import binary, mounted_dirs, require_fuse, wait_for, BUILD

NODES = ("mds", "oss1", "oss2", "client", "mds2")


def sh(*argv, check=True, timeout=60):
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed ({r.returncode}): {r.stdout}{r.stderr}")
    return r


class Net:
    """Namespaces <prefix>-<node> with eth0 on 10.213.N.0/24, bridged in <prefix>-br."""

    def __init__(self):
        self.prefix = f"nct{os.getpid() % 100000}"
        self.subnet = 10 + os.getpid() % 200
        self.made = []

    def ns(self, node):
        return f"{self.prefix}-{node}"

    def addr(self, node):
        return f"10.213.{self.subnet}.{NODES.index(node) + 1}"

    def up(self):
        br = self.ns("br")
        sh("ip", "netns", "add", br)
        self.made.append(br)
        sh("ip", "-n", br, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", br, "link", "set", "br0", "up")
        for i, node in enumerate(NODES):
            ns = self.ns(node)
            sh("ip", "netns", "add", ns)
            self.made.append(ns)
            sh("ip", "-n", br, "link", "add", f"p{i}", "type", "veth", "peer", "name", "eth0",
               "netns", ns)
            sh("ip", "-n", br, "link", "set", f"p{i}", "master", "br0", "up")
            sh("ip", "-n", ns, "addr", "add", f"{self.addr(node)}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")

    def down(self):
        for ns in reversed(self.made):
            # Processes still inside would keep the namespace alive: kill them first.
            r = sh("ip", "netns", "pids", ns, check=False)
            for pid in r.stdout.split():
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            sh("ip", "netns", "del", ns, check=False)
        self.made = []

    def run(self, node, *argv, **kw):
        return sh("nsenter", f"--net=/run/netns/{self.ns(node)}", *argv, **kw)


def write_conf(path, net, d, **over):
    osts1 = f"0:{d}/ost0"
    osts2 = f"1:{d}/ost1"
    text = f"""# test cluster on network namespaces
[cluster]
fsname = {over.get('fsname', 'nsfs')}
key_file = {d}/cluster.key
stripe_count = -1
stripe_size = 64K
remote_shell = nsenter --net=/run/netns/{{host}}
bin_dir = {BUILD}
run_dir = {d}/run

[mds]
host = {net.ns('mds')}
listen = {net.addr('mds')}:9400
data = {d}/mdt
metrics_addr = {net.addr('mds')}:9500
{over.get('mds_extra', '')}
[oss oss1]
host = {over.get('oss1_host', net.ns('oss1'))}
listen = {net.addr('oss1')}:9410
osts = {osts1}
{over.get('oss1_extra', '')}
[oss oss2]
host = {net.ns('oss2')}
listen = {net.addr('oss2')}:9410
osts = {osts2}

[client c1]
host = {net.ns('client')}
mountpoint = {d}/mnt
options = attr_timeout=1

[hsm]
archive = 1:posix://{d}/archive
copytools = {net.ns('oss1')}
{over.get('tail', '')}
"""
    Path(path).write_text(text)
    return path


@pytest.fixture
def netcluster():
    require_fuse()
    if not shutil.which("nsenter") or not shutil.which("ip"):
        pytest.fail("nsenter and ip are needed: apt-get install util-linux iproute2")
    d = Path(tempfile.mkdtemp(prefix="nacre-cc-"))
    os.chmod(d, 0o755)
    net = Net()
    try:
        net.up()
        yield net, d
    finally:
        conf = d / "cluster.conf"
        if conf.exists():
            subprocess.run([binary("nacre"), "cluster", "down", str(conf)], capture_output=True,
                           timeout=120)
        mnt = str(d / "mnt")
        if mnt in mounted_dirs():
            subprocess.run(["umount", "-l", mnt], capture_output=True)
        net.down()
        shutil.rmtree(d, ignore_errors=True)


def cli(*args, timeout=120):
    return subprocess.run([binary("nacre"), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def logs(d):
    out = []
    for p in sorted((d / "run").glob("*.log")) if (d / "run").exists() else []:
        out.append(f"----- {p}\n" + p.read_text(errors="replace")[-3000:])
    return "\n".join(out)


def test_cluster_up_status_down_up(netcluster):
    net, d = netcluster
    mlog = d / "metrics" / "logs"  # created on each host by `cluster up`
    conf = write_conf(d / "cluster.conf", net, d,
                      tail=f"[metrics]\nlog_dir = {mlog}\ninterval = 1\n")
    (d / "archive").mkdir()

    r = cli("cluster", "up", conf)
    assert r.returncode == 0, f"{r.stdout}{r.stderr}\n{logs(d)}"
    # a JSON metrics log from every daemon, the client and the copytool
    roles = ("mds", "oss-oss1", "oss-oss2", "client-c1", "copytool-1")
    wait_for(lambda: all((mlog / f"nsfs-{x}.jsonl").exists() and
                         (mlog / f"nsfs-{x}.jsonl").read_text().count("\n") >= 1
                         for x in roles), 15, "a metrics line from each of " + str(roles))
    rec = json.loads((mlog / "nsfs-client-c1.jsonl").read_text().splitlines()[0])
    assert rec["daemon"] == "mount" and "bytessend" in rec, rec
    # Each step is printed with its duration; new targets were formatted.
    assert "formatted" in r.stdout and "2 OSTs registered" in r.stdout, r.stdout
    assert "[" in r.stdout and "s]" in r.stdout
    assert re.search(r"copytool-1 on \S+: pid \d+", r.stdout), r.stdout
    mnt = d / "mnt"
    assert mounted_dirs().get(str(mnt)) == "fuse.nacre"

    # Data written from the client namespace, striped over both OSSes, read back exactly.
    data = secrets.token_bytes(3 * 1024 * 1024 + 123)
    src = d / "src.bin"
    src.write_bytes(data)
    net.run("client", "cp", str(src), str(mnt / "f.bin"))
    net.run("client", "sync")
    got = net.run("client", "sha256sum", str(mnt / "f.bin")).stdout.split()[0]
    want = sh("sha256sum", str(src)).stdout.split()[0]
    assert got == want
    lay = os.getxattr(str(mnt / "f.bin"), "nacre.layout").decode()
    assert "stripe_count" in lay or "count" in lay, lay
    # the copytool started on its host archives through the [hsm] backend
    r = cli("hsm_archive", mnt / "f.bin")
    assert r.returncode == 0, r.stderr
    wait_for(lambda: (d / "archive" / "f.bin").exists() and
             (d / "archive" / "f.bin").stat().st_size == len(data), 30, "the archive copy")

    r = cli("cluster", "status", conf)
    assert r.returncode == 0, f"{r.stdout}{r.stderr}"
    assert "everything is up" in r.stdout
    assert "OST0000 up" in r.stdout and "OST0001 up" in r.stdout, r.stdout
    assert f"{mnt} up" in r.stdout, r.stdout

    r = cli("cluster", "down", conf)
    assert r.returncode == 0, f"{r.stdout}{r.stderr}"
    assert str(mnt) not in mounted_dirs()
    r = cli("cluster", "status", conf)
    assert r.returncode == 3 and "down" in r.stdout, r.stdout

    # Up again: nothing is formatted twice, the data is intact.
    r = cli("cluster", "up", conf)
    assert r.returncode == 0, f"{r.stdout}{r.stderr}\n{logs(d)}"
    assert "formatted" not in r.stdout, r.stdout
    got = net.run("client", "sha256sum", str(mnt / "f.bin")).stdout.split()[0]
    assert got == want
    r = cli("cluster", "down", conf)
    assert r.returncode == 0, f"{r.stdout}{r.stderr}"


def pid_of(d, role):
    return int((d / "run" / f"nsfs-{role}.pid").read_text())


def test_cluster_failover_partners(netcluster):
    """failover = HOST: a standby MDS (and OSS) on the partner host, on the same storage;
    the mount's spec and the OSSes' --mds name both MDS addresses."""
    net, d = netcluster
    conf = write_conf(d / "cluster.conf", net, d,
                      mds_extra=f"failover = {net.ns('mds2')}\n"
                                f"failover_listen = {net.addr('mds2')}:9400\n",
                      oss1_extra=f"failover = {net.ns('oss2')}\n"
                                 f"failover_listen = {net.addr('oss2')}:9411\n")
    (d / "archive").mkdir()
    r = cli("cluster", "up", conf)
    assert r.returncode == 0, f"{r.stdout}{r.stderr}\n{logs(d)}"
    assert re.search(r"mds-standby on \S+mds2: pid \d+", r.stdout), r.stdout
    assert re.search(r"oss-oss1-standby on \S+oss2: pid \d+", r.stdout), r.stdout
    both = f"{net.addr('mds')}:9400,{net.addr('mds2')}:9400"
    assert f"mounted {both}:/nsfs" in r.stdout, r.stdout
    mnt = d / "mnt"
    data = secrets.token_bytes(2 * 1024 * 1024)
    (d / "src.bin").write_bytes(data)
    net.run("client", "cp", str(d / "src.bin"), str(mnt / "f.bin"))
    net.run("client", "sync")

    # the primary MDS dies: the standby takes over, the client carries on
    os.kill(pid_of(d, "mds"), 9)
    wait_for(lambda: "nacre-mds: serving" in (d / "run" / "nsfs-mds-standby.log").read_text(),
             15, "the standby MDS to take over")
    net.run("client", "cp", str(d / "src.bin"), str(mnt / "g.bin"))
    # then the OSS of OST 0: its partner on oss2 serves it
    os.kill(pid_of(d, "oss-oss1"), 9)
    wait_for(lambda: "nacre-oss: serving" in
             (d / "run" / "nsfs-oss-oss1-standby.log").read_text(), 15,
             "the standby OSS to take over")
    for name in ("f.bin", "g.bin"):
        got = net.run("client", "sha256sum", str(mnt / name), timeout=60).stdout.split()[0]
        assert got == sh("sha256sum", str(d / "src.bin")).stdout.split()[0], name

    r = cli("cluster", "down", conf)
    assert r.returncode == 0, f"{r.stdout}{r.stderr}"
    assert "mds-standby" in r.stdout and str(mnt) not in mounted_dirs()


def test_cluster_refuses_target_of_another_fs(netcluster):
    net, d = netcluster
    conf = write_conf(d / "cluster.conf", net, d)
    # OST 1's directory already belongs to another file system.
    (d / "k").write_text(secrets.token_hex(32) + "\n")
    (d / "k").chmod(0o600)
    other = subprocess.Popen([binary("nacre-oss"), "--fsname", "other", "--mds", "127.0.0.1:1",
                              "--listen", "127.0.0.1:0", "--key-file", str(d / "k"), "--ost",
                              f"1:{d}/ost1", "--format"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not (d / "ost1" / "nacre-ost.sb").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    other.kill()
    other.wait()
    assert (d / "ost1" / "nacre-ost.sb").exists()
    r = cli("cluster", "up", conf)
    assert r.returncode == 1
    assert "start oss-oss2" in r.stderr and net.ns("oss2") in r.stderr, r.stderr
    assert "other" in r.stderr, r.stderr  # the OSS's own message names the found fsname


def test_cluster_unreachable_host(netcluster):
    net, d = netcluster
    conf = write_conf(d / "cluster.conf", net, d, oss1_host="nacre-no-such-host")
    r = cli("cluster", "up", conf)
    assert r.returncode == 1
    assert "cannot reach host nacre-no-such-host" in r.stderr, r.stderr
    assert "check host" in r.stderr


def test_cluster_config_errors(tmp_path):
    cases = {
        "[cluster]\nfsname = a\nkey_file = /k\ncolour = blue\n":
            ":4: unknown key 'colour' in [cluster]",
        "[cluster]\nfsname = a\nkey_file = /k\nquota = maybe\n":
            ":4: quota = maybe: use on (count usage, enforce limits) or off",
        "[cluster]\nfsname = a\n\n[mds]\nhost = h\n":
            ":1: [cluster] has no 'key_file'",
        "[cluster]\nfsname = a\nkey_file = /k\n[mds]\nhost = h\nlisten = nowhere\n":
            ":6: listen = nowhere: not an address",
        ("[cluster]\nfsname=a\nkey_file=/k\n[mds]\nhost=h\nlisten=10.0.0.1:1\ndata=/d\n"
         "[oss a]\nhost=h\nlisten=10.0.0.1:2\nosts=0:/a, 1:/b\n[oss b]\nhost=h\n"
         "listen=10.0.0.1:3\nosts=1:/c\n"):
            ":15: duplicate OST index 1",
        "[cluster]\nfsname = a\nkey_file = /k\n[mds]\nhost = h\nlisten = 10.0.0.1:1\n":
            ":4: [mds] has no 'data'",
        "[clusters]\nfsname = a\n": ":1: unknown section [clusters]",
        ("[cluster]\nfsname=a\nkey_file=/k\n[mds]\nhost=h\nlisten=10.0.0.1:1\ndata=/d\n"
         "failover_listen=10.0.0.2:1\n[oss a]\nhost=h\nlisten=10.0.0.1:2\nosts=0:/a\n"):
            ":8: [mds] has failover_listen but no failover = HOST",
        ("[cluster]\nfsname=a\nkey_file=/k\n[mds]\nhost=h\nlisten=10.0.0.1:1\ndata=/d\n"
         "[oss a]\nhost=h\nlisten=10.0.0.1:2\nosts=0:/a\nfailover=h2\n"
         "failover_listen=10.0.0.1:2\n"):
            ":13: [oss a]: the standby would listen on 10.0.0.1:2 like the primary",
        ("[cluster]\nfsname=a\nkey_file=/k\n[mds]\nhost=h\nlisten=10.0.0.1:1\ndata=/d\n"
         "[metrics]\nazure_workspace=evil.example/x\n"):
            ":9: azure_workspace = evil.example/x: give the Log Analytics workspace ID",
        ("[cluster]\nfsname=a\nkey_file=/k\n[mds]\nhost=h\nlisten=10.0.0.1:1\ndata=/d\n"
         "[oss a]\nhost=h\nlisten=10.0.0.1:2\nosts=0:/a\n[metrics]\nazure_workspace=ws1\n"):
            ":13: [metrics] azure_workspace and azure_key_file go together",
        ("[cluster]\nfsname=a\nkey_file=/k\n[mds]\nhost=h\nlisten=10.0.0.1:1\ndata=/d\n"
         "[oss a]\nhost=h\nlisten=10.0.0.1:2\nosts=0:/a\n[metrics]\n"
         "azure_dce=https://x.ingest.monitor.azure.com\nazure_dcr=dcr-1\n"):
            ":14: [metrics] the Logs Ingestion API needs azure tenant too",
        ("[cluster]\nfsname=a\nkey_file=/k\n[mds]\nhost=h\nlisten=10.0.0.1:1\ndata=/d\n"
         "[client c]\nhost=h\nmountpoint=/m\nadmin=maybe\n"):
            ":11: admin = maybe: give yes",
        ("[cluster]\nfsname=a\nkey_file=/k\n[mds]\nhost=h\nlisten=10.0.0.1:1\ndata=/d\n"
         "[oss a]\nhost=h\nlisten=10.0.0.1:2\nosts=0:/a\n"
         "[client c]\nhost=h\nmountpoint=/m\nadmin=yes\noptions=client_name=x\n"):
            ":12: [client c] admin = yes names the client nacre-admin",
        ("[cluster]\nfsname=a\nkey_file=/k\n[mds]\nhost=h\nlisten=10.0.0.1:1\ndata=/d\n"
         "[metrics]\nazure_dce=ftp://x\n"):
            ":9: azure_dce = ftp://x: give an http:// or https:// URL",
        ("[cluster]\nfsname=a\nkey_file=/k\n[mds]\nhost=h\nlisten=10.0.0.1:1\ndata=/d\n"
         "[metrics]\nazure_secret_file=rel/path\n"):
            ":9: azure_secret_file = rel/path: give an absolute path",
    }
    for text, want in cases.items():
        p = tmp_path / "bad.conf"
        p.write_text(text)
        r = cli("cluster", "up", p)
        assert r.returncode == 1
        assert f"{p}{want}" in r.stderr, (text, r.stderr)


def test_mount_helper_accepts_fstab_options(tmp_path):
    # mount(8) -f (fake) checks the options without mounting: what fstab lines pass.
    r = subprocess.run([str(BUILD / "mount.nacre"), "10.0.0.1@tcp:/demo", str(tmp_path), "-f",
                        "-o", "_netdev,noauto,nofail,x-systemd.automount,key_file=/k,"
                        "metrics_addr=127.0.0.1:0"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
