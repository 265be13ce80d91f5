# lit configuration for FastCI, following LLVM's conventions: tests are .fir
# (IR in, IR out) and .test (shell-style) files whose RUN lines call the
# tools below; outputs go to the build tree.
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "FastCI"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".fir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "workloads", "python"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fastci_obj_root, "test")

# Make FileCheck's variable scoping strict so a test cannot pass on a stale
# capture from an earlier block.
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%fastci_src_root", config.fastci_src_root))
config.substitutions.append(("%fastci_lib_dir", config.fastci_lib_dir))
config.substitutions.append(("%shared_data", config.shared_data_dir))
config.substitutions.append(("%pluginext", ".so"))

tool_dirs = [config.fastci_tools_dir, config.llvm_tools_dir]
tools = [
    "fastci-opt",
    ToolSubst("FileCheck", unresolved="fatal"),
    ToolSubst("not", unresolved="fatal"),
    ToolSubst("split-file", unresolved="fatal"),
]
# Further tools (fastci, helper binaries) register themselves when they exist.
for extra in ["fastci", "fastci-ir-scale-gen"]:
    if os.path.exists(os.path.join(config.fastci_tools_dir, extra)):
        tools.append(extra)
llvm_config.add_tool_substitutions(tools, tool_dirs)

# The `fastci` package (python/) and the scripts under utils/ import from there.
config.environment["PYTHONPATH"] = os.pathsep.join(
    [os.path.join(config.fastci_src_root, "python"),
     os.path.join(config.fastci_src_root, "utils")])
config.available_features.add("fastci")
