//===- Interpreter.h - The reference interpreter (the numerics oracle) ---*- C++ -*-===//
//
// Executes a graph of registered ops on the CPU with PyTorch's exact
// semantics (round half to even, clamp after adding the zero point, compute
// in the dtype upstream computes in, torchao/ExecuTorch nibble orders). Every
// rewrite and every Vulkan kernel is checked against it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Graph.h"
#include "graft/ir/Tensor.h"
#include "graft/ops/BoundArgs.h"
#include "graft/support/Expected.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace graft {

/// A runtime value: a tensor, or a concrete symbolic scalar.
using RuntimeValue = std::variant<Tensor, int64_t, double, bool>;

/// Arguments of one kernel call: the bound schema arguments with Values
/// resolved to runtime values.
class KernelArgs {
public:
  KernelArgs(const BoundArgs &args, const std::vector<RuntimeValue> &valueArgs,
             std::string_view nodeName)
      : args_(args), resolved_(valueArgs), nodeName_(nodeName) {}

  const BoundArgs &bound() const { return args_; }
  std::string_view nodeName() const { return nodeName_; }

  const Tensor &tensor(std::string_view name) const;
  /// Null when the optional tensor argument is None.
  const Tensor *optionalTensor(std::string_view name) const;
  /// Tensors of a Tensor[] / Tensor?[] argument (undefined Tensor for None).
  std::vector<Tensor> tensorList(std::string_view name) const;
  int64_t integer(std::string_view name) const; ///< Int/SymInt (resolved)
  std::optional<int64_t> optionalInteger(std::string_view name) const;
  double number(std::string_view name) const; ///< Int/Float/Bool/Scalar
  std::optional<double> optionalNumber(std::string_view name) const;
  bool boolean(std::string_view name) const;
  std::vector<int64_t> intList(std::string_view name) const;
  std::optional<std::vector<int64_t>> optionalIntList(std::string_view name) const;
  DType dtype(std::string_view name) const;
  std::optional<DType> optionalDType(std::string_view name) const;
  std::string string(std::string_view name) const;
  bool isNone(std::string_view name) const;

  /// "node %x (aten.foo.default): message" as a user error.
  Diagnostic error(const std::string &message) const;

private:
  const RuntimeValue *resolve(const Argument &arg) const;
  const BoundArgs &args_;
  /// Runtime values of the Value arguments in Argument::forEachValue order.
  const std::vector<RuntimeValue> &resolved_;
  std::string_view nodeName_;
  friend class Interpreter;
};

using Kernel = std::function<Expected<std::vector<RuntimeValue>>(const KernelArgs &)>;

/// Reference kernels by name ("aten.linear.default", or the YAML `kernel:`).
class KernelRegistry {
public:
  static const KernelRegistry &builtin();
  void add(std::string name, Kernel kernel);
  const Kernel *find(std::string_view name) const;
  std::vector<std::string> names() const;

private:
  std::map<std::string, Kernel, std::less<>> kernels_;
};

struct InterpreterOptions {
  /// Check each result against the node's declared prototype (shape/dtype).
  bool checkResults = true;
};

class Interpreter {
public:
  explicit Interpreter(InterpreterOptions options = {});

  /// Runs the graph. `userInputs` are in the order of the graph's user
  /// inputs; constants come from the graph. Returns the graph outputs in
  /// order. Errors name the failing node (unknown op, bad arguments).
  Expected<std::vector<RuntimeValue>> run(const Graph &graph,
                                          const std::vector<RuntimeValue> &userInputs) const;

private:
  InterpreterOptions options_;
};

/// Random user inputs matching the graph's user-input prototypes: floats
/// uniform in [-1, 1), integer (index) inputs in [0, bound) where bound is
/// taken from the consumers when recognizable (embedding vocab), else [0, 16).
/// Symbolic dims take `symbolValues`, else their range minimum clamped to >= 1.
Expected<std::vector<RuntimeValue>>
makeRandomInputs(const Graph &graph, uint64_t seed,
                 const std::map<std::string, int64_t> &symbolValues = {});

std::string str(const RuntimeValue &value, int64_t maxElements = 16);

} // namespace graft
