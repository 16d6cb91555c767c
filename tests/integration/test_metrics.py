"""Metrics: a real Prometheus scrapes nacre-mds, nacre-oss and nacre-mount (each started with
--metrics-addr / metrics_addr= on an ephemeral port); the series exist and move under load.
The --metrics-log JSON lines carry the fields log analytics use. `nacre stats` and
`nacre top` read the same endpoints."""
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from conftest import Cluster, binary, free_port, wait_for, Proc


class MetricsCluster(Cluster):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.mport = {"mds": free_port(), **{f"oss{j}": free_port() for j in range(self.noss)}}

    def mds_argv(self, fmt):
        return super().mds_argv(fmt) + [
            "--metrics-addr", f"127.0.0.1:{self.mport['mds']}",
            "--metrics-log", str(self.dir / "mds.jsonl"), "--metrics-interval", "1"]

    def oss_argv(self, j, fmt):
        return super().oss_argv(j, fmt) + [
            "--metrics-addr", f"127.0.0.1:{self.mport[f'oss{j}']}",
            "--metrics-log", str(self.dir / f"oss{j}.jsonl"), "--metrics-interval", "1"]


def port_open(port):
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def query(prom, expr):
    url = f"http://127.0.0.1:{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as r:
        data = json.load(r)
    assert data["status"] == "success", data
    return {json.dumps(v["metric"], sort_keys=True): float(v["value"][1])
            for v in data["data"]["result"]}


def total(prom, expr):
    return sum(query(prom, expr).values())


@pytest.fixture
def mcluster():
    c = MetricsCluster(osts=2, oss=2)
    try:
        c.start()
        c.mount_port = free_port()
        c.mount(opts=[f"metrics_addr=127.0.0.1:{c.mount_port}",
                      f"metrics_log={c.dir / 'mount.jsonl'}", "metrics_interval=1"])
        c.wait_osts_up()
    except BaseException:
        print(c.logs())
        c.stop()
        raise
    yield c
    bad = c.stop()
    assert not bad, c.logs(200)


def test_prometheus_scrapes_every_daemon(mcluster, tmp_path):
    c = mcluster
    prom_bin = shutil.which("prometheus") or "/usr/bin/prometheus"
    if not os.access(prom_bin, os.X_OK):
        pytest.fail("prometheus is missing: apt-get install prometheus")
    ports = {"mds": c.mport["mds"], "oss0": c.mport["oss0"], "oss1": c.mport["oss1"],
             "mount": c.mount_port}
    for role, p in ports.items():
        wait_for(lambda p=p: port_open(p), 10, f"{role} metrics port {p}")
    targets = ", ".join(f"'127.0.0.1:{p}'" for p in ports.values())
    conf = tmp_path / "prometheus.yml"
    conf.write_text("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: nacre\n"
                    f"    static_configs:\n      - targets: [{targets}]\n")
    prom = free_port()
    p = Proc("prometheus", [prom_bin, f"--config.file={conf}",
                            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                            f"--web.listen-address=127.0.0.1:{prom}"],
             c.dir / "prometheus.log").start()
    c.extra.append(p)
    try:
        def all_up():
            assert p.alive(), p.text()[-3000:]
            try:
                up = query(prom, "up")
            except OSError:
                return False
            return len(up) == 4 and all(v == 1.0 for v in up.values())
        wait_for(all_up, 40, "Prometheus to scrape all four endpoints", interval=0.5)

        for name in ("nacre_load1", "nacre_kbytes_free", "nacre_net_sent_bytes_total",
                     "nacre_net_received_bytes_total"):
            assert len(query(prom, name)) == 4, name
        assert query(prom, "nacre_mds_open_files")
        assert len(query(prom, "nacre_oss_kbytes_free")) == 2
        assert query(prom, "nacre_client_open_files")

        w0 = total(prom, "nacre_oss_write_bytes_total")
        c0 = total(prom, "nacre_client_write_bytes_total")
        r0 = total(prom, "nacre_client_read_bytes_total")
        # Load: 8 MiB striped over both OSTs, written then read back.
        mnt = c.mounts[0].path
        data = os.urandom(8 << 20)
        (mnt / "load.bin").write_bytes(data)
        with open(mnt / "load.bin", "rb") as f:
            assert f.read() == data

        wait_for(lambda: total(prom, "nacre_oss_write_bytes_total") >= w0 + (8 << 20), 20,
                 "OSS write bytes to move in Prometheus", interval=0.5)
        wait_for(lambda: total(prom, "nacre_client_write_bytes_total") >= c0 + (8 << 20), 20,
                 "client write bytes to move", interval=0.5)
        wait_for(lambda: total(prom, "nacre_client_read_bytes_total") > r0, 20,
                 "client read bytes to move", interval=0.5)
        lat = query(prom, "nacre_rpc_client_latency_seconds_count")
        assert any('"op": "MDS_' in k or "MDS" in k for k in lat), lat
        assert total(prom, "nacre_rpc_server_requests_total") > 0
        assert query(prom, "nacre_rpc_server_latency_seconds_bucket")
    finally:
        p.kill()

    # JSON lines: one per second from each daemon, with the fields log analytics use.
    for name in ("mds.jsonl", "oss0.jsonl", "oss1.jsonl", "mount.jsonl"):
        path = c.dir / name
        wait_for(lambda path=path: path.exists() and path.read_text().count("\n") >= 2, 10,
                 f"two lines in {name}")
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            for k in ("hostname", "loadavg", "kbytesfree", "bytessend", "bytesrecv"):
                assert k in rec, (name, k, rec)
            assert rec["hostname"] == socket.gethostname()
            assert isinstance(rec["kbytesfree"], (int, float))

    # nacre stats: per-target counters; nacre top: one refresh per server.
    eps = [f"127.0.0.1:{v}" for v in ports.values()]
    r = subprocess.run([binary("nacre"), "stats", *eps], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    assert f"obdfilter.{c.fsname}-OST0000.stats=" in r.stdout, r.stdout
    assert "write_bytes" in r.stdout and "llite.stats=" in r.stdout
    r = subprocess.run([binary("nacre"), "top", "-n", "2", *eps], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    for e in eps:
        assert e in r.stdout
    assert "REQ/s" in r.stdout
