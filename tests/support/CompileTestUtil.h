//===- CompileTestUtil.h - Compiling a whole model in a test ----*- C++ -*-===//
//
// The check the whole-model compile tests share: `graft compile` (the API)
// makes one device partition with no node left on the CPU, and the program
// file it wrote reads back. Each test then checks what is its own.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/Compiler.h"
#include "graft/serialize/ProgramFile.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace graft::testing {

/// Compiles `model` with `opts` (opts.output names the program file) and
/// reads the program back, expecting one partition and no CPU node: none in
/// the summary and none placed "cpu" in the plan (whose reason is printed).
/// A failure fails the test; nullopt when there is no program to look at.
/// `result`, when given, receives the compile result (the summary with the
/// rules fired; the in-memory program, whose constants all keep their data).
inline std::optional<Program> compileToOnePartition(const std::string &model,
                                                    const CompileOptions &opts,
                                                    CompileResult *result = nullptr) {
  auto r = compile(model, opts);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : render(r.diags()));
  if (!r.ok())
    return std::nullopt;
  EXPECT_EQ(r->summary.partitions, 1u) << r->summary.text();
  EXPECT_EQ(r->summary.cpuNodes, 0u) << r->summary.text();
  if (result)
    *result = std::move(*r);
  auto program = readProgram(opts.output);
  EXPECT_TRUE(program.ok()) << (program.ok() ? "" : render(program.diags()));
  if (!program.ok())
    return std::nullopt;
  for (const ProgramNodePlan &p : program->plan)
    EXPECT_NE(p.placement, "cpu") << p.node << " (" << p.target << "): " << p.reason;
  return std::move(*program);
}

} // namespace graft::testing
