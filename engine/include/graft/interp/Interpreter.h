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

  /// In-place ops (index_put_, llama.update_cache, ...): the new value of
  /// the mutable `Tensor(a!)` argument `name`. Kernels compute it out of
  /// place; the interpreter rebinds the argument's Value to it, so the
  /// nodes after this one read the mutated data, as in eager PyTorch.
  void setMutated(std::string_view name, Tensor value) const {
    mutated_.emplace_back(std::string(name), std::move(value));
  }
  const std::vector<std::pair<std::string, Tensor>> &mutated() const { return mutated_; }

private:
  const RuntimeValue *resolve(const Argument &arg) const;
  const BoundArgs &args_;
  /// Runtime values of the Value arguments in Argument::forEachValue order.
  const std::vector<RuntimeValue> &resolved_;
  std::string_view nodeName_;
  mutable std::vector<std::pair<std::string, Tensor>> mutated_;
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

/// The values of a program's mutable buffers between calls (a KV cache),
/// by buffer FQN. A run with a state reads each buffer from it when present
/// (else from the graph's data), and afterwards stores every buffer the run
/// mutated: the value of its BUFFER_MUTATION output (torch.export's graph
/// signature: the functional form's new value, or the in-place chain's
/// result) and any buffer an in-place op rebound. The graph's own data is
/// never written.
struct MutableState {
  std::map<std::string, Tensor, std::less<>> buffers;
  const Tensor *find(std::string_view fqn) const {
    auto it = buffers.find(fqn);
    return it == buffers.end() ? nullptr : &it->second;
  }
};

class Interpreter {
public:
  explicit Interpreter(InterpreterOptions options = {});

  /// Runs the graph. `userInputs` are in the order of the graph's user
  /// inputs; constants come from the graph. Returns the graph outputs in
  /// order. Errors name the failing node (unknown op, bad arguments).
  Expected<std::vector<RuntimeValue>> run(const Graph &graph,
                                          const std::vector<RuntimeValue> &userInputs) const;
  /// The same, reading and updating `state` (decode steps that continue a
  /// KV cache). Without a state every run starts from the graph's data.
  Expected<std::vector<RuntimeValue>>
  run(const Graph &graph, const std::vector<RuntimeValue> &userInputs, MutableState &state) const;

private:
  Expected<std::vector<RuntimeValue>> runImpl(const Graph &graph,
                                              const std::vector<RuntimeValue> &userInputs,
                                              MutableState *state) const;
  InterpreterOptions options_;
};

/// The value an in-place kernel of `node` rebinds when it reports argument
/// `argName` mutated (KernelArgs::setMutated), checked once for every
/// executor: the argument must be a mutable (`Tensor(a!)`) tensor value
/// (else an internal error); not made by a view op (eager PyTorch would
/// write through to the base, which separate values cannot do); and not a
/// parameter or constant (only buffers and user inputs are mutable). Errors
/// do not name the node; callers prefix it.
Expected<const Value *> mutationTarget(const Graph &graph, const Node &node, const BoundArgs &bound,
                                       const std::string &argName);

/// The integers n with lo <= n < hi, as an inclusive [first, last], for an
/// integer tensor drawn from a real range [lo, hi) (a rule example's
/// `uniform(lo, hi)`); an error when there is none or one is not a value of
/// `dtype`. `what` names the tensor in the message.
Expected<std::pair<int64_t, int64_t>> integerDrawRange(DType dtype, double lo, double hi,
                                                       const std::string &what);

/// Random user inputs matching the graph's user-input prototypes: floats
/// uniform in [-1, 1), integer (index) inputs in [0, bound) where bound is
/// taken from the consumers when recognizable (embedding vocab), else [0, 16).
/// `ranges` (by input name) replaces that: floats uniform in [lo, hi),
/// integers uniform over integerDrawRange (bool inputs ignore it).
/// Symbolic dims take `symbolValues`, else their range minimum clamped to >= 1.
Expected<std::vector<RuntimeValue>>
makeRandomInputs(const Graph &graph, uint64_t seed,
                 const std::map<std::string, int64_t> &symbolValues = {},
                 const std::map<std::string, std::pair<double, double>> &ranges = {});

std::string str(const RuntimeValue &value, int64_t maxElements = 16);

} // namespace graft
