"""Cloud HSM backends (src/hsm/azure.c, s3.c) against real servers on 127.0.0.1.

Azurite (Azure Blob) and s3rver (S3) come from npm through tests/hsm-servers/start. The
container is made with the Azure CLI and the bucket with boto3; objects written by nacre are
read back with the Azure SDK / CLI and boto3 (and the other way round), so the archive is
proven readable by other tools. The C side is driven by hsm-backend-tool
(tests/unit/hsm_backend_tool.c), which calls hsm_backend_* on local files.

s3rver checks the access key id but not SigV4 signatures; the signer is checked against AWS's
published vectors by `hsm-backend-tool selftest` instead.
"""
import hashlib
import http.client
import http.server
import json
import os
import secrets
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from conftest import REPO, binary

AZURITE_ACCOUNT = "devstoreaccount1"
# Azurite's documented, public development key (not a secret).
AZURITE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
               "KBHBeksoGMGw==")
S3_KEY_ID = "S3RVER"  # s3rver's built-in account
S3_SECRET = "S3RVER"
CONTAINER = "nacre-archive"
BUCKET = "nacre-archive"
CRED_VARS = ("AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CONNECTION_STRING",
             "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
             "AWS_DEFAULT_REGION", "NACRE_HSM_LIST_PAGE")


def az_cli(*args):
    """Runs the Azure CLI with its own config dir and telemetry off (nothing leaves the host)."""
    az = shutil.which("az")
    if not az:
        pytest.fail("the Azure CLI is missing: apt-get install azure-cli")
    with tempfile.TemporaryDirectory() as cfg:
        env = dict(os.environ, AZURE_CONFIG_DIR=cfg, AZURE_CORE_COLLECT_TELEMETRY="false",
                   AZURE_CORE_NO_COLOR="true", AZURE_CORE_ONLY_SHOW_ERRORS="true")
        return subprocess.run([az, *args], env=env, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in CRED_VARS}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def servers():
    start = REPO / "tests/hsm-servers/start"
    res = subprocess.run([str(start)], capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        pytest.fail(f"tests/hsm-servers/start failed:\n{res.stdout}\n{res.stderr}")
    info = dict(line.split("=", 1) for line in res.stdout.split() if "=" in line)
    yield info
    subprocess.run([str(REPO / "tests/hsm-servers/stop"), info["HSM_SERVERS_DIR"]],
                   timeout=60)


class Azure:
    name = "azure"

    def __init__(self, endpoint):
        self.endpoint = endpoint
        self.conn = (f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};"
                     f"AccountKey={AZURITE_KEY};BlobEndpoint={endpoint};")
        self.env = {"AZURE_STORAGE_KEY": AZURITE_KEY}
        from azure.storage.blob import BlobServiceClient
        self.svc = BlobServiceClient.from_connection_string(self.conn)
        self.cont = self.svc.get_container_client(CONTAINER)

    def create(self):
        res = az_cli("storage", "container", "create", "--name", CONTAINER,
                     "--connection-string", self.conn)
        assert res.returncode == 0, res.stderr

    def url(self, prefix):
        return f"azure://{AZURITE_ACCOUNT}/{CONTAINER}/{prefix}"

    def put(self, key, data, meta):
        self.cont.upload_blob(key, data, metadata=meta, overwrite=True)

    def read(self, key):
        b = self.cont.get_blob_client(key)
        return b.download_blob().readall(), dict(b.get_blob_properties().metadata)

    def keys(self, prefix):
        return sorted(b.name for b in self.cont.list_blobs(name_starts_with=prefix))


class S3:
    name = "s3"

    def __init__(self, endpoint):
        import boto3
        self.endpoint = endpoint
        self.env = {"AWS_ACCESS_KEY_ID": S3_KEY_ID, "AWS_SECRET_ACCESS_KEY": S3_SECRET}
        self.s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=S3_KEY_ID,
                               aws_secret_access_key=S3_SECRET, region_name="us-east-1")

    def create(self):
        self.s3.create_bucket(Bucket=BUCKET)

    def url(self, prefix):
        return f"s3://{BUCKET}/{prefix}"

    def put(self, key, data, meta):
        self.s3.put_object(Bucket=BUCKET, Key=key, Body=data, Metadata=meta)

    def read(self, key):
        o = self.s3.get_object(Bucket=BUCKET, Key=key)
        return o["Body"].read(), dict(o["Metadata"])

    def keys(self, prefix):
        out, token = [], None
        while True:
            kw = {"Bucket": BUCKET, "Prefix": prefix}
            if token:
                kw["ContinuationToken"] = token
            r = self.s3.list_objects_v2(**kw)
            out += [c["Key"] for c in r.get("Contents", [])]
            if not r.get("IsTruncated"):
                return sorted(out)
            token = r["NextContinuationToken"]


@pytest.fixture(scope="module")
def stores(servers):
    az = Azure(servers["AZURITE_ENDPOINT"])
    az.create()
    s3 = S3(servers["S3_ENDPOINT"])
    s3.create()
    return {"azure": az, "s3": s3}


@pytest.fixture(params=["azure", "s3"])
def store(request, stores):
    return stores[request.param]


@pytest.fixture
def prefix():
    return "t-" + secrets.token_hex(4)


def run_tool(store, prefix, *args, env=None, endpoint=None, opts=(), check=True):
    cmd = [binary("hsm-backend-tool"), "--endpoint", endpoint or store.endpoint, *opts,
           store.url(prefix), *args]
    res = subprocess.run(cmd, env=env if env is not None else clean_env(**store.env),
                         capture_output=True, text=True, timeout=120)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {res.returncode}:\n{res.stderr}")
    return res


def parse_meta(line):
    path, rest = line.split("\t")
    return path, dict(kv.split("=", 1) for kv in rest.split())


def test_selftest():
    res = subprocess.run([binary("hsm-backend-tool"), "selftest"], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert " 0 failed" in res.stdout


@pytest.mark.parametrize("size", [0, 1, 5 * 1024 * 1024 + 3])
def test_roundtrip_byte_exact(store, prefix, tmp_path, size):
    src = tmp_path / "src"
    data = os.urandom(size)
    src.write_bytes(data)
    # 1 MiB blocks: the 5 MiB file goes as blocks (azure) or parts (s3, which keeps parts at
    # 5 MiB or more) in parallel, and comes back as ranges.
    opts = ("--block-size", "1M", "--threads", "4")
    run_tool(store, prefix, "put", "d/f", str(src), "--uid", "1234", "--gid", "567",
             "--mode", "0640", "--mtime", "1700000000", "--fid", "[0x200000400:0x2a:0x0]",
             opts=opts)
    dst = tmp_path / "dst"
    res = run_tool(store, prefix, "get", "d/f", str(dst), opts=opts)
    assert dst.read_bytes() == data
    _, m = parse_meta(res.stdout.strip())
    assert m["size"] == str(size)
    assert (m["uid"], m["gid"], m["mode"]) == ("1234", "567", "640")
    assert m["mtime"].startswith("1700000000.")
    assert m["fid"] == "[0x200000400:0x2a:0x0]"
    # Another client reads the same bytes and the AMLFS metadata keys.
    got, meta = store.read(f"{prefix}/d/f")
    assert hashlib.sha256(got).digest() == hashlib.sha256(data).digest()
    assert meta["owner"] == "1234" and meta["group"] == "567"
    assert meta["permissions"] == "0640"
    assert meta["modtime"] == "2023-11-14 22:13:20 +0000"  # AMLFS's layout, the default
    assert meta["nacre_fid"] == "[0x200000400:0x2a:0x0]"


def test_azure_cli_reads_metadata(stores, prefix, tmp_path):
    az = stores["azure"]
    src = tmp_path / "f"
    src.write_bytes(b"hello")
    run_tool(az, prefix, "put", "f", str(src), "--uid", "42", "--gid", "43", "--mode", "1755")
    res = az_cli("storage", "blob", "metadata", "show", "--container-name", CONTAINER,
                 "--name", f"{prefix}/f", "--connection-string", az.conn, "-o", "json")
    assert res.returncode == 0, res.stderr
    meta = json.loads(res.stdout)
    assert meta["owner"] == "42" and meta["group"] == "43" and meta["permissions"] == "1755"


def test_other_tool_objects_are_stat_and_listed(store, prefix, tmp_path):
    """What another tool wrote (AMLFS keys, a folder marker) reads back as an import would."""
    store.put(f"{prefix}/a/b.txt", b"xyz", {"owner": "1000", "group": "1001",
                                            "permissions": "0600",
                                            "modtime": "2024-01-02T03:04:05Z"})
    store.put(f"{prefix}/a", b"", {"hdi_isfolder": "true", "permissions": "0755"})
    store.put(f"{prefix}/plain", b"12345", {})
    res = run_tool(store, prefix, "stat", "a/b.txt")
    _, m = parse_meta(res.stdout.strip())
    assert (m["size"], m["uid"], m["gid"], m["mode"], m["owner"]) == \
        ("3", "1000", "1001", "600", "1")
    assert m["mtime"] == "1704164645.000000000"
    entries = dict(parse_meta(line) for line in
                   run_tool(store, prefix, "list").stdout.splitlines())
    assert sorted(entries) == ["a", "a/b.txt", "plain"]
    assert entries["a"]["mode"] == "40755"
    assert entries["plain"]["owner"] == "0" and entries["plain"]["size"] == "5"


def test_azcopy_style_metadata_is_read(store, prefix):
    """AzCopy's --preserve-posix-properties style: posix_owner and posix_group, the whole
    st_mode in decimal, modtime in nanoseconds; and AMLFS's "2006-01-02 15:04:05 -0700"."""
    store.put(f"{prefix}/az.bin", b"azcopy", {"posix_owner": "1000", "posix_group": "1001",
                                              "permissions": "33188",
                                              "modtime": "1704164645123456789"})
    _, m = parse_meta(run_tool(store, prefix, "stat", "az.bin").stdout.strip())
    assert (m["uid"], m["gid"], m["mode"], m["owner"]) == ("1000", "1001", "644", "1"), m
    assert m["mtime"] == "1704164645.123456789", m
    store.put(f"{prefix}/amlfs.bin", b"amlfs", {"owner": "7", "group": "8",
                                                "permissions": "0640",
                                                "modtime": "2024-01-01 19:04:05 -0800"})
    _, m = parse_meta(run_tool(store, prefix, "stat", "amlfs.bin").stdout.strip())
    assert (m["uid"], m["gid"], m["mode"]) == ("7", "8", "640"), m
    assert m["mtime"] == "1704164645.000000000", m


def test_directory_marker(store, prefix, tmp_path):
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    run_tool(store, prefix, "put", "sub/dir", str(empty), "--dir", "--mode", "0750")
    _, meta = store.read(f"{prefix}/sub/dir")
    assert meta.get("hdi_isfolder") == "true" and meta["permissions"] == "0750"
    _, m = parse_meta(run_tool(store, prefix, "stat", "sub/dir").stdout.strip())
    assert m["mode"] == "40750"


def test_listing_spans_pages(store, prefix, tmp_path):
    names = [f"n{i // 10}/o{i:03d}" for i in range(37)]
    for n in names:
        store.put(f"{prefix}/{n}", n.encode(), {"owner": "7"})
    store.put(f"{prefix}x/outside", b"", {})  # same string prefix, other directory
    env = clean_env(**store.env, NACRE_HSM_LIST_PAGE="10")
    res = run_tool(store, prefix, "list", env=env)
    entries = [parse_meta(line) for line in res.stdout.splitlines()]
    assert [p for p, _ in entries] == sorted(names)
    assert all(m["uid"] == "7" and m["size"] == str(len(p)) for p, m in entries)


def test_missing_and_remove(store, prefix, tmp_path):
    assert run_tool(store, prefix, "stat", "nope", check=False).returncode == 2
    res = run_tool(store, prefix, "get", "nope", str(tmp_path / "x"), check=False)
    assert res.returncode == 2 and "404" in res.stderr and "nope" in res.stderr
    src = tmp_path / "f"
    src.write_bytes(b"data")
    run_tool(store, prefix, "put", "f", str(src))
    run_tool(store, prefix, "remove", "f")
    run_tool(store, prefix, "remove", "f")  # a missing object is success
    assert store.keys(prefix) == []


def test_cancel_mid_transfer(store, prefix, tmp_path):
    src = tmp_path / "big"
    src.write_bytes(os.urandom(12 * 1024 * 1024))
    res = run_tool(store, prefix, "put", "big", str(src), "--cancel-after", "1",
                   opts=("--block-size", "1M", "--threads", "2"), check=False)
    assert res.returncode == 3, res.stderr
    assert "cancel" in res.stderr


def test_credentials_file(store, prefix, tmp_path):
    creds = tmp_path / "creds"
    creds.write_text("# nacre copytool credentials\n" +
                     "".join(f'export {k}="{v}"\n' for k, v in store.env.items()))
    creds.chmod(0o600)
    src = tmp_path / "f"
    src.write_bytes(b"via file")
    run_tool(store, prefix, "put", "f", str(src), env=clean_env(),
             opts=("--credentials", str(creds)))
    assert store.read(f"{prefix}/f")[0] == b"via file"
    # a credentials file others may read is refused, saying how to fix it
    creds.chmod(0o644)
    res = run_tool(store, prefix, "stat", "f", env=clean_env(),
                   opts=("--credentials", str(creds)), check=False)
    assert res.returncode != 0 and "chmod 600" in res.stderr, res.stderr
    creds.chmod(0o600)
    res = run_tool(store, prefix, "stat", "f", env=clean_env(), check=False)
    assert res.returncode == 1
    what = "storage account 'devstoreaccount1'" if store.name == "azure" else "bucket"
    assert "no credentials for " + what in res.stderr
    res = run_tool(store, prefix, "stat", "f", env=clean_env(),
                   opts=("--credentials", str(tmp_path / "missing")), check=False)
    assert res.returncode != 0 and "cannot read credentials file" in res.stderr


def test_azure_connection_string_names_the_endpoint(stores, prefix, tmp_path):
    """A connection string's BlobEndpoint is where requests go when no endpoint is given
    (Azurite's, here: the public endpoint would not answer)."""
    az = stores["azure"]
    src = tmp_path / "f"
    src.write_bytes(b"by connection string")
    cmd = [binary("hsm-backend-tool"), az.url(prefix), "put", "f", str(src)]
    res = subprocess.run(cmd, env=clean_env(AZURE_STORAGE_CONNECTION_STRING=az.conn),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert az.read(f"{prefix}/f")[0] == b"by connection string"
    # a BlobEndpoint that is no URL is named as the connection string's
    bad = az.conn.replace(f"BlobEndpoint={az.endpoint}", "BlobEndpoint=nowhere")
    res = subprocess.run(cmd, env=clean_env(AZURE_STORAGE_CONNECTION_STRING=bad),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode != 0
    assert "'nowhere' (the connection string's) is not a URL" in res.stderr, res.stderr


def test_wrong_key_names_the_account(store, prefix, tmp_path):
    if store.name == "azure":
        env = clean_env(AZURE_STORAGE_KEY="d3Jvbmcga2V5IGZvciB0aGUgdGVzdA==")
        expect = "storage account 'devstoreaccount1'"
    else:
        # s3rver checks the key id (not SigV4 signatures).
        env = clean_env(AWS_ACCESS_KEY_ID="NOSUCHKEY", AWS_SECRET_ACCESS_KEY="x")
        expect = "bucket 'nacre-archive' refused access key 'NOSUCHKEY'"
    res = run_tool(store, prefix, "list", env=env, check=False)
    assert res.returncode == 1
    assert "HTTP 403" in res.stderr and expect in res.stderr, res.stderr


def test_azure_sas_token(stores, prefix, tmp_path):
    from datetime import datetime, timedelta, timezone
    from azure.storage.blob import ContainerSasPermissions, generate_container_sas
    az = stores["azure"]
    sas = generate_container_sas(AZURITE_ACCOUNT, CONTAINER, account_key=AZURITE_KEY,
                                 permission=ContainerSasPermissions(read=True, write=True,
                                                                    delete=True, list=True),
                                 expiry=datetime.now(timezone.utc) + timedelta(hours=1))
    env = clean_env(AZURE_STORAGE_SAS_TOKEN="?" + sas)
    src = tmp_path / "f"
    data = os.urandom(3 * 1024 * 1024 + 1)
    src.write_bytes(data)
    run_tool(az, prefix, "put", "f", str(src), env=env, opts=("--block-size", "1M"))
    dst = tmp_path / "g"
    run_tool(az, prefix, "get", "f", str(dst), env=env, opts=("--block-size", "1M"))
    assert dst.read_bytes() == data
    assert [p for p, _ in (parse_meta(x) for x in
                           run_tool(az, prefix, "list", env=env).stdout.splitlines())] == ["f"]
    # A SAS without write permission is refused with the account named, and no signature
    # appears in the message.
    ro = generate_container_sas(AZURITE_ACCOUNT, CONTAINER, account_key=AZURITE_KEY,
                                permission=ContainerSasPermissions(read=True),
                                expiry=datetime.now(timezone.utc) + timedelta(hours=1))
    res = run_tool(az, prefix, "put", "h", str(src), env=clean_env(AZURE_STORAGE_SAS_TOKEN=ro),
                   check=False)
    assert res.returncode == 1 and "devstoreaccount1" in res.stderr
    assert "sig=REDACTED" in res.stderr


class FlakyProxy:
    """Answers 503 to the first `fail` requests, then forwards to the real server."""

    def __init__(self, upstream, fail):
        host, port = upstream.split("//", 1)[1].split("/", 1)[0].split(":")
        self.upstream = (host, int(port))
        self.fail = fail
        self.seen = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle_one(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                with proxy.lock:
                    proxy.seen.append(self.command)
                    failing = proxy.fail > 0
                    if failing:
                        proxy.fail -= 1
                if failing:
                    err = (b"<?xml version=\"1.0\"?><Error><Code>ServerBusy</Code>"
                           b"<Message>injected by the test</Message></Error>")
                    self.send_response(503)
                    self.send_header("Content-Length", str(len(err)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(err)
                    return
                c = http.client.HTTPConnection(*proxy.upstream, timeout=60)
                hdrs = {k: v for k, v in self.headers.items()
                        if k.lower() not in ("connection", "keep-alive")}
                c.request(self.command, self.path, body=body, headers=hdrs)
                r = c.getresponse()
                data = r.read()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("connection", "keep-alive", "transfer-encoding",
                                         "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                c.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_one

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def endpoint(self, upstream):
        rest = upstream.split("//", 1)[1]
        path = rest[rest.index("/"):] if "/" in rest else ""
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_retries_on_503(store, prefix, tmp_path):
    proxy = FlakyProxy(store.endpoint, fail=2)
    try:
        src = tmp_path / "f"
        data = os.urandom(1000)
        src.write_bytes(data)
        run_tool(store, prefix, "put", "f", str(src), endpoint=proxy.endpoint(store.endpoint))
        assert proxy.seen[:3] == ["PUT", "PUT", "PUT"]
        assert store.read(f"{prefix}/f")[0] == data
        # A server that keeps failing: a clear error after the configured retries.
        proxy.fail = 100
        proxy.seen.clear()
        res = run_tool(store, prefix, "stat", "f", endpoint=proxy.endpoint(store.endpoint),
                       opts=("--retries", "2"), check=False)
        assert res.returncode == 1
        assert "HTTP 503" in res.stderr and "after 3 attempts" in res.stderr, res.stderr
        assert len(proxy.seen) == 3
    finally:
        proxy.close()


def test_server_down_is_a_clear_error(store, prefix, tmp_path):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = run_tool(store, prefix, "stat", "f", endpoint=f"http://127.0.0.1:{port}/x",
                   opts=("--retries", "1"), check=False)
    assert res.returncode == 1
    assert f"127.0.0.1:{port}" in res.stderr and "after 2 attempts" in res.stderr, res.stderr
