"""The chaos loop: every 5-20 s kill -9 one random server (MDS or OSS) and start it again
0-3 s later; now and then SIGSTOP another for 2-8 s, then SIGCONT. Seeded, so that a seed
gives the same schedule (what the workload is doing at each moment still varies)."""
import random
import threading
import time
from collections import Counter


class Chaos:
    def __init__(self, cluster, seed, events_log, stop_chance=0.4):
        self.c = cluster
        self.rnd = random.Random(f"chaos-{seed}")
        self.events_log = events_log
        self.stop_chance = stop_chance
        self.halt = threading.Event()
        # SIGSTOP/SIGCONT and the cluster's set of stopped servers: the loop and the timers
        self.lock = threading.Lock()
        self.timers = []
        self.kills, self.stops = Counter(), Counter()
        self.outage = {}  # server -> longest kill-to-serving seconds
        self.failures = []
        self.thread = threading.Thread(target=self.loop, name="chaos", daemon=True)

    def event(self, msg):
        t = time.time()
        line = time.strftime("%H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d} {msg}"
        print("chaos:", line, flush=True)
        with open(self.events_log, "a") as f:
            f.write(line + "\n")

    def start(self):
        self.thread.start()

    def stop(self):
        """Ends the loop; every server is running (and continued) when it returns."""
        self.halt.set()
        self.thread.join()
        with self.lock:
            for t in self.timers:
                t.cancel()
            for name in sorted(self.c.stopped):
                self.event(f"SIGCONT {name} (chaos over)")
                self.c.sigcont(name)
            for name in self.c.dead_servers():
                self.failures.append(f"{name} was found dead at the end: see its log")
                self.event(f"{name} found dead: restarting")
                self.restart(name, time.monotonic())

    def abort(self):
        """Ends the loop and its timers, leaving the servers as they are (for a teardown)."""
        self.halt.set()
        if self.thread.is_alive():
            self.thread.join()
        for t in self.timers:
            t.cancel()

    def loop(self):
        while not self.halt.wait(self.rnd.uniform(5, 20)):
            with self.lock:
                choices = [n for n in self.c.server_names() if n not in self.c.stopped]
            victim = self.rnd.choice(choices)
            t0 = time.monotonic()
            self.c.kill9(victim)
            self.kills[victim] += 1
            self.event(f"kill -9 {victim}")
            others = [n for n in choices if n != victim]
            if others and self.rnd.random() < self.stop_chance:
                self.sigstop(self.rnd.choice(others), self.rnd.uniform(2, 8))
            time.sleep(self.rnd.uniform(0, 3))
            self.restart(victim, t0)

    def restart(self, name, t0):
        try:
            took = self.c.restart(name)
        except RuntimeError as e:
            self.failures.append(str(e))
            self.event(f"restart of {name} FAILED: {e}")
            return
        down = time.monotonic() - t0
        self.outage[name] = max(self.outage.get(name, 0.0), down)
        self.event(f"restarted {name}: serving after {took:.1f} s (down {down:.1f} s)")

    def sigstop(self, name, secs):
        with self.lock:
            self.c.sigstop(name)
        self.stops[name] += 1
        self.event(f"SIGSTOP {name} for {secs:.1f} s")
        t = threading.Timer(secs, self.sigcont, args=(name,))
        t.daemon = True
        self.timers.append(t)
        t.start()

    def sigcont(self, name):
        with self.lock:
            if name in self.c.stopped:
                self.c.sigcont(name)
                self.event(f"SIGCONT {name}")
