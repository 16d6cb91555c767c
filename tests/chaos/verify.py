"""The end of a chaos run: the workers' manifests checked through a fresh mount.

- every worker finished, with no application error and no read that disagreed at once;
- every directory's listing equals what the manifests say it holds (no name missing, no
  name left over, none listed twice), except names an erroring call left unsure;
- every file whose bytes are known has them (size and sha256);
- every locked counter equals the sum of the increments its workers made;
- the append log holds every acknowledged record exactly once, intact, in each writer's
  order, and nothing else;
- every object on the OSTs belongs to a file that still has a name (unlinked files, closed
  by now, must have been destroyed).
"""
import hashlib
import os
import stat
import time
from collections import Counter

from workload import COUNTER_WIDTH, RECORD, parse_record
from cluster import test_data

DESTROY_WAIT_S = 30  # objects of unlinked files go asynchronously

MIB = 1 << 20


class Verifier:
    def __init__(self, root, setup_entries, manifests, ost_dirs):
        self.root = root
        self.ost_dirs = ost_dirs  # {OST index: its directory}
        self.manifests = manifests
        self.failures = []
        self.checks = Counter()
        self.orphans = set()  # object paths that belong to no named file
        self.expected = dict(setup_entries)
        self.uncertain = set()
        for m in manifests:
            self.expected.update(m["entries"])
            self.uncertain.update(m["uncertain"])
            if "in_flight" in m:
                self.uncertain.update(m["in_flight"]["paths"])

    def fail(self, what, where, detail):
        self.failures.append(f"{what}: {where}: {detail}")

    def run(self):
        self.workers()
        self.tree("")
        self.counters()
        self.append_log()
        self.objects()
        return self.failures

    # ---- what the workers saw
    def workers(self):
        for m in self.manifests:
            wid = m["wid"]
            if not m["final"]:
                fl = m.get("in_flight")
                self.fail("worker did not finish", wid, f"blocked {fl['seconds']} s in "
                          f"{fl['call']} {' -> '.join(fl['paths'])}" if fl else "it died")
            groups = {}
            for e in m["errors"]:
                groups.setdefault((e["call"], e["name"]), []).append(e)
            for (call, name), es in groups.items():
                e = es[0]
                more = f" (and {len(es) - 1} more like it, the last at {es[-1]['time']})" \
                    if len(es) > 1 else ""
                self.fail("application error", wid, f"{call}({e['path']}) at {e['time']} "
                          f"after {e['seconds']} s: errno {e['errno']} {name} "
                          f"({e['message']}){more}")
            for e in m["mismatches"]:
                self.fail("wrong data", wid, f"{e['what']} {e['path']} at {e['time']}: "
                          f"{e['detail']}")

    # ---- the namespace and the bytes
    def children(self, d):
        return {os.path.basename(p): e for p, e in self.expected.items()
                if p and os.path.dirname(p) == d}

    def tree(self, d):
        want = self.children(d)
        try:
            names = os.listdir(os.path.join(self.root, d))
        except OSError as e:
            self.fail("check error", d or "/", f"listdir: {e}")
            return
        self.checks["directories listed"] += 1
        unsure = {n for n in set(names) | set(want) if self.join(d, n) in self.uncertain}
        for n, k in Counter(names).items():
            if k > 1:
                self.fail("duplicate name", self.join(d, n), f"listed {k} times")
        for n in sorted(set(want) - set(names) - unsure):
            self.fail("lost", self.join(d, n), f"acknowledged {want[n]['type']} is missing")
        for n in sorted(set(names) - set(want) - unsure):
            self.fail("unexpected", self.join(d, n), "exists, but was removed or never made")
        for n in sorted(set(want) & set(names) - unsure):
            self.entry(self.join(d, n), want[n])

    @staticmethod
    def join(d, n):
        return f"{d}/{n}" if d else n

    def entry(self, rel, e):
        path = os.path.join(self.root, rel)
        try:
            st = os.lstat(path)
        except OSError as err:
            self.fail("check error", rel, f"lstat: {err}")
            return
        if e["type"] == "dir":
            if not stat.S_ISDIR(st.st_mode):
                self.fail("wrong type", rel, "a directory was expected")
            else:
                self.tree(rel)
            return
        if not stat.S_ISREG(st.st_mode):
            self.fail("wrong type", rel, "a regular file was expected")
            return
        if "checked_by" in e:
            return  # a shared file whose contents a check of its own reads
        if "sha256" not in e:
            self.checks["files present (bytes not synced)"] += 1
            return
        self.checks["files checked"] += 1
        if st.st_size != e["size"]:
            self.fail("wrong size", rel, f"{st.st_size} bytes, acknowledged {e['size']}")
            return
        h = hashlib.sha256()
        try:
            with open(path, "rb") as f:
                while b := f.read(4 * MIB):
                    h.update(b)
        except OSError as err:
            self.fail("check error", rel, f"read: {err}")
            return
        self.checks["bytes checked"] += st.st_size
        if h.hexdigest() != e["sha256"]:
            self.fail("wrong bytes", rel, f"sha256 {h.hexdigest()[:16]}, acknowledged "
                      f"{e['sha256'][:16]} ({e['size']} bytes)")

    def read_all(self, rel):
        """The bytes of a file, or None once the error is recorded."""
        try:
            with open(os.path.join(self.root, rel), "rb") as f:
                return f.read()
        except OSError as err:
            self.fail("check error", rel, f"read: {err}")
            return None

    # ---- locked counters
    def counters(self):
        sums, unsure = Counter(), set()
        for m in self.manifests:
            for rel, n in m.get("increments", {}).items():
                sums[rel] += n
                if rel in m["uncertain"] or not m["final"]:
                    unsure.add(rel)
        for rel in sorted(sums):
            b = self.read_all(rel)
            if b is None:
                continue
            self.checks["counters checked"] += 1
            if len(b) != COUNTER_WIDTH + 1 or not b[:-1].isdigit():
                self.fail("counter garbled", rel, f"holds {b[:64]!r}")
            elif rel in unsure:
                continue  # an error left it unknown; that error is already reported
            elif int(b) != sums[rel]:
                self.fail("counter mismatch", rel, f"value {int(b)}, increments made "
                          f"{sums[rel]} (lost {sums[rel] - int(b)})")

    # ---- the shared O_APPEND log
    def append_log(self):
        writers = {m["append"]["writer"]: m["append"] for m in self.manifests
                   if "append" in m}
        if not writers:
            return
        rel = next(iter(writers.values()))["log"]
        data = self.read_all(rel)
        if data is None:
            return
        if len(data) % RECORD:
            self.fail("append log torn", rel, f"size {len(data)} is not a multiple of "
                      f"{RECORD}")
        seen, last, torn = Counter(), {}, 0
        for off in range(0, len(data) - len(data) % RECORD, RECORD):
            r = parse_record(data[off:off + RECORD])
            if r is None:
                torn += 1
                if torn <= 5:
                    self.fail("append record torn", rel, f"at offset {off}: "
                              f"{data[off:off + RECORD]!r}")
                continue
            seen[r] += 1
            w, seq = r
            if seq < last.get(w, -1):
                self.fail("append out of order", rel, f"{w} record {seq} at offset {off} "
                          f"after its record {last[w]}")
            last[w] = max(seq, last.get(w, -1))
        if torn > 5:
            self.fail("append record torn", rel, f"{torn} torn records in all")
        self.checks["append records checked"] += sum(seen.values())
        for w, a in sorted(writers.items()):
            unsure = set(a["unsure"])
            lost = [s for s in range(a["records"]) if s not in unsure and not seen[(w, s)]]
            if lost:
                self.fail("append lost", rel, f"{len(lost)} acknowledged records of {w}, "
                          f"first {lost[:5]}")
        for (w, seq), k in sorted(seen.items()):
            if k > 1:
                self.fail("append duplicated", rel, f"{w} record {seq} present {k} times")
            if w not in writers or seq >= writers[w]["records"]:
                self.fail("append unexpected", rel, f"{w} record {seq} was never written")


    # ---- OST objects without a file
    def live_objects(self):
        """The object paths every named regular file may have."""
        out = set()
        for d, _, files in os.walk(self.root):
            for n in files:
                p = os.path.join(d, n)
                try:
                    if not stat.S_ISREG(os.lstat(p).st_mode):
                        continue
                    fid = test_data.parse_fid(os.getxattr(p, "nacre.fid").decode())
                    _, _, gen, osts = test_data.parse_layout(os.getxattr(p, "nacre.layout").decode())
                except OSError as err:
                    self.fail("check error", os.path.relpath(p, self.root), f"xattr: {err}")
                    continue
                for stripe, ost in enumerate(osts):
                    out.add(test_data.object_path(self.ost_dirs[ost], fid, stripe, gen))
        return out

    def stored_objects(self):
        out = set()
        for d in self.ost_dirs.values():
            for sub, _, files in os.walk(os.path.join(d, "O")):
                out.update(os.path.join(sub, n) for n in files)
        return out

    def objects(self):
        if not self.ost_dirs:
            return
        live = self.live_objects()
        end = time.monotonic() + DESTROY_WAIT_S
        while True:
            stored = self.stored_objects()
            orphans = sorted(stored - live)
            if not orphans or time.monotonic() > end:
                break
            time.sleep(1)
        self.checks["OST objects checked"] += len(stored)
        self.orphans = set(orphans)
        if orphans:
            self.fail("objects leaked", f"{len(orphans)} of {len(stored)} OST objects",
                      f"belong to no named file {DESTROY_WAIT_S} s after the end, e.g. "
                      f"{', '.join(os.path.basename(o) for o in orphans[:4])} (the MDS may "
                      f"still hold them open)")

    def orphans_left(self, wait_s=15):
        """The orphans still stored, once they had wait_s to go (after the mounts that ran
        the workload unmounted: an object that goes then was held open by their sessions)."""
        end = time.monotonic() + wait_s
        while (left := self.orphans & self.stored_objects()) and time.monotonic() < end:
            time.sleep(1)
        return left
