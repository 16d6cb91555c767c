"""The write-back journal (docs/writeback.md, "The journal"): what a mount with -o wb=on
answered without the MDS is in its journal before the application hears back, so a kill -9
of nacre-mount loses none of it: the next nacre-mount on the same mount point (or `nacre
wb-recover DIR`) sends it. A torn or corrupt record is reported and never applied; a change
that no longer fits is logged by path and kept under conflicts/."""
import errno
import os
import re
import signal
import stat
import subprocess
import time
import urllib.request

import pytest

from conftest import binary, dir_fsync_errno, finish, free_port, start_cluster

QUEUED_MS = 60000  # wb_delay_ms: what is made stays queued (up to 1,024 changes)
N = 2500  # x 4 kinds: 10,000 creates acknowledged before the kill


@pytest.fixture(scope="module")
def jc():
    c = start_cluster(osts=2)
    c.mount(name="observer")  # another client, write-back off
    yield c
    finish(c)


def set_param(m, kv):
    r = subprocess.run([binary("nacre"), "set_param", "-n", "--mount", str(m.path),
                        f"llite.*.{kv}"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def observer(c):
    return next(m for m in c.mounts if m.path.name == "observer")


def writer(c, name, *opts):
    # names and attributes cached by the kernel for the whole test: a lookup of "made" in
    # the root after entry_timeout would go to the MDS and send the queue before the kill
    # (a slow run, a sanitizer build)
    m = c.mount(name=name, opts=["wb=on", "entry_timeout=60", "attr_timeout=60", *opts])
    set_param(m, f"wb_delay_ms={QUEUED_MS}")
    return m


def wb_stats(m):
    """{name: [values]} of the mount's mdc.*.wb_stats."""
    r = subprocess.run([binary("nacre"), "get_param", "--mount", str(m.path), "mdc.*.wb_stats"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert re.match(r"mdc\.testfs-MDT0000-mdc-[0-9a-f]{16}\.wb_stats=$", lines[0]), lines
    return {ln.split()[0]: ln.split()[1:] for ln in lines[1:]}


def kill_9(c, m):
    """Kills nacre-mount as a crash would and clears the dead mount point."""
    m.proc.kill()
    subprocess.run(["fusermount3", "-u", "-z", str(m.path)], capture_output=True)
    c.mounts.remove(m)


def journal_dir(c, name):
    return c.dir / f"wbj-{name}"


def segments(d):
    return sorted(p for p in d.iterdir() if p.name.endswith(".wbj")) if d.exists() else []


def recover(c, d):
    return subprocess.run([binary("nacre"), "wb-recover", "--key-file", str(c.key), str(d)],
                          capture_output=True, text=True, timeout=120)


def tree(root):
    """{relative path: (type, mode, uid, gid, size, symlink target)} of everything under root."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            target = os.readlink(p) if stat.S_ISLNK(st.st_mode) else None
            out[os.path.relpath(p, root)] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
                                             st.st_uid, st.st_gid,
                                             st.st_size if stat.S_ISREG(st.st_mode) else 0,
                                             target)
    return out


def test_kill_9_loses_nothing_acknowledged(jc):
    obs = observer(jc)
    m = writer(jc, "crash")
    top = m / "made"
    os.mkdir(top)
    old_umask = os.umask(0o022)
    want = {}
    try:
        # each kind of change a lease answers here, many flush bounds (1,024): the first
        # ones reach the MDS, the last are only queued (and journaled) when it dies.
        # Nothing here reads back (a readdir or readlink would flush the queue): the model
        # says what must be there.
        for i in range(N):
            os.mkdir(top / f"d{i:03d}")
            os.mknod(top / f"f{i:03d}", 0o640 | stat.S_IFREG)
            want[f"d{i:03d}"] = (stat.S_IFDIR, 0o755, 0, 0, 0, None)
            want[f"f{i:03d}"] = (stat.S_IFREG, 0o640, 0, 0, 0, None)
        for i in range(N):
            os.mknod(top / f"n{i:03d}", 0o644 | stat.S_IFREG)
            want[f"n{i:03d}"] = (stat.S_IFREG, 0o644, 0, 0, 0, None)
            if i % 3 == 0:
                os.chmod(top / f"n{i:03d}", 0o600)
                want[f"n{i:03d}"] = (stat.S_IFREG, 0o600, 0, 0, 0, None)
            os.symlink(f"target-{i}", top / f"s{i:03d}")
            want[f"s{i:03d}"] = (stat.S_IFLNK, 0o777, 0, 0, 0, f"target-{i}")
        for i in range(0, N, 3):
            os.unlink(top / f"s{i:03d}")
            del want[f"s{i:03d}"]
        # last: the kernel's next walk through "made" after a rename asks for its
        # attributes, which flushes the queue (a leased directory's own attributes are not
        # answered here yet)
        os.rename(top / "n001", top / "renamed001")
        want["renamed001"] = want.pop("n001")
        # what the flusher took so far reaches the MDS (a statfs waits for the queue); the
        # last few hundred changes are only journaled when it dies
        os.statvfs(m)
        for i in range(300):
            os.mknod(top / f"t{i:03d}", 0o600 | stat.S_IFREG)
            want[f"t{i:03d}"] = (stat.S_IFREG, 0o600, 0, 0, 0, None)
        for i in range(0, 300, 2):  # names made just now: no lookup of them (a name older
            os.unlink(top / f"t{i:03d}")  # than entry_timeout is looked up at the MDS)
            del want[f"t{i:03d}"]
    finally:
        os.umask(old_umask)
    d = journal_dir(jc, "crash")
    segs = segments(d)
    assert segs and sum(p.stat().st_size for p in segs) > 20_000, segs
    kill_9(jc, m)
    # the MDS has what was flushed, not the rest (that is what the journal is for)
    seen = tree(obs / "made")
    assert seen != want and len(seen) > 5000, len(seen)
    m = jc.mount(name="crash", opts=["wb=on"])  # recovers, then mounts
    assert "sent again, all made" in m.proc.text(), m.proc.text()[-3000:]
    assert tree(obs / "made") == want
    assert tree(m / "made") == want
    assert not (d / "conflicts").exists()
    m.unmount()
    jc.mounts.remove(m)
    assert not d.exists()  # a clean unmount leaves nothing behind


def test_a_torn_tail_is_reported_and_never_applied(jc):
    obs = observer(jc)
    m = writer(jc, "torn")
    os.mkdir(m / "torn")
    for i in range(5):
        os.mkdir(m / "torn" / f"x{i}")
    d = journal_dir(jc, "torn")
    kill_9(jc, m)
    seg = segments(d)[-1]
    with open(seg, "r+b") as f:  # the last record, cut in the middle of its write
        f.truncate(seg.stat().st_size - 7)
    r = recover(jc, d)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "torn record" in r.stderr, r.stderr
    assert sorted(os.listdir(obs / "torn")) == [f"x{i}" for i in range(4)], r.stdout + r.stderr
    assert list((d / "conflicts").glob("*.wbj")), list(d.iterdir())
    assert [p.name for p in d.iterdir()] == ["conflicts"]  # no segment, no lock


def test_a_corrupt_record_stops_the_replay_there(jc):
    obs = observer(jc)
    m = writer(jc, "corrupt")
    os.mkdir(m / "corrupt")
    for i in range(6):
        os.mkdir(m / "corrupt" / f"y{i}")
    d = journal_dir(jc, "corrupt")
    kill_9(jc, m)
    seg = segments(d)[-1]
    data = bytearray(seg.read_bytes())
    at = data.find(b"y3")  # a byte of the fourth mkdir's record
    assert at > 0
    data[at] ^= 0xFF
    seg.write_bytes(bytes(data))
    r = recover(jc, d)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "checksum" in r.stderr, r.stderr
    assert sorted(os.listdir(obs / "corrupt")) == [f"y{i}" for i in range(3)]


def test_a_change_that_no_longer_fits_is_logged_by_path_and_kept(jc):
    obs = observer(jc)
    m = writer(jc, "clash")
    os.mkdir(m / "clash")
    (m / "clash" / "keep").mkdir()
    set_param(m, "wb_delay_ms=50")
    deadline = time.monotonic() + 10
    while not (obs / "clash" / "keep").exists():  # sent; the lease recalled and back
        assert time.monotonic() < deadline
        time.sleep(0.1)
    # the writer takes the lease again by making a directory; what it makes in that one
    # stays queued
    os.mkdir(m / "clash" / "inner")
    set_param(m, f"wb_delay_ms={QUEUED_MS}")
    os.mkdir(m / "clash" / "inner" / "mine")
    os.mknod(m / "clash" / "inner" / "other", 0o600 | stat.S_IFREG)
    d = journal_dir(jc, "clash")
    kill_9(jc, m)
    # meanwhile another client takes one of the names (after the dead holder's lease ended)
    deadline = time.monotonic() + 30
    while True:
        try:
            os.mkdir(obs / "clash" / "inner" / "other")
            break
        except FileNotFoundError:
            assert time.monotonic() < deadline  # "inner" reached the MDS with the flush
            time.sleep(0.5)
    r = recover(jc, d)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "/clash/inner/other" in r.stderr, r.stderr
    txt = list((d / "conflicts").glob("*.txt"))
    assert txt and "/clash/inner/other" in txt[0].read_text()
    assert (obs / "clash" / "inner" / "mine").is_dir()
    assert (obs / "clash" / "inner" / "other").is_dir()  # the other client's stays


def test_sync_off_and_bad_values(jc):
    obs = observer(jc)
    m = jc.mount(name="sync", opts=["wb=on", "wb_journal=sync"])
    os.mkdir(m / "s")
    for i in range(20):
        os.mknod(m / "s" / f"f{i}", 0o644 | stat.S_IFREG)
    assert segments(journal_dir(jc, "sync"))
    assert len(os.listdir(obs / "s")) == 20
    m.unmount()
    jc.mounts.remove(m)
    assert not journal_dir(jc, "sync").exists()
    m = jc.mount(name="nojournal", opts=["wb=on", "wb_journal=off"])
    os.mkdir(m / "o")
    (m / "o" / "a").mkdir()
    assert not journal_dir(jc, "nojournal").exists()
    m.unmount()
    jc.mounts.remove(m)
    mnt = jc.dir / "bad"
    mnt.mkdir()
    for opt, says in (("wb_journal=maybe", "use async"),
                      ("wb_journal_dir=relative/dir", "absolute path")):
        r = subprocess.run([binary("nacre-mount"), jc.spec, str(mnt), "-o",
                            f"key_file={jc.key},wb=on,{opt}", "-f"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and says in r.stderr, r.stderr
    r = recover(jc, jc.dir / "no-such-journal")
    assert r.returncode == 1 and "no write-back journal" in r.stderr, r.stderr


def test_a_journal_in_use_is_not_recovered_under_the_mount(jc):
    m = jc.mount(name="busy", opts=["wb=on"])
    os.mkdir(m / "b")
    r = recover(jc, journal_dir(jc, "busy"))
    assert r.returncode == 1 and "in use by a running nacre-mount" in r.stderr, r.stderr
    m.unmount()
    jc.mounts.remove(m)


def output_of(p):
    """What process p printed; a process still running is stopped first (reading its
    output would wait for it forever)."""
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
    return p.stdout.read()


def test_upgrade_hands_over_what_is_queued_and_journals_on(jc):
    obs = observer(jc)
    m = writer(jc, "upg", "io_uring=off")  # --upgrade needs /dev/fuse
    os.mkdir(m / "u")
    for i in range(50):
        os.mkdir(m / "u" / f"before{i}")  # queued: the old process sends them first
    old = m.proc
    p = subprocess.Popen([binary("nacre-mount"), "--upgrade", str(m.path), "-f"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while old.alive():
        assert time.monotonic() < deadline and p.poll() is None, output_of(p)
        time.sleep(0.2)
    try:
        # the successor journals once the old process is gone (the segment the old one
        # left may be there a moment before the successor recovers it: ask the successor)
        while wb_stats(m)["journal"] != ["async"]:
            assert time.monotonic() < deadline and p.poll() is None, output_of(p)
            time.sleep(0.2)
        assert segments(journal_dir(jc, "upg"))
        assert sorted(os.listdir(obs / "u")) == sorted(f"before{i}" for i in range(50))
        os.mkdir(m / "v")
        for i in range(5):
            os.mkdir(m / "v" / f"after{i}")
        assert sorted(os.listdir(obs / "v")) == [f"after{i}" for i in range(5)]
    finally:
        subprocess.run(["fusermount3", "-u", str(m.path)], capture_output=True)
        p.wait(30)
        jc.mounts.remove(m)
    assert not journal_dir(jc, "upg").exists()


def test_the_mount_counts_what_it_made_queued_and_journaled(jc):
    port = free_port()
    m = jc.mount(name="counted", opts=["wb=on", f"metrics_addr=127.0.0.1:{port}"])
    set_param(m, f"wb_delay_ms={QUEUED_MS}")
    os.mkdir(m / "c")
    for i in range(40):
        os.mknod(m / "c" / f"f{i}", 0o644 | stat.S_IFREG)
    v = wb_stats(m)
    assert v["leases_held"] == ["1"], v
    assert v["changes_made"][0] == "40", v
    assert v["journal"] == ["async"] and int(v["journal_bytes"][0]) > 40 * 60, v
    # the command's own requests (a stat of the mount) may have sent them first
    sent = int(v["changes_sent"][0]) if "changes_sent" in v else 0
    assert int(v["changes_queued"][0]) + sent == 40, v
    assert v["journal_changes"] == v["changes_queued"], v
    os.statvfs(m)  # a request of this mount: what is queued goes first
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    got = {ln.split()[0]: float(ln.split()[1]) for ln in text.splitlines()
           if ln.startswith("nacre_client_wb_")}
    assert got["nacre_client_wb_changes_sent_total"] == 40, got
    assert got["nacre_client_wb_changes_queued"] == 0, got
    assert got["nacre_client_wb_journal_changes"] == 0, got
    assert got["nacre_client_wb_batches_total"] >= 1, got
    assert got['nacre_client_wb_lease_events_total{event="granted"}'] == 1, got
    m.unmount()
    jc.mounts.remove(m)


def test_set_param_wb_journals_as_the_option_does(jc):
    m = jc.mount(name="later")
    d = journal_dir(jc, "later")
    assert not d.exists()
    set_param(m, "wb=1")
    set_param(m, "wb=1")  # again: the same journal
    assert segments(d)
    os.mkdir(m / "l")
    os.mkdir(m / "l" / "x")
    assert (observer(jc) / "l" / "x").is_dir()
    m.unmount()
    jc.mounts.remove(m)
    assert not d.exists()


def test_mds_kill_9_with_changes_queued_and_in_flight_loses_nothing():
    # a cluster of its own: the module's MDS knows sessions of mounts killed above, which
    # a restarted MDS waits for through its recovery window, longer than a lease lasts
    # (docs/writeback.md, "What it does not cover")
    jc = start_cluster(osts=2)
    try:
        mds_kill(jc)
    finally:
        finish(jc)


def mds_kill(jc):
    obs = jc.mount(name="observer")
    m = writer(jc, "mdskill")
    os.mkdir(m / "k")
    want = set()
    for i in range(600):  # past the flush bound: some in flight or at the MDS, some queued
        os.mknod(m / "k" / f"f{i:03d}", 0o644 | stat.S_IFREG)
        want.add(f"f{i:03d}")
    for i in range(1100):
        os.mkdir(m / "k" / f"d{i:04d}")
        want.add(f"d{i:04d}")
    jc.mds.kill(signal.SIGKILL)
    jc.start_mds(fmt=False)
    os.statvfs(m)  # a request of the writer: what it queued goes first, to the new MDS
    assert set(os.listdir(obs / "k")) == want
    assert "lost" not in m.proc.text(), m.proc.text()[-2000:]
    m.unmount()
    jc.mounts.remove(m)
    assert not journal_dir(jc, "mdskill").exists()


def test_mds_restart_longer_than_a_lease_gives_the_leases_back_and_loses_nothing():
    # The restarted MDS waits out its recovery window for a mount killed before it, longer
    # than a lease lasts. The writer asks its leases back in its recovery, before any other
    # client's request runs: the observer's listing after the restart waits for the
    # writer's queued changes (a recall), and none is reported lost.
    jc = start_cluster(osts=2, mds_args=["--recovery-window", "8"])
    try:
        obs = jc.mount(name="observer")
        dead = jc.mount(name="dead")
        os.mkdir(dead / "dead")  # a change: the MDS keeps its session and expects it back
        m = writer(jc, "longrestart")
        os.mkdir(m / "q")
        want = {f"f{i:03d}" for i in range(300)}
        for name in sorted(want):
            os.mknod(m / "q" / name, 0o644 | stat.S_IFREG)
        kill_9(jc, dead)
        jc.mds.kill(signal.SIGKILL)
        jc.start_mds(fmt=False)
        t0 = time.monotonic()
        listing = set(os.listdir(obs / "q"))
        waited = time.monotonic() - t0
        assert waited > 5, f"the window ({waited:.1f} s) was not longer than a lease"
        assert listing == want, (sorted(want - listing)[:10], m.proc.text()[-2000:])
        text = m.proc.text()
        assert "lost" not in text, text[-2000:]
        assert "write-back leases asked back after its restart, 0 refused" in text, text[-2000:]
        m.unmount()
        jc.mounts.remove(m)
    finally:
        finish(jc)


def test_mds_restart_after_the_leases_ran_out_reports_what_was_queued_lost():
    # The writer is stopped past its lease while the MDS dies and comes back: its leases
    # are not asked back, and what it had queued is reported lost (EIO at fsync), never
    # made late in a directory others may have seen without it.
    jc = start_cluster(osts=2, mds_args=["--recovery-window", "30"])
    try:
        obs = jc.mount(name="observer")
        m = writer(jc, "stopped")
        os.mkdir(m / "s")
        for i in range(20):
            os.mknod(m / "s" / f"f{i}", 0o644 | stat.S_IFREG)
        m.proc.p.send_signal(signal.SIGSTOP)
        try:
            time.sleep(6)  # longer than a lease
            jc.mds.kill(signal.SIGKILL)
            jc.start_mds(fmt=False)
        finally:
            m.proc.p.send_signal(signal.SIGCONT)
        assert dir_fsync_errno(m / "s") == errno.EIO
        assert os.listdir(obs / "s") == []
        text = m.proc.text()
        assert "leases had run out before it went away" in text, text[-2000:]
        assert "MDS_MKNOD f19 in directory" in text and " lost: " in text, text[-2000:]
        m.unmount()
        jc.mounts.remove(m)
    finally:
        finish(jc)
