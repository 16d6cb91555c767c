"""The chaos run's cluster: the integration tests' Cluster (tests/integration/conftest.py),
plus what chaos needs on top: restarting a killed server and waiting until it serves again,
stopping and continuing one, and a teardown that keeps the directory when asked to."""
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "integration"))
import conftest  # noqa: E402  (the integration tests' cluster plumbing)
import test_data  # noqa: E402  (the names of OST objects)

__all__ = ["ChaosCluster", "conftest", "test_data", "nacre_cli", "sanitizer_reports",
           "error_lines"]
SERVING = {"mds": "nacre-mds: serving", "oss": "nacre-oss: serving"}


class ChaosCluster(conftest.Cluster):
    """One MDS, noss OSS processes with osts_per_oss OSTs each."""

    def __init__(self, noss, osts_per_oss, mds_log_level=None):
        level = ["--log-level", mds_log_level] if mds_log_level else []
        super().__init__(osts=noss * osts_per_oss, oss=noss, fsname="chaos",
                         mds_args=level, prefix="nacre-chaos-")
        self.stopped = set()  # names of servers under SIGSTOP

    def server_names(self):
        return ["mds"] + [f"oss{j}" for j in range(self.noss)]

    def server(self, name):
        return self.mds if name == "mds" else self.oss[int(name[3:])]

    def kill9(self, name):
        self.server(name).kill(signal.SIGKILL)

    def restart(self, name, timeout=30):
        """Starts a killed server again on its data and port; returns the seconds it took to
        say it serves, or raises RuntimeError naming the log if it died or never said so."""
        log = self.dir / ("mds.log" if name == "mds" else f"{name}.log")
        start = log.stat().st_size if log.exists() else 0
        t0 = time.monotonic()
        if name == "mds":
            # Not start_mds: a restart that fails is reported, not raised.
            self.mds = conftest.Proc("mds", self.mds_argv(False), log, self.env).start()
        else:
            self.start_oss(int(name[3:]), fmt=False)
        proc = self.server(name)
        mark = SERVING[name[:3]]
        while time.monotonic() - t0 < timeout:
            with open(log, "rb") as f:
                f.seek(start)
                if mark.encode() in f.read():
                    return time.monotonic() - t0
            if not proc.alive():
                raise RuntimeError(f"{name} exited at restart (rc {proc.p.returncode}): "
                                   f"see {log}")
            time.sleep(0.05)
        raise RuntimeError(f"{name} did not serve within {timeout} s of its restart: see {log}")

    def sigstop(self, name):
        self.server(name).p.send_signal(signal.SIGSTOP)
        self.stopped.add(name)

    def sigcont(self, name):
        p = self.server(name)
        if p.alive():
            p.p.send_signal(signal.SIGCONT)
        self.stopped.discard(name)

    def dead_servers(self):
        return [n for n in self.server_names() if not self.server(n).alive()]

    def teardown(self, keep):
        """Unmounts, stops every daemon (continuing stopped ones first), and removes the
        directory unless keep."""
        for name in list(self.stopped):
            self.sigcont(name)
        for m in reversed(self.mounts):
            m.unmount()
        for p in self.procs():
            if p.alive():
                p.p.send_signal(signal.SIGCONT)
            p.kill(signal.SIGTERM)
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def nacre_cli(*args):
    """Runs the nacre CLI; raises RuntimeError with its output when it fails."""
    argv = [conftest.binary("nacre"), *map(str, args)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                       env=conftest.daemon_env())
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stdout}{r.stderr}")
    return r.stdout


def sanitizer_reports(cluster):
    """Daemon logs (servers and mounts) that hold a sanitizer report: [(role, log, line)]."""
    bad = []
    for log in sorted({p.log for p in cluster.procs()}):
        with open(log, errors="replace") as f:
            for line in f:
                if any(m in line for m in conftest.SANITIZER_MARKS):
                    bad.append((log.stem, str(log), line.rstrip()))
                    break
    return bad



def error_lines(cluster):
    """The daemons' ERR lines, alike ones counted once (numbers blanked):
    {(role, message): count}, for the summary."""
    out = {}
    for log in sorted({p.log for p in cluster.procs()}):
        with open(log, errors="replace") as f:
            for line in f:
                if " ERR " in line:
                    msg = re.sub(r"[0-9a-f]{6,}|\d+", "N", line.split(" ERR ", 1)[1].strip())
                    key = (log.stem, msg)
                    out[key] = out.get(key, 0) + 1
    return out
