"""Metrics: a real Prometheus scrapes nacre-mds, nacre-oss and nacre-mount (each started with
--metrics-addr / metrics_addr= on an ephemeral port); the series exist and move under load.
The --metrics-log JSON lines carry the fields log analytics use. `nacre stats` and
`nacre top` read the same endpoints."""
import json
import re
import os
import shutil
import socket
import subprocess
import tempfile
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
        # capacity is a gauge: no _total suffix (Prometheus keeps that for counters)
        assert len(query(prom, "nacre_capacity_kbytes")) == 4
        assert len(query(prom, "nacre_oss_capacity_kbytes")) == 2
        assert not query(prom, "nacre_kbytes_total")
        assert not query(prom, "nacre_oss_kbytes_total")
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


def test_top_never_shows_a_negative_rate():
    """nacre top compares one counter per role across refreshes: an MDS that had only made
    calls of its own and then served some (its server counter appearing), or that restarted
    (counters back to 0), shows a rate of 0 or more, or "-", never a negative one."""
    pages = [
        # an MDS that has only called others so far: no server counter yet
        'nacre_mds_inodes 5\nnacre_rpc_client_latency_seconds_count{op="PING"} 100\n',
        # then it serves 5 requests
        'nacre_mds_inodes 5\nnacre_rpc_client_latency_seconds_count{op="PING"} 101\n'
        'nacre_rpc_server_requests_total{op="MDS_LOOKUP"} 5\n',
        # then it restarted: every counter back near 0
        'nacre_mds_inodes 5\nnacre_rpc_server_requests_total{op="MDS_LOOKUP"} 1\n',
    ]
    served = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = pages[min(len(served), len(pages) - 1)].encode()
            served.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        ep = f"127.0.0.1:{srv.server_address[1]}"
        r = subprocess.run([binary("nacre"), "top", "-n", "3", ep], capture_output=True,
                           text=True, timeout=30)
    finally:
        srv.shutdown()
    assert r.returncode == 0, r.stderr
    rows = [ln.split() for ln in r.stdout.splitlines() if ln.startswith(ep)]
    assert len(rows) == 3, r.stdout
    rates = [row[-1] for row in rows]
    assert rates[0] == "-" and rates[2] == "-", r.stdout  # first refresh, then a restart
    assert 0 < float(rates[1]) <= 10, r.stdout  # 5 served in about a second
    assert all(row[2] == "-" for row in rows), r.stdout  # no load reported: none shown


# ---- Azure Log Analytics (HTTP Data Collector API) --------------------------------------

import base64
import hashlib
import hmac
import http.server
import threading

AZ_WS = "0a1b2c3d-0000-4000-8000-00000000abcd"
AZ_FIELDS = ("hostname", "daemon", "timestamp", "loadavg", "kbytesfree", "kbytestotal",
             "bytessend", "bytesrecv")


class LogAnalytics:
    """A local stand-in for the Data Collector API: checks every POST's SharedKey signature
    (computed here with Python's hmac from the same key), headers and records, and answers
    the statuses queued in `answers` (then 200)."""

    def __init__(self, key, answers=()):
        self.key = key
        self.answers = list(answers)
        self.posts = []  # dicts: status, log_type, records, problems
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                problems = outer.check(self.command, self.path, self.headers, body)
                with outer.lock:
                    status = outer.answers.pop(0) if outer.answers else 200
                    try:
                        records = json.loads(body)
                    except ValueError:
                        records = None
                    outer.posts.append({"status": status, "records": records,
                                        "log_type": self.headers.get("Log-Type"),
                                        "problems": problems})
                self.send_response(status if not problems else 403)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/api/logs?api-version=2016-04-01"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def check(self, method, path, h, body):
        problems = []
        if method != "POST" or path != "/api/logs?api-version=2016-04-01":
            problems.append(f"{method} {path}")
        if h.get("Content-Type") != "application/json":
            problems.append(f"Content-Type {h.get('Content-Type')}")
        if h.get("time-generated-field") != "timestamp":
            problems.append(f"time-generated-field {h.get('time-generated-field')}")
        date = h.get("x-ms-date") or ""
        try:
            time.strptime(date, "%a, %d %b %Y %H:%M:%S GMT")
        except ValueError:
            problems.append(f"x-ms-date {date!r}")
        to_sign = f"POST\n{len(body)}\napplication/json\nx-ms-date:{date}\n/api/logs"
        sig = base64.b64encode(hmac.new(self.key, to_sign.encode(), hashlib.sha256).digest())
        if h.get("Authorization") != f"SharedKey {AZ_WS}:{sig.decode()}":
            problems.append(f"Authorization {h.get('Authorization')}")
        return problems

    def accepted(self, daemon=None):
        with self.lock:
            return [r for p in self.posts if p["status"] == 200 and not p["problems"]
                    for r in p["records"] if daemon is None or r.get("daemon") == daemon]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def azure_key(dirpath, mode=0o600):
    key = os.urandom(64)
    path = dirpath / "la.key"
    path.write_text(base64.b64encode(key).decode() + "\n")
    os.chmod(path, mode)
    return key, path


def prom_value(port, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return None


def test_log_analytics_sink(tmp_path):
    """The MDS and the mount post signed records to a receiver that answers 500 once (the
    records come again), the OSS posts to an endpoint that is down: it keeps serving, its
    queue stays at --metrics-azure-queue and its drops are said once."""
    key, key_path = azure_key(tmp_path)
    la = LogAnalytics(key, answers=[500])
    dead = free_port()
    az = ["--metrics-azure", AZ_WS, "--metrics-azure-key-file", str(key_path),
          "--metrics-interval", "1"]
    oss_mport = free_port()
    c = Cluster(osts=1, oss=1,
                mds_args=az + ["--metrics-azure-url", la.url,
                               "--metrics-azure-log-type", "NacreTest"],
                oss_args=az + ["--metrics-azure-url", f"http://127.0.0.1:{dead}/api/logs",
                               "--metrics-azure-queue", "3",
                               "--metrics-addr", f"127.0.0.1:{oss_mport}",
                               "--metrics-log", "OSSLOG"])
    c.oss_args[c.oss_args.index("OSSLOG")] = str(c.dir / "oss0.jsonl")
    try:
        c.start()
        c.mount(opts=[f"metrics_azure={AZ_WS}", f"metrics_azure_key_file={key_path}",
                      f"metrics_azure_url={la.url}", "metrics_interval=1",
                      "metrics_azure_batch=2"])
        c.wait_osts_up()
        wait_for(lambda: len(la.accepted("mds")) >= 2 and la.accepted("mount"), 15,
                 "the MDS and the mount to post to Log Analytics")
        with la.lock:
            posts = list(la.posts)
        assert all(not p["problems"] for p in posts), [p["problems"] for p in posts]
        # the first POST got a 500: its records came again in a later POST
        assert posts[0]["status"] == 500, posts[0]
        again = {json.dumps(r, sort_keys=True) for r in la.accepted()}
        assert all(json.dumps(r, sort_keys=True) in again for r in posts[0]["records"])
        assert {p["log_type"] for p in posts if p["records"][0]["daemon"] == "mds"} == \
            {"NacreTest"}
        assert {p["log_type"] for p in posts if p["records"][0]["daemon"] == "mount"} == \
            {"NacreMetrics"}
        for rec in la.accepted():
            for k in AZ_FIELDS:
                assert k in rec, (k, rec)
            assert rec["hostname"] == socket.gethostname()
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", rec["timestamp"]), rec
            assert isinstance(rec["loadavg"], (int, float))
        assert any("nacre_mds_open_files" in r for r in la.accepted("mds"))
        # the mount batches two records per POST, the MDS posts each as it comes
        with la.lock:
            sizes = {p["records"][0]["daemon"]: set() for p in la.posts}
            for p in la.posts:
                sizes[p["records"][0]["daemon"]].add(len(p["records"]))
        assert sizes["mount"] == {2}, sizes
        assert 1 in sizes["mds"], sizes

        # The OSS's endpoint is down: the file system and its other metrics still work.
        (c.mounts[0].path / "f").write_bytes(b"x" * 100000)
        assert (c.mounts[0].path / "f").read_bytes() == b"x" * 100000
        wait_for(lambda: (prom_value(oss_mport, "nacre_azure_log_records_dropped_total")
                          or 0) >= 2, 15, "the OSS to drop records it cannot post")
        assert prom_value(oss_mport, "nacre_azure_log_queue_records") <= 3
        assert prom_value(oss_mport, "nacre_azure_log_records_sent_total") == 0
        assert prom_value(oss_mport, "nacre_azure_log_post_failures_total") >= 1
        lines = (c.dir / "oss0.jsonl").read_text().count("\n")
        wait_for(lambda: (c.dir / "oss0.jsonl").read_text().count("\n") > lines, 5,
                 "the OSS's metrics log to go on")
        log = c.oss[0].text()
        assert log.count("Log Analytics queue full") == 1, log[-3000:]
        assert "Couldn't connect to server" in log
        assert not any(r.get("daemon") == "oss" for r in la.accepted())
    except BaseException:
        print(c.logs())
        raise
    finally:
        bad = c.stop()
        la.stop()
    assert not bad, c.logs(200)


# ---- Azure Log Analytics (Logs Ingestion API) --------------------------------------------

AZ_TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
AZ_CLIENT = "5f6e7d8c-0000-4000-8000-000000000001"
AZ_DCR = "dcr-00112233445566778899aabbccddeeff"
AZ_STREAM = "Custom-NacreMetrics_CL"


class Ingestion:
    """A local stand-in for Entra ID's token endpoint and a data collection endpoint:
    checks the client-credentials form, hands out tokens tok-1, tok-2..., and takes
    records only with the last token handed out (the first ingestion POST is answered 401,
    as an expired token is)."""

    def __init__(self, secret):
        self.secret = secret
        self.tokens = []   # handed out
        self.problems = []
        self.posts = []    # (token, records) taken
        self.refused_once = False
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"] or 0))
                status, answer = outer.answer(self.path, self.headers, body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, path, h, body):
        with self.lock:
            if path == f"/{AZ_TENANT}/oauth2/v2.0/token":
                form = urllib.parse.parse_qs(body.decode())
                want = {"grant_type": ["client_credentials"], "client_id": [AZ_CLIENT],
                        "client_secret": [self.secret],
                        "scope": ["https://monitor.azure.com/.default"]}
                if form != want or h.get("Content-Type") != \
                        "application/x-www-form-urlencoded":
                    self.problems.append(("token form", form, h.get("Content-Type")))
                    return 400, b'{"error":"invalid_client"}'
                self.tokens.append(f"tok-{len(self.tokens) + 1}")
                return 200, json.dumps({"token_type": "Bearer", "expires_in": 3599,
                                        "access_token": self.tokens[-1]}).encode()
            want = f"/dataCollectionRules/{AZ_DCR}/streams/{AZ_STREAM}?api-version=2023-01-01"
            if path != want:
                self.problems.append(("path", path))
                return 404, b"{}"
            if h.get("Content-Type") != "application/json":
                self.problems.append(("content type", h.get("Content-Type")))
            auth = h.get("Authorization", "")
            if not self.refused_once:
                self.refused_once = True
                return 401, b'{"error":{"code":"InvalidToken"}}'
            if not self.tokens or auth != f"Bearer {self.tokens[-1]}":
                self.problems.append(("authorization", auth, list(self.tokens)))
                return 403, b"{}"
            self.posts.append((auth, json.loads(body)))
            return 204, b""

    def records(self, daemon):
        with self.lock:
            return [r for _, recs in self.posts for r in recs if r.get("daemon") == daemon]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def test_log_analytics_ingestion_api(tmp_path):
    """The MDS, both OSSes and the mount post to the Logs Ingestion API with a token they got
    by client credentials (a refused token is replaced); each record is one target's, with
    its file system name."""
    secret = "s3cr3t+&=/value"
    sf = tmp_path / "la.secret"
    sf.write_text(secret + "\n")
    os.chmod(sf, 0o600)
    ing = Ingestion(secret)
    az = ["--metrics-azure-dce", ing.base + "/", "--metrics-azure-dcr", AZ_DCR,
          "--metrics-azure-tenant", AZ_TENANT, "--metrics-azure-client-id", AZ_CLIENT,
          "--metrics-azure-secret-file", str(sf), "--metrics-azure-authority", ing.base,
          "--metrics-interval", "1"]
    c = Cluster(osts=2, oss=1, fsname="lafs", mds_args=az, oss_args=az)
    try:
        c.start()
        c.mount(opts=[f"metrics_azure_dce={ing.base}", f"metrics_azure_dcr={AZ_DCR}",
                      f"metrics_azure_tenant={AZ_TENANT}", f"metrics_azure_client_id={AZ_CLIENT}",
                      f"metrics_azure_secret_file={sf}", f"metrics_azure_authority={ing.base}",
                      "metrics_interval=1"])
        c.wait_osts_up()
        wait_for(lambda: ing.records("mds") and len({r["target"] for r in ing.records("oss")})
                 == 2 and ing.records("mount"), 20, "records of every daemon")
        assert not ing.problems, ing.problems
        assert len(ing.tokens) >= 2  # the refused one was replaced
        mds = ing.records("mds")
        assert {r["target"] for r in mds} == {"lafs-MDT0000"}, mds[0]
        for r in mds + ing.records("oss") + ing.records("mount"):
            for k in ("TimeGenerated", "hostname", "daemon", "fsname", "target", "loadavg",
                      "kbytesfree", "bytessend"):
                assert k in r, (k, r)
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["TimeGenerated"])
            assert all(re.fullmatch(r"\w+", k) for k in r), r  # column names
        assert all(r["fsname"] == "lafs" for r in mds + ing.records("oss"))
        assert "nacre_mds_open_files" in mds[0]
        oss = {r["target"]: r for r in ing.records("oss")}
        assert set(oss) == {"lafs-OST0000", "lafs-OST0001"}, list(oss)
        # one row per target: each OST's counters under the same column names
        cols = [k for k in oss["lafs-OST0000"] if k.startswith("nacre_oss_kbytes_free")]
        assert cols == ["nacre_oss_kbytes_free"], cols
        assert "nacre_oss_kbytes_free" in oss["lafs-OST0001"]
    except BaseException:
        print(c.logs())
        raise
    finally:
        bad = c.stop()
        ing.stop()
    assert not bad, c.logs(200)


def test_log_analytics_ingestion_options_checked(tmp_path):
    ckey = tmp_path / "cluster.key"
    ckey.write_text(os.urandom(32).hex() + "\n")
    os.chmod(ckey, 0o600)
    sf = tmp_path / "open.secret"
    sf.write_text("x\n")
    os.chmod(sf, 0o644)

    def mds(n, *args):
        return subprocess.run([binary("nacre-mds"), "--fsname", "la", "--data",
                               str(tmp_path / f"mdt{n}"), "--key-file", str(ckey), "--listen",
                               f"127.0.0.1:{free_port()}", "--format", *args],
                              capture_output=True, text=True, timeout=30)
    full = ["--metrics-azure-dce", "https://x.ingest.monitor.azure.com", "--metrics-azure-dcr",
            AZ_DCR, "--metrics-azure-tenant", AZ_TENANT, "--metrics-azure-client-id", AZ_CLIENT]
    r = mds(0, *full)
    assert r.returncode != 0 and "needs --metrics-azure-secret-file" in r.stderr, r.stderr
    r = mds(1, *full, "--metrics-azure-secret-file", str(sf))
    assert r.returncode != 0 and f"chmod 600 {sf}" in r.stderr, r.stderr
    r = mds(2, "--metrics-azure-dcr", AZ_DCR)
    assert r.returncode != 0 and "need --metrics-azure-dce" in r.stderr, r.stderr
    r = mds(3, *full, "--metrics-azure", AZ_WS)
    assert r.returncode != 0 and "not both" in r.stderr, r.stderr
    good = tmp_path / "good.secret"
    good.write_text("x\n")
    os.chmod(good, 0o600)
    bad_dcr = [a if a != AZ_DCR else "dcr/../x" for a in full]
    r = mds(4, *bad_dcr, "--metrics-azure-secret-file", str(good))
    assert r.returncode != 0 and "'dcr/../x' is no Azure ID" in r.stderr, r.stderr
    assert not any((tmp_path / f"mdt{n}").exists() for n in range(5))


def test_log_analytics_key_file_checked(tmp_path):
    """A key file others may read is refused, as every key file of nacre; so is a missing
    key file option."""
    key, key_path = azure_key(tmp_path, 0o644)
    ckey = tmp_path / "cluster.key"
    ckey.write_text(os.urandom(32).hex() + "\n")
    os.chmod(ckey, 0o600)
    def mds(n, *args):
        return subprocess.run([binary("nacre-mds"), "--fsname", "la", "--data",
                               str(tmp_path / f"mdt{n}"), "--key-file", str(ckey), "--listen",
                               f"127.0.0.1:{free_port()}", "--format", *args],
                              capture_output=True, text=True, timeout=30)

    r = mds(0, "--metrics-azure", AZ_WS, "--metrics-azure-key-file", str(key_path))
    assert r.returncode != 0
    assert f"chmod 600 {key_path}" in r.stderr, r.stderr
    assert not (tmp_path / "mdt0").exists()  # refused before anything was formatted
    r = mds(1, "--metrics-azure", AZ_WS)
    assert r.returncode != 0
    assert "--metrics-azure needs --metrics-azure-key-file" in r.stderr, r.stderr
    r = mds(2, "--metrics-azure-url", "http://x/")
    assert r.returncode != 0 and "need --metrics-azure-dce URL" in r.stderr, r.stderr
    assert "or --metrics-azure WORKSPACE" in r.stderr, r.stderr


def _free_ports(n):
    """A base port with n consecutive free ports on 127.0.0.1."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n >= 65000:
            continue
        try:
            for p in range(base, base + n):
                with socket.socket() as t:
                    t.bind(("127.0.0.1", p))
        except OSError:
            continue
        return base
    raise AssertionError("no free port range")


def test_up_metrics_options(nacre_cli, tmp_path):
    """nacre up --metrics-addr gives each daemon, the mount and the copytool the next port
    (printed), --metrics-log DIR a JSON log each, and --metrics-azure* reaches all five."""
    key, key_path = azure_key(tmp_path)
    la = LogAnalytics(key)
    d = tempfile.mkdtemp(prefix="nacre-upm-")
    port, mport = _free_ports(3), _free_ports(5)
    mlog = os.path.join(d, "metrics", "logs")  # created by nacre up
    os.mkdir(os.path.join(d, "archive"))
    try:
        r = nacre_cli("up", "--dir", d, "--osts", 2, "--port", port, "--fsname", "upm",
                      "--hsm-backend", f"posix:{d}/archive",
                      "--metrics-addr", f"127.0.0.1:{mport}", "--metrics-log", mlog,
                      "--metrics-interval", 1, "--metrics-azure", AZ_WS,
                      "--metrics-azure-key-file", key_path, "--metrics-azure-url", la.url,
                      timeout=90)
        assert r.returncode == 0, r.stdout + r.stderr
        want = (f"metrics: mds 127.0.0.1:{mport}, oss0 127.0.0.1:{mport + 1}, "
                f"oss1 127.0.0.1:{mport + 2}, mount 127.0.0.1:{mport + 3}, "
                f"copytool 127.0.0.1:{mport + 4} (http://HOST:PORT/metrics)")
        assert want in r.stdout, r.stdout
        assert f"metrics logs: {mlog}/upm-*.jsonl" in r.stdout, r.stdout
        for k in range(5):
            assert prom_value(mport + k, "nacre_capacity_kbytes") is not None, k
        assert prom_value(mport + 1, "nacre_capacity_kbytes") > 0
        roles = ("mds", "oss-0", "oss-1", "client-mount", "copytool-1")

        def logged():
            return all(os.path.exists(f"{mlog}/upm-{x}.jsonl") and
                       open(f"{mlog}/upm-{x}.jsonl").read().count("\n") >= 1 for x in roles)
        wait_for(logged, 15, "a JSON metrics line from each of " + ", ".join(roles))
        wait_for(lambda: {r["daemon"] for r in la.accepted()} ==
                 {"mds", "oss", "mount", "copytool"}, 15,
                 "every daemon, the mount and the copytool to post to Log Analytics")
        assert all(not p["problems"] for p in la.posts)
        opts = open(os.path.join(d, "up.options")).read()
        assert f"--metrics-addr=127.0.0.1:{mport}\n" in opts and "--metrics-azure=" in opts
    finally:
        nacre_cli("down", "--dir", d, timeout=60)
        subprocess.run(["fusermount3", "-u", "-z", os.path.join(d, "mnt")],
                       capture_output=True)
        subprocess.run(["rm", "-rf", d])
        la.stop()


def test_up_passes_the_ingestion_options(nacre_cli, tmp_path):
    """nacre up's --metrics-azure-dce and the options with it reach the MDS, the OSS and the
    mount, and are kept in up.options."""
    secret = "upsecret"
    sf = tmp_path / "la.secret"
    sf.write_text(secret + "\n")
    os.chmod(sf, 0o600)
    ing = Ingestion(secret)
    d = tempfile.mkdtemp(prefix="nacre-upi-")
    port = _free_ports(3)
    try:
        r = nacre_cli("up", "--dir", d, "--osts", 1, "--port", port, "--fsname", "upi",
                      "--metrics-interval", 1, "--metrics-azure-dce", ing.base,
                      "--metrics-azure-dcr", AZ_DCR, "--metrics-azure-tenant", AZ_TENANT,
                      "--metrics-azure-client-id", AZ_CLIENT, "--metrics-azure-secret-file",
                      sf, "--metrics-azure-authority", ing.base, timeout=90)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"metrics to Log Analytics (Logs Ingestion API) at {ing.base}, rule {AZ_DCR}" \
            in r.stdout, r.stdout
        wait_for(lambda: ing.records("mds") and ing.records("oss") and ing.records("mount"),
                 20, "the MDS, the OSS and the mount to post")
        assert not ing.problems, ing.problems
        assert {x["target"] for x in ing.records("oss")} == {"upi-OST0000"}
        opts = open(os.path.join(d, "up.options")).read()
        assert f"--metrics-azure-secret-file={sf}\n" in opts, opts
        r = nacre_cli("up", "--dir", str(tmp_path / "other"), "--metrics-azure-dcr", AZ_DCR,
                      timeout=30)
        assert r.returncode != 0 and "needs azure dce too" in r.stderr, r.stderr
        assert not (tmp_path / "other" / "mdt").exists()
    finally:
        nacre_cli("down", "--dir", d, timeout=60)
        subprocess.run(["fusermount3", "-u", "-z", os.path.join(d, "mnt")],
                       capture_output=True)
        subprocess.run(["rm", "-rf", d])
        ing.stop()
