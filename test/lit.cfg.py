# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "DSF"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dsf_obj_root, "test")
config.excludes = ["Inputs", "unit", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "__pycache__"]

config.substitutions.append(("%models", os.path.join(config.dsf_source_dir, "models")))
config.substitutions.append(("%golden", config.dsf_golden_dir))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%test_src", config.test_source_root))
config.substitutions.append(("%host_model_misuse", os.path.join(config.dsf_obj_root, "test", "runtime", "host-model-misuse")))
# The fake CUDA driver's folder (test/cuda/fake_driver: libcuda.so.1), for LD_LIBRARY_PATH.
config.substitutions.append(("%fake_cuda", os.path.join(config.dsf_obj_root, "test", "cuda", "fake-driver")))
config.substitutions.append(("%incomplete_cuda", os.path.join(config.dsf_obj_root, "test", "cuda", "incomplete-driver")))
config.substitutions.append(("%dsfa_tool", config.numpy_python + " " + os.path.join(config.dsf_source_dir, "tools", "scripts", "dsfa_tool.py")))
if os.path.isdir(os.path.join(config.dsf_golden_dir, "v41-tiny")):
    config.available_features.add("golden")
# The reference model needs NumPy: Debian's python3-numpy (scripts/setup.sh).
config.substitutions.append(("%numpy_python", config.numpy_python))
if config.numpy_python:
    config.available_features.add("numpy")

# Running lowered code: mlir-runner and its support libraries (Debian's mlir-22-tools).
llvm_lib = os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")
runner_utils = os.path.join(llvm_lib, "libmlir_runner_utils.so")
c_runner_utils = os.path.join(llvm_lib, "libmlir_c_runner_utils.so")
config.substitutions.append(("%mlir_runner_utils", runner_utils))
config.substitutions.append(("%mlir_c_runner_utils", c_runner_utils))
if os.path.exists(runner_utils) and os.path.exists(c_runner_utils):
    config.available_features.add("mlir-runner")

# The CUDA target: ptxas compiles (and checks) every kernel; the GPU tests
# need a device, and are reported unsupported (skipped) without one.
cuda_toolkit = os.environ.get("DSF_CUDA_TOOLKIT", "/usr/local/cuda")
config.substitutions.append(("%cuda_toolkit", cuda_toolkit))
if os.path.exists(os.path.join(cuda_toolkit, "bin", "ptxas")):
    config.available_features.add("ptxas")
import shutil, subprocess
if shutil.which("nvidia-smi") and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0:
    config.available_features.add("cuda-gpu")

# The Redis host pool: dsf built with hiredis, and a redis-server to start
# (Debian's redis-server; scripts/setup.sh installs both).
if config.dsf_have_hiredis and shutil.which("redis-server"):
    config.available_features.add("redis")

# Memcheck over the CPU artifacts' compiled code (Debian's valgrind;
# scripts/setup.sh installs it).
if shutil.which("valgrind"):
    config.available_features.add("valgrind")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tools = [
    ToolSubst("dsf-opt", unresolved="fatal"),
    ToolSubst("dsf-compile", unresolved="fatal"),
    ToolSubst("dsf-quant", unresolved="fatal"),
    ToolSubst("dsf-run", unresolved="fatal"),
]
llvm_config.add_tool_substitutions(tools, [config.dsf_tools_dir])
