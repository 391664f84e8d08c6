//===- GenerateProgram.h - graft run PROGRAM --generate N ----*- C++ -*-===//
#pragma once

#include "Cli.h"

#include "graft/serialize/ProgramFile.h"

namespace graft::cli {

/// Generates with the KV-cache program at `path` (already read into
/// `program`): a prefill of the prompt
/// (--inputs TOKENS=[...]), then --generate N greedy decode steps; with a
/// `reference` graph (--check) every step is compared with the reference
/// interpreter. Prints the tokens and tokens/s per phase (--json: one object).
int generateProgram(const Args &args, const std::string &path, const Program &program,
                    const Graph *reference, const std::string &referenceFrom);

} // namespace graft::cli
