"""Fault points and recovery status from the CLI: `nacre fault set|list|clear` arms points in
the MDS and in an OSS (only one started with --allow-fault-injection), NACRE_FAULT arms them
at start, the OSS write points fail or crash a write as a disk or a machine would, and
`nacre recovery-status` shows an MDS's recovery window as Lustre's recovery_status does."""
import os
import re
import signal
import threading
import time
import urllib.request

from conftest import free_port, wait_for

ALLOW = ["--allow-fault-injection"]


def fault(nacre_cli, c, *args, **kw):
    return nacre_cli("fault", args[0], "--key-file", c.key, *args[1:], **kw)


def oss_addr(c, j=0):
    return f"127.0.0.1:{c.oss_ports[j]}"


def status_of(nacre_cli, where, **kw):
    """`nacre recovery-status` as {key: value} (and the header under "target")."""
    r = nacre_cli("recovery-status", where, check=True, **kw)
    lines = r.stdout.splitlines()
    out = {"target": lines[0]}
    for line in lines[1:]:
        k, _, v = line.partition(": ")
        out[k] = v
    return out


def test_set_list_clear_on_mds_and_oss(make_cluster, nacre_cli):
    c = make_cluster(osts=1, fsname="fltset", mds_args=ALLOW, oss_args=ALLOW)
    m = c.mounts[0].path
    # The form: POINT MODE as two words, the server being the MDS of the mount the
    # working directory is in.
    r = fault(nacre_cli, c, "set", "mds.commit_after", "once", cwd=m, check=True)
    assert r.stdout == "mds.commit_after=once\n"
    assert fault(nacre_cli, c, "list", cwd=m, check=True).stdout == "mds.commit_after=once\n"
    assert fault(nacre_cli, c, "clear", cwd=m, check=True).stdout == ""
    # no key given: the key of the mount it runs in
    env = {k: v for k, v in os.environ.items() if k != "NACRE_KEY_FILE"}
    r = nacre_cli("fault", "list", cwd=m, env=env)
    assert r.returncode == 0 and r.stdout == "", r.stderr
    r = nacre_cli("fault", "list", c.mds_addr, "--fsname", c.fsname, cwd="/", env=env)
    assert r.returncode != 0 and "run it in a mount made with the cluster key" in r.stderr
    assert fault(nacre_cli, c, "list", c.mds_addr, "--fsname", c.fsname, check=True).stdout == ""
    # An OSS, named with its file system; the settings come back as they were given.
    oss = f"{oss_addr(c)}:/{c.fsname}"
    spec = "oss.write_before=every:3,err=5;rpc.delay_reply=once,op=20,ms=50"
    r = fault(nacre_cli, c, "set", oss, spec, check=True)
    assert r.stdout == "oss.write_before=every:3,err=5\nrpc.delay_reply=once,op=20,ms=50\n"
    # the MDS of --mds (a mount spec) is not that OSS: nothing armed there
    assert fault(nacre_cli, c, "list", "--mds", c.spec, check=True).stdout == ""
    r = nacre_cli("fault", "list", oss, env={**os.environ, "NACRE_KEY_FILE": str(c.key)},
                  check=True)
    assert r.stdout.splitlines() == spec.split(";")
    r = fault(nacre_cli, c, "set", oss, "rpc.delay_reply", "off", check=True)
    assert r.stdout == "oss.write_before=every:3,err=5\n"
    fault(nacre_cli, c, "clear", oss, check=True)
    assert fault(nacre_cli, c, "list", oss, check=True).stdout == ""
    assert "set fault points" in c.oss[0].text()


def test_refused_without_allow_fault_injection(make_cluster, nacre_cli):
    c = make_cluster(osts=1, fsname="fltperm")
    for server in (c.mds_addr, oss_addr(c)):
        r = fault(nacre_cli, c, "set", "--fsname", c.fsname, server, "rpc.drop_reply=once")
        assert r.returncode != 0
        assert f"server {server} does not allow fault injection" in r.stderr, r.stderr
        assert "--allow-fault-injection" in r.stderr
        r = fault(nacre_cli, c, "list", "--fsname", c.fsname, server)
        assert r.returncode != 0 and "does not allow" in r.stderr, r.stderr


def test_bad_specs_and_arguments(make_cluster, nacre_cli):
    c = make_cluster(osts=1, fsname="fltbad", mds_args=ALLOW)
    mds = f"{c.mds_addr}:/{c.fsname}"
    # the server names the bad part of the spec
    for spec, part in (("nosuch.point=once", "unknown fault point 'nosuch.point'"),
                       ("rpc.drop_reply=sometimes", "bad mode 'sometimes'"),
                       ("rpc.drop_reply=once,op=NOPE", "unknown opcode 'NOPE'"),
                       ("rpc.drop_reply=prob:101", "bad mode 'prob:101'"),
                       ("rpc.drop_reply=once,color=red", "bad setting 'color=red'")):
        r = fault(nacre_cli, c, "set", mds, spec)
        assert r.returncode != 0 and part in r.stderr, (spec, r.stderr)
    # and a bad spec arms nothing, not even its good part
    r = fault(nacre_cli, c, "set", mds, "rpc.drop_reply=once;nosuch.point=once")
    assert r.returncode != 0
    assert fault(nacre_cli, c, "list", mds, check=True).stdout == ""
    # what the CLI itself refuses
    r = fault(nacre_cli, c, "set", mds, "mds.commit_after")
    assert r.returncode != 0 and "'mds.commit_after' needs a MODE" in r.stderr, r.stderr
    r = fault(nacre_cli, c, "set", "mds.commit_after", "once", cwd="/")
    assert r.returncode != 0 and "which server?" in r.stderr, r.stderr
    r = fault(nacre_cli, c, "set", c.mds_addr, "mds.commit_after", "once", cwd="/")
    assert r.returncode != 0 and "which file system" in r.stderr, r.stderr
    r = nacre_cli("fault", "set", mds, "mds.commit_after", "once",
                  env={k: v for k, v in os.environ.items() if k != "NACRE_KEY_FILE"})
    assert r.returncode != 0 and "--key-file" in r.stderr, r.stderr
    r = fault(nacre_cli, c, "arm", mds)
    assert r.returncode != 0 and "'arm'" in r.stderr, r.stderr
    other = c.dir / "other.key"
    other.write_text("00" * 32 + "\n")
    os.chmod(other, 0o600)
    r = nacre_cli("fault", "list", "--key-file", other, mds)
    assert r.returncode != 0 and "key" in r.stderr, r.stderr
    r = fault(nacre_cli, c, "list", f"127.0.0.1:{free_port()}:/{c.fsname}")
    assert r.returncode != 0 and "connection refused" in r.stderr, r.stderr


def test_nacre_fault_environment_arms_at_start(make_cluster, nacre_cli):
    spec = "rpc.delay_reply=every:1000000,ms=1"
    c = make_cluster(osts=1, fsname="fltenv", mds_args=ALLOW, oss_args=ALLOW,
                     env={"NACRE_FAULT": spec})
    for server in (c.mds_addr, oss_addr(c)):
        r = fault(nacre_cli, c, "list", f"{server}:/{c.fsname}", check=True)
        assert r.stdout == spec + "\n", (server, r.stdout)
    # a bad NACRE_FAULT stops the daemon at start, saying what is wrong
    c.oss[0].kill(signal.SIGTERM)
    c.env["NACRE_FAULT"] = "bogus.point=once"
    p = c.start_oss(0, fmt=False)
    assert p.p.wait(10) == 1
    assert "NACRE_FAULT: unknown fault point 'bogus.point'" in p.text()


def test_oss_write_before_error_reaches_the_application(make_cluster, nacre_cli):
    c = make_cluster(osts=1, fsname="fltwerr", oss_args=ALLOW)
    m = c.mounts[0].path
    fault(nacre_cli, c, "set", f"{oss_addr(c)}:/{c.fsname}", "oss.write_before=once,err=5",
          check=True)
    data = os.urandom(256 * 1024)
    fd = os.open(m / "f", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    # An error status is an answer, not a lost reply: the client does not resend it. The
    # buffered write returns at once; fsync reports the error, and so does every later
    # fsync and the close of this descriptor (its data is not on the OST).
    os.write(fd, data)
    for call in (os.fsync, os.close):
        try:
            call(fd)
            raise AssertionError(f"{call.__name__} succeeded although the OSS failed the write")
        except OSError as e:
            assert e.errno == 5, e
    assert "fault point oss.write_before fired" in c.oss[0].text()
    # the point disarmed itself ("once"): the same write through a new descriptor works
    fd = os.open(m / "f", os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    with open(m / "f", "rb") as f:
        assert f.read() == data


def test_oss_write_after_crash_then_the_client_resends(make_cluster, nacre_cli):
    c = make_cluster(osts=1, fsname="fltcrash", oss_args=ALLOW)
    m = c.mounts[0].path
    fault(nacre_cli, c, "set", f"{oss_addr(c)}:/{c.fsname}", "oss.write_after", "once",
          check=True)
    data = os.urandom(3 * 1024 * 1024 + 12345)
    done = {}

    def writer():
        try:
            with open(m / "big", "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            done["ok"] = True
        except OSError as e:
            done["err"] = e

    t = threading.Thread(target=writer)
    t.start()
    # the OSS wrote the data and died before answering, as kill -9 would
    assert c.oss[0].p.wait(30) == 86
    assert "fault point oss.write_after: crashing on purpose" in c.oss[0].text()
    time.sleep(1)
    assert t.is_alive(), f"the write did not wait for the OSS: {done}"
    c.start_oss(0, fmt=False)
    t.join(60)
    assert not t.is_alive() and done.get("ok"), done
    # a fresh mount reads what the OSTs hold
    other = c.mount(name="reader")
    with open(other / "big", "rb") as f:
        assert f.read() == data


def test_lost_mds_messages_are_resent_and_answered_once(make_cluster, nacre_cli):
    c = make_cluster(osts=1, fsname="fltrpc", mds_args=ALLOW)
    q = c.mount(opts=["timeout=3"], name="quick").path  # a lost reply is resent after 3 s
    mds = f"{c.mds_addr}:/{c.fsname}"
    # A dropped reply of an O_EXCL create: the resend is answered from the reply cache, not
    # with EEXIST for the file the first execution made.
    fault(nacre_cli, c, "set", mds, "rpc.drop_reply=once,op=MDS_CREATE", check=True)
    os.close(os.open(q / "excl", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    assert "fault point rpc.drop_reply fired" in c.mds.text()
    # A connection closed instead of a mkdir's reply.
    fault(nacre_cli, c, "set", mds, "rpc.close_conn", "once,op=MDS_MKDIR", check=True)
    os.mkdir(q / "d")
    assert "fault point rpc.close_conn fired" in c.mds.text()
    # A request lost on the way: never executed, so the resend executes it.
    fault(nacre_cli, c, "set", mds, "rpc.drop_request=once,op=MDS_UNLINK", check=True)
    os.unlink(q / "excl")
    assert "fault point rpc.drop_request fired" in c.mds.text()
    assert sorted(os.listdir(q)) == ["d"]
    assert fault(nacre_cli, c, "list", mds, check=True).stdout == ""


def test_mds_crash_around_a_commit(make_cluster, nacre_cli):
    c = make_cluster(osts=1, fsname="fltcmt", mds_args=ALLOW)
    m = c.mounts[0].path
    for point in ("mds.commit_before", "mds.commit_after"):
        name = point.split(".")[1]
        fault(nacre_cli, c, "set", point, "once", cwd=m, check=True)
        done = {}

        def mkdir():
            try:
                os.mkdir(m / name)
                done["ok"] = True
            except OSError as e:
                done["err"] = e

        t = threading.Thread(target=mkdir)
        t.start()
        assert c.mds.p.wait(30) == 86, c.mds.text()
        assert f"fault point {point}: crashing on purpose" in c.mds.text()
        c.start_mds(fmt=False)
        # before the commit: the change was lost and the resend makes it; after it: the
        # resend is answered from the record the commit wrote. Either way, once, no error.
        t.join(60)
        assert not t.is_alive() and done.get("ok"), done
        assert os.path.isdir(m / name)
    assert sorted(os.listdir(m)) == ["commit_after", "commit_before"]


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        mt = re.match(r"^(nacre_mds_\w+(?:\{[^}]*\})?) (\S+)$", line)
        if mt:
            out[mt.group(1)] = float(mt.group(2))
    return out


def test_recovery_status_and_eviction(make_cluster, nacre_cli):
    mport = free_port()
    c = make_cluster(osts=1, fsname="fltrcv",
                     mds_args=["--recovery-window", "30", "--metrics-addr",
                               f"127.0.0.1:{mport}"])
    watcher = c.mounts[0]
    st = status_of(nacre_cli, watcher.path)
    assert st["target"] == "mdt.fltrcv-MDT0000.recovery_status="
    assert st["status"] == "COMPLETE" and st["completed_clients"] == "0/0", st
    assert st["recovery_start"] == "0" and st["evicted_clients"] == "0", st
    assert status_of(nacre_cli, c.fsname) == st  # by file system name too
    wait_for(lambda: "nacre_mds_recovery_active" in scrape(mport), 10, "MDS metrics")
    mt = scrape(mport)
    assert mt["nacre_mds_recovery_active"] == 0
    assert 'nacre_mds_recovery_clients{state="expected"}' in mt

    # Two clients with state on the MDS; one of them dies, then the MDS does. The watcher's
    # changes are on disk (fsync of the directory, after the close): it has nothing to
    # replay, so it completes at once (a replay would wait for the dead client's turn until
    # the window ends).
    gone = c.mount(name="gone")
    (gone.path / "made-by-gone").write_bytes(b"x")
    (watcher.path / "made-by-watcher").write_bytes(b"y")
    dfd = os.open(watcher.path, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(dfd)
    os.close(dfd)
    mt = scrape(mport)
    assert mt["nacre_mds_sessions"] >= 2 and mt["nacre_mds_last_transno"] > 0, mt
    assert "nacre_mds_reply_cache_records" in mt and "nacre_mds_last_committed" in mt
    gone.proc.kill(signal.SIGKILL)
    c.mds.kill(signal.SIGKILL)
    c.start_mds(fmt=False)
    # Past attr_timeout, the kernel asks the mount for the root's attributes before it reads
    # the status xattr; the mount's own calls wait for the window's end, the root's must not.
    time.sleep(2)

    def recovering():
        s = status_of(nacre_cli, watcher.path, timeout=10)
        return s if s["status"] == "RECOVERING" and s["completed_clients"] == "1" else None
    t0 = time.monotonic()
    st = wait_for(recovering, 20, "the watcher to complete its recovery", interval=0.3)
    assert time.monotonic() - t0 < 15, "recovery-status waited for the recovery window"
    assert st["connected_clients"] == "1/2", st
    assert st["req_replay_clients"] == "0" and st["lock_repay_clients"] == "0", st
    assert st["evicted_clients"] == "0", st
    assert 0 < int(st["time_remaining"]) <= 30, st
    assert int(st["recovery_start"]) > time.time() - 60, st
    assert {"replayed_requests", "queued_requests", "last_transno"} <= st.keys(), st
    mt = scrape(mport)
    assert mt["nacre_mds_recovery_active"] == 1, mt
    assert mt['nacre_mds_recovery_clients{state="expected"}'] == 2, mt
    assert mt['nacre_mds_recovery_clients{state="completed"}'] == 1, mt

    # The window closes without the dead client: it is evicted, the watcher carries on. (A
    # read late in the window may wait for its end: the kernel refreshes the attributes of
    # more than the root before it asks the mount.)
    st = wait_for(lambda: (lambda s: s if s["status"] == "COMPLETE" else None)(
        status_of(nacre_cli, watcher.path, timeout=45)), 60, "the window to close",
        interval=1)
    assert st["completed_clients"] == "1/2" and st["evicted_clients"] == "1", st
    assert 25 <= int(st["recovery_duration"]) <= 45, st
    assert "did not finish recovery within the window: evicted" in c.mds.text()
    mt = scrape(mport)
    assert mt["nacre_mds_recovery_active"] == 0
    assert mt['nacre_mds_recovery_clients{state="evicted"}'] == 1, mt
    assert (watcher.path / "made-by-gone").read_bytes() == b"x"
    assert (watcher.path / "made-by-watcher").read_bytes() == b"y"
