//===- Module.cpp - graft._graft, the Python extension module -------------===//
//
// The C++ half of the `graft` Python package (docs/python.md). It is a thin
// layer over the library API (graft/Compiler.h and the headers it builds
// on), like the CLI: every function here calls the library, and what the
// CLI prints as JSON this returns as Python dicts and lists. The
// pure-Python half (python/graft/*.py) wraps these in the public API.
//
// Conventions, shared with the Python half:
//  - Library failures become a C++ DiagError, which the registered
//    translator raises as graft.errors.UserError / InternalError carrying
//    the rendered diagnostics and one dict per diagnostic.
//  - Tensors cross the boundary as TensorData objects exporting the buffer
//    protocol over graft's Storage (no copy; read-only), plus graft's dtype
//    name, since numpy has no bf16 or float8: those export their raw bits as
//    unsigned integers of the same width and the Python side views them.
//  - Node arguments are Python values: None, bool, int, float, str, lists,
//    and tagged tuples ("%", name) for a graph value, ("dtype", "f32"),
//    ("device", "cpu"), ("layout", "strided"), ("memory_format", "...").
//
//===----------------------------------------------------------------------===//
#include "graft/Compiler.h"
#include "graft/Generate.h"
#include "graft/dsl/Pat.h"
#include "graft/interp/Interpreter.h"
#include "graft/ir/Verifier.h"
#include "graft/ops/OpRegistry.h"
#include "graft/ops/ShapeInference.h"
#include "graft/rewrite/VerifyRules.h"
#include "graft/serialize/CoverageReport.h"
#include "graft/serialize/Load.h"
#include "graft/serialize/ProgramFile.h"
#include "graft/serialize/TextIR.h"
#include "graft/support/FileIO.h"
#include "graft/vulkan/Context.h"
#include "graft/vulkan/GraphExecutor.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

namespace py = pybind11;

namespace graft::python {
namespace {

//===-- Errors -------------------------------------------------------------===//

/// A library failure on its way to Python (translated in PYBIND11_MODULE).
struct DiagError : std::exception {
  std::vector<Diagnostic> diags;
  std::string text;
  DiagError(std::vector<Diagnostic> d, const SourceManager *sources)
      : diags(std::move(d)), text(render(diags, sources)) {
    while (!text.empty() && text.back() == '\n')
      text.pop_back();
  }
  const char *what() const noexcept override { return text.c_str(); }
};

[[noreturn]] void fail(const std::vector<Diagnostic> &diags,
                       const SourceManager *sources = nullptr) {
  throw DiagError(diags, sources);
}
[[noreturn]] void fail(std::string message) {
  fail({Diagnostic::error(std::move(message))});
}

template <class T> T take(Expected<T> e, const SourceManager *sources = nullptr) {
  if (!e)
    fail(e.diags(), sources);
  return std::move(*e);
}
void check(const Status &s, const SourceManager *sources = nullptr) {
  if (!s)
    fail(s.diags(), sources);
}

py::dict rangeDict(const std::optional<SourceRange> &r) {
  py::dict d;
  d["file"] = r && r->begin.valid() ? py::object(py::str(r->begin.file)) : py::none();
  d["line"] = r && r->begin.valid() ? py::object(py::int_(r->begin.line)) : py::none();
  d["column"] = r && r->begin.valid() ? py::object(py::int_(r->begin.column)) : py::none();
  return d;
}

py::dict diagDict(const Diagnostic &diag, const SourceManager *sources) {
  py::dict d = rangeDict(diag.range);
  d["severity"] = toString(diag.severity);
  d["kind"] = diag.kind == DiagKind::Internal ? "internal" : "user";
  d["message"] = diag.message;
  py::list notes;
  for (const DiagNote &n : diag.notes) {
    py::dict nd = rangeDict(n.range);
    nd["message"] = n.message;
    notes.append(nd);
  }
  d["notes"] = notes;
  d["text"] = render(diag, sources);
  return d;
}

py::list diagList(const std::vector<Diagnostic> &diags, const SourceManager *sources) {
  py::list out;
  for (const Diagnostic &d : diags)
    out.append(diagDict(d, sources));
  return out;
}

//===-- Tensors ------------------------------------------------------------===//

/// A tensor's bytes as a Python buffer (read-only, no copy). Holding the
/// Tensor keeps its Storage (owned or memory-mapped) alive as long as any
/// numpy array viewing it.
struct TensorData {
  Tensor tensor;
};

/// The struct-module format of a dtype's storage; dtypes numpy lacks (bf16,
/// float8, sub-byte) export their bits as an unsigned integer of their width.
std::string bufferFormat(DType dt) {
  switch (dt) {
  case DType::Bool:
    return "?";
  case DType::I8:
    return "b";
  case DType::I16:
    return "h";
  case DType::I32:
    return "i";
  case DType::I64:
    return "q";
  case DType::F16:
    return "e";
  case DType::F32:
    return "f";
  case DType::F64:
    return "d";
  default:
    break;
  }
  if (isSignedIntegral(dt) && elementSize(dt) == 1)
    return "b"; // i1..i7: one value per byte
  switch (elementSize(dt)) {
  case 1:
    return "B";
  case 2:
    return "H";
  case 4:
    return "I";
  case 8:
    return "Q";
  default:
    fail("dtype " + std::string(name(dt)) + " has no buffer format");
  }
}

py::buffer_info bufferOf(TensorData &t) {
  const Tensor &x = t.tensor;
  const auto item = static_cast<py::ssize_t>(elementSize(x.dtype()));
  std::vector<py::ssize_t> shape(x.sizes().begin(), x.sizes().end()), strides;
  std::vector<int64_t> elemStrides = x.strides();
  if (elemStrides.empty()) { // contiguous
    elemStrides.assign(x.sizes().size(), 1);
    for (std::size_t i = x.sizes().size(); i-- > 1;)
      elemStrides[i - 1] = elemStrides[i] * x.sizes()[i];
  }
  for (int64_t s : elemStrides)
    strides.push_back(static_cast<py::ssize_t>(s) * item);
  // A zero-element tensor may have no bytes to point at; numpy accepts any
  // non-null pointer for it.
  static uint8_t empty = 0;
  const uint8_t *p = x.numel() ? x.rawData() : &empty;
  return py::buffer_info(const_cast<uint8_t *>(p), item, bufferFormat(x.dtype()),
                         static_cast<py::ssize_t>(shape.size()), shape, strides,
                         /*readonly=*/true);
}

/// (TensorData, dtype name) for a runtime value; Python scalars for symbols.
py::object toPython(const RuntimeValue &v) {
  if (const Tensor *t = std::get_if<Tensor>(&v))
    return py::make_tuple(py::cast(TensorData{*t}), std::string(name(t->dtype())));
  if (const int64_t *i = std::get_if<int64_t>(&v))
    return py::int_(*i);
  if (const double *d = std::get_if<double>(&v))
    return py::float_(*d);
  return py::bool_(std::get<bool>(v));
}

/// The dtype of a Python buffer's elements (struct-module format).
DType dtypeOfBuffer(const py::buffer_info &info) {
  std::string f = info.format;
  while (!f.empty() && (f[0] == '<' || f[0] == '=' || f[0] == '@' || f[0] == '!'))
    f.erase(0, 1);
  const char c = f.size() == 1 ? f[0] : '\0';
  const auto size = info.itemsize;
  if (c == '?')
    return DType::Bool;
  if (c == 'e' || c == 'f' || c == 'd')
    return size == 2 ? DType::F16 : size == 4 ? DType::F32 : DType::F64;
  if (c == 'b' || c == 'h' || c == 'i' || c == 'l' || c == 'q' || c == 'n')
    return size == 1 ? DType::I8 : size == 2 ? DType::I16 : size == 4 ? DType::I32 : DType::I64;
  if (c == 'B' || c == 'H' || c == 'I' || c == 'L' || c == 'Q' || c == 'N')
    return size == 1 ? DType::U8 : size == 2 ? DType::U16 : size == 4 ? DType::U32 : DType::U64;
  fail("arrays of element format '" + info.format + "' are not supported");
}

DType parseDTypeName(const std::string &text) {
  auto dt = parseDType(text);
  if (!dt)
    fail("unknown dtype '" + text + "'");
  return *dt;
}

/// A contiguous graft Tensor copied from a Python buffer (a numpy array).
/// `dtype`, when given, reinterprets elements of the same width (bf16 given
/// as uint16 bits, a sub-byte dtype as int8).
Tensor tensorFromBuffer(const py::buffer &buf, const std::optional<std::string> &dtype) {
  py::buffer_info info = buf.request();
  DType dt = dtypeOfBuffer(info);
  if (dtype) {
    DType want = parseDTypeName(*dtype);
    if (elementSize(want) != static_cast<std::size_t>(info.itemsize))
      fail("dtype " + *dtype + " has " + std::to_string(elementSize(want)) +
           "-byte elements, the array " + std::to_string(info.itemsize) + "-byte ones");
    dt = want;
  }
  std::vector<int64_t> sizes(info.shape.begin(), info.shape.end());
  Tensor t = Tensor::empty(dt, sizes);
  // Copy element by element along the buffer's strides (any layout).
  const int64_t n = t.numel();
  const auto item = static_cast<std::size_t>(info.itemsize);
  uint8_t *dst = t.mutableRawData();
  std::vector<int64_t> index(sizes.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    py::ssize_t off = 0;
    for (std::size_t d = 0; d < sizes.size(); ++d)
      off += static_cast<py::ssize_t>(index[d]) * info.strides[d];
    std::memcpy(dst + static_cast<std::size_t>(i) * item,
                static_cast<const uint8_t *>(info.ptr) + off, item);
    for (std::size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d])
        break;
      index[d] = 0;
    }
  }
  return t;
}

/// A tensor given from Python: a buffer, or (buffer, dtype name).
Tensor tensorFromPython(const py::handle &obj) {
  if (py::isinstance<py::tuple>(obj)) {
    auto t = obj.cast<py::tuple>();
    if (t.size() == 2 && py::isinstance<py::buffer>(t[0]))
      return tensorFromBuffer(
          t[0].cast<py::buffer>(),
          t[1].is_none() ? std::nullopt : std::optional<std::string>(t[1].cast<std::string>()));
  }
  if (py::isinstance<py::buffer>(obj))
    return tensorFromBuffer(obj.cast<py::buffer>(), std::nullopt);
  fail("expected an array (or (array, dtype)), got " +
       std::string(py::str(obj.get_type().attr("__name__"))));
}

//===-- Graphs -------------------------------------------------------------===//

py::object dimToPython(const Dim &d) {
  if (d.isConstant())
    return py::int_(d.constant());
  return py::str(d.str());
}

py::list shapeToPython(const Shape &shape) {
  py::list out;
  for (const Dim &d : shape)
    out.append(dimToPython(d));
  return out;
}

/// A graph and where it came from (a .pt2's provenance is needed to write
/// one back).
struct PyGraph {
  std::unique_ptr<Graph> graph;
  std::optional<Pt2Provenance> pt2;
  std::string path;

  Graph &g() {
    if (!graph)
      fail("the graph is empty");
    return *graph;
  }
};

PyGraph loadPath(const std::string &path) {
  SourceManager sources;
  auto loaded = loadGraph(path, &sources);
  if (!loaded)
    fail(loaded.diags(), &sources);
  return PyGraph{std::move(loaded->graph), std::move(loaded->pt2), path};
}

std::string graphText(PyGraph &pg) {
  if (pg.pt2) {
    // As `graft print`: the weights of a .pt2 print as file() references
    // into the archive (by absolute path: the text has no directory of its
    // own), not as megabytes of inline values.
    std::error_code ec;
    auto abs = std::filesystem::absolute(pg.path, ec);
    referenceArchiveWeights(pg.g(), *pg.pt2, ec ? pg.path : abs.string());
  }
  PrintOptions po;
  // In memory there is no sidecar file: every constant is printed inline
  // unless it already has a textual source (file(), random(), ...).
  po.maxInlineElements = INT64_MAX;
  return take(printGraph(pg.g(), po));
}

void saveGraph(PyGraph &pg, const std::string &path, std::optional<std::string> dataFile) {
  Graph &g = pg.g();
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".pt2") == 0) {
    Pt2WriteOptions w;
    if (pg.pt2)
      w.provenance = &*pg.pt2;
    check(writePt2(g, path, w));
    return;
  }
  if (pg.pt2 && !dataFile) {
    // As `graft print -o`: archive weights are referenced relative to the
    // text's directory instead of being copied into a data file.
    std::error_code ec;
    auto dir = std::filesystem::absolute(path, ec).parent_path();
    auto rel = std::filesystem::relative(std::filesystem::absolute(pg.path, ec), dir, ec);
    referenceArchiveWeights(g, *pg.pt2, !ec && !rel.empty() ? rel.string() : pg.path);
  }
  PrintOptions po;
  po.dataFile =
      dataFile ? *dataFile : std::filesystem::path(path).replace_extension(".bin").string();
  auto text = take(printGraph(g, po));
  check(writeFileAtomic(path, text));
}

py::list graphInputs(PyGraph &pg) {
  py::list out;
  for (const GraphInput &in : pg.g().inputs()) {
    py::dict d;
    d["name"] = std::string(in.value->name());
    d["kind"] = std::string(name(in.kind));
    d["fqn"] = in.isConstant() ? py::object(py::str(std::string(in.fqn))) : py::none();
    d["value_kind"] = std::string(name(in.value->kind()));
    if (in.value->isTensor()) {
      d["dtype"] = std::string(name(in.value->proto().dtype));
      d["shape"] = shapeToPython(in.value->proto().shape);
    } else {
      d["dtype"] = py::none();
      d["shape"] = py::none();
    }
    d["has_data"] = in.hasData();
    d["persistent"] = in.persistent;
    out.append(d);
  }
  return out;
}

py::list graphOutputs(PyGraph &pg) {
  py::list out;
  for (const GraphOutput &o : pg.g().outputs()) {
    py::dict d;
    d["name"] = std::string(o.value->name());
    d["kind"] = std::string(name(o.kind));
    d["target"] = o.target;
    out.append(d);
  }
  return out;
}

py::object argToPython(const Argument &a) {
  switch (a.kind()) {
  case Argument::Kind::None:
    return py::none();
  case Argument::Kind::Value:
    return py::make_tuple("%", std::string(a.value()->name()));
  case Argument::Kind::Bool:
    return py::bool_(a.boolean());
  case Argument::Kind::Int:
    return py::int_(a.integer());
  case Argument::Kind::Float:
    return py::float_(a.floating());
  case Argument::Kind::String:
    return py::str(a.string());
  case Argument::Kind::DType:
    return py::make_tuple("dtype", std::string(name(a.dtype())));
  case Argument::Kind::Device:
    return py::make_tuple("device", a.device().str());
  case Argument::Kind::Layout:
    return py::make_tuple("layout", std::string(name(a.layout())));
  case Argument::Kind::MemoryFormat:
    return py::make_tuple("memory_format", std::string(name(a.memoryFormat())));
  case Argument::Kind::List: {
    py::list l;
    for (const Argument &e : a.list())
      l.append(argToPython(e));
    return l;
  }
  }
  return py::none();
}

py::list graphNodes(PyGraph &pg) {
  py::list out;
  for (const Node &n : pg.g().nodes()) {
    py::dict d;
    d["target"] = n.target();
    py::list args;
    for (const Argument &a : n.args())
      args.append(argToPython(a));
    d["args"] = args;
    py::dict kwargs;
    for (const auto &[k, v] : n.kwargs())
      kwargs[py::str(k)] = argToPython(v);
    d["kwargs"] = kwargs;
    py::list results;
    for (const Value *v : n.outputs()) {
      py::dict r;
      r["name"] = std::string(v->name());
      r["value_kind"] = std::string(name(v->kind()));
      r["dtype"] =
          v->isTensor() ? py::object(py::str(std::string(name(v->proto().dtype)))) : py::none();
      r["shape"] = v->isTensor() ? py::object(shapeToPython(v->proto().shape)) : py::none();
      results.append(r);
    }
    d["outputs"] = results;
    d["known"] = n.schema() != nullptr;
    out.append(d);
  }
  return out;
}

/// A constant's data (computed when it is a rule's deferred transform).
py::tuple constantData(PyGraph &pg, const std::string &fqn) {
  const GraphInput *in = pg.g().findConstant(fqn);
  if (!in)
    fail("the graph has no constant '" + fqn + "'");
  if (!in->hasData())
    fail("constant '" + fqn + "' carries no data");
  const Tensor &t = in->data();
  if (!t.defined())
    fail({in->dataError() ? *in->dataError()
                          : Diagnostic::error("constant '" + fqn + "' has no data")});
  return py::make_tuple(py::cast(TensorData{t}), std::string(name(t.dtype())));
}

//===-- Building graphs (the torch.fx bridge, single-op calls) -------------===//

/// Builds a graph statement by statement; node results are inferred from
/// the op's schema unless their types are given (an op graft does not know).
class GraphBuilder {
public:
  explicit GraphBuilder(std::string name) : graph_(std::make_unique<Graph>(std::move(name))) {}

  void input(const std::string &name, const std::string &dtype, const std::vector<int64_t> &shape) {
    checkName(name);
    TensorProto proto(parseDTypeName(dtype), toShape(shape));
    graph().addInput(InputKind::UserInput, name, proto);
  }

  void symInput(const std::string &name) {
    checkName(name);
    graph().addScalarInput(ValueKind::SymInt, name);
  }

  void constant(const std::string &kind, const std::string &name, const std::string &fqn,
                const py::object &data) {
    checkName(name);
    InputKind k = kind == "param"    ? InputKind::Parameter
                  : kind == "buffer" ? InputKind::Buffer
                  : kind == "const"  ? InputKind::ConstantTensor
                                     : InputKind::UserInput;
    if (k == InputKind::UserInput)
      fail("constant kind must be param, buffer or const, got '" + kind + "'");
    if (fqn.empty() || graph().findConstant(fqn))
      fail("constant FQN '" + fqn + "' is empty or used twice");
    Tensor t = tensorFromPython(data);
    Value *v = graph().addInput(k, name, t.proto(), fqn);
    graph().inputFor(v)->setData(std::move(t), ExternalData{});
  }

  std::vector<std::string> node(const std::string &target, const py::list &args,
                                const py::dict &kwargs, const std::vector<std::string> &names,
                                const py::object &types) {
    const std::string canonical = canonicalTarget(target);
    const OpSchema *schema = OpRegistry::builtin().lookup(canonical);
    std::vector<Argument> a;
    for (const py::handle &h : args)
      a.push_back(toArgument(h));
    std::vector<std::pair<std::string, Argument>> kw;
    for (const auto &[k, v] : kwargs)
      kw.emplace_back(k.cast<std::string>(), toArgument(v));
    std::vector<Graph::ResultSpec> results;
    const bool typed = !types.is_none();
    std::size_t count = typed ? py::len(types) : schema ? schema->returns.size() : 0;
    if (!typed && !schema)
      fail("op '" + target + "' is not registered in graft; give the result types");
    for (std::size_t i = 0; i < count; ++i) {
      Graph::ResultSpec r;
      r.name = i < names.size() ? names[i] : std::string();
      if (!r.name.empty())
        checkName(r.name);
      if (typed) {
        py::object t = types.cast<py::list>()[i];
        if (t.is_none()) {
          r.kind = ValueKind::SymInt;
        } else {
          auto pair = t.cast<std::pair<std::string, std::vector<int64_t>>>();
          r.proto = TensorProto(parseDTypeName(pair.first), toShape(pair.second));
        }
      }
      results.push_back(std::move(r));
    }
    Node *n = graph().createNode(schema ? canonical : target, std::move(a), std::move(kw),
                                 std::move(results));
    n->setSchema(schema);
    if (!typed) {
      auto inferred = inferResults(*n, graph().symbols());
      if (!inferred) {
        std::vector<Diagnostic> diags = inferred.diags();
        graph().eraseNode(n);
        fail(diags);
      }
      for (std::size_t i = 0; i < inferred->size(); ++i) {
        if ((*inferred)[i].kind != ValueKind::Tensor) {
          graph().eraseNode(n);
          fail("op '" + target + "' returns a symbolic scalar; give the result types");
        }
        graph().setProto(n->output(static_cast<unsigned>(i)), (*inferred)[i].proto);
      }
    }
    std::vector<std::string> out;
    for (const Value *v : n->outputs())
      out.emplace_back(v->name());
    return out;
  }

  void output(const std::string &name) { graph().addOutput(lookup(name)); }

  PyGraph build(bool verifyGraph) {
    if (verifyGraph) {
      std::vector<Diagnostic> diags = verify(graph());
      if (!diags.empty())
        fail(diags);
    }
    PyGraph out{std::move(graph_), std::nullopt, ""};
    return out;
  }

private:
  Graph &graph() {
    if (!graph_)
      fail("the builder's graph was already built");
    return *graph_;
  }
  void checkName(const std::string &name) {
    if (name.empty() || graph().findValue(name))
      fail("value name '" + name + "' is empty or defined twice");
  }
  Value *lookup(const std::string &name) {
    Value *v = graph().findValue(name);
    if (!v)
      fail("no value named '" + name + "'");
    return v;
  }
  static Shape toShape(const std::vector<int64_t> &sizes) {
    Shape s;
    for (int64_t d : sizes) {
      if (d < 0)
        fail("negative dimension " + std::to_string(d));
      s.push_back(Dim(d));
    }
    return s;
  }
  Argument toArgument(const py::handle &h) {
    if (h.is_none())
      return Argument::none();
    if (py::isinstance<py::bool_>(h))
      return Argument(h.cast<bool>());
    if (py::isinstance<py::int_>(h))
      return Argument(h.cast<int64_t>());
    if (py::isinstance<py::float_>(h))
      return Argument(h.cast<double>());
    if (py::isinstance<py::str>(h))
      return Argument(h.cast<std::string>());
    if (py::isinstance<py::tuple>(h)) {
      auto t = h.cast<py::tuple>();
      if (t.size() == 2 && py::isinstance<py::str>(t[0]) && py::isinstance<py::str>(t[1])) {
        auto tag = t[0].cast<std::string>(), text = t[1].cast<std::string>();
        if (tag == "%")
          return Argument(lookup(text));
        if (tag == "dtype")
          return Argument(parseDTypeName(text));
        if (tag == "device") {
          Device d;
          d.type = text.substr(0, text.find(':'));
          if (auto colon = text.find(':'); colon != std::string::npos)
            d.index = std::stoi(text.substr(colon + 1));
          return Argument(d);
        }
        if (tag == "layout") {
          if (auto l = parseLayout(text))
            return Argument(*l);
          fail("unknown layout '" + text + "'");
        }
        if (tag == "memory_format") {
          if (auto m = parseMemoryFormat(text))
            return Argument(*m);
          fail("unknown memory format '" + text + "'");
        }
      }
    }
    if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
      Argument::List l;
      for (const py::handle &e : h)
        l.push_back(toArgument(e));
      return Argument(std::move(l));
    }
    fail("cannot pass a " + std::string(py::str(h.get_type().attr("__name__"))) +
         " as an op argument");
  }

  std::unique_ptr<Graph> graph_;
};

//===-- Running graphs ------------------------------------------------------===//

/// The user inputs of `graph` in order, from `inputs` (by name, with or
/// without '%') and `sym` (symbolic scalar inputs by name).
std::vector<RuntimeValue> userInputs(const Graph &graph, const py::dict &inputs,
                                     const py::dict &sym) {
  std::vector<RuntimeValue> out;
  std::set<std::string> used;
  auto find = [&](const std::string &n) -> py::object {
    for (const std::string &key : {n, "%" + n}) {
      if (inputs.contains(key)) {
        used.insert(key);
        return inputs[py::str(key)];
      }
      if (sym.contains(key)) {
        used.insert(key);
        return sym[py::str(key)];
      }
    }
    return py::none();
  };
  for (const GraphInput &in : graph.inputs()) {
    if (in.isConstant())
      continue;
    const std::string n(in.value->name());
    py::object v = find(n);
    if (v.is_none())
      fail("missing input '" + n + "' (" +
           (in.value->isTensor() ? in.value->proto().str() : std::string(name(in.value->kind()))) +
           ")");
    switch (in.value->kind()) {
    case ValueKind::Tensor: {
      Tensor t = tensorFromPython(v);
      // An array of a narrower or wider width than the input declares is
      // converted as torch's .to() would (a float64 numpy default, say).
      if (t.dtype() != in.value->proto().dtype)
        t = t.to(in.value->proto().dtype);
      out.emplace_back(std::move(t));
      break;
    }
    case ValueKind::SymInt:
      out.emplace_back(v.cast<int64_t>());
      break;
    case ValueKind::SymFloat:
      out.emplace_back(v.cast<double>());
      break;
    case ValueKind::SymBool:
      out.emplace_back(v.cast<bool>());
      break;
    }
  }
  for (const auto &[k, v] : inputs)
    if (!used.count(k.cast<std::string>()))
      fail("the graph has no user input '" + k.cast<std::string>() + "'");
  return out;
}

py::dict namedOutputs(const Graph &graph, const std::vector<RuntimeValue> &values) {
  py::dict out;
  for (std::size_t i = 0; i < values.size() && i < graph.outputs().size(); ++i) {
    const GraphOutput &o = graph.outputs()[i];
    std::string key(o.value->name());
    if (o.kind != OutputKind::UserOutput)
      key = (o.kind == OutputKind::BufferMutation ? "buffer:" : "input:") + o.target;
    out[py::str(key)] = toPython(values[i]);
  }
  return out;
}

py::dict interpretGraph(PyGraph &pg, const py::dict &inputs, const py::dict &sym) {
  std::vector<RuntimeValue> in = userInputs(pg.g(), inputs, sym);
  std::optional<Expected<std::vector<RuntimeValue>>> r;
  {
    py::gil_scoped_release release;
    r.emplace(Interpreter().run(pg.g(), in));
  }
  return namedOutputs(pg.g(), take(std::move(*r)));
}

/// One op on the reference interpreter: what the torch.library kernels of
/// et_vk / torchao / quantized_decomposed ops call. `args` hold tensors as
/// (buffer, dtype) pairs; the rest as GraphBuilder takes them.
py::list callOp(const std::string &target, const py::list &args, const py::dict &kwargs) {
  GraphBuilder b("op");
  int count = 0;
  // Tensors become user inputs, in order; everything else stays literal.
  std::vector<RuntimeValue> inputs;
  std::function<py::object(const py::handle &)> lift = [&](const py::handle &h) -> py::object {
    if (py::isinstance<py::tuple>(h)) {
      auto t = h.cast<py::tuple>();
      if (t.size() == 2 && py::isinstance<py::buffer>(t[0])) {
        Tensor x = tensorFromPython(h);
        std::string n = "t" + std::to_string(count++);
        std::vector<int64_t> sizes = x.sizes();
        b.input(n, std::string(name(x.dtype())), sizes);
        inputs.emplace_back(std::move(x));
        return py::make_tuple("%", n);
      }
    }
    if (py::isinstance<py::list>(h)) {
      py::list l;
      for (const py::handle &e : h)
        l.append(lift(e));
      return l;
    }
    return py::reinterpret_borrow<py::object>(h);
  };
  py::list a;
  for (const py::handle &h : args)
    a.append(lift(h));
  py::dict kw;
  for (const auto &[k, v] : kwargs)
    kw[k] = lift(v);
  std::vector<std::string> results = b.node(target, a, kw, {}, py::none());
  for (const std::string &r : results)
    b.output(r);
  // Verified before it runs: the verifier checks the arguments against the
  // schema, so a bad call is a diagnostic rather than a kernel reading
  // an argument of the wrong kind.
  PyGraph g = b.build(/*verifyGraph=*/true);
  std::optional<Expected<std::vector<RuntimeValue>>> r;
  {
    py::gil_scoped_release release;
    r.emplace(Interpreter().run(*g.graph, inputs));
  }
  std::vector<RuntimeValue> values = take(std::move(*r));
  py::list out;
  for (const RuntimeValue &v : values)
    out.append(toPython(v));
  return out;
}

//===-- Rules ---------------------------------------------------------------===//

/// A rule set with the sources its diagnostics point into.
struct PyRuleSet {
  std::shared_ptr<RuleSet> rules;
  std::shared_ptr<SourceManager> sources = std::make_shared<SourceManager>();
};

PyRuleSet makeRuleSet(const std::optional<std::vector<std::string>> &paths, bool allowLossy) {
  PyRuleSet rs;
  if (!paths) {
    // The shipped library is parsed once per process (once with its lossy
    // rules allowed, once without): every RuleSet(None) shares it (a RuleSet
    // is read-only once its phases are compiled).
    static std::mutex mu;
    static std::shared_ptr<RuleSet> shipped[2];
    static std::shared_ptr<SourceManager> shippedSources;
    std::lock_guard<std::mutex> lock(mu);
    if (!shippedSources)
      shippedSources = std::make_shared<SourceManager>();
    std::shared_ptr<RuleSet> &slot = shipped[allowLossy ? 1 : 0];
    if (!slot) {
      auto r = std::make_shared<RuleSet>(
          take(RuleSet::shipped(shippedSources.get()), shippedSources.get()));
      r->allowLossy(allowLossy);
      for (rewrite::RulePhase phase : rewrite::kRulePhases)
        take(r->compiled(phase), shippedSources.get());
      slot = r;
    }
    rs.rules = slot;
    rs.sources = shippedSources;
    return rs;
  }
  rs.rules = std::make_shared<RuleSet>();
  for (const std::string &f : *paths) // a directory: its *.pat files, sorted
    check(rs.rules->addPath(f, rs.sources.get()), rs.sources.get());
  rs.rules->allowLossy(allowLossy);
  for (rewrite::RulePhase phase : rewrite::kRulePhases)
    take(rs.rules->compiled(phase), rs.sources.get());
  return rs;
}

py::list ruleNames(const PyRuleSet &rs) {
  py::list out;
  for (rewrite::RulePhase phase : rewrite::kRulePhases)
    for (const rewrite::Rule &r : rs.rules->rules(phase)) {
      py::dict d;
      d["name"] = r.name;
      d["phase"] = rewrite::name(phase);
      out.append(d);
    }
  return out;
}

py::list checkPaths(const std::vector<std::string> &paths, bool werror) {
  dsl::PatOptions options;
  options.warningsAsErrors = werror;
  SourceManager sources;
  std::set<std::tuple<std::string, uint32_t, uint32_t, std::string>> seen;
  std::vector<Diagnostic> all;
  for (const std::string &path : take(expandRulePaths(paths), nullptr))
    for (Diagnostic &d : dsl::checkPatFile(path, &sources, options)) {
      // A file imported by several files is checked once per importer.
      SourceLoc at = d.range ? d.range->begin : SourceLoc{};
      if (seen.emplace(at.file, at.line, at.column, d.message).second)
        all.push_back(std::move(d));
    }
  return diagList(all, &sources);
}

py::dict statsDict(const rewrite::RuleStats &s, const char *phase) {
  py::dict d;
  d["rule"] = s.rule;
  d["variant"] = s.variant;
  d["phase"] = phase;
  d["tried"] = s.tried;
  d["matched"] = s.matched;
  d["applied"] = s.applied;
  d["rejected"] = s.rejected;
  py::list failures, rejections;
  for (const auto &[why, n] : s.failures)
    failures.append(py::make_tuple(why, n));
  for (const auto &[why, n] : s.rejections)
    rejections.append(py::make_tuple(why, n));
  d["failures"] = failures;
  d["rejections"] = rejections;
  return d;
}

py::dict fuseGraph(PyGraph &pg, const PyRuleSet &rs, unsigned maxIterations, bool verifyEach,
                   const std::vector<std::string> &onlyRules) {
  rewrite::RewriteOptions options;
  options.maxIterations = maxIterations;
  options.verifyEach = verifyEach;
  options.onlyRules = onlyRules;
  rewrite::FqnRegistry fqns;
  Graph &g = pg.g();
  auto result = take(fuse(g, *rs.rules, fqns, options), rs.sources.get());
  py::dict d;
  d["converged"] = result.converged();
  d["stop_reason"] = result.fuse.converged ? result.legalize.stopReason : result.fuse.stopReason;
  d["warnings"] = diagList(fuseWarnings(result, *rs.rules), rs.sources.get());
  d["iterations"] = result.legalize.iterations + result.fuse.iterations;
  d["rewrites"] = result.legalize.rewrites + result.fuse.rewrites;
  d["nodes_before"] = result.nodesBefore;
  d["nodes_after"] = result.nodesAfter;
  d["seconds"] = result.legalizeSeconds + result.fuseSeconds;
  py::list fired, stats;
  for (rewrite::RulePhase phase : rewrite::kRulePhases) {
    const rewrite::RewriteResult &r = result.pass(phase);
    const char *phaseName = rewrite::name(phase);
    for (const rewrite::AppliedRewrite &a : r.log) {
      py::dict f;
      f["rule"] = a.rule;
      f["phase"] = phaseName;
      f["root"] = a.root;
      f["created"] = a.created;
      f["removed"] = a.removed;
      f["constants"] = a.constants;
      f["reused"] = a.reused;
      fired.append(f);
    }
    for (const rewrite::RuleStats &s : r.stats)
      stats.append(statsDict(s, phaseName));
  }
  d["fired"] = fired;
  d["stats"] = stats;
  d["rule_counts"] = result.rulesFired;
  d["provenance_json"] = fqns.toJson();
  std::string text = formatFuseResult(result, *rs.rules);
  if (fqns.size())
    text += "constants made:\n" + fqns.str();
  d["text"] = text;
  return d;
}

std::string locText(const SourceRange &r) {
  if (!r.begin.valid())
    return "";
  return r.begin.file + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

py::list explainGraph(PyGraph &pg, const PyRuleSet &rs, const std::string &rule,
                      const std::string &node, bool failuresOnly) {
  rewrite::ExplainOptions eo;
  eo.rule = rule;
  eo.node = node;
  eo.includeMatches = !failuresOnly;
  if (!rule.empty()) {
    bool known = false;
    for (rewrite::RulePhase phase : rewrite::kRulePhases)
      known = known || !take(rs.rules->compiled(phase))->find(rule).empty();
    if (!known)
      fail("no rule named '" + rule + "'");
  }
  auto entries = take(explainPhases(pg.g(), *rs.rules, eo), rs.sources.get());
  py::list out;
  for (const rewrite::ExplainEntry &e : entries) {
    py::dict d;
    d["rule"] = e.rule;
    d["variant"] = e.variant;
    d["root"] = e.root;
    d["matched"] = e.matched;
    d["loc"] = locText(e.loc);
    d["check"] = e.check;
    d["message"] = e.message;
    d["text"] = rewrite::format(e);
    out.append(d);
  }
  return out;
}

std::string coverageOf(const std::vector<PyGraph *> &graphs, const std::vector<std::string> &names,
                       const PyRuleSet &rs, const std::string &format, bool renderDot) {
  CoverageFormat f = take(parseCoverageFormat(format));
  auto report = take(emptyCoverage(*rs.rules), rs.sources.get());
  for (std::size_t i = 0; i < graphs.size(); ++i)
    check(addCoverage(report, names[i], graphs[i]->g(), *rs.rules), rs.sources.get());
  CoverageFormatOptions fo;
  fo.renderDot = renderDot;
  return formatCoverage(report, f, fo);
}

py::list verifyRulesOf(const PyRuleSet &rs, unsigned instances, uint64_t seed,
                       const std::vector<std::string> &onlyRules) {
  rewrite::RuleVerifyOptions vo;
  vo.instances = std::max(1u, instances);
  vo.seed = seed;
  vo.onlyRules = onlyRules;
  std::vector<rewrite::RuleVerification> results;
  // Lossy rules are verified too (within their stated tolerance), as
  // `graft verify-rules` does: a copy with them allowed.
  RuleSet all = *rs.rules;
  all.allowLossy();
  for (rewrite::RulePhase phase : rewrite::kRulePhases) {
    if (all.rules(phase).empty())
      continue;
    const rewrite::CompiledRules *compiled = take(all.compiled(phase), rs.sources.get());
    py::gil_scoped_release release;
    std::vector<rewrite::RuleVerification> r = rewrite::verifyRules(*compiled, vo);
    results.insert(results.end(), std::make_move_iterator(r.begin()),
                   std::make_move_iterator(r.end()));
  }
  py::list out;
  for (const rewrite::RuleVerification &v : results) {
    py::dict d;
    d["rule"] = v.rule;
    d["variant"] = v.variant;
    d["ok"] = v.ok();
    d["tested"] = v.tested;
    d["passed"] = v.passed;
    d["skipped"] = v.skipped;
    d["worst_diff"] = v.worstDiff;
    d["errors"] = v.errors;
    d["text"] = rewrite::format(v);
    std::string counterexample;
    if (!v.ok() && v.counterexample && v.counterexample->before) {
      PrintOptions po;
      po.printMetadata = false;
      po.maxInlineElements = INT64_MAX;
      if (auto text = printGraph(*v.counterexample->before, po))
        counterexample = *text;
    }
    d["counterexample"] = counterexample.empty() ? py::object(py::none()) : py::str(counterexample);
    out.append(d);
  }
  return out;
}

//===-- Compiling and running programs ------------------------------------===//

std::string compileModel(const std::string &src, const std::string &out, const std::string &target,
                         const std::optional<std::string> &report,
                         const std::vector<std::string> &rules, bool defaultRules,
                         bool embedReference, bool allowLossy) {
  CompileOptions opts;
  opts.output = out;
  opts.target = target;
  opts.rules = rules;
  opts.defaultRules = defaultRules;
  opts.allowLossy = allowLossy;
  opts.embedReference = embedReference;
  std::optional<CoverageFormat> reportFormat;
  if (report) {
    reportFormat = take(coverageFormatFromPath(*report));
    opts.coverage = true;
  }
  SourceManager sources;
  opts.sources = &sources;
  std::optional<Expected<CompileResult>> compiled;
  {
    py::gil_scoped_release release;
    compiled.emplace(compile(src, opts));
  }
  Expected<CompileResult> &result = *compiled;
  if (!result)
    fail(result.diags(), &sources);
  // As the CLI prints them: the program is written, the caller is told.
  for (const Diagnostic &w : result->warnings)
    if (PyErr_WarnEx(PyExc_UserWarning, render(w, &sources).c_str(), 1) != 0)
      throw py::error_already_set(); // a warnings filter made it an error
  if (reportFormat) {
    Status s = writeCoverageReport(*result->coverage, *reportFormat, *report);
    if (!s) {
      // As the CLI: a failed run leaves no program behind.
      std::error_code ec;
      std::filesystem::remove(out, ec);
      fail(s.diags());
    }
  }
  return result->summary.json();
}

/// A program file and, once run, the Vulkan context and executor for it.
struct PyProgram {
  std::string path;
  Program program;
  int deviceIndex = -1;
  std::unique_ptr<vk::Context> context;
  std::unique_ptr<vk::GraphExecutor> executor;

  vk::GraphExecutor &exec(bool allowCpuFallback) {
    if (!context) {
      vk::ContextOptions copts;
      copts.deviceIndex = deviceIndex;
      context = take(vk::Context::create(copts));
    }
    if (!executor) {
      vk::ExecutorOptions eopts;
      eopts.plan = take(vk::compiledPlan(program));
      eopts.allowCpuFallback = allowCpuFallback;
      executor = take(vk::GraphExecutor::create(*context, *program.graph, eopts));
    }
    return *executor;
  }
};

std::unique_ptr<PyProgram> openProgram(const std::string &path, int deviceIndex) {
  auto p = std::make_unique<PyProgram>();
  p->path = path;
  p->deviceIndex = deviceIndex;
  p->program = take(readProgram(path));
  return p;
}

py::dict runProgram(PyProgram &p, const py::dict &inputs, const py::dict &sym,
                    bool allowCpuFallback) {
  std::vector<RuntimeValue> in = userInputs(*p.program.graph, inputs, sym);
  vk::GraphExecutor &exec = p.exec(allowCpuFallback);
  std::optional<Expected<std::vector<RuntimeValue>>> r;
  {
    py::gil_scoped_release release;
    r.emplace(exec.run(in));
  }
  return namedOutputs(*p.program.graph, take(std::move(*r)));
}

/// Greedy generation (graft/Generate.h) with the program's KV cache kept on
/// the device; with `check`, every step against the embedded reference graph
/// on the interpreter. The same keys as `graft run --generate --json`'s
/// tokens, prefill, decode and check.
py::dict generateTokens(PyProgram &p, const std::vector<int64_t> &prompt, int64_t steps,
                        int64_t warmup, bool check, std::optional<double> atol,
                        bool allowCpuFallback) {
  if (steps < 0 || warmup < 0)
    fail("steps and warmup must not be negative");
  if (check && !p.program.reference)
    fail("check=True needs the reference graph embedded in the program "
         "(compile with embed_reference=True)");
  DecodeInterface iface = take(decodeInterface(*p.program.graph));
  if (!p.context) {
    vk::ContextOptions copts;
    copts.deviceIndex = p.deviceIndex;
    p.context = take(vk::Context::create(copts));
  }
  Generator gen = take(Generator::create(
      iface, take(vulkanSession(*p.context, p.program, p.path, allowCpuFallback))));
  std::optional<Generator> reference;
  if (check)
    reference.emplace(take(Generator::create(take(decodeInterface(*p.program.reference)),
                                             interpreterSession(*p.program.reference))));
  GenerateOptions opts;
  opts.decodeSteps = steps;
  opts.warmup = warmup;
  opts.reference = reference ? &*reference : nullptr;
  opts.atol = atol;
  std::optional<Expected<GenerateResult>> r;
  {
    py::gil_scoped_release release;
    r.emplace(generate(gen, prompt, opts));
  }
  GenerateResult res = take(std::move(*r));
  py::dict out;
  out["tokens"] = res.tokens;
  py::dict prefill, decode;
  prefill["tokens"] = int64_t(res.prompt.size());
  prefill["seconds"] = res.prefillSeconds();
  prefill["tokens_per_s"] =
      res.prefillSeconds() > 0 ? double(res.prompt.size()) / res.prefillSeconds() : 0.0;
  decode["tokens"] = res.decodeTokens();
  decode["seconds"] = res.decodeSeconds();
  decode["tokens_per_s"] =
      res.decodeSeconds() > 0 ? double(res.decodeTokens()) / res.decodeSeconds() : 0.0;
  out["prefill"] = prefill;
  out["decode"] = decode;
  if (check) {
    py::dict c;
    c["ok"] = res.checkFailure.empty();
    c["problem"] = res.checkFailure;
    c["max_abs_error"] = res.maxAbsError;
    c["steps_checked"] = int64_t(res.checks.size());
    out["check"] = c;
  }
  return out;
}

py::list opSchemas() {
  py::list out;
  for (const OpSchema *op : OpRegistry::builtin().all()) {
    py::dict d;
    d["qualified_name"] = op->qualifiedName();
    d["namespace"] = op->ns;
    d["name"] = op->name;
    d["overload"] = op->overload;
    d["schema"] = op->str();
    d["returns"] = op->returns.size();
    out.append(d);
  }
  return out;
}

} // namespace
} // namespace graft::python

PYBIND11_MODULE(_graft, m) {
  using namespace graft;
  using namespace graft::python;
  m.doc() = "graft's C++ library (the graft package wraps it; docs/python.md)";
  m.attr("__version__") = GRAFT_VERSION;

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const DiagError &e) {
      bool internal = false;
      for (const Diagnostic &d : e.diags)
        internal |= d.kind == DiagKind::Internal;
      py::object cls =
          py::module_::import("graft.errors").attr(internal ? "InternalError" : "UserError");
      py::object exc = cls(e.text, diagList(e.diags, nullptr));
      PyErr_SetObject(cls.ptr(), exc.ptr());
    }
  });

  py::class_<TensorData>(m, "TensorData", py::buffer_protocol())
      .def_buffer(&bufferOf)
      .def_property_readonly(
          "dtype", [](const TensorData &t) { return std::string(name(t.tensor.dtype())); })
      .def_property_readonly("shape", [](const TensorData &t) { return t.tensor.sizes(); })
      .def_property_readonly("mapped", [](const TensorData &t) {
        return t.tensor.storage() && t.tensor.storage()->isMapped();
      });

  py::class_<PyGraph>(m, "Graph")
      .def_property_readonly("name", [](PyGraph &g) { return g.g().name(); })
      .def_property_readonly("path", [](PyGraph &g) { return g.path; })
      .def_property_readonly("is_pt2", [](PyGraph &g) { return g.pt2.has_value(); })
      .def("text", &graphText)
      .def("save", &saveGraph, py::arg("path"), py::arg("data_file") = py::none())
      .def("inputs", &graphInputs)
      .def("outputs", &graphOutputs)
      .def("nodes", &graphNodes)
      .def("num_nodes", [](PyGraph &g) { return g.g().numNodes(); })
      .def("constant", &constantData, py::arg("fqn"))
      .def("verify", [](PyGraph &g) { return diagList(verify(g.g()), nullptr); });

  m.def("load", &loadPath, py::arg("path"));
  m.def("parse", [](const std::string &text, const std::string &name) {
    SourceManager sources;
    auto g = parseGraph(text, name, {}, &sources);
    if (!g)
      fail(g.diags(), &sources);
    return PyGraph{std::move(*g), std::nullopt, ""};
  });

  py::class_<GraphBuilder>(m, "GraphBuilder")
      .def(py::init<std::string>(), py::arg("name") = "main")
      .def("input", &GraphBuilder::input)
      .def("sym_input", &GraphBuilder::symInput)
      .def("constant", &GraphBuilder::constant)
      .def("node", &GraphBuilder::node, py::arg("target"), py::arg("args"), py::arg("kwargs"),
           py::arg("names") = std::vector<std::string>{}, py::arg("types") = py::none())
      .def("output", &GraphBuilder::output)
      .def("build", &GraphBuilder::build, py::arg("verify") = true);

  m.def("interpret", &interpretGraph, py::arg("graph"), py::arg("inputs"),
        py::arg("sym") = py::dict());
  m.def("call_op", &callOp, py::arg("target"), py::arg("args"), py::arg("kwargs") = py::dict());
  m.def("op_schemas", &opSchemas);

  py::class_<PyRuleSet>(m, "RuleSet")
      .def(py::init(&makeRuleSet), py::arg("paths") = py::none(), py::arg("allow_lossy") = false)
      .def_property_readonly("allow_lossy",
                             [](const PyRuleSet &r) { return r.rules->lossyAllowed(); })
      .def("held_back",
           [](const PyRuleSet &r) {
             std::vector<std::string> names;
             for (const rewrite::Rule *rule : r.rules->heldBack())
               names.push_back(rule->name);
             return names;
           })
      .def("__len__", [](const PyRuleSet &r) { return r.rules->size(); })
      .def_property_readonly("files", [](const PyRuleSet &r) { return r.rules->files(); })
      .def("rules", &ruleNames)
      .def_property_readonly("warnings", [](const PyRuleSet &r) {
        return diagList(r.rules->warnings, r.sources.get());
      });
  m.def("shipped_rule_files", &RuleSet::shippedFiles);
  m.def("check", &checkPaths, py::arg("paths"), py::arg("werror") = false);
  m.def("fuse", &fuseGraph, py::arg("graph"), py::arg("rules"), py::arg("max_iterations") = 10,
        py::arg("verify_each") = false, py::arg("only_rules") = std::vector<std::string>{});
  m.def("explain", &explainGraph, py::arg("graph"), py::arg("rules"), py::arg("rule") = "",
        py::arg("node") = "", py::arg("failures_only") = false);
  m.def("coverage", &coverageOf, py::arg("graphs"), py::arg("names"), py::arg("rules"),
        py::arg("format"), py::arg("render_dot") = true);
  m.def("verify_rules", &verifyRulesOf, py::arg("rules"), py::arg("instances") = 8,
        py::arg("seed") = 1, py::arg("only_rules") = std::vector<std::string>{});
  m.def("compile", &compileModel, py::arg("src"), py::arg("out"), py::arg("target"),
        py::arg("report"), py::arg("rules"), py::arg("default_rules"), py::arg("embed_reference"),
        py::arg("allow_lossy") = false);

  py::class_<PyProgram>(m, "Program")
      .def(py::init(&openProgram), py::arg("path"), py::arg("device") = -1)
      .def_property_readonly("path", [](const PyProgram &p) { return p.path; })
      .def_property_readonly("target", [](const PyProgram &p) { return p.program.target; })
      .def_property_readonly("source_path", [](const PyProgram &p) { return p.program.sourcePath; })
      .def_property_readonly("summary_json",
                             [](const PyProgram &p) { return p.program.summaryJson; })
      .def_property_readonly("has_reference",
                             [](const PyProgram &p) { return p.program.reference != nullptr; })
      .def("run", &runProgram, py::arg("inputs"), py::arg("sym") = py::dict(),
           py::arg("allow_cpu_fallback") = false)
      .def("generate", &generateTokens, py::arg("prompt"), py::arg("steps"), py::arg("warmup") = 0,
           py::arg("check") = false, py::arg("atol") = py::none(),
           py::arg("allow_cpu_fallback") = false)
      .def("device_name",
           [](PyProgram &p) {
             p.exec(false);
             return p.context->info().name;
           })
      .def("interpret_reference", [](PyProgram &p, const py::dict &inputs, const py::dict &sym) {
        if (!p.program.reference)
          fail("the program embeds no reference graph (compile with embed_reference=True)");
        std::vector<RuntimeValue> in = userInputs(*p.program.reference, inputs, sym);
        auto r = Interpreter().run(*p.program.reference, in);
        if (!r)
          fail(r.diags());
        return namedOutputs(*p.program.reference, *r);
      });
}
