//===- ConstantTransforms.h - Named C++ functions rules apply to constants ---*- C++ -*-===//
//
// A rewrite that repacks weights (`$packed = pack_int4($w, nibbles = low_first)`)
// calls a *constant transform*: a named C++ function from constant tensors to
// a new constant tensor. Each transform declares its parameters (so the DSL
// front end can check calls: names, kinds, enum values, defaults) and has two
// halves:
//
//  * infer: the output TensorProto from the input prototypes and arguments,
//    without touching data, so rules can be checked and planned on data-free
//    graphs (and the FQN registry can name the result before computing it);
//  * compute: the output Tensor from the input tensors.
//
// Transforms never mutate their inputs: the result is always a fresh tensor
// (the FQN registry turns it into a separate constant). Enum-valued
// parameters (`nibbles = low_first`) are passed as String arguments.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Argument.h"
#include "graft/ir/Graph.h"
#include "graft/ir/Tensor.h"
#include "graft/ir/TensorProto.h"
#include "graft/support/Expected.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace graft::rewrite {

/// Kinds of non-tensor transform parameters.
enum class TransformParamKind {
  Int,
  Float, ///< accepts ints too
  Bool,
  Enum, ///< a String from `enumValues`
  DType,
  IntList, ///< accepts a single int as a one-element list
};

std::string_view name(TransformParamKind kind);

struct TransformParam {
  std::string name;
  TransformParamKind kind = TransformParamKind::Int;
  /// Default value when the call leaves the parameter out; absent = required.
  std::optional<Argument> defaultValue;
  std::vector<std::string> enumValues; ///< Enum only
  std::string doc;
};

/// A call's arguments bound to the transform's parameters, defaults filled,
/// normalized (negative dims made non-negative once the input rank is known).
class TransformArgs {
public:
  TransformArgs() = default;
  explicit TransformArgs(std::vector<std::pair<std::string, Argument>> values)
      : values_(std::move(values)) {}
  const Argument &get(std::string_view name) const;
  int64_t integer(std::string_view name) const { return get(name).integer(); }
  double number(std::string_view name) const;
  bool boolean(std::string_view name) const { return get(name).boolean(); }
  const std::string &string(std::string_view name) const { return get(name).string(); }
  DType dtype(std::string_view name) const { return get(name).dtype(); }
  std::vector<int64_t> ints(std::string_view name) const;
  void set(std::string_view name, Argument value);
  const std::vector<std::pair<std::string, Argument>> &values() const { return values_; }
  /// Canonical text of every parameter in declaration order, e.g.
  /// "nibbles=low_first" or "dim=1, multiple=8, value=0.0": the FQN registry key.
  std::string canonicalText() const;

private:
  std::vector<std::pair<std::string, Argument>> values_;
};

/// What `infer` says about the result.
struct TransformPlan {
  TensorProto proto;
  /// The transform is the identity for these inputs (pad to a multiple the
  /// dim already is, cast to the same dtype, ...): the result *is* input 0, no
  /// new constant is made. Lets `pad_to_multiple` + `pack_int4` on an aligned
  /// tied weight share the constant another rule packed without the pad.
  bool identity = false;
};

using TransformInferFn = std::function<Expected<TransformPlan>(
    const std::vector<const TensorProto *> &inputs, TransformArgs &args)>;
using TransformComputeFn = std::function<Expected<Tensor>(const std::vector<const Tensor *> &inputs,
                                                          const TransformArgs &args)>;

struct ConstantTransform {
  std::string name;
  std::string doc;
  /// Names of the constant tensor inputs; they come first, positionally.
  std::vector<std::string> inputs;
  std::vector<TransformParam> params;
  /// Checks the input prototypes and arguments and computes the result's
  /// prototype; may normalize `args` (e.g. negative dims).
  TransformInferFn infer;
  /// Computes the result; inputs are contiguous-readable tensors matching the
  /// prototypes `infer` accepted.
  TransformComputeFn compute;

  /// "pack_int4(w, nibbles: enum{low_first, high_first} = low_first)"
  std::string signature() const;
};

class ConstantTransformRegistry {
public:
  /// pack_int4, unpack_int4, unpack_int2, transpose, pad_to_multiple, group_sums, cast, reshape,
  /// quantize_affine, quantize_affine_no_zp.
  static const ConstantTransformRegistry &builtin();
  /// Registers a transform; a name registered twice is an error.
  Status add(ConstantTransform transform);
  const ConstantTransform *find(std::string_view name) const;
  std::vector<const ConstantTransform *> all() const;

private:
  std::vector<ConstantTransform> transforms_;
};

/// Binds a call (tensor inputs excluded) to the transform's parameters:
/// positional then keyword, defaults filled, kinds checked (an Int is accepted
/// for a Float, a single Int for an IntList), enum values validated. Errors
/// name the transform and the parameter.
Expected<TransformArgs>
bindTransformArgs(const ConstantTransform &transform, const std::vector<Argument> &positional,
                  const std::vector<std::pair<std::string, Argument>> &kwargs);

/// Plans (data-free) and computes a transform call in one place, checking the
/// computed tensor against the planned prototype (a mismatch is a graft bug).
Expected<TransformPlan> planTransform(const ConstantTransform &transform,
                                      const std::vector<const TensorProto *> &inputs,
                                      TransformArgs &args);
Expected<Tensor> computeTransform(const ConstantTransform &transform,
                                  const std::vector<const Tensor *> &inputs,
                                  const TransformArgs &args, const TensorProto &planned);

/// A transform call whose data is computed when needed (GraphInput's
/// DeferredInit): inputs are computed, the transform runs, and mapped input
/// pages are released afterwards (a repack streams over mapped weights).
/// Errors name `fqn` and `what` ("pack_int4(tok_embeddings.weight, ...)").
std::shared_ptr<const DeferredData>
deferTransform(const ConstantTransform &transform, TransformArgs args, TensorProto planned,
               std::vector<std::shared_ptr<const DeferredData>> inputs, std::string fqn,
               std::string what);

//===-- The arithmetic behind the built-in transforms, for tests and tools ---===//

/// Packs integer values two per byte along the last dim. Signed inputs must
/// lie in [-8, 7] and are stored with a +8 offset; unsigned ones in [0, 15].
/// LowFirst puts the even element in the low nibble (torchao/ET-VK linear).
Expected<Tensor> packInt4(const Tensor &values, NibbleOrder order);
/// The inverse: [..., K/2] u8 -> [..., length] `dtype` (minus 8 when
/// `isSigned`); `length` -1 keeps all 2 * K/2 elements per row, a smaller
/// one keeps the first `length` (dropping the padding pack_int4 was given).
Expected<Tensor> unpackInt4(const Tensor &packed, NibbleOrder order, bool isSigned, DType dtype,
                            int64_t length = -1);
/// ET-VK compute_per_group_sums: int32 [K/group_size, N padded to `padTo`]
/// with sums[g, n] = sum(w[n, g*gs : (g+1)*gs]); padding columns are 0.
Expected<Tensor> groupSums(const Tensor &weight, int64_t groupSize, int64_t padTo);

} // namespace graft::rewrite
