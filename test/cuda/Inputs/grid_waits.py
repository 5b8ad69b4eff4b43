"""Checks dsf-compile --emit=ptx output against dsf-gpu-grid-dependency-control's
promise: in every kernel module that defines dsf_grid_dependency_control, every
.entry executes griddepcontrol.wait before any access to global or shared
memory (ld/st/atom/red/cp.async/ld.param excepted), and signals
launch_dependents as --launch-dependents says (at-entry: once, after the wait and before any
memory access;
at-exit: never); with --none, no module has the marker or either instruction.
Prints a summary line; exits 1 on any kernel that breaks it.
usage: grid_waits.py KERNELS.ptx (--at-entry | --at-exit | --none)"""
import re
import sys

text, mode = open(sys.argv[1]).read(), sys.argv[2]
memory = re.compile(r"^\s*(@%p\d+\s+)?(ld|st|atom|red|cp\.async|cp\.reduce|mbarrier|wgmma|tma)\.(?!param)")
bad, kernels, modules, marked = [], 0, 0, 0
for module in [m for m in text.split("// ----- kernel module ") if m.strip()]:
    name, ptx = module.split("\n", 1)
    modules += 1
    has_marker = re.search(r"^\.visible \.global \.align 4 \.u32 dsf_grid_dependency_control = 1;", ptx, re.M)
    marked += bool(has_marker)
    for entry in re.finditer(r"^\.visible \.entry (\S+)\((.*?)^}", ptx, re.M | re.S):
        kernels += 1
        kernel, body = entry.group(1), entry.group(2).split("\n")
        waits = [i for i, line in enumerate(body) if "griddepcontrol.wait" in line]
        signals = [i for i, line in enumerate(body) if "griddepcontrol.launch_dependents" in line]
        if mode == "--none":
            if waits or signals or has_marker:
                bad.append(f"{kernel}: griddepcontrol or the marker in a build without programmatic launch")
            continue
        if not has_marker:
            bad.append(f"{kernel}: module {name} lacks dsf_grid_dependency_control")
            continue
        if len(waits) != 1:
            bad.append(f"{kernel}: {len(waits)} griddepcontrol.wait, expected 1")
            continue
        first_access = next((i for i, line in enumerate(body) if memory.match(line)), len(body))
        if first_access < waits[0]:
            bad.append(f"{kernel}: accesses memory before its wait: {body[first_access].strip()}")
        if mode == "--at-entry" and not (len(signals) == 1 and waits[0] < signals[0] < first_access):
            bad.append(f"{kernel}: launch_dependents not between the wait and the first memory access")
        if mode == "--at-exit" and signals:
            bad.append(f"{kernel}: launch_dependents in an at-exit build")
for line in bad[:10]:
    print(line)
print(f"grid waits ({mode[2:]}): {kernels} kernels in {modules} modules ({marked} marked), {len(bad)} bad")
sys.exit(1 if bad or not kernels else 0)
