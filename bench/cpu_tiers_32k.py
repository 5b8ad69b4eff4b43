"""Question: what do the cache tiers save on the CPU path for a 32K-token
prefix? (issue 6, tiny V4.1 with 65,536 positions, quantizers on, random
weights; bench/cpu_tiers_v41.py covers 256 to 4,064 tokens)

A cold 32K request takes tens of minutes of the scalar CPU lowering on this
2-core machine, so it is computed once: the first turn of a session (the
32,752-token prefix in 512-token blocks, each persisted to the prefix store
as it completes, the session's state then kept in the host pool) is the
anchor. In the same run, follow-ups of the prefix + 16 tokens:
  * from the host pool (the second turn of that session);
  * from the store with the windows rebuilt by the approximate replay (16
    tokens) and by the exact replay (16 + 7 x 15 = 121), new processes;
with the restore cost per tier (bytes, seconds) against a page-cache read of
the records and a memory copy of the pool's bytes.
usage: python3 bench/cpu_tiers_32k.py [BUILD_DIR] [OUT.md]"""
import datetime
import json
import os
import random
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tier_floors  # noqa: E402

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build")
out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "bench", "results", "cpu-tiers-32k.md")
work = os.path.join(build, "bench-cpu-tiers-32k")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
config_dir = os.path.join(work, "tiny-64k")
os.makedirs(config_dir)
config = json.load(open(os.path.join(root, "models", "deepseek-v4.1-tiny", "config.json")))
config["max_position_embeddings"] = 65536
json.dump(config, open(os.path.join(config_dir, "config.json"), "w"), indent=1)
artifact, weights = os.path.join(work, "m.dsfa"), os.path.join(work, "w.safetensors")
subprocess.run([os.path.join(build, "bin", "dsf-compile"), config_dir, "--target=cpu", "-o", artifact], check=True,
               capture_output=True)
subprocess.run([sys.executable, os.path.join(root, "tools", "scripts", "dsfa_tool.py"), "random-weights", artifact,
                weights], check=True)
BLOCK, PREFIX = 512, 32752
cache = os.path.join(work, "kv")


def run(*extra, ids=None, stdin_lines=None):
    stats = os.path.join(work, "stats.json")
    cmd = [os.path.join(build, "bin", "dsf-run"), artifact, "--weights", weights, "--stats-json", stats,
           "--cache-block", str(BLOCK), "--cache-dir", cache] + list(extra)
    if stdin_lines is None:
        subprocess.run(cmd + ["--prompt-ids", ",".join(map(str, ids))], check=True, capture_output=True)
    else:
        text = "\n".join(",".join(map(str, l)) for l in stdin_lines) + "\n"
        subprocess.run(cmd + ["--multi-turn", "--session", "bench"], input=text, text=True, check=True,
                       capture_output=True)
    return json.load(open(stats))


rng = random.Random(7)
ids = [rng.randrange(512) for _ in range(PREFIX + 16)]
t0 = time.time()
first, host = run(stdin_lines=[ids[:PREFIX], ids])
session_wall = time.time() - t0
approx = run(ids=ids)[0]
exact = run("--replay", "exact", ids=ids)[0]
read, read_s, records = tier_floors.store_read(cache)
copy_s = tier_floors.memory_copy(host["host_bytes_read"])
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
cold = first["first_token_seconds"]
rows = [("host pool", host), ("store + approximate replay", approx), ("store + exact replay", exact)]
lines = [
    "# Cache tiers on the CPU path at a 32K-token prefix: tiny V4.1 with 65,536 positions",
    "",
    f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
    f"- machine: {cpu}, {os.cpu_count()} cores (the development / CI machine; no GPU)",
    "- command: `python3 bench/cpu_tiers_32k.py`",
    f"- prefix-store blocks of {BLOCK} tokens; replay: 16 tokens (approximate) or 121 (exact); host pool in-process",
    f"- anchor: the session's first turn, {PREFIX:,} tokens computed cold in {BLOCK}-token pieces (each block "
    f"persisted as it completes), same run; the session's process took {session_wall:.0f} s in all",
    "",
    "## Time to first token of a follow-up (the prefix + 16 tokens)",
    "",
    "| request | tokens from a tier | replayed | computed | first token s | / cold |",
    "|---|---|---|---|---|---|",
    f"| cold: the first turn | 0 | 0 | {first['computed_tokens']:,} | {cold:.2f} | x1 |",
] + [f"| {name} | {s['host_hit_tokens'] + s['ssd_hit_tokens']:,} | {s['replayed_tokens']} | {s['computed_tokens']} | "
     f"{s['first_token_seconds']:.3f} (restore {s['restore_seconds']:.4f}, replay {s['replay_seconds']:.3f}) | "
     f"x{s['first_token_seconds'] / cold:.4f} |" for name, s in rows] + [
    "",
    "## Restore cost per tier, against this machine's floors",
    "",
    "| tier | bytes | restore s | floor |",
    "|---|---|---|---|",
    f"| prefix store | {approx['ssd_bytes_read']:,} | {approx['restore_seconds']:.4f} | page-cache read of the "
    f"{records} records: {read_s:.4f} s ({read:,} B) |",
    f"| host pool | {host['host_bytes_read']:,} | {host['restore_seconds']:.4f} | memory copy: {copy_s:.5f} s |",
]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
