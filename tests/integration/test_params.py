"""nacre get_param / set_param / list_param (lctl's verbs and dotted names), nacre check
servers and nacre getname (lfs's): exact line shapes, wildcards, a set that changes what the
mount does, the errors and exit codes, and a killed OSS reported inactive.

The cluster has its own fsname so that the names cannot collide with another cluster's
mounts on this machine; every call names the mount with --mount for the same reason."""
import os
import re
import subprocess

import pytest

from conftest import Cluster, binary, free_port

FS = "prmfs"
INST = r"[0-9a-f]{16}"


class ParamCluster(Cluster):
    """Servers with a metrics endpoint, for obdfilter.*.stats and mdt.*.md_stats."""

    def __init__(self, **kw):
        super().__init__(fsname=FS, **kw)
        self.mport = [free_port() for _ in range(self.noss)]
        self.mds_mport = free_port()

    def mds_argv(self, fmt):
        return super().mds_argv(fmt) + ["--metrics-addr", f"127.0.0.1:{self.mds_mport}"]

    def oss_argv(self, j, fmt):
        return super().oss_argv(j, fmt) + ["--metrics-addr", f"127.0.0.1:{self.mport[j]}"]


@pytest.fixture(scope="module")
def pc():
    c = ParamCluster(osts=2, oss=2)
    try:
        c.start()
        # mounts[0]: the one whose tunables change; on /dev/fuse, whose requests stay at
        # 1 MiB whatever fs.fuse.max_pages_limit says (the ring's may reach 4 MiB, and then
        # the kernel's reads alone are as large as the mount's readahead RPCs)
        c.mount(opts=["io_uring=off"])
        c.mount(name="writer")  # mounts[1]: writes the files mounts[0] reads (no cache)
        c.wait_osts_up()
    except BaseException:
        print(c.logs())
        c.stop()
        raise
    yield c
    bad = c.stop()
    assert not bad, c.logs(200)


def nacre(*args, user=None):
    return subprocess.run([binary("nacre"), *map(str, args)], capture_output=True, text=True,
                          timeout=60, user=user)


def instance(pc):
    r = nacre("getname", "-i", pc.mounts[0].path)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_getname(pc):
    m = pc.mounts[0].path
    r = nacre("getname", m)
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(rf"{FS}-{INST} {re.escape(str(m))}\n", r.stdout), r.stdout
    assert nacre("getname", "-n", m).stdout == f"{FS}\n"
    inst = instance(pc)
    assert re.fullmatch(INST, inst)
    # Two mounts of one file system are two instances.
    assert nacre("getname", "-i", pc.mounts[1].path).stdout.strip() != inst


def test_get_param_shapes_and_wildcards(pc):
    m, inst = pc.mounts[0].path, instance(pc)
    r = nacre("get_param", "--mount", m, "osc.*.max_rpcs_in_flight")
    assert r.returncode == 0, r.stderr
    assert r.stdout == (f"osc.{FS}-OST0000-osc-{inst}.max_rpcs_in_flight=8\n"
                        f"osc.{FS}-OST0001-osc-{inst}.max_rpcs_in_flight=8\n")
    # '*' stays within one component, as lctl's path glob: this matches nothing.
    r = nacre("get_param", "--mount", m, "osc.*")
    assert r.returncode == 2 and r.stdout == ""
    assert "error: get_param: param_path 'osc.*': No such file or directory" in r.stderr
    # -R takes every name below a matching prefix.
    r = nacre("get_param", "-N", "-R", "--mount", m, f"osc.{FS}-OST0001-osc-*")
    names = r.stdout.split()
    assert f"osc.{FS}-OST0001-osc-{inst}.max_rpcs_in_flight" in names
    assert f"osc.{FS}-OST0001-osc-{inst}.active" in names
    assert all(n.startswith(f"osc.{FS}-OST0001-osc-") for n in names), names
    r = nacre("get_param", "-n", "--mount", m, "llite.*.max_read_ahead_mb", "osc.*.active")
    assert r.stdout == "64\n1\n1\n", r.stdout
    r = nacre("list_param", "--mount", m, "obdfilter.*.kbytesfree", "mdc.*.active")
    assert r.stdout == (f"obdfilter.{FS}-OST0000.kbytesfree\n"
                        f"obdfilter.{FS}-OST0001.kbytesfree\n"
                        f"mdc.{FS}-MDT0000-mdc-{inst}.active\n"), r.stdout
    r = nacre("list_param", "-F", "--mount", m, "llite.*.*")
    assert r.stdout == (f"llite.{FS}-{inst}.fid_grant=\n"
                        f"llite.{FS}-{inst}.max_read_ahead_mb=\n"
                        f"llite.{FS}-{inst}.stats\n"
                        f"llite.{FS}-{inst}.wb=\n"
                        f"llite.{FS}-{inst}.wb_delay_ms=\n"), r.stdout
    st = os.statvfs(pc.ost_dir(0))
    kb = int(nacre("get_param", "-n", "--mount", m, f"obdfilter.{FS}-OST0000.kbytestotal")
             .stdout)
    assert abs(kb - st.f_blocks * st.f_frsize // 1024) <= 1024


def ost_stats(pc, ost):
    r = nacre("get_param", "--mount", pc.mounts[0].path,
              "--metrics", f"127.0.0.1:{pc.mport[ost % pc.noss]}",
              f"obdfilter.{FS}-OST{ost:04x}.stats")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"obdfilter.{FS}-OST{ost:04x}.stats=", r.stdout
    assert re.fullmatch(r"snapshot_time {13}\d{10}\.\d{9} secs\.nsecs", lines[1]), lines[1]
    out = {}
    for ln in lines[2:]:
        mm = re.fullmatch(r"(\S+) +(\d+) samples \[(\w+)\]((?: \d+){3})?", ln)
        # "%-25s %lld samples [%s]": the name padded to 25 columns, one space, the count.
        assert mm and ln[:25].rstrip() == mm.group(1) and ln[25] == " " and ln[26] != " ", ln
        out[mm.group(1)] = (int(mm.group(2)), mm.group(3),
                            [int(x) for x in (mm.group(4) or "").split()])
    return out


def read_file(path):
    with open(path, "rb") as f:
        while f.read(128 * 1024):
            pass


def test_set_param_changes_the_mount(pc):
    m, w, inst = pc.mounts[0].path, pc.mounts[1].path, instance(pc)
    # max_rpcs_in_flight is per OSC: one changes, the other keeps its value.
    r = nacre("set_param", "--mount", m, f"osc.{FS}-OST0001-osc-*.max_rpcs_in_flight=3")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"osc.{FS}-OST0001-osc-{inst}.max_rpcs_in_flight=3\n"
    r = nacre("get_param", "-n", "--mount", m, "osc.*.max_rpcs_in_flight")
    assert r.stdout == "8\n3\n"

    # Readahead off: the OST sees reads no larger than the kernel's (1 MiB at most); on
    # again: the mount reads ahead in whole 4 MiB RPCs.
    for name in ("ra_off", "ra_on"):
        r = nacre("setstripe", "-c", "1", "-i", "0", w / name)
        assert r.returncode == 0, r.stderr
        with open(w / name, "wb") as f:
            f.write(os.urandom(16 << 20))
    assert nacre("set_param", "-n", "--mount", m, "llite.*.max_read_ahead_mb=0").stdout == ""
    assert nacre("get_param", "-n", "--mount", m, "llite.*.max_read_ahead_mb").stdout == "0\n"
    read_file(m / "ra_off")
    off = ost_stats(pc, 0)["read_bytes"]
    assert off[1] == "bytes" and off[2][2] >= 16 << 20 and off[0] >= 16, off
    assert off[2][1] <= 1 << 20, off  # max read
    r = nacre("set_param", "--mount", m, "llite.*.max_read_ahead_mb=64")
    assert r.stdout == f"llite.{FS}-{inst}.max_read_ahead_mb=64\n"
    read_file(m / "ra_on")
    on = ost_stats(pc, 0)["read_bytes"]
    assert on[2][1] == 4 << 20, on
    assert on[0] - off[0] < off[0], (on, off)  # fewer, larger reads
    # write_bytes in the same shape; requests by operation without min/max.
    st = ost_stats(pc, 0)
    assert st["write_bytes"][1] == "bytes" and st["write_bytes"][2][2] >= 32 << 20
    assert st["write"][1] == "reqs" and st["write"][2] == []


def test_llite_stats(pc):
    m, inst = pc.mounts[0].path, instance(pc)
    (m / "llite_f").write_bytes(b"y" * 300000)
    with open(m / "llite_f", "rb") as f:
        assert len(f.read()) == 300000
    r = nacre("get_param", "--mount", m, "llite.*.stats")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"llite.{FS}-{inst}.stats="
    assert re.fullmatch(r"snapshot_time {13}\d+\.\d{9} secs\.nsecs", lines[1]), lines
    rd = [ln.split() for ln in lines if ln.startswith("read_bytes ")]
    wr = [ln.split() for ln in lines if ln.startswith("write_bytes ")]
    assert len(rd) == 1 and rd[0][2:4] == ["samples", "[bytes]"], lines
    assert int(wr[0][6]) >= 300000 and int(rd[0][6]) >= 300000  # SUM
    assert int(rd[0][4]) <= int(rd[0][5])  # MIN <= MAX
    assert re.fullmatch(r"open {22}\d+ samples \[reqs\]", [ln for ln in lines
                                                              if ln.startswith("open ")][0])
    r = nacre("set_param", "--mount", m, "llite.*.stats=0")
    assert r.returncode == 13 and "read-only" in r.stderr


def test_set_param_errors(pc):
    m = pc.mounts[0].path
    before = nacre("get_param", "--mount", m, "osc.*.max_rpcs_in_flight",
                   "llite.*.max_read_ahead_mb").stdout
    r = nacre("set_param", "--mount", m, "osc.*.max_rpcs_in_flight=0")
    assert r.returncode == 34, r
    assert "max_rpcs_in_flight=0: Numerical result out of range" in r.stderr
    r = nacre("set_param", "--mount", m, "osc.*.max_rpcs_in_flight=lots")
    assert r.returncode == 22 and "Invalid argument" in r.stderr, r
    r = nacre("set_param", "--mount", m, "osc.*.active=0")
    assert r.returncode == 13 and "Permission denied (a read-only parameter)" in r.stderr
    r = nacre("set_param", "--mount", m, "llite.*.no_such_knob=1")
    assert r.returncode == 2
    assert r.stderr.startswith(
        "error: set_param: param_path 'llite.*.no_such_knob': No such file or directory")
    r = nacre("set_param", "-P", "llite.*.max_read_ahead_mb=8")
    assert r.returncode == 1 and "no configuration log" in r.stderr
    r = nacre("set_param", "--mount", m, "llite.*.max_read_ahead_mb=8", user=65534)
    assert r.returncode == 13 and "needs root" in r.stderr, r
    # Nothing was changed by the failures.
    assert nacre("get_param", "--mount", m, "osc.*.max_rpcs_in_flight",
                 "llite.*.max_read_ahead_mb").stdout == before


def test_connection_parameters(pc):
    """lctl's version, osc/mdc import, max_pages_per_rpc, checksums and max_dirty_mb."""
    m, inst = pc.mounts[0].path, instance(pc)
    # a connection is made at its first request: one to each OST
    assert nacre("setstripe", "-c", "2", m / "both").returncode == 0
    (m / "both").write_bytes(b"b" * (9 << 20))
    ver = subprocess.run([binary("nacre"), "--version"], capture_output=True, text=True)
    r = nacre("get_param", "--mount", m, "version")
    assert r.returncode == 0 and r.stdout == f"version={ver.stdout.split()[-1]}\n", r
    r = nacre("get_param", "-n", "--mount", m, f"osc.{FS}-OST0001-osc-*.import")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:4] == ["import:", f"    name: {FS}-OST0001-osc-{inst}",
                         f"    target: {FS}-OST0001_UUID", "    state: FULL"], lines
    flags = re.search(r"connect_flags: \[ (.*) \]", r.stdout).group(1).split(", ")
    assert "recovery" in flags and "ost_jobid" in flags, flags
    assert "       current_connection: 127.0.0.1:" in r.stdout, r.stdout
    assert re.search(r"failover_nids: \[ 127\.0\.0\.1:\d+ \]", r.stdout), r.stdout
    r = nacre("get_param", "-n", "--mount", m, "mdc.*.import")
    assert "    state: FULL\n" in r.stdout and "wb_lease" in r.stdout, r.stdout
    assert re.search(r"last_committed: \d+\n", r.stdout), r.stdout
    r = nacre("get_param", "-n", "--mount", m, "osc.*.max_pages_per_rpc", "osc.*.checksums")
    assert r.stdout == "1024\n1024\n1\n1\n", r.stdout
    r = nacre("set_param", "--mount", m, "osc.*.checksums=0")
    assert r.returncode == 13 and "read-only" in r.stderr, r
    # max_pages_per_rpc: the RPCs of the whole mount get smaller (at most its own size)
    before = ost_stats(pc, 0)["write_bytes"][0]
    r = nacre("set_param", "--mount", m, f"osc.{FS}-OST0000-osc-*.max_pages_per_rpc=64")
    assert r.returncode == 0, r.stderr
    assert nacre("get_param", "-n", "--mount", m, "osc.*.max_pages_per_rpc").stdout == \
        "64\n64\n"
    assert nacre("setstripe", "-c", "1", "-i", "0", m / "small_rpcs").returncode == 0
    with open(m / "small_rpcs", "wb") as f:
        f.write(b"r" * (8 << 20))
        os.fsync(f.fileno())
    assert ost_stats(pc, 0)["write_bytes"][0] - before >= 32  # 8 MiB in 256 KiB RPCs
    other = pc.mounts[1].path  # reads in 64 KiB RPCs, every byte right
    assert nacre("set_param", "--mount", other, "osc.*.max_pages_per_rpc=16").returncode == 0
    reads = ost_stats(pc, 0)["read_bytes"][0]
    assert (other / "small_rpcs").read_bytes() == b"r" * (8 << 20)
    assert ost_stats(pc, 0)["read_bytes"][0] - reads >= 128
    assert nacre("set_param", "--mount", other, "osc.*.max_pages_per_rpc=1024").returncode == 0
    r = nacre("set_param", "--mount", m, "osc.*.max_pages_per_rpc=2048")
    assert r.returncode == 34, r  # above the mount's -o max_rpc_size
    assert nacre("set_param", "--mount", m, "osc.*.max_pages_per_rpc=1024").returncode == 0
    # max_dirty_mb: one limit for the mount, whichever OSC is named
    before = nacre("get_param", "-n", "--mount", m, f"osc.{FS}-OST0000-osc-*.max_dirty_mb")
    r = nacre("set_param", "--mount", m, f"osc.{FS}-OST0000-osc-*.max_dirty_mb=48")
    assert r.returncode == 0, r.stderr
    r = nacre("get_param", "-n", "--mount", m, "osc.*.max_dirty_mb")
    assert r.stdout == "48\n48\n", r.stdout
    (pc.mounts[0].path / "dirty").write_bytes(os.urandom(3 << 20))  # still writes, reads back
    assert len((pc.mounts[1].path / "dirty").read_bytes()) == 3 << 20
    r = nacre("set_param", "--mount", m, "osc.*.max_dirty_mb=0")
    assert r.returncode == 34, r
    r = nacre("set_param", "--mount", m, f"osc.*.max_dirty_mb={before.stdout.strip()}")
    assert r.returncode == 0, r.stderr


def test_hsm_actions(pc):
    m = pc.mounts[0].path
    f = m / "to_archive"
    f.write_bytes(b"x" * 1000)
    fid = nacre("path2fid", f).stdout.strip()
    r = nacre("hsm_archive", f)
    assert r.returncode == 0, r.stderr
    r = nacre("get_param", "-n", "--mount", m, "mdt.*.hsm.actions")
    line = [ln for ln in r.stdout.splitlines() if f"fid={fid}" in ln]
    assert len(line) == 1, r.stdout
    fields = line[0].split()
    assert fields[0].startswith("lrh=[type=10680000") and fields[3] == f"fid={fid}"
    assert fields[6] == "action=ARCHIVE" and fields[12] == "status=WAITING", fields
    # Multi-line values print as NAME= and then the lines.
    r = nacre("get_param", "--mount", m, "mdt.*.hsm.actions")
    assert r.stdout.startswith(f"mdt.{FS}-MDT0000.hsm.actions=\n")


def test_md_stats(pc):
    m = pc.mounts[0].path
    for i in range(3):
        (m / f"md{i}").mkdir()
    r = nacre("get_param", "--mount", m, "--metrics", f"127.0.0.1:{pc.mds_mport}",
              "--metrics", f"127.0.0.1:{pc.mport[0]}", "mdt.*.md_stats", "obdfilter.*.stats")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"mdt.{FS}-MDT0000.md_stats=", r.stdout
    assert re.fullmatch(r"snapshot_time {13}\d+\.\d{9} secs\.nsecs", lines[1])
    mk = [ln for ln in lines if ln.startswith("mkdir ")]
    assert len(mk) == 1 and re.fullmatch(r"mkdir {21}(\d+) samples \[reqs\]", mk[0]), lines
    assert int(mk[0].split()[1]) >= 3
    # Only OST0000's OSS was named: OST0001's stats are not there.
    assert f"obdfilter.{FS}-OST0000.stats=" in lines
    assert f"obdfilter.{FS}-OST0001.stats=" not in lines


def test_nacre_stats_is_lctl_shaped(pc):
    r = nacre("stats", f"127.0.0.1:{pc.mport[0]}")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    i = lines.index(f"obdfilter.{FS}-OST0000.stats=")
    assert re.fullmatch(r"snapshot_time +\d+\.\d{9} secs\.nsecs", lines[i + 1])
    assert any(re.fullmatch(r"write_bytes {15}\d+ samples \[bytes\] \d+ \d+ \d+", ln)
               for ln in lines[i + 2:]), r.stdout


def test_check_servers_reports_a_dead_oss(pc):
    m, inst = pc.mounts[0].path, instance(pc)
    r = nacre("check", "servers", m)
    assert r.returncode == 0, r.stderr
    assert r.stdout == (f"{FS}-MDT0000-mdc-{inst} active.\n"
                        f"{FS}-OST0000-osc-{inst} active.\n"
                        f"{FS}-OST0001-osc-{inst} active.\n")
    pc.oss[1].kill()  # SIGKILL
    pc.wait_ost_down(1)
    r = nacre("check", "servers", m)
    assert r.returncode == 1
    assert f"{FS}-OST0001-osc-{inst} inactive.\n" in r.stdout, r.stdout
    assert f"{FS}-OST0000-osc-{inst} active.\n" in r.stdout
    assert nacre("check", "osts", m).returncode == 1
    assert nacre("check", "mdts", m).returncode == 0
    r = nacre("get_param", "-n", "--mount", m, f"osc.{FS}-OST0001-osc-*.active")
    assert r.stdout == "0\n"
