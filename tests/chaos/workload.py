#!/usr/bin/python3
"""One chaos workload process: `workload.py KIND --wid ID --mount DIR ...` (started by run).

Kinds, each recording in its manifest only what a call returned success for (worker.py):
  big      striped files of 16..N MiB written in 1 MiB writes, then fsync: the sha256 is
           recorded once fsync returned; at most a few kept, older ones unlinked; some read
           back at once
  ns       creates, renames (to new names and over existing ones, into other workers'
           directories too), links, unlinks, mkdir, rmdir of its own names; reads and
           listings of them checked at once
  counter  increments of shared counters under F_SETLKW (lockf), counted per counter
  fsx      random pwrite / pread / ftruncate / fsync / reopen on its own files against an
           in-memory model; every read compared at once
  append   fixed-size records (writer, sequence, crc) with O_APPEND to one shared log
"""
import argparse
import fcntl
import hashlib
import os
import re
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from worker import Worker, sha256  # noqa: E402

MIB = 1 << 20
RECORD = 64
RECORD_RE = re.compile(rb"^ *(\S+) (\d{10}) x{30} ([0-9a-f]{8})\n$")
COUNTER_WIDTH = 20


def append_record(wid, seq):
    """The append log's record: 64 bytes naming its writer and sequence, with a crc."""
    head = f"{wid:>12} {seq:010d} {'x' * 30} ".encode()
    return head + f"{zlib.crc32(head):08x}\n".encode()


def parse_record(rec):
    """(writer, seq) of an intact record, or None."""
    m = RECORD_RE.match(rec)
    if not m or zlib.crc32(rec[:55]) != int(m.group(3), 16):
        return None
    return m.group(1).decode(), int(m.group(2))


def counter_bytes(value):
    return f"{value:0{COUNTER_WIDTH}d}\n".encode()


class Big(Worker):
    kind = "big"
    KEEP = 3

    def setup(self):
        self.synced = []  # relpaths with a recorded sha256, oldest first
        self.n = 0

    def step(self):
        d = self.rnd.choice(["big/all", "big/c3"])
        rel = f"{d}/{self.wid}-{self.n}"
        self.n += 1
        size = self.rnd.randint(16, self.args.big_max_mib) * MIB
        ok, fd = self.call("big_create", rel, os.open, self.path(rel),
                           os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        if not ok:
            return
        self.entries[rel] = {"type": "file"}  # exists; its bytes are known after fsync
        h, done = hashlib.sha256(), 0
        while done < size and self.running():
            chunk = memoryview(self.rnd.randbytes(MIB))
            while chunk:
                ok, n = self.call("big_write", rel, os.write, fd, chunk)
                if not ok:
                    self.call("big_close", rel, os.close, fd)
                    return
                h.update(chunk[:n])
                done += n
                chunk = chunk[n:]
        ok, _ = self.call("big_fsync", rel, os.fsync, fd)
        if ok:
            self.entries[rel] = {"type": "file", "size": done, "sha256": h.hexdigest()}
            self.synced.append(rel)
        self.call("big_close", rel, os.close, fd)
        if len(self.synced) > self.KEEP:
            old = self.synced.pop(0)
            ok, _ = self.call("big_unlink", old, os.unlink, self.path(old))
            if ok:
                del self.entries[old]
        if self.synced and self.rnd.random() < 0.25:
            self.read_back(self.rnd.choice(self.synced))

    def read_back(self, rel):
        ok, f = self.call("big_open_read", rel, open, self.path(rel), "rb")
        if not ok:
            return
        h = hashlib.sha256()
        while True:
            ok, b = self.call("big_read", rel, f.read, 4 * MIB)
            if not ok or not b:
                break
            h.update(b)
        self.call("big_close", rel, f.close)
        if ok and h.hexdigest() != self.entries[rel]["sha256"]:
            self.mismatch("big read back", rel, f"sha256 {h.hexdigest()[:16]}, written "
                          f"{self.entries[rel]['sha256'][:16]}")


class Namespace(Worker):
    kind = "ns"
    MAX_FILES, MAX_DIRS = 150, 15

    def setup(self):
        self.home = f"ns/{self.wid}"
        self.peers = [p for p in self.args.peers.split(",") if p and p != self.home]
        self.files = {}  # own file name -> directory it is in
        self.inode = {}  # own file name -> the name it was created as (hard links share it)
        self.dirs = set()  # own empty subdirectories of home (names)
        self.n = 0

    def new_name(self, tag=""):
        self.n += 1
        return f"{self.wid}-{tag}{self.n}"

    def some_dir(self):
        return self.rnd.choice(self.peers) if self.peers and self.rnd.random() < 0.3 \
            else self.home

    def rel(self, name):
        return f"{self.files[name]}/{name}"

    def step(self):
        r = self.rnd.random()
        nf = len(self.files)
        if nf < 5 or (r < 0.30 and nf < self.MAX_FILES):
            self.create()
        elif r < 0.40:
            self.rename_new()
        elif r < 0.47 and nf >= 2:
            self.rename_over()
        elif r < 0.52:
            self.link()
        elif r < 0.72 or nf >= self.MAX_FILES:
            self.unlink()
        elif r < 0.78 and len(self.dirs) < self.MAX_DIRS:
            self.mkdir()
        elif r < 0.83 and self.dirs:
            self.rmdir_or_rename_dir()
        elif r < 0.93:
            self.read_check()
        else:
            self.list_check()

    def create(self):
        name, d = self.new_name(), self.some_dir()
        rel = f"{d}/{name}"
        data = self.rnd.randbytes(self.rnd.randrange(0, 4096))
        ok, fd = self.call("create", rel, os.open, self.path(rel),
                           os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        if not ok:
            return
        self.files[name] = d
        self.inode[name] = name
        self.entries[rel] = {"type": "file", "size": 0, "sha256": sha256(b"")}
        ok, n = self.call("write", rel, os.write, fd, data)
        if ok and n == len(data):
            self.entries[rel] = {"type": "file", "size": n, "sha256": sha256(data)}
        elif ok:
            self.mismatch("short write", rel, f"{n} of {len(data)} bytes")
        self.call("close", rel, os.close, fd)

    def rename_new(self):
        if not self.files:
            return
        name = self.rnd.choice(sorted(self.files))
        new, d = self.new_name(), self.some_dir()
        src, dst = self.rel(name), f"{d}/{new}"
        ok, _ = self.call("rename", [src, dst], os.rename, self.path(src), self.path(dst))
        if ok:
            del self.files[name]
            self.files[new] = d
            self.inode[new] = self.inode.pop(name)
            self.entries[dst] = self.entries.pop(src)

    def rename_over(self):
        a, b = self.rnd.sample(sorted(self.files), 2)
        if self.inode[a] == self.inode[b]:
            return  # rename between links of one file does nothing (POSIX)
        src, dst = self.rel(a), self.rel(b)
        ok, _ = self.call("rename_over", [src, dst], os.rename, self.path(src),
                          self.path(dst))
        if ok:
            del self.files[a]
            self.inode[b] = self.inode.pop(a)
            self.entries[dst] = self.entries.pop(src)

    def link(self):
        if not self.files:
            return
        name = self.rnd.choice(sorted(self.files))
        new, d = self.new_name(), self.some_dir()
        src, dst = self.rel(name), f"{d}/{new}"
        ok, _ = self.call("link", [src, dst], os.link, self.path(src), self.path(dst))
        if ok:
            self.files[new] = d
            self.inode[new] = self.inode[name]
            self.entries[dst] = dict(self.entries[src])

    def unlink(self):
        if not self.files:
            return
        name = self.rnd.choice(sorted(self.files))
        rel = self.rel(name)
        ok, _ = self.call("unlink", rel, os.unlink, self.path(rel))
        if ok:
            del self.files[name]
            del self.inode[name]
            del self.entries[rel]

    def mkdir(self):
        name = self.new_name("d")
        rel = f"{self.home}/{name}"
        ok, _ = self.call("mkdir", rel, os.mkdir, self.path(rel), 0o755)
        if ok:
            self.dirs.add(name)
            self.entries[rel] = {"type": "dir"}

    def rmdir_or_rename_dir(self):
        name = self.rnd.choice(sorted(self.dirs))
        rel = f"{self.home}/{name}"
        if self.rnd.random() < 0.6:
            ok, _ = self.call("rmdir", rel, os.rmdir, self.path(rel))
            if ok:
                self.dirs.discard(name)
                del self.entries[rel]
            return
        new = self.new_name("d")
        dst = f"{self.home}/{new}"
        ok, _ = self.call("rename_dir", [rel, dst], os.rename, self.path(rel), self.path(dst))
        if ok:
            self.dirs.discard(name)
            self.dirs.add(new)
            self.entries[dst] = self.entries.pop(rel)

    def read_check(self):
        if not self.files:
            return
        rel = self.rel(self.rnd.choice(sorted(self.files)))
        if rel in self.uncertain:
            return
        ok, f = self.call("open_read", rel, open, self.path(rel), "rb")
        if not ok:
            return
        ok, data = self.call("read", rel, f.read)
        self.call("close", rel, f.close)
        if ok and sha256(data) != self.entries[rel]["sha256"]:
            self.mismatch("read", rel, f"{len(data)} bytes, expected "
                          f"{self.entries[rel]['size']}")

    def list_check(self):
        d = self.some_dir()
        ok, names = self.call("listdir", d, os.listdir, self.path(d))
        if not ok:
            return
        mine = sorted(n for n in names if n.startswith(self.wid + "-"))
        want = sorted([n for n, nd in self.files.items() if nd == d] +
                      ([n for n in self.dirs] if d == self.home else []))
        unsure = {os.path.basename(p) for p in self.uncertain if os.path.dirname(p) == d}
        if [n for n in mine if n not in unsure] != [n for n in want if n not in unsure]:
            extra = sorted(set(mine) - set(want) - unsure)
            missing = sorted(set(want) - set(mine) - unsure)
            dups = sorted({n for n in mine if mine.count(n) > 1})
            self.mismatch("listing", d, f"extra {extra[:5]}, missing {missing[:5]}, "
                          f"duplicated {dups[:5]}")


class Counter(Worker):
    kind = "counter"

    def setup(self):
        self.rels = [f"shared/counter{k}" for k in range(self.args.counters)]
        self.fds = {}
        self.increments = {rel: 0 for rel in self.rels}
        self.broken = set()

    def extra_manifest(self):
        return {"increments": self.increments}

    def fd(self, rel):
        if rel not in self.fds:
            ok, fd = self.call("counter_open", rel, os.open, self.path(rel),
                               os.O_RDWR | os.O_CLOEXEC)
            if not ok:
                return None
            self.fds[rel] = fd
        return self.fds[rel]

    def step(self):
        live = [r for r in self.rels if r not in self.broken]
        if not live:
            self.until = 0
            return
        rel = self.rnd.choice(live)
        fd = self.fd(rel)
        if fd is None:
            self.broken.add(rel)
            return
        ok, _ = self.call("lockf_wait", rel, fcntl.lockf, fd, fcntl.LOCK_EX, 0, 0)
        if not ok:
            self.broken.add(rel)
            return
        ok, b = self.call("counter_read", rel, os.pread, fd, 64, 0)
        if ok and (len(b) != COUNTER_WIDTH + 1 or not b[:-1].isdigit()):
            self.mismatch("counter read", rel, f"read {b!r} under the lock")
            ok = False
        if ok:
            value = int(b)
            ok, n = self.call("counter_write", rel, os.pwrite, fd, counter_bytes(value + 1), 0)
            if ok and n == COUNTER_WIDTH + 1:
                self.increments[rel] += 1
            elif ok:
                self.mismatch("counter short write", rel, f"{n} bytes")
                ok = False
        unlocked, _ = self.call("lockf_unlock", rel, fcntl.lockf, fd, fcntl.LOCK_UN, 0, 0)
        if not ok or not unlocked:
            self.broken.add(rel)
        elif self.rnd.random() < 0.02:
            # Closing drops this process's locks and the kernel's cached pages: a new open.
            self.call("counter_close", rel, os.close, self.fds.pop(rel))

    def finish(self):
        for rel, fd in self.fds.items():
            self.call("counter_close", rel, os.close, fd)


class Fsx(Worker):
    kind = "fsx"
    FILES, MAX_SIZE, MAX_IO = 2, 8 * MIB, 256 * 1024

    def setup(self):
        self.files = {}  # rel -> {"fd", "model"}
        for k in range(self.FILES):
            rel = f"fsx/{self.wid}-f{k}"
            ok, fd = self.call("fsx_create", rel, os.open, self.path(rel),
                               os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            if ok:
                self.files[rel] = {"fd": fd, "model": bytearray()}
                self.record(rel)

    def record(self, rel):
        model = self.files[rel]["model"]
        self.entries[rel] = {"type": "file", "size": len(model), "sha256": sha256(model)}

    def drop(self, rel):
        """After an error or a mismatch the model is unknown: the file leaves the run."""
        f = self.files.pop(rel)
        if f["fd"] is not None:
            self.call("fsx_close", rel, os.close, f["fd"])

    def step(self):
        if not self.files:
            self.until = 0
            return
        rel = self.rnd.choice(sorted(self.files))
        f = self.files[rel]
        if f["fd"] is None:
            ok, f["fd"] = self.call("fsx_open", rel, os.open, self.path(rel),
                                    os.O_RDWR | os.O_CLOEXEC)
            if not ok:
                self.files.pop(rel)
                return
        fd, model = f["fd"], f["model"]
        r = self.rnd.random()
        if r < 0.40:
            self.pwrite(rel, fd, model)
        elif r < 0.75:
            self.pread(rel, fd, model, self.rnd.randrange(0, self.MAX_SIZE),
                       self.rnd.randrange(1, self.MAX_IO))
        elif r < 0.85:
            size = self.rnd.randrange(0, self.MAX_SIZE)
            if self.rnd.random() < 0.3:
                size = 0 if self.rnd.random() < 0.3 else len(model) // 2
            if self.call("fsx_truncate", rel, os.ftruncate, fd, size)[0]:
                del model[size:]
                model.extend(bytes(size - len(model)))
                self.record(rel)
            else:
                self.drop(rel)
        elif r < 0.90:
            ok, st = self.call("fsx_fstat", rel, os.fstat, fd)
            if ok and st.st_size != len(model):
                self.mismatch("fsx size", rel, f"fstat {st.st_size}, model {len(model)}")
                self.drop(rel)
            elif not ok:
                self.drop(rel)
        elif r < 0.93:
            if not self.call("fsx_fsync", rel, os.fsync, fd)[0]:
                self.drop(rel)
        elif r < 0.98:
            ok, _ = self.call("fsx_close", rel, os.close, fd)
            f["fd"] = None
            if not ok:
                self.drop(rel)
        else:
            self.pread(rel, fd, model, 0, self.MAX_SIZE + 1)

    def pwrite(self, rel, fd, model):
        off = self.rnd.randrange(0, self.MAX_SIZE - self.MAX_IO)
        data = self.rnd.randbytes(self.rnd.randrange(1, self.MAX_IO))
        ok, n = self.call("fsx_pwrite", rel, os.pwrite, fd, data, off)
        if ok and n == len(data):
            if len(model) < off:
                model.extend(bytes(off - len(model)))
            model[off:off + n] = data
            self.record(rel)
        else:
            if ok:
                self.mismatch("fsx short write", rel, f"{n} of {len(data)} bytes at {off}")
            self.drop(rel)

    def pread(self, rel, fd, model, off, n):
        ok, got = self.call("fsx_pread", rel, os.pread, fd, n, off)
        if not ok:
            self.drop(rel)
            return
        want = bytes(model[off:off + n])
        if got != want:
            first = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                         min(len(got), len(want)))
            self.mismatch("fsx read", rel, f"pread {n} at {off}: got {len(got)} bytes, model "
                          f"{len(want)}; first difference at {off + first} (file size "
                          f"{len(model)})")
            self.drop(rel)

    def finish(self):
        for rel in sorted(self.files):
            self.drop(rel)


class Append(Worker):
    kind = "append"
    LOG = "shared/append.log"

    def setup(self):
        self.seq, self.unsure = 0, []
        ok, self.fd = self.call("append_open", self.LOG, os.open, self.path(self.LOG),
                                os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        if not ok:
            self.until = 0

    def extra_manifest(self):
        return {"append": {"log": self.LOG, "writer": self.wid, "records": self.seq,
                           "unsure": self.unsure}}

    def step(self):
        rec = append_record(self.wid, self.seq)
        ok, n = self.call("append_write", self.LOG, os.write, self.fd, rec)
        if not ok:
            self.unsure.append(self.seq)
        elif n != RECORD:
            self.mismatch("append short write", self.LOG, f"{n} of {RECORD} bytes")
            self.unsure.append(self.seq)
        self.uncertain.discard(self.LOG)  # a failed append leaves one record unsure, not all
        self.seq += 1

    def finish(self):
        self.call("append_close", self.LOG, os.close, self.fd)


KINDS = {w.kind: w for w in (Big, Namespace, Counter, Fsx, Append)}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=sorted(KINDS))
    ap.add_argument("--wid", required=True, help="worker id, a prefix of its names")
    ap.add_argument("--mount", required=True)
    ap.add_argument("--seed", required=True)
    ap.add_argument("--until", type=float, required=True, help="time.time() to stop at")
    ap.add_argument("--out", required=True, help="manifest file (JSON)")
    ap.add_argument("--peers", default="", help="ns: every ns worker's directory, comma-separated")
    ap.add_argument("--counters", type=int, default=2)
    ap.add_argument("--big-max-mib", type=int, default=128)
    args = ap.parse_args()
    KINDS[args.kind](args).run()


if __name__ == "__main__":
    import faulthandler
    import signal
    faulthandler.register(signal.SIGUSR1)
    main()
