"""The Redis host pool (issue 6) against a real redis-server on loopback.

  python3 redis_pool.py DSF_RUN MODEL.dsfa WEIGHTS WORKDIR

WORKDIR holds p150, p160 (comma-separated ids, the first a prefix of the
second) and cold.logits (dsf-run's logits of p160 without any cache). Starts
redis-server on a free port (no persistence), runs dsf-run processes against
it and prints one line per check for FileCheck; each line says what was seen,
so a failure shows its numbers. Stops the server on exit, whatever happens."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

dsf_run, artifact, weights, work = sys.argv[1:5]
check_logits = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_logits.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    def __init__(self):
        self.port = free_port()
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", work, "--maxmemory", "64mb",
                                      "--maxmemory-policy", "allkeys-lru"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        self.url = f"redis://127.0.0.1:{self.port}"

    def cmd(self, *args):
        """One command in RESP; the raw reply."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            out = b"*%d\r\n" % len(args)
            for a in args:
                a = a if isinstance(a, bytes) else str(a).encode()
                out += b"$%d\r\n%s\r\n" % (len(a), a)
            s.sendall(out)
            time.sleep(0.05)
            return s.recv(1 << 20)

    def keys(self):
        reply = self.cmd("KEYS", "dsf:pool:*").split(b"\r\n")
        return [k.decode() for k in reply[2::2] if k]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


def run(*args, stdin=None, expect_fail=False):
    r = subprocess.run([dsf_run, artifact, "--weights", weights, *args], input=stdin, capture_output=True, text=True)
    if (r.returncode != 0) != expect_fail:
        print(f"FAILED: dsf-run {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
        sys.exit(1)
    return r


def stats(path, *keys):
    """The last request's fields."""
    r = json.load(open(path))[-1]
    return " ".join(f"{k}={r[k]}" for k in keys)


def same_as_cold(logits, cold=None):
    r = subprocess.run([sys.executable, check_logits, logits, "--against", cold or os.path.join(work, "cold.logits"),
                        "--exact"], capture_output=True, text=True)
    return r.stdout.strip().split(": ", 1)[-1] if r.returncode == 0 else "FAILED " + r.stdout + r.stderr


p150, p160 = (os.path.join(work, f) for f in ("p150", "p160"))
redis = Redis()
try:
    # Two processes share one pool: the second takes the first's state.
    run("--prompt-ids", "@" + p150, "--session", "agent", "--pool", redis.url, "--stats-json", f"{work}/a.json")
    print("process 1:", stats(f"{work}/a.json", "host_hit_tokens", "computed_tokens", "host_bytes_written"))
    keys = redis.keys()
    ttl = int(redis.cmd("PTTL", keys[0]).split(b":")[1].split(b"\r")[0]) if keys else -2
    print(f"keys: {len(keys)}, ttl set by the pool: {0 < ttl <= 300000}")
    run("--prompt-ids", "@" + p160, "--session", "agent", "--pool", redis.url, "--stats-json", f"{work}/b.json",
        "--dump-logits", f"{work}/b.logits")
    print("process 2:", stats(f"{work}/b.json", "host_hit_tokens", "computed_tokens"), same_as_cold(f"{work}/b.logits"))

    # A served batch (--batch-prompts through the tiers, @batch_decode): a
    # request that leaves the batch goes to its session in the pool (its
    # prompt and the 3 tokens fed back); another process's next turn, which
    # resends them, its last generated token and 10 more, takes that state
    # and equals a cold run of the whole turn.
    base = open(p150).read().strip().split(",")[:100]
    with open(f"{work}/batch", "w") as f:
        f.write("batched: " + ",".join(base) + " +4\n" + ",".join(base[:30]) + " +3\n")
    r = run("--batch-prompts", f"{work}/batch", "--pool", redis.url, "--stats-json", f"{work}/f.json")
    generated = r.stdout.strip().splitlines()[0].split(",")
    turn = base + generated + base[:10]
    with open(f"{work}/turn", "w") as f:
        f.write(",".join(turn))
    run("--prompt-ids", "@" + f"{work}/turn", "--dump-logits", f"{work}/turn-cold.logits")
    run("--prompt-ids", "@" + f"{work}/turn", "--session", "batched", "--pool", redis.url, "--stats-json",
        f"{work}/g.json", "--dump-logits", f"{work}/g.logits")
    pooled = [x["host_bytes_written"] > 0 for x in json.load(open(f"{work}/f.json"))]
    print(f"batch: {len(generated)} tokens generated, pooled {pooled}; next turn of {len(turn)}:",
          stats(f"{work}/g.json", "host_hit_tokens", "computed_tokens"),
          same_as_cold(f"{work}/g.logits", f"{work}/turn-cold.logits"))

    # The TTL is Redis's: a record written with 1 s is gone 1.5 s later.
    run("--prompt-ids", "@" + p150, "--session", "short", "--pool", redis.url, "--window-ttl", "1")
    time.sleep(1.5)
    run("--prompt-ids", "@" + p160, "--session", "short", "--pool", redis.url, "--stats-json", f"{work}/c.json")
    print("after the ttl:", stats(f"{work}/c.json", "host_hit_tokens", "computed_tokens"))

    # A corrupted record (one payload byte flipped in Redis) and a foreign
    # value: reported, deleted, recomputed; the results are the cold run's.
    key = [k for k in redis.keys() if k.endswith(":agent")][0]
    record = redis.cmd("GET", key)
    body = record[record.index(b"\r\n") + 2:-2]
    flipped = bytearray(body)
    flipped[-7] ^= 0x20
    redis.cmd("SET", key, bytes(flipped))
    r = run("--prompt-ids", "@" + p160, "--session", "agent", "--pool", redis.url, "--stats-json", f"{work}/d.json",
            "--dump-logits", f"{work}/d.logits")
    print("corrupted:", r.stderr.strip().splitlines()[0])
    print("corrupted:", stats(f"{work}/d.json", "host_hit_tokens", "computed_tokens"), same_as_cold(f"{work}/d.logits"))
    redis.cmd("SET", key, b"not a dsf record")
    r = run("--prompt-ids", "@" + p160, "--session", "agent", "--pool", redis.url)
    print("foreign:", r.stderr.strip().splitlines()[0])

    # The server goes away between two turns of one process: the second turn
    # gets its global KV from the prefix store and its windows by exact
    # replay, and equals the cold run.
    proc = subprocess.Popen([dsf_run, artifact, "--weights", weights, "--multi-turn", "--session", "live", "--pool",
                             redis.url, "--cache-dir", f"{work}/kv", "--cache-block", "16", "--replay", "exact",
                             "--stats-json", f"{work}/e.json", "--dump-logits", f"{work}/e.logits"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdin.write(open(p150).read() + "\n")
    proc.stdin.flush()
    proc.stdout.readline()   # the first turn is done
    print("before the fault, live session kept:", any(k.endswith(":live") for k in redis.keys()))
    redis.stop()
    out, err = proc.communicate(open(p160).read() + "\n", timeout=300)
    if proc.returncode != 0:
        print("FAILED: the multi-turn process exited", proc.returncode, err)
        sys.exit(1)
    print("server gone:", [l for l in err.splitlines() if "warning" in l][0])
    print("server gone:", stats(f"{work}/e.json", "host_hit_tokens", "ssd_hit_tokens", "replayed_tokens",
                                "computed_tokens"), same_as_cold(f"{work}/e.logits"))

    # No server at start: a clear error, and nothing runs.
    r = run("--prompt-ids", "@" + p150, "--session", "x", "--pool", redis.url, expect_fail=True)
    print("no server:", r.stderr.strip())
    r = run("--prompt-ids", "@" + p150, "--pool", "redis://no-such-host.invalid:6379", "--session", "x",
            expect_fail=True)
    print("unknown host:", r.stderr.strip())
    r = run("--prompt-ids", "@" + p150, "--pool", "http://127.0.0.1:6379", "--session", "x", expect_fail=True)
    print("bad url:", r.stderr.strip())
finally:
    redis.stop()
