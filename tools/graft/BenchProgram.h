//===- BenchProgram.h - graft run PROGRAM --bench N ---------*- C++ -*-===//
#pragma once

#include "Cli.h"

#include "graft/serialize/ProgramFile.h"
#include "graft/vulkan/GraphExecutor.h"

namespace graft::cli {

/// Runs `exec` (the program at `path`, on `ctx`) --bench N times per phase
/// after --warmup W runs and prints per-dispatch device time by op family and
/// the throughput of each phase (prefill and decode for a program with a
/// symbolic sequence length); --json prints one object.
int benchProgram(const Args &args, const std::string &path, const Program &program,
                 vk::Context &ctx, vk::GraphExecutor &exec);

} // namespace graft::cli
