//===- Interpreter.cpp - The reference interpreter ------------------------===//
//
// Walks a graph's nodes in order, binds each node's arguments to its schema,
// resolves Values to runtime values (constants from GraphInput::data()), runs
// the registered reference kernel and checks every result against the
// node's declared prototype. Symbolic dims are bound on first sight (user
// inputs first, then node results such as unbacked sizes) and every later
// use must agree, so a wrong shape is reported at the node that produced it.
//
//===----------------------------------------------------------------------===//
#include "graft/interp/Interpreter.h"

#include "Kernels.h"

#include "graft/ops/OpRegistry.h"
#include "graft/ops/OpSchema.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <sstream>
#include <unordered_map>

namespace graft {

//===----------------------------------------------------------------------===//
// KernelRegistry
//===----------------------------------------------------------------------===//

const KernelRegistry &KernelRegistry::builtin() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    interp::registerElementwiseKernels(r);
    interp::registerShapeKernels(r);
    interp::registerLinalgKernels(r);
    interp::registerReductionKernels(r);
    interp::registerScalarKernels(r);
    interp::registerTorchaoQuantKernels(r);
    interp::registerDecomposedQuantKernels(r);
    interp::registerVulkanOpKernels(r);
    interp::registerKvCacheKernels(r);
    return r;
  }();
  return registry;
}

void KernelRegistry::add(std::string name, Kernel kernel) {
  kernels_[std::move(name)] = std::move(kernel);
}

const Kernel *KernelRegistry::find(std::string_view name) const {
  auto it = kernels_.find(name);
  return it == kernels_.end() ? nullptr : &it->second;
}

std::vector<std::string> KernelRegistry::names() const {
  std::vector<std::string> out;
  for (const auto &kv : kernels_)
    out.push_back(kv.first);
  return out;
}

//===----------------------------------------------------------------------===//
// Interpreter
//===----------------------------------------------------------------------===//

namespace {

std::string sizesStr(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

/// "%x" for a node with results, "#3" (its position) otherwise.
std::string nodeLabel(const Node &node, std::size_t position) {
  if (node.numOutputs() > 0)
    return "%" + node.name();
  return "#" + std::to_string(position);
}

std::string_view kindName(const RuntimeValue &v) {
  switch (v.index()) {
  case 0:
    return "tensor";
  case 1:
    return "int";
  case 2:
    return "float";
  default:
    return "bool";
  }
}

/// Checks concrete sizes against a prototype shape, binding symbols seen for
/// the first time. Returns an empty string on success, else the reason.
std::string matchShape(const Shape &shape, const std::vector<int64_t> &sizes,
                       const SymbolTable &symbols, std::map<std::string, int64_t> &bindings) {
  if (shape.size() != sizes.size())
    return "has rank " + std::to_string(sizes.size()) + " but its prototype has rank " +
           std::to_string(shape.size());
  // Bind bare symbols first so linear expressions in the same shape can use them.
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const Dim &d = shape[i];
    if (d.isSymbol()) {
      const std::string &s = d.terms()[0].first;
      auto it = bindings.find(s);
      if (it == bindings.end()) {
        if (const SymbolRange *r = symbols.find(s)) {
          if (sizes[i] < r->min || (r->max && sizes[i] > *r->max))
            return "dim " + std::to_string(i) + " is " + std::to_string(sizes[i]) +
                   ", outside the range of symbol " + s + " [" + std::to_string(r->min) + ", " +
                   (r->max ? std::to_string(*r->max) : std::string("inf")) + "]";
        }
        bindings[s] = sizes[i];
      } else if (it->second != sizes[i]) {
        return "dim " + std::to_string(i) + " is " + std::to_string(sizes[i]) + " but symbol " + s +
               " is already bound to " + std::to_string(it->second);
      }
    }
  }
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const Dim &d = shape[i];
    if (d.isOpaque() || d.isSymbol())
      continue;
    auto v = d.isConstant() ? std::optional<int64_t>(d.constant()) : symbols.evaluate(d, bindings);
    if (!v)
      continue; // depends on a symbol not seen yet
    if (*v != sizes[i])
      return "dim " + std::to_string(i) + " is " + std::to_string(sizes[i]) +
             " but the prototype says " + d.str() +
             (d.isConstant() ? "" : " = " + std::to_string(*v));
  }
  return {};
}

/// Prefixes diagnostics that do not already name a node.
Failure nameNode(Failure f, const std::string &label, const std::string &target) {
  for (Diagnostic &d : f.diags)
    if (d.message.rfind("node ", 0) != 0)
      d.message = "node " + label + " (" + target + "): " + d.message;
  return f;
}

} // namespace

Interpreter::Interpreter(InterpreterOptions options) : options_(options) {}

Expected<std::vector<RuntimeValue>>
Interpreter::run(const Graph &graph, const std::vector<RuntimeValue> &userInputs) const {
  return runImpl(graph, userInputs, nullptr);
}

Expected<std::vector<RuntimeValue>> Interpreter::run(const Graph &graph,
                                                     const std::vector<RuntimeValue> &userInputs,
                                                     MutableState &state) const {
  return runImpl(graph, userInputs, &state);
}

Expected<std::vector<RuntimeValue>>
Interpreter::runImpl(const Graph &graph, const std::vector<RuntimeValue> &userInputs,
                     MutableState *state) const {
  std::unordered_map<const Value *, RuntimeValue> env;
  // Buffers an in-place op rebound, by the buffer's Value.
  std::unordered_map<const Value *, std::string> mutatedBuffers;
  std::map<std::string, int64_t> bindings;
  const SymbolTable &symbols = graph.symbols();

  // Inputs: user inputs in order, constants from the graph.
  std::size_t userIndex = 0;
  std::size_t numUser = 0;
  for (const GraphInput &in : graph.inputs())
    if (!in.isConstant())
      ++numUser;
  if (numUser != userInputs.size())
    return Diagnostic::error("graph @" + graph.name() + " has " + std::to_string(numUser) +
                             " user inputs but " + std::to_string(userInputs.size()) +
                             " were given");
  for (const GraphInput &in : graph.inputs()) {
    const Value *v = in.value;
    if (!in.isConstant()) {
      const RuntimeValue &rv = userInputs[userIndex++];
      std::string label = "input %" + v->name();
      if (v->isTensor()) {
        const Tensor *t = std::get_if<Tensor>(&rv);
        if (!t || !t->defined())
          return Diagnostic::error(label + " expects a tensor, got " + std::string(kindName(rv)));
        if (t->dtype() != v->proto().dtype)
          return Diagnostic::error(label + " expects dtype " + std::string(name(v->proto().dtype)) +
                                   ", got " + std::string(name(t->dtype())));
        std::string why = matchShape(v->proto().shape, t->sizes(), symbols, bindings);
        if (!why.empty())
          return Diagnostic::error(label + " " + v->proto().str() + ": the given tensor " +
                                   sizesStr(t->sizes()) + " " + why);
      } else if (v->kind() == ValueKind::SymInt && !std::holds_alternative<int64_t>(rv)) {
        return Diagnostic::error(label + " expects an int, got " + std::string(kindName(rv)));
      }
      env[v] = rv;
      continue;
    }
    std::string label = std::string(name(in.kind)) + " %" + v->name() +
                        (in.fqn.empty() ? std::string() : " (fqn '" + in.fqn + "')");
    if (state && in.kind == InputKind::Buffer)
      if (const Tensor *cur = state->find(in.fqn)) {
        // A buffer mutated by an earlier run: its current value, which must
        // still fit the prototype.
        if (cur->dtype() != v->proto().dtype)
          return Diagnostic::error(label + ": its state holds " + std::string(name(cur->dtype())) +
                                   " data but its prototype is " + v->proto().str());
        std::string why = matchShape(v->proto().shape, cur->sizes(), symbols, bindings);
        if (!why.empty())
          return Diagnostic::error(label + " " + v->proto().str() + ": its state " +
                                   sizesStr(cur->sizes()) + " " + why);
        env[v] = *cur;
        continue;
      }
    // A constant nothing reads needs no data: a program file stores only the
    // constants its graph reads (an embedded reference graph's unused
    // buffers, such as a KV-cache export's attention mask, have none).
    if (!in.hasData() && !v->hasUses() &&
        std::none_of(graph.outputs().begin(), graph.outputs().end(),
                     [&](const GraphOutput &o) { return o.value == v; }))
      continue;
    if (!in.hasData())
      return Diagnostic::error(label + " has no data; constants need data to be interpreted");
    const Tensor &data = in.data();
    if (const Diagnostic *why = in.dataError())
      return Diagnostic::error(label + ": " + why->message);
    if (!data.defined())
      return Diagnostic::error(label + " has no data; constants need data to be interpreted");
    if (data.dtype() != v->proto().dtype)
      return Diagnostic::error(label + " holds " + std::string(name(data.dtype())) +
                               " data but its prototype is " + v->proto().str());
    std::string why = matchShape(v->proto().shape, data.sizes(), symbols, bindings);
    if (!why.empty())
      return Diagnostic::error(label + " " + v->proto().str() + ": its data " +
                               sizesStr(data.sizes()) + " " + why);
    env[v] = data;
  }

  const KernelRegistry &kernels = KernelRegistry::builtin();
  std::size_t position = 0;
  for (const Node &node : graph.nodes()) {
    std::string label = nodeLabel(node, position++);
    const OpSchema *schema = node.schema();
    const Kernel *kernel = nullptr;
    if (schema) {
      if (!schema->kernel.empty())
        kernel = kernels.find(schema->kernel);
      if (!kernel)
        kernel = kernels.find(schema->qualifiedName());
    }
    if (!kernel)
      kernel = kernels.find(node.target());
    if (!schema || !kernel)
      return Diagnostic::error("node " + label + ": no reference kernel for op '" + node.target() +
                               "'" + (schema ? "" : " (the op is not registered)"));
    auto bound = BoundArgs::bind(node);
    if (!bound.ok())
      return nameNode(bound.takeFailure(), label, node.target());

    std::vector<RuntimeValue> resolved;
    std::string missing;
    for (std::size_t i = 0; i < bound->size(); ++i)
      bound->at(i).forEachValue([&](Value *v) {
        auto it = env.find(v);
        if (it == env.end()) {
          if (missing.empty())
            missing = v->name();
          resolved.emplace_back(Tensor());
        } else {
          resolved.push_back(it->second);
        }
      });
    if (!missing.empty())
      return Diagnostic::error("node " + label + " (" + node.target() + "): operand %" + missing +
                               " is not defined before its use");

    std::string nodeName = node.numOutputs() > 0 ? node.name() : label;
    KernelArgs kargs(*bound, resolved, nodeName);
    Expected<std::vector<RuntimeValue>> result = std::vector<RuntimeValue>{};
    try {
      result = (*kernel)(kargs);
    } catch (const std::exception &e) {
      return Diagnostic::internal("node " + label + " (" + node.target() +
                                  "): reference kernel failed: " + e.what());
    }
    if (!result.ok())
      return nameNode(result.takeFailure(), label, node.target());
    // In-place ops: rebind each mutated argument's Value to its new data.
    for (const auto &[argName, newValue] : kargs.mutated()) {
      auto target = mutationTarget(graph, node, *bound, argName);
      if (!target.ok())
        return nameNode(target.takeFailure(), label, node.target());
      if (const GraphInput *in = graph.inputFor(*target); in && in->kind == InputKind::Buffer)
        mutatedBuffers[*target] = std::string(in->fqn);
      env[*target] = newValue;
    }
    std::vector<RuntimeValue> &outs = *result;
    if (outs.size() != node.numOutputs())
      return Diagnostic::internal("node " + label + " (" + node.target() + "): kernel returned " +
                                  std::to_string(outs.size()) + " results for " +
                                  std::to_string(node.numOutputs()) + " declared outputs");
    for (unsigned i = 0; i < node.numOutputs(); ++i) {
      const Value *ov = node.output(i);
      RuntimeValue &rv = outs[i];
      std::string what = "node " + label + " (" + node.target() + "): result %" + ov->name();
      switch (ov->kind()) {
      case ValueKind::Tensor: {
        const Tensor *t = std::get_if<Tensor>(&rv);
        if (!t || !t->defined())
          return Diagnostic::internal(what + " should be a tensor, the kernel produced " +
                                      std::string(kindName(rv)));
        if (!options_.checkResults)
          break;
        if (t->dtype() != ov->proto().dtype)
          return Diagnostic::error(what + " is " + std::string(name(t->dtype())) +
                                   sizesStr(t->sizes()) + " but its prototype is " +
                                   ov->proto().str());
        std::string why = matchShape(ov->proto().shape, t->sizes(), symbols, bindings);
        if (!why.empty())
          return Diagnostic::error(what + " " + sizesStr(t->sizes()) +
                                   " does not match its prototype " + ov->proto().str() + ": " +
                                   why);
        break;
      }
      case ValueKind::SymInt:
        if (const bool *b = std::get_if<bool>(&rv))
          rv = int64_t(*b ? 1 : 0);
        if (!std::holds_alternative<int64_t>(rv))
          return Diagnostic::internal(what + " should be an int, the kernel produced " +
                                      std::string(kindName(rv)));
        break;
      case ValueKind::SymFloat:
        if (const int64_t *iv = std::get_if<int64_t>(&rv))
          rv = static_cast<double>(*iv);
        if (!std::holds_alternative<double>(rv))
          return Diagnostic::internal(what + " should be a float, the kernel produced " +
                                      std::string(kindName(rv)));
        break;
      case ValueKind::SymBool:
        if (const int64_t *iv = std::get_if<int64_t>(&rv))
          rv = *iv != 0;
        if (!std::holds_alternative<bool>(rv))
          return Diagnostic::internal(what + " should be a bool, the kernel produced " +
                                      std::string(kindName(rv)));
        break;
      }
      env[ov] = std::move(rv);
    }
  }

  std::vector<RuntimeValue> outputs;
  for (const GraphOutput &o : graph.outputs()) {
    auto it = env.find(o.value);
    if (it == env.end())
      return Diagnostic::error("graph output %" + o.value->name() + " is never computed");
    outputs.push_back(it->second);
  }
  if (state) {
    // Buffers mutated in place, then the signature's BUFFER_MUTATION outputs
    // (which name the final value when both apply).
    for (const auto &[v, fqn] : mutatedBuffers)
      state->buffers[fqn] = std::get<Tensor>(env.at(v));
    for (std::size_t i = 0; i < graph.outputs().size(); ++i) {
      const GraphOutput &o = graph.outputs()[i];
      if (o.kind != OutputKind::BufferMutation)
        continue;
      const Tensor *t = std::get_if<Tensor>(&outputs[i]);
      if (!t || !t->defined())
        return Diagnostic::error("buffer mutation output %" + o.value->name() + " of buffer '" +
                                 o.target + "' is not a tensor");
      state->buffers[o.target] = *t;
    }
  }
  return outputs;
}

//===----------------------------------------------------------------------===//
// Random inputs
//===----------------------------------------------------------------------===//

namespace {

/// splitmix64: tiny, fast, and identical on every platform (std::
/// distributions are not).
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

/// Upper bound (exclusive) for an integer input used as indices: the vocab
/// size of an embedding-like consumer when recognizable.
std::optional<int64_t> indexBound(const Value *v) {
  for (const Node *user : v->users()) {
    const std::string &t = user->target();
    // Positions of the indices and the table (whose dim 0 is the vocab).
    int indexPos = -1, tablePos = -1;
    if (t == "aten.embedding.default") {
      indexPos = 1;
      tablePos = 0;
    } else if (t == "quantized_decomposed.embedding_4bit.default" ||
               t == "quantized_decomposed.embedding_4bit.dtype" ||
               t == "quantized_decomposed.embedding_byte.default" ||
               t == "quantized_decomposed.embedding_byte.dtype" ||
               t == "quantized_decomposed.embedding_2bit.default" ||
               t == "quantized_decomposed.embedding_2bit.dtype") {
      indexPos = 5;
      tablePos = 0;
    } else if (t == "et_vk.embedding_q4gsw.default") {
      indexPos = 3;
      tablePos = 0;
    } else {
      continue;
    }
    const auto &args = user->args();
    const Argument *idx = static_cast<std::size_t>(indexPos) < args.size()
                              ? &args[static_cast<std::size_t>(indexPos)]
                              : nullptr;
    if (!idx)
      idx = user->kwarg("indices");
    if (!idx || !idx->isValue() || idx->value() != v)
      continue;
    const Argument *table = static_cast<std::size_t>(tablePos) < args.size()
                                ? &args[static_cast<std::size_t>(tablePos)]
                                : user->kwarg("weight");
    if (!table || !table->isValue() || table->value()->proto().shape.empty())
      continue;
    if (auto n = table->value()->proto().shape[0].value())
      if (*n > 0)
        return *n;
  }
  return std::nullopt;
}

} // namespace

Expected<const Value *> mutationTarget(const Graph &graph, const Node &node, const BoundArgs &bound,
                                       const std::string &argName) {
  const OpSchema *schema = node.schema();
  int index = schema ? schema->argIndex(argName) : -1;
  const Argument *arg = bound.find(argName);
  if (index < 0 || !schema->args[static_cast<std::size_t>(index)].type.isMutable() || !arg ||
      !arg->isValue() || !arg->value()->isTensor())
    return Diagnostic::internal("the kernel mutated '" + argName +
                                "', which is not a mutable tensor argument");
  const Value *target = arg->value();
  if (const Node *producer = target->producer())
    if (producer->schema() && producer->schema()->properties.view)
      // Eager PyTorch would write through the view into its base; separate
      // values do not share storage, so say so instead of silently losing
      // the update.
      return Diagnostic::error("mutates %" + target->name() + ", a view made by " +
                               producer->target() + "; mutation through a view is not supported");
  if (const GraphInput *in = graph.inputFor(target);
      in && in->isConstant() && in->kind != InputKind::Buffer)
    return Diagnostic::error("mutates " + std::string(name(in->kind)) + " %" + target->name() +
                             "; only buffers and user inputs are mutable");
  return target;
}

/// The declared symbol an integer input is read into by
/// `_local_scalar_dense` (directly or through select / select_copy), or by
/// et_vk.select_as_symint, their fusion: graft names an unbacked symbol
/// after that value (docs/pt2.md).
static std::optional<std::string> readSymbol(const Value &v, const SymbolTable &symbols) {
  auto symbolOf = [&](const Node *user) -> std::optional<std::string> {
    std::string t = canonicalTarget(user->target());
    if ((t == "aten._local_scalar_dense.default" || t == "et_vk.select_as_symint.default") &&
        user->numOutputs() == 1 && symbols.find(user->output()->name()))
      return std::string(user->output()->name());
    return std::nullopt;
  };
  for (const Node *user : v.users()) {
    if (auto s = symbolOf(user))
      return s;
    std::string t = canonicalTarget(user->target());
    if ((t == "aten.select.int" || t == "aten.select_copy.int") && user->numOutputs() == 1)
      for (const Node *u2 : user->output()->users())
        if (auto s = symbolOf(u2))
          return s;
  }
  return std::nullopt;
}

Expected<std::pair<int64_t, int64_t>> integerDrawRange(DType dtype, double lo, double hi,
                                                       const std::string &what) {
  double first = std::ceil(lo), last = std::ceil(hi) - 1;
  std::ostringstream os;
  os << "[" << lo << ", " << hi << ")";
  std::string range = os.str();
  if (first > last)
    return Diagnostic::error(what + ": the range " + range + " holds no integer");
  auto b = integerBounds(dtype);
  if (b && (first < static_cast<double>(b->first) || last > static_cast<double>(b->second)))
    return Diagnostic::error(what + ": the range " + range + " is outside " +
                             std::string(name(dtype)) + "'s values [" + std::to_string(b->first) +
                             ", " + std::to_string(b->second) + "]");
  return std::pair<int64_t, int64_t>(static_cast<int64_t>(first), static_cast<int64_t>(last));
}

Expected<std::vector<RuntimeValue>>
makeRandomInputs(const Graph &graph, uint64_t seed,
                 const std::map<std::string, int64_t> &symbolValues,
                 const std::map<std::string, std::pair<double, double>> &ranges) {
  SplitMix rng{seed};
  std::vector<RuntimeValue> out;
  std::map<std::string, int64_t> values = symbolValues;
  for (const auto &[sym, range] : graph.symbols().all())
    if (!values.count(sym))
      values[sym] = std::max<int64_t>(range.min, 1);
  for (const GraphInput &in : graph.inputs()) {
    if (in.isConstant())
      continue;
    const Value *v = in.value;
    if (!v->isTensor()) {
      auto it = symbolValues.find(v->name());
      if (v->kind() == ValueKind::SymFloat)
        out.emplace_back(it != symbolValues.end() ? static_cast<double>(it->second) : 1.0);
      else if (v->kind() == ValueKind::SymBool)
        out.emplace_back(it != symbolValues.end() ? it->second != 0 : true);
      else
        out.emplace_back(it != symbolValues.end() ? it->second : int64_t(1));
      continue;
    }
    const TensorProto &p = v->proto();
    std::vector<int64_t> sizes;
    for (const Dim &d : p.shape) {
      std::optional<int64_t> s;
      if (d.isConstant())
        s = d.constant();
      else if (d.isSymbol() && values.count(d.terms()[0].first))
        s = values[d.terms()[0].first];
      else
        s = graph.symbols().evaluate(d, values);
      if (!s)
        return Diagnostic::error("input %" + v->name() + " " + p.str() +
                                 ": cannot choose a size for dim " + d.str() +
                                 "; give the symbol a value");
      sizes.push_back(std::max<int64_t>(*s, 0));
    }
    if (!isComputable(p.dtype))
      return Diagnostic::error("input %" + v->name() + ": cannot generate random " +
                               std::string(name(p.dtype)) + " data");
    Tensor t = Tensor::empty(p.dtype, sizes);
    int64_t n = t.numel();
    auto range = ranges.find(std::string(v->name()));
    if (range != ranges.end() && p.dtype != DType::Bool) {
      auto [lo, hi] = range->second;
      if (isIntegral(p.dtype)) {
        GRAFT_TRY(auto ints, integerDrawRange(p.dtype, lo, hi,
                                              "input %" + std::string(v->name()) + " " + p.str()));
        uint64_t span = static_cast<uint64_t>(ints.second - ints.first) + 1;
        for (int64_t i = 0; i < n; ++i)
          t.setInt(i, ints.first + static_cast<int64_t>(rng.next() % span));
      } else {
        for (int64_t i = 0; i < n; ++i)
          t.setDouble(i, lo + (hi - lo) * rng.uniform());
      }
    } else if (p.dtype == DType::Bool) {
      for (int64_t i = 0; i < n; ++i)
        t.setInt(i, static_cast<int64_t>(rng.next() >> 63));
    } else if (auto pos = readSymbol(*v, graph.symbols()); pos && isIntegral(p.dtype)) {
      // A position read with item() (input_pos[-1].item()): every element
      // is the value chosen for its unbacked symbol, so the runtime
      // assertions on it (u0 + s0 <= max_seq_len) hold like the sizes do.
      for (int64_t i = 0; i < n; ++i)
        t.setInt(i, values[*pos]);
    } else if (isIntegral(p.dtype)) {
      int64_t bound = indexBound(v).value_or(16);
      if (auto b = integerBounds(p.dtype))
        if (b->second < bound)
          bound = b->second + 1;
      for (int64_t i = 0; i < n; ++i)
        t.setInt(i, static_cast<int64_t>(rng.next() % static_cast<uint64_t>(bound)));
    } else {
      for (int64_t i = 0; i < n; ++i)
        t.setDouble(i, -1.0 + 2.0 * rng.uniform());
    }
    out.emplace_back(std::move(t));
  }
  return out;
}

std::string str(const RuntimeValue &value, int64_t maxElements) {
  if (const Tensor *t = std::get_if<Tensor>(&value))
    return t->defined() ? t->str(maxElements) : std::string("<undefined tensor>");
  if (const int64_t *i = std::get_if<int64_t>(&value))
    return std::to_string(*i);
  if (const double *d = std::get_if<double>(&value)) {
    std::ostringstream os;
    os.precision(17);
    os << *d;
    return os.str();
  }
  return std::get<bool>(value) ? "true" : "false";
}

} // namespace graft
