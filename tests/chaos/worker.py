"""What every chaos workload process shares: the call wrapper that counts operations and turns
any OSError into a recorded application error, the manifest of what it was told succeeded,
a watchdog that reports calls blocked for long and saves the manifest while one is, and the
open-and-unlinked temporary file each worker keeps.

The manifest (JSON, written to --out) holds:
  entries    {relpath: {"type": "file", "size", "sha256"} | {"type": "dir"} | other kinds}
             the names this worker made that must exist at the end, with their contents
  uncertain  relpaths an erroring call left in an unknown state (already a failure)
  errors     [{"call", "path", "errno", "name", "message", "time"}]
  mismatches [{"what", "path", "detail", "time"}] reads that disagreed with the model
  ops        {call: count}; slow {call: max seconds}; in_flight (the blocked call, if any)
  final      true once the worker finished on its own
"""
import errno
import hashlib
import json
import os
import random
import threading
import time

SLOW_S = 10  # a call blocked this long is logged (a server is down or recovering)
ERROR_PAUSE_S = 0.5  # after an error, so that one that persists is not recorded 10^5 times


def now_str():
    t = time.time()
    return time.strftime("%H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}"


def sha256(data):
    return hashlib.sha256(data).hexdigest()


class Worker:
    kind = "?"

    def __init__(self, args):
        self.args = args
        self.wid = args.wid
        self.root = args.mount
        self.until = args.until
        self.out = args.out
        self.rnd = random.Random(f"{args.seed}-{args.wid}")
        self.entries, self.uncertain = {}, set()
        self.errors, self.mismatches = [], []
        self.ops, self.slow = {}, {}
        self.in_flight = None  # (call, paths, start) while a call runs
        # Held by the workload except while it is inside a call, so that the watchdog can
        # save a consistent manifest while the workload is blocked.
        self.state_lock = threading.Lock()
        self.state_lock.acquire()
        self.tmp = None
        threading.Thread(target=self.watchdog, daemon=True).start()

    # ---- paths and calls
    def path(self, rel):
        return os.path.join(self.root, rel)

    def call(self, name, paths, fn, *args):
        """Runs fn(*args); returns (True, value), or (False, None) after recording the error
        and marking paths (relative) uncertain."""
        paths = [paths] if isinstance(paths, str) else list(paths)
        t0 = time.monotonic()
        self.in_flight = (name, paths, t0)
        self.state_lock.release()
        try:
            value = fn(*args)
            ok = True
        except OSError as e:
            err, ok = e, False
        finally:
            self.state_lock.acquire()
            self.in_flight = None
        dt = time.monotonic() - t0
        self.ops[name] = self.ops.get(name, 0) + 1
        self.slow[name] = max(self.slow.get(name, 0.0), dt)
        if ok:
            return True, value
        self.errors.append({"call": name, "path": " -> ".join(paths), "errno": err.errno,
                            "name": errno.errorcode.get(err.errno, "?"),
                            "message": err.strerror, "time": now_str(),
                            "seconds": round(dt, 3)})
        self.log(f"ERROR {name} {' -> '.join(paths)}: {err} after {dt:.1f} s")
        self.uncertain.update(paths)
        time.sleep(ERROR_PAUSE_S)
        return False, None

    def mismatch(self, what, rel, detail):
        self.mismatches.append({"what": what, "path": rel, "detail": detail, "time": now_str()})
        self.log(f"MISMATCH {what} {rel}: {detail}")
        self.uncertain.add(rel)

    def log(self, msg):
        print(f"{now_str()} {self.wid}: {msg}", flush=True)

    def running(self):
        return time.time() < self.until

    # ---- manifest
    def manifest(self, final):
        m = {"wid": self.wid, "kind": self.kind, "final": final, "entries": self.entries,
             "uncertain": sorted(self.uncertain), "errors": self.errors,
             "mismatches": self.mismatches, "ops": self.ops,
             "slow": {k: round(v, 3) for k, v in self.slow.items()}}
        if self.in_flight:
            name, paths, t0 = self.in_flight
            m["in_flight"] = {"call": name, "paths": paths,
                              "seconds": round(time.monotonic() - t0, 1)}
        m.update(self.extra_manifest())
        return m

    def extra_manifest(self):
        return {}

    def save(self, final=False):
        tmp = self.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.manifest(final), f)
        os.replace(tmp, self.out)

    def watchdog(self):
        reported = None
        while True:
            time.sleep(1)
            with self.state_lock:
                cur = self.in_flight
                if cur and time.monotonic() - cur[2] > SLOW_S and reported is not cur:
                    reported = cur
                    self.log(f"blocked {time.monotonic() - cur[2]:.0f} s in {cur[0]} "
                             f"{' -> '.join(cur[1])}")
                self.save()

    # ---- the run
    def run(self):
        self.setup()
        while self.running():
            self.step()
            self.tmp_tick()
        self.finish()
        self.tmp_close()
        self.save(final=True)
        self.log(f"done: {sum(self.ops.values())} calls, {len(self.errors)} errors, "
                 f"{len(self.mismatches)} mismatches")

    def setup(self):
        pass

    def step(self):
        raise NotImplementedError

    def finish(self):
        pass

    # ---- the open-and-unlinked temporary file
    def tmp_tick(self):
        t = time.monotonic()
        if self.tmp is None:
            self.tmp_open()
        elif t > self.tmp["end"]:
            self.tmp_close()
        elif t > self.tmp["next"]:
            self.tmp["next"] = t + 0.2
            self.tmp_io()

    def tmp_open(self):
        rel = f"tmp/{self.wid}-t{self.ops.get('tmp_open', 0)}"
        ok, fd = self.call("tmp_open", rel, os.open, self.path(rel),
                           os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        if not ok:
            self.tmp = {"fd": None, "rel": rel, "end": time.monotonic() + 5, "next": 0}
            return
        self.entries[rel] = {"type": "file"}
        ok, _ = self.call("tmp_unlink", rel, os.unlink, self.path(rel))
        if ok:
            del self.entries[rel]
        self.tmp = {"fd": fd, "rel": rel, "model": bytearray(), "next": 0,
                    "end": time.monotonic() + self.rnd.uniform(20, 60)}

    def tmp_io(self):
        fd, rel, model = self.tmp["fd"], self.tmp["rel"], self.tmp.get("model")
        if fd is None:
            return
        if self.rnd.random() < 0.5:
            off = self.rnd.randrange(0, 1 << 20)
            data = self.rnd.randbytes(self.rnd.randrange(1, 32768))
            ok, n = self.call("tmp_pwrite", rel, os.pwrite, fd, data, off)
            if not ok:
                self.tmp_close()
            elif n != len(data):
                self.mismatch("tmp short write", rel, f"{n} of {len(data)} bytes at {off}")
            else:
                if len(model) < off:
                    model.extend(bytes(off - len(model)))
                model[off:off + len(data)] = data
        else:
            off = self.rnd.randrange(0, max(1, len(model)))
            n = self.rnd.randrange(1, 65536)
            ok, got = self.call("tmp_pread", rel, os.pread, fd, n, off)
            if not ok:
                self.tmp_close()
            elif got != bytes(model[off:off + n]):
                self.mismatch("tmp read", rel, f"{n} bytes at {off}: got {len(got)} bytes "
                              f"{sha256(got)[:12]}, model {sha256(model[off:off + n])[:12]}")

    def tmp_close(self):
        if self.tmp and self.tmp["fd"] is not None:
            self.call("tmp_close", self.tmp["rel"], os.close, self.tmp["fd"])
        self.tmp = None
