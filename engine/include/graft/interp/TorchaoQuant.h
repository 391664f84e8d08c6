//===- TorchaoQuant.h - torchao affine quantization on runtime tensors -*- C++ -*-===//
//
// The reference interpreter's torchao quantize_affine / dequantize_affine
// arithmetic as plain functions, for code outside the interpreter that must
// produce the same bytes: the quantize_affine constant transform
// (engine/src/rewrite/QuantTransforms.cpp) folds a weight with them, so the
// folded constant equals what the op computes in the graph.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/DType.h"
#include "graft/ir/Tensor.h"
#include "graft/support/Expected.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace graft::interp {

/// torchao _get_and_check_qmin_qmax with both bounds given: (quantMin,
/// quantMax) when `dtype` is a torchao quantization dtype and the bounds lie
/// within its range, otherwise torchao's error.
Expected<std::pair<int64_t, int64_t>> torchaoQuantRange(DType dtype, int64_t quantMin,
                                                        int64_t quantMax);

/// torchao dequantize_affine (current signature, INT domain) on runtime
/// tensors, for kernels whose upstream reference calls it.
Expected<Tensor> torchaoDequantizeAffine(const Tensor &input, const std::vector<int64_t> &blockSize,
                                         const Tensor &scale, const Tensor *zeroPoint,
                                         DType inputDType, int64_t quantMin, int64_t quantMax,
                                         DType outputDType);

/// torchao quantize_affine (current signature, INT domain) on runtime
/// tensors: what the quantize_affine constant transform computes, so a
/// weight folded ahead of time is bit-identical to the op run in the graph.
Expected<Tensor> torchaoQuantizeAffine(const Tensor &input, const std::vector<int64_t> &blockSize,
                                       const Tensor &scale, const Tensor *zeroPoint,
                                       DType outputDType, int64_t quantMin, int64_t quantMax);

} // namespace graft::interp
