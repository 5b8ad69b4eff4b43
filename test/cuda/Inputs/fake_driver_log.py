"""Reads the launch log of the fake CUDA driver (test/cuda/fake_driver:
DSF_FAKE_CUDA_LOG) beside dsf-run's --timing lines, and checks that they tell
the same story: the kernels the driver saw launched are the ones the
runtime counted, and each graph the runtime says it captured and replayed
was captured and replayed, every replay of the kernels its capture held.

usage: fake_driver_log.py LOG TIMING [--grids REGEX]
  TIMING: dsf-run's stderr with --timing (a prompt's prefill and decode, or
  a batch's steps).
  --grids: then each distinct (kernel, grid) among the launched or captured
  kernels whose name matches REGEX, sorted, a line each: for FileCheck.
Prints one line a check; exit 1 when one disagrees."""
import re
import sys


def fail(message):
    print("fake_driver_log: " + message, file=sys.stderr)
    sys.exit(1)


if len(sys.argv) < 3:
    fail("usage: fake_driver_log.py LOG TIMING [--grids REGEX]")
try:
    log = open(sys.argv[1]).read().splitlines()
    timing = open(sys.argv[2]).read()
except OSError as e:
    fail(str(e))
grids = sys.argv[sys.argv.index("--grids") + 1] if "--grids" in sys.argv else None

launched, captures, replays, current = 0, [], [], None
for line in log:
    if line.startswith("launch "):
        launched += 1
    elif line == "begin capture":
        current = 0
    elif line.startswith("capture "):
        if current is None:
            fail(f"{sys.argv[1]}: a captured kernel outside a capture: {line}")
        current += 1
    elif line.startswith("end capture"):
        said = int(re.search(r"\((\d+) kernels\)", line).group(1))
        if said != current:
            fail(f"{sys.argv[1]}: '{line}' after {current} captured kernels")
        captures.append(current)
        current = None
    elif line.startswith("replay"):
        replays.append(int(re.search(r"\((\d+) kernels\)", line).group(1)))

ok = True
single = re.search(r"prefill (\d+) GPU kernel launches; decode (\d+) GPU kernel launches a call", timing)
decoded = re.search(r"decode (\d+) tokens", timing)
batch = re.search(r"batch of \d+: (\d+) steps .*?; (\d+) GPU kernel launches a step; CUDA graphs: (\d+) captured, "
                  r"(\d+) steps replayed", timing)
if single and decoded:
    expected = int(single.group(1)) + int(single.group(2)) * int(decoded.group(1))
    agrees = launched == expected and not captures
    ok = ok and agrees
    print(f"launches {'agree' if agrees else 'DIFFER'}: the driver saw {launched}, the runtime counted {expected}"
          + (f" (and {len(captures)} graph captures)" if captures else ""))
elif batch:
    steps, per_step, captured, replayed = (int(batch.group(i)) for i in range(1, 5))
    # Each capture is replayed at once, and every step is a replay of the graph
    # of its batch's size, captured when that size first came.
    graphs_agree = len(captures) == captured and len(replays) == replayed == steps
    replays_whole = all(n in captures for n in replays)
    total = sum(replays)
    launches_agree = abs(total / steps - per_step) < 1  # the runtime prints the mean rounded
    ok = ok and graphs_agree and replays_whole and launches_agree
    print(f"graphs {'agree' if graphs_agree else 'DIFFER'}: the driver saw {len(captures)} captured and "
          f"{len(replays)} replayed, the runtime {captured} captured and {replayed} of {steps} steps replayed")
    print(f"replayed kernels {'agree' if launches_agree and replays_whole else 'DIFFER'}: {total} over {steps} steps, "
          f"the runtime {per_step} a step")
else:
    fail(f"{sys.argv[2]}: no --timing line of a prefill and decode, or of a batch's steps with CUDA graphs")

if grids:
    seen = set()
    for line in log:
        m = re.match(r"(?:launch|capture) (\S+) grid (\S+)", line)
        if m and re.search(grids, m.group(1)):
            seen.add((m.group(1), m.group(2)))
    for name, grid in sorted(seen, key=lambda s: (s[0], [int(x) for x in s[1].split(",")])):
        print(f"grid {name} {grid}")
sys.exit(0 if ok else 1)
