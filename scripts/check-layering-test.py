#!/usr/bin/env python3
"""Tests scripts/check-layering.py: it passes a tree that points downward and
fails, naming the file and line, on each kind of violation planted in a
scratch tree, both with a small table and with graft's own
scripts/layering.txt.

    scripts/check-layering-test.py      (CTest: Layering.CheckCatchesViolations)
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check-layering.py")
REAL_TABLE = os.path.join(HERE, "layering.txt")

SMALL_TABLE = """
[lib_base]
owns = base
uses =

[lib_mid]
owns = mid
uses = lib_base

[lib_top]
owns = top
uses = lib_mid
"""


class Tree:
    """A scratch source tree with a layering table."""

    def __init__(self, table=SMALL_TABLE):
        self.root = tempfile.mkdtemp(prefix="graft-layering-")
        self.table = os.path.join(self.root, "layering.txt")
        with open(self.table, "w") as f:
            f.write(table)

    def write(self, rel, text=""):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def check(self, *extra):
        r = subprocess.run([sys.executable, CHECK, "--root", self.root, "--table", self.table, *extra],
                           capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr

    def cleanup(self):
        shutil.rmtree(self.root)


class SmallTable(unittest.TestCase):
    def setUp(self):
        self.t = Tree()
        self.addCleanup(self.t.cleanup)
        # A clean three-layer tree: public headers under include/graft/<lib>/.
        self.t.write("base/include/graft/base/Base.h", "#pragma once\n")
        self.t.write("base/src/Base.cpp", '#include "graft/base/Base.h"\n')
        self.t.write("mid/include/graft/mid/Mid.h", '#pragma once\n#include "graft/base/Base.h"\n')
        self.t.write("mid/src/Private.h", "#pragma once\n")
        self.t.write("mid/src/Mid.cpp", '#include "Private.h"\n#include "graft/mid/Mid.h"\n#include <vector>\n')
        self.t.write("top/src/Top.cpp", "#include <graft/mid/Mid.h>\n#include \"graft/base/Base.h\"\n")

    def test_downward_tree_passes(self):
        rc, out = self.t.check()
        self.assertEqual(rc, 0, out)

    def test_upward_include_fails_with_file_and_line(self):
        self.t.write("base/src/Bad.cpp", '#include <cstdint>\n#include "graft/mid/Mid.h"\n')
        rc, out = self.t.check()
        self.assertEqual(rc, 1, out)
        self.assertIn(os.path.join("base", "src", "Bad.cpp") + ":2: lib_base includes graft/mid/Mid.h (lib_mid)", out)

    def test_upward_include_in_a_header_fails(self):
        self.t.write("base/include/graft/base/Up.h", '#pragma once\n  #  include <graft/top/Top.h>\n')
        self.t.write("top/include/graft/top/Top.h", "#pragma once\n")
        rc, out = self.t.check()
        self.assertEqual(rc, 1, out)
        self.assertIn("lib_base includes graft/top/Top.h (lib_top)", out)

    def test_private_header_of_another_library_fails(self):
        self.t.write("top/src/Sneaky.cpp", '#include "../../mid/src/Private.h"\n')
        self.t.write("base/src/Sneaky.cpp", '#include "../../mid/src/Private.h"\n')
        rc, out = self.t.check()
        self.assertEqual(rc, 1, out)
        # Downward (top -> mid) is allowed even when private; upward is not.
        self.assertIn("base/src/Sneaky.cpp:1: lib_base includes ../../mid/src/Private.h (lib_mid)", out)
        self.assertNotIn("top/src/Sneaky.cpp", out)

    def test_unknown_graft_header_fails(self):
        self.t.write("top/src/Gone.cpp", '#include "graft/mid/Removed.h"\n')
        rc, out = self.t.check()
        self.assertEqual(rc, 1, out)
        self.assertIn("includes graft/mid/Removed.h, which is no header", out)

    def test_file_of_no_library_fails(self):
        # A new folder under a known top-level folder must be given an owner.
        t = Tree(SMALL_TABLE.replace("owns = top", "owns = top/src"))
        self.addCleanup(t.cleanup)
        t.write("top/src/A.cpp")
        t.write("top/tools/B.cpp")
        t.write("docs/snippet.cpp")  # folders the table never names are not scanned
        rc, out = t.check()
        self.assertEqual(rc, 1, out)
        self.assertIn(os.path.join("top", "tools", "B.cpp") + ": belongs to no library", out)
        self.assertNotIn("snippet", out)

    def test_upward_link_fails(self):
        links = self.t.write("links.txt", "lib_base=lib_mid;zlib\nlib_top=graft::x;lib_base\nother=lib_top\n")
        rc, out = self.t.check("--links", links)
        self.assertEqual(rc, 1, out)
        self.assertIn("target lib_base links lib_mid", out)
        self.assertEqual(out.count(" links "), 1, out)

    def test_cycle_in_the_table_is_an_error(self):
        t = Tree(SMALL_TABLE.replace("[lib_base]\nowns = base\nuses =", "[lib_base]\nowns = base\nuses = lib_top"))
        self.addCleanup(t.cleanup)
        rc, out = t.check()
        self.assertEqual(rc, 2, out)
        self.assertIn("cycle", out)

    def test_unknown_library_in_the_table_is_an_error(self):
        t = Tree(SMALL_TABLE + "\n[lib_x]\nowns = x\nuses = lib_nope\n")
        self.addCleanup(t.cleanup)
        rc, out = t.check()
        self.assertEqual(rc, 2, out)
        self.assertIn("unknown library 'lib_nope'", out)


class GraftTable(unittest.TestCase):
    """graft's own table forbids the edges the engine split removed."""

    def setUp(self):
        with open(REAL_TABLE) as f:
            self.t = Tree(f.read())
        self.addCleanup(self.t.cleanup)
        self.t.write("engine/include/graft/ir/DType.h", "#pragma once\n")
        self.t.write("engine/include/graft/support/FloatBits.h", "#pragma once\n")
        self.t.write("engine/include/graft/interp/Interpreter.h", '#include "graft/ir/DType.h"\n')
        self.t.write("engine/src/interp/Kernels.h", "#pragma once\n")
        self.t.write("engine/src/ir/DType.cpp", '#include "graft/support/FloatBits.h"\n')

    def test_downward_passes(self):
        rc, out = self.t.check()
        self.assertEqual(rc, 0, out)

    def test_support_including_ir_fails(self):
        self.t.write("engine/src/support/FloatBits.cpp", '#include "graft/ir/DType.h"\n')
        rc, out = self.t.check()
        self.assertEqual(rc, 1, out)
        self.assertIn("graft_support includes graft/ir/DType.h (graft_ir)", out)

    def test_ir_including_interp_fails(self):
        self.t.write("engine/src/ir/Verifier.cpp", '#include "graft/interp/Interpreter.h"\n')
        rc, out = self.t.check()
        self.assertEqual(rc, 1, out)
        self.assertIn("graft_ir includes graft/interp/Interpreter.h (graft_interp)", out)

    def test_rewrite_reaching_into_interp_sources_fails_only_upward(self):
        self.t.write("engine/src/rewrite/Quant.cpp", '#include "../interp/Kernels.h"\n')
        self.t.write("engine/src/ops/Infer.cpp", '#include "../interp/Kernels.h"\n')
        rc, out = self.t.check()
        self.assertEqual(rc, 1, out)
        self.assertIn("graft_ir includes ../interp/Kernels.h (graft_interp)", out)
        self.assertNotIn("Quant.cpp", out)

    def test_engine_including_a_backend_fails(self):
        self.t.write("backends/vulkan/include/graft/vulkan/Partitioner.h", "#pragma once\n")
        self.t.write("engine/src/rewrite/Bad.cpp", '#include "graft/vulkan/Partitioner.h"\n')
        rc, out = self.t.check()
        self.assertEqual(rc, 1, out)
        self.assertIn("graft_rewrite includes graft/vulkan/Partitioner.h (graft_vulkan_partitioner)",
                      out)

    def test_vulkan_runtime_including_ops_executor_or_partitioner_fails(self):
        # The Vulkan layer knows nothing about graphs or ops.
        self.t.write("backends/vulkan/include/graft/vulkan/Kernels.h", "#pragma once\n")
        self.t.write("backends/vulkan/include/graft/vulkan/GraphExecutor.h", "#pragma once\n")
        self.t.write("backends/vulkan/include/graft/vulkan/Partitioner.h", "#pragma once\n")
        self.t.write("backends/vulkan/include/graft/vulkan/OpSupport.h", "#pragma once\n")
        self.t.write("backends/vulkan/ops/Lowering.h", "#pragma once\n")
        self.t.write("backends/vulkan/runtime/include/graft/vulkan/Context.h", "#pragma once\n")
        self.t.write("backends/vulkan/runtime/src/Device.cpp",
                     '#include "graft/vulkan/Context.h"\n#include "graft/vulkan/Kernels.h"\n'
                     '#include "graft/vulkan/GraphExecutor.h"\n#include "graft/vulkan/Partitioner.h"\n'
                     '#include "graft/vulkan/OpSupport.h"\n#include "../../ops/Lowering.h"\n'
                     '#include "graft/ir/DType.h"\n')
        rc, out = self.t.check()
        self.assertEqual(rc, 1, out)
        for inc, lib in [("graft/vulkan/Kernels.h", "graft_vulkan"),
                         ("graft/vulkan/GraphExecutor.h", "graft_vulkan"),
                         ("graft/vulkan/Partitioner.h", "graft_vulkan_partitioner"),
                         ("graft/vulkan/OpSupport.h", "graft_vulkan_support"),
                         ("../../ops/Lowering.h", "graft_vulkan"),
                         ("graft/ir/DType.h", "graft_ir")]:
            self.assertIn(f"graft_vulkan_runtime includes {inc} ({lib})", out)
        self.assertNotIn("graft/vulkan/Context.h (", out)

    def test_partitioner_sees_only_the_support_interface(self):
        self.t.write("backends/vulkan/include/graft/vulkan/Kernels.h", "#pragma once\n")
        self.t.write("backends/vulkan/include/graft/vulkan/GraphExecutor.h", "#pragma once\n")
        self.t.write("backends/vulkan/include/graft/vulkan/Partitioner.h", "#pragma once\n")
        self.t.write("backends/vulkan/include/graft/vulkan/OpSupport.h", "#pragma once\n")
        self.t.write("backends/vulkan/runtime/include/graft/vulkan/Context.h", "#pragma once\n")
        self.t.write("backends/vulkan/partitioner/Partitioner.cpp",
                     '#include "graft/vulkan/Partitioner.h"\n#include "graft/vulkan/OpSupport.h"\n'
                     '#include "graft/vulkan/Context.h"\n#include "graft/ir/DType.h"\n'
                     '#include "graft/vulkan/GraphExecutor.h"\n#include "graft/vulkan/Kernels.h"\n')
        # The executor and the ops may use the partitioner's and the runtime's headers.
        self.t.write("backends/vulkan/executor/GraphExecutor.cpp",
                     '#include "graft/vulkan/GraphExecutor.h"\n#include "graft/vulkan/Partitioner.h"\n'
                     '#include "graft/vulkan/Context.h"\n')
        rc, out = self.t.check()
        self.assertEqual(rc, 1, out)
        self.assertIn("Partitioner.cpp:5: graft_vulkan_partitioner includes graft/vulkan/GraphExecutor.h "
                      "(graft_vulkan)", out)
        self.assertIn("Partitioner.cpp:6: graft_vulkan_partitioner includes graft/vulkan/Kernels.h "
                      "(graft_vulkan)", out)
        self.assertEqual(out.count(" includes "), 2, out)


if __name__ == "__main__":
    unittest.main(verbosity=1)
