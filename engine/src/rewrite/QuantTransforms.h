//===- QuantTransforms.h - quantize_affine constant transforms --*- C++ -*-===//
//
// The built-in registry (ConstantTransformRegistry::builtin) adds these after
// the packing/layout transforms: quantize_affine(x, scale, zero_point, ...)
// and quantize_affine_no_zp(x, scale, ...), torchao quantize_affine applied to
// a constant at rewrite time (QAT convert, patterns/qat.pat).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/rewrite/ConstantTransforms.h"

#include <vector>

namespace graft::rewrite::detail {

std::vector<ConstantTransform> quantTransforms();

} // namespace graft::rewrite::detail
