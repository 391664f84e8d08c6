//===- Pickle.cpp - A restricted reader for torch.save payloads -----------===//
//
// A pickle virtual machine that only builds data: see Pickle.h for the list
// of recognized globals. Nothing named by the pickle is imported or called.
//
//===----------------------------------------------------------------------===//
#include "pt2/Pickle.h"

#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <unordered_set>

namespace graft::pt2 {

PyRef PyObj::get(const std::string &key) const {
  for (const auto &[k, v] : dict)
    if (k && k->kind == Kind::Str && k->str == key)
      return v;
  return nullptr;
}

const PyObj *PyObj::firstUnsupported() const {
  std::unordered_set<const PyObj *> seen;
  std::function<const PyObj *(const PyObj *)> walk = [&](const PyObj *o) -> const PyObj * {
    if (!o || !seen.insert(o).second)
      return nullptr;
    if (o->kind == Kind::Unsupported)
      return o;
    for (const PyRef &i : o->items)
      if (const PyObj *u = walk(i.get()))
        return u;
    for (const auto &[k, v] : o->dict) {
      if (const PyObj *u = walk(k.get()))
        return u;
      if (const PyObj *u = walk(v.get()))
        return u;
    }
    return nullptr;
  };
  return walk(this);
}

std::string PyObj::describe() const {
  switch (kind) {
  case Kind::None:
    return "None";
  case Kind::Bool:
    return "bool";
  case Kind::Int:
    return "int";
  case Kind::Float:
    return "float";
  case Kind::Str:
    return "str";
  case Kind::Bytes:
    return "bytes";
  case Kind::Tuple:
    return "tuple";
  case Kind::List:
    return "list";
  case Kind::Dict:
    return "dict";
  case Kind::Global:
    return "global " + str;
  case Kind::Storage:
    return "storage";
  case Kind::Tensor:
    return isParameter ? "Parameter" : "Tensor";
  case Kind::Subclass:
    return "tensor subclass " + str;
  case Kind::FakeTensor:
    return "fake tensor";
  case Kind::DType:
    return "dtype";
  case Kind::Device:
    return "device";
  case Kind::Layout:
    return "layout";
  case Kind::Unsupported:
    return "unsupported object " + str;
  }
  return "?";
}

namespace {

using Kind = PyObj::Kind;

/// Storage class names torch.save writes in persistent ids.
std::optional<DType> storageClassDType(const std::string &name) {
  static const std::map<std::string, DType> kMap = {
      {"FloatStorage", DType::F32},
      {"DoubleStorage", DType::F64},
      {"HalfStorage", DType::F16},
      {"BFloat16Storage", DType::BF16},
      {"LongStorage", DType::I64},
      {"IntStorage", DType::I32},
      {"ShortStorage", DType::I16},
      {"CharStorage", DType::I8},
      {"ByteStorage", DType::U8},
      {"BoolStorage", DType::Bool},
      {"ComplexFloatStorage", DType::C64},
      {"ComplexDoubleStorage", DType::C128},
      {"ComplexHalfStorage", DType::C32},
      {"UInt16Storage", DType::U16},
      {"UInt32Storage", DType::U32},
      {"UInt64Storage", DType::U64},
      {"Float8_e4m3fnStorage", DType::F8E4M3FN},
      {"Float8_e5m2Storage", DType::F8E5M2},
      {"Float8_e4m3fnuzStorage", DType::F8E4M3FNUZ},
      {"Float8_e5m2fnuzStorage", DType::F8E5M2FNUZ},
  };
  auto it = kMap.find(name);
  if (it == kMap.end())
    return std::nullopt;
  return it->second;
}

/// torchao tensor subclasses graft can read: their pickled attribute dicts
/// hold only plain inner tensors and plain attributes.
bool knownSubclass(const std::string &qualified) {
  static const std::set<std::string> kKnown = {
      "torchao.quantization.IntxUnpackedToInt8Tensor",
      "torchao.quantization.quantize_.workflows.intx.intx_unpacked_to_int8_tensor."
      "IntxUnpackedToInt8Tensor",
      "torchao.quantization.Int8Tensor",
      "torchao.quantization.quantize_.workflows.int8.int8_tensor.Int8Tensor",
  };
  return kKnown.count(qualified) != 0;
}

/// torchao `str` enums a known subclass may hold as an attribute, and their
/// members' values. IntxUnpackedToInt8TensorActivationQuantization is
/// registered with torch.serialization.add_safe_globals next to the tensor
/// (pytorch/ao 36027d82, intx_unpacked_to_int8_tensor.py); quant_api passes its
/// value as a plain string, but an instance built with the member pickles the
/// enum. A member is read as its value, the string it compares equal to.
const std::map<std::string, std::string> *knownEnum(const std::string &qualified) {
  static const std::map<std::string, std::map<std::string, std::string>> kEnums = {
      {"torchao.quantization.quantize_.workflows.intx.intx_unpacked_to_int8_tensor."
       "IntxUnpackedToInt8TensorActivationQuantization",
       {{"INT8_ASYM_PER_TOKEN", "int8_asym_per_token"}}},
  };
  auto it = kEnums.find(qualified);
  return it == kEnums.end() ? nullptr : &it->second;
}

class Unpickler {
public:
  Unpickler(std::string_view bytes, const PersistentLoader &loader, const std::string &what)
      : data_(bytes), loader_(loader), what_(what) {}

  Expected<PyRef> run() {
    while (true) {
      if (pos_ >= data_.size())
        return fail("pickle ends without a STOP opcode");
      std::size_t at = pos_;
      uint8_t op = static_cast<uint8_t>(data_[pos_++]);
      GRAFT_TRY(bool stop, step(op, at));
      if (stop) {
        if (stack_.size() != 1)
          return fail("pickle stops with " + std::to_string(stack_.size()) +
                      " values on the stack");
        return stack_.back();
      }
    }
  }

private:
  Diagnostic fail(const std::string &why) const { return Diagnostic::error(what_ + ": " + why); }

  Expected<std::string_view> take(std::size_t n) {
    if (n > data_.size() - pos_)
      return fail("pickle is truncated");
    std::string_view s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  Expected<uint64_t> uintLE(std::size_t n) {
    GRAFT_TRY(std::string_view s, take(n));
    uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(s[i])) << (8 * i);
    return v;
  }
  Expected<std::string> line() {
    std::size_t nl = data_.find('\n', pos_);
    if (nl == std::string_view::npos)
      return fail("pickle is truncated");
    std::string s(data_.substr(pos_, nl - pos_));
    pos_ = nl + 1;
    return s;
  }

  Expected<PyRef> pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back()))
      return fail("pickle stack underflow");
    PyRef v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Expected<std::vector<PyRef>> popMark() {
    if (marks_.empty())
      return fail("pickle has no MARK to pop to");
    std::size_t m = marks_.back();
    marks_.pop_back();
    std::vector<PyRef> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  Status push(PyRef v) {
    if (stack_.size() > 10'000'000)
      return fail("pickle stack too deep");
    stack_.push_back(std::move(v));
    return okStatus();
  }
  PyRef top() { return stack_.empty() ? nullptr : stack_.back(); }

  static PyRef str(std::string s) {
    PyRef o = PyObj::make(Kind::Str);
    o->str = std::move(s);
    return o;
  }
  static PyRef integer(int64_t v) {
    PyRef o = PyObj::make(Kind::Int);
    o->integer = v;
    return o;
  }
  static PyRef tuple(std::vector<PyRef> items) {
    PyRef o = PyObj::make(Kind::Tuple);
    o->items = std::move(items);
    return o;
  }
  static PyRef unsupported(std::string cls) {
    PyRef o = PyObj::make(Kind::Unsupported);
    o->str = std::move(cls);
    return o;
  }

  /// Resolves GLOBAL module.name against the allowlist.
  PyRef global(const std::string &module, const std::string &name) {
    std::string q = module + "." + name;
    PyRef g = PyObj::make(Kind::Global);
    g->str = q;
    static const std::set<std::string> kCallables = {
        "collections.OrderedDict",
        "torch._utils._rebuild_tensor_v2",
        "torch._utils._rebuild_tensor_v3",
        "torch._utils._rebuild_parameter",
        "torch._utils._rebuild_parameter_with_state",
        "torch._utils._rebuild_wrapper_subclass",
        "torch._tensor._rebuild_from_type_v2",
        "torch.device",
        "torch.Size",
        "torch.serialization._get_layout",
        "torch.Tensor",
        "torch._tensor.Tensor",
        "torch.nn.parameter.Parameter",
        "torch.UntypedStorage",
        "torch.storage.UntypedStorage",
        // Protocol 2 pickles bytes as _codecs.encode(str, "latin1").
        "_codecs.encode",
        // torch/_export/serde/serialize.py _reduce_fake_tensor (torch <= 2.8
        // state dicts of programs exported with fake weights).
        "torch._export.serde.serialize._reconstruct_fake_tensor",
        // Python pickles an enum member as getattr(cls, name) (3.12+ by
        // default): interpreted for knownEnum classes only.
        "builtins.getattr",
        "__builtin__.getattr",
    };
    if (kCallables.count(q) || knownSubclass(q) || knownEnum(q))
      return g;
    if (module == "torch") {
      if (storageClassDType(name))
        return g;
      if (name != "device" && name != "Size") {
        if (auto dt = parseDType(name)) {
          PyRef d = PyObj::make(Kind::DType);
          d->dtype = *dt;
          d->str = name;
          return d;
        }
        if (auto l = parseLayout(name)) {
          PyRef o = PyObj::make(Kind::Layout);
          o->layout = *l;
          return o;
        }
      }
    }
    return unsupported(q);
  }

  static bool isInt(const PyRef &o) { return o && (o->kind == Kind::Int || o->kind == Kind::Bool); }
  static Expected<std::vector<int64_t>> intList(const PyRef &o, const char *what) {
    if (!o || (o->kind != Kind::Tuple && o->kind != Kind::List))
      return Diagnostic::error(std::string(what) + " must be a tuple of ints");
    std::vector<int64_t> v;
    for (const PyRef &i : o->items) {
      if (!isInt(i))
        return Diagnostic::error(std::string(what) + " must be a tuple of ints");
      v.push_back(i->integer);
    }
    return v;
  }

  /// _rebuild_tensor_v2/_v3: a strided view of a storage.
  Expected<PyRef> rebuildTensor(const std::vector<PyRef> &a, bool v3) {
    if (a.size() < (v3 ? 7u : 6u))
      return fail(std::string("_rebuild_tensor_v") + (v3 ? "3" : "2") +
                  " called with too few arguments");
    const PyRef &st = a[0];
    if (!st || st->kind != Kind::Storage)
      return fail("_rebuild_tensor expects a storage, got " + (st ? st->describe() : "null"));
    if (!isInt(a[1]))
      return fail("_rebuild_tensor: storage offset must be an int");
    auto sizes = intList(a[2], "tensor sizes");
    auto strides = intList(a[3], "tensor strides");
    if (!sizes || !strides)
      return fail(!sizes ? sizes.diags()[0].message : strides.diags()[0].message);
    if (sizes->size() != strides->size())
      return fail("tensor has " + std::to_string(sizes->size()) + " sizes but " +
                  std::to_string(strides->size()) + " strides");
    DType dt = st->storageDType;
    if (v3) {
      if (!a[6] || a[6]->kind != Kind::DType)
        return fail("_rebuild_tensor_v3 expects a dtype");
      dt = a[6]->dtype;
    }
    int64_t offset = a[1]->integer;
    std::size_t es = elementSize(dt);
    uint64_t elems = st->storage->size() / es;
    if (st->storage->size() % es != 0)
      return fail("a " + std::string(name(dt)) + " tensor views a storage of " +
                  std::to_string(st->storage->size()) + " bytes, not a multiple of " +
                  std::to_string(es));
    // Bounds: every element the view can address lies inside the storage.
    bool empty = false;
    uint64_t last = 0;
    for (std::size_t i = 0; i < sizes->size(); ++i) {
      int64_t n = (*sizes)[i], s = (*strides)[i];
      if (n < 0 || s < 0)
        return fail("tensor sizes and strides must be non-negative");
      if (n == 0)
        empty = true;
      else if (n > 1 && static_cast<uint64_t>(s) > (uint64_t(1) << 62) / static_cast<uint64_t>(n))
        return fail("tensor extent overflows");
      else
        last += static_cast<uint64_t>(n - 1) * static_cast<uint64_t>(s);
    }
    if (offset < 0 || (!empty && static_cast<uint64_t>(offset) + last >= elems))
      return fail("tensor of sizes " + fmt(*sizes) + ", strides " + fmt(*strides) + " at offset " +
                  std::to_string(offset) + " does not fit its storage of " + std::to_string(elems) +
                  " " + std::string(name(dt)) + " elements");
    PyRef t = PyObj::make(Kind::Tensor);
    t->tensor = graft::Tensor(dt, *sizes, st->storage, offset, *strides);
    t->fileOffset = st->fileOffset;
    t->dtype = dt;
    t->requiresGrad = a[4] && a[4]->kind == Kind::Bool && a[4]->boolean;
    return t;
  }

  static std::string fmt(const std::vector<int64_t> &v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i)
      s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  }

  /// Interprets REDUCE(callable, args) for the recognized callables.
  Expected<PyRef> apply(const PyRef &fn, const PyRef &argsObj) {
    if (!fn)
      return fail("REDUCE without a callable");
    if (fn->kind == Kind::Unsupported)
      return unsupported(fn->str);
    if (fn->kind != Kind::Global)
      return unsupported(fn->describe());
    if (!argsObj || argsObj->kind != Kind::Tuple)
      return fail("REDUCE arguments of " + fn->str + " are not a tuple");
    const std::vector<PyRef> &a = argsObj->items;
    const std::string &f = fn->str;
    if (f == "collections.OrderedDict") {
      if (!a.empty())
        return unsupported("collections.OrderedDict(with arguments)");
      return PyObj::make(Kind::Dict);
    }
    if (f == "_codecs.encode") {
      // Python's pickler writes bytes b as _codecs.encode(b.decode("latin1"),
      // "latin1"): each code point of the (UTF-8) string is one byte.
      if (a.size() != 2 || !a[0] || a[0]->kind != Kind::Str || !a[1] || a[1]->kind != Kind::Str ||
          (a[1]->str != "latin1" && a[1]->str != "latin-1"))
        return unsupported("_codecs.encode(other than (str, 'latin1'))");
      PyRef b = PyObj::make(Kind::Bytes);
      const std::string &u = a[0]->str;
      for (std::size_t i = 0; i < u.size(); ++i) {
        auto c = static_cast<unsigned char>(u[i]);
        if (c < 0x80) {
          b->str.push_back(static_cast<char>(c));
        } else if ((c == 0xC2 || c == 0xC3) && i + 1 < u.size() &&
                   (static_cast<unsigned char>(u[i + 1]) & 0xC0) == 0x80) {
          b->str.push_back(static_cast<char>(((c & 0x03) << 6) | (u[++i] & 0x3F)));
        } else {
          return fail("_codecs.encode: a character outside latin-1");
        }
      }
      return b;
    }
    if (f == "torch._export.serde.serialize._reconstruct_fake_tensor") {
      // (serialized_tensor_meta: bytes, is_parameter: bool)
      if (a.size() != 2 || !a[0] || a[0]->kind != Kind::Bytes || !a[1] || a[1]->kind != Kind::Bool)
        return fail("_reconstruct_fake_tensor expects (bytes, bool)");
      PyRef t = PyObj::make(Kind::FakeTensor);
      t->str = a[0]->str;
      t->isParameter = a[1]->boolean;
      return t;
    }
    if (f == "builtins.getattr" || f == "__builtin__.getattr") {
      // getattr(enum class, member name): a knownEnum member; nothing else.
      const auto *members =
          a.size() == 2 && a[0] && a[0]->kind == Kind::Global ? knownEnum(a[0]->str) : nullptr;
      if (!members || !a[1] || a[1]->kind != Kind::Str || !members->count(a[1]->str))
        return unsupported("getattr(" + (a.empty() || !a[0] ? std::string("?") : a[0]->describe()) +
                           ", ...)");
      return str(members->at(a[1]->str));
    }
    if (const auto *members = knownEnum(f)) {
      // cls(value): the member with that value.
      for (const auto &[name, value] : *members)
        if (a.size() == 1 && a[0] && a[0]->kind == Kind::Str && a[0]->str == value)
          return str(value);
      return unsupported(f + "(a value that is not a member)");
    }
    if (f == "torch._utils._rebuild_tensor_v2")
      return rebuildTensor(a, false);
    if (f == "torch._utils._rebuild_tensor_v3")
      return rebuildTensor(a, true);
    if (f == "torch._utils._rebuild_parameter" ||
        f == "torch._utils._rebuild_parameter_with_state") {
      if (a.empty() || !a[0] || (a[0]->kind != Kind::Tensor && a[0]->kind != Kind::Subclass))
        return a.empty() || !a[0] || a[0]->kind != Kind::Unsupported
                   ? Expected<PyRef>(fail("_rebuild_parameter expects a tensor"))
                   : Expected<PyRef>(a[0]);
      PyRef p = std::make_shared<PyObj>(*a[0]);
      p->isParameter = true;
      p->requiresGrad = a.size() > 1 && a[1] && a[1]->kind == Kind::Bool && a[1]->boolean;
      return p;
    }
    if (f == "torch._utils._rebuild_wrapper_subclass") {
      // (cls, dtype, size, stride, storage_offset, layout, device, requires_grad)
      if (a.size() < 8 || !a[0])
        return fail("_rebuild_wrapper_subclass called with too few arguments");
      if (a[0]->kind == Kind::Unsupported)
        return unsupported(a[0]->str);
      if (a[0]->kind != Kind::Global || !knownSubclass(a[0]->str))
        return unsupported(a[0]->kind == Kind::Global ? a[0]->str : a[0]->describe());
      PyRef s = PyObj::make(Kind::Subclass);
      s->str = a[0]->str;
      if (!a[1] || a[1]->kind != Kind::DType)
        return fail("_rebuild_wrapper_subclass expects a dtype");
      s->dtype = a[1]->dtype;
      auto sizes = intList(a[2], "subclass sizes");
      auto strides = intList(a[3], "subclass strides");
      if (!sizes || !strides)
        return fail(!sizes ? sizes.diags()[0].message : strides.diags()[0].message);
      s->sizes = *sizes;
      s->strides = *strides;
      if (a[6] && a[6]->kind == Kind::Device)
        s->device = a[6]->device;
      s->requiresGrad = a[7] && a[7]->kind == Kind::Bool && a[7]->boolean;
      return s;
    }
    if (f == "torch._tensor._rebuild_from_type_v2") {
      // (func, new_type, args, state)
      if (a.size() != 4)
        return fail("_rebuild_from_type_v2 expects 4 arguments");
      if (a[1] && a[1]->kind == Kind::Unsupported)
        return unsupported(a[1]->str);
      GRAFT_TRY(PyRef base, apply(a[0], a[2]));
      if (base->kind == Kind::Unsupported)
        return base;
      const std::string newType = a[1] && a[1]->kind == Kind::Global ? a[1]->str : "?";
      if (newType == "torch.Tensor" || newType == "torch._tensor.Tensor")
        return base;
      if (newType == "torch.nn.parameter.Parameter") {
        PyRef p = std::make_shared<PyObj>(*base);
        p->isParameter = true;
        return p;
      }
      if (base->kind != Kind::Subclass || base->str != newType)
        return unsupported(newType);
      // The attribute dict (or (dict, slots) pair) the subclass was pickled with.
      PyRef state = a[3];
      if (state && state->kind == Kind::Tuple && state->items.size() == 2)
        state = state->items[0];
      if (!state || (state->kind != Kind::Dict && state->kind != Kind::None))
        return fail("tensor subclass " + newType + " has a state of type " +
                    (state ? state->describe() : "null"));
      if (state->kind == Kind::Dict)
        base->dict = state->dict;
      return base;
    }
    if (f == "torch.device") {
      if (a.empty() || !a[0] || a[0]->kind != Kind::Str)
        return fail("torch.device expects a string");
      PyRef d = PyObj::make(Kind::Device);
      std::string t = a[0]->str;
      int index = -1;
      if (auto colon = t.find(':'); colon != std::string::npos) {
        index = std::atoi(t.c_str() + colon + 1);
        t = t.substr(0, colon);
      }
      if (a.size() > 1 && isInt(a[1]))
        index = static_cast<int>(a[1]->integer);
      d->device = graft::Device{t, index};
      return d;
    }
    if (f == "torch.serialization._get_layout") {
      // torch.layout pickles as _get_layout("torch.strided").
      if (a.size() != 1 || !a[0] || a[0]->kind != Kind::Str)
        return fail("_get_layout expects a string");
      std::string n = a[0]->str;
      if (n.rfind("torch.", 0) == 0)
        n = n.substr(6);
      auto l = parseLayout(n);
      if (!l)
        return unsupported("layout " + a[0]->str);
      PyRef o = PyObj::make(Kind::Layout);
      o->layout = *l;
      return o;
    }
    if (f == "torch.Size") {
      if (a.size() != 1 || !a[0] || (a[0]->kind != Kind::Tuple && a[0]->kind != Kind::List))
        return fail("torch.Size expects a tuple");
      return tuple(a[0]->items);
    }
    return unsupported(f);
  }

  Expected<bool> step(uint8_t op, std::size_t at) {
    switch (op) {
    case 0x80: { // PROTO
      GRAFT_TRY(uint64_t v, uintLE(1));
      if (v > 5)
        return fail("unsupported pickle protocol " + std::to_string(v));
      return false;
    }
    case 0x95: { // FRAME
      GRAFT_TRY(uint64_t n, uintLE(8));
      (void)n;
      return false;
    }
    case '.':
      return true;
    case '(':
      marks_.push_back(stack_.size());
      return false;
    case '0': {
      GRAFT_TRY(PyRef v, pop());
      (void)v;
      return false;
    }
    case '1': {
      GRAFT_TRY(auto v, popMark());
      (void)v;
      return false;
    }
    case '2':
      if (stack_.empty())
        return fail("DUP on an empty stack");
      GRAFT_CHECK_OK(push(stack_.back()));
      return false;
    case 'N':
      GRAFT_CHECK_OK(push(PyObj::make(Kind::None)));
      return false;
    case 0x88:
    case 0x89: {
      PyRef b = PyObj::make(Kind::Bool);
      b->boolean = op == 0x88;
      b->integer = b->boolean;
      GRAFT_CHECK_OK(push(b));
      return false;
    }
    case 'J': {
      GRAFT_TRY(uint64_t v, uintLE(4));
      GRAFT_CHECK_OK(push(integer(static_cast<int32_t>(static_cast<uint32_t>(v)))));
      return false;
    }
    case 'K': {
      GRAFT_TRY(uint64_t v, uintLE(1));
      GRAFT_CHECK_OK(push(integer(static_cast<int64_t>(v))));
      return false;
    }
    case 'M': {
      GRAFT_TRY(uint64_t v, uintLE(2));
      GRAFT_CHECK_OK(push(integer(static_cast<int64_t>(v))));
      return false;
    }
    case 0x8a:
    case 0x8b: { // LONG1 / LONG4: little-endian two's complement
      GRAFT_TRY(uint64_t n, uintLE(op == 0x8a ? 1 : 4));
      if (n > 8)
        return fail("integer too large (" + std::to_string(n) + " bytes) at offset " +
                    std::to_string(at));
      GRAFT_TRY(std::string_view b, take(static_cast<std::size_t>(n)));
      uint64_t v = 0;
      for (std::size_t i = 0; i < n; ++i)
        v |= static_cast<uint64_t>(static_cast<uint8_t>(b[i])) << (8 * i);
      if (n > 0 && n < 8 && (static_cast<uint8_t>(b[n - 1]) & 0x80))
        v |= ~uint64_t(0) << (8 * n);
      GRAFT_CHECK_OK(push(integer(static_cast<int64_t>(v))));
      return false;
    }
    case 'G': {
      GRAFT_TRY(std::string_view b, take(8));
      uint64_t bits = 0;
      for (int i = 0; i < 8; ++i)
        bits = (bits << 8) | static_cast<uint8_t>(b[static_cast<std::size_t>(i)]);
      PyRef f = PyObj::make(Kind::Float);
      std::memcpy(&f->floating, &bits, 8);
      GRAFT_CHECK_OK(push(f));
      return false;
    }
    case 'X':
    case 0x8c:
    case 0x8d:
    case 'T':
    case 'U': {
      std::size_t lenBytes = op == 'X' || op == 'T' ? 4 : op == 0x8d ? 8 : 1;
      GRAFT_TRY(uint64_t n, uintLE(lenBytes));
      if (n > data_.size())
        return fail("pickle is truncated");
      GRAFT_TRY(std::string_view s, take(static_cast<std::size_t>(n)));
      GRAFT_CHECK_OK(push(str(std::string(s))));
      return false;
    }
    case 'B':
    case 'C':
    case 0x8e: {
      std::size_t lenBytes = op == 'B' ? 4 : op == 'C' ? 1 : 8;
      GRAFT_TRY(uint64_t n, uintLE(lenBytes));
      if (n > data_.size())
        return fail("pickle is truncated");
      GRAFT_TRY(std::string_view s, take(static_cast<std::size_t>(n)));
      PyRef b = PyObj::make(Kind::Bytes);
      b->str = std::string(s);
      GRAFT_CHECK_OK(push(b));
      return false;
    }
    case ')':
      GRAFT_CHECK_OK(push(tuple({})));
      return false;
    case 0x85:
    case 0x86:
    case 0x87: {
      std::size_t n = op - 0x84u;
      if (stack_.size() < n + (marks_.empty() ? 0 : marks_.back()))
        return fail("pickle stack underflow");
      std::vector<PyRef> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
      stack_.resize(stack_.size() - n);
      GRAFT_CHECK_OK(push(tuple(std::move(items))));
      return false;
    }
    case 't': {
      GRAFT_TRY(auto items, popMark());
      GRAFT_CHECK_OK(push(tuple(std::move(items))));
      return false;
    }
    case ']':
      GRAFT_CHECK_OK(push(PyObj::make(Kind::List)));
      return false;
    case 'l': {
      GRAFT_TRY(auto items, popMark());
      PyRef l = PyObj::make(Kind::List);
      l->items = std::move(items);
      GRAFT_CHECK_OK(push(l));
      return false;
    }
    case '}':
      GRAFT_CHECK_OK(push(PyObj::make(Kind::Dict)));
      return false;
    case 'd': {
      GRAFT_TRY(auto items, popMark());
      if (items.size() % 2)
        return fail("DICT with an odd number of items");
      PyRef d = PyObj::make(Kind::Dict);
      for (std::size_t i = 0; i < items.size(); i += 2)
        d->dict.emplace_back(items[i], items[i + 1]);
      GRAFT_CHECK_OK(push(d));
      return false;
    }
    case 'a': {
      GRAFT_TRY(PyRef v, pop());
      PyRef l = top();
      if (!l || l->kind != Kind::List)
        return l && l->kind == Kind::Unsupported ? Expected<bool>(false)
                                                 : Expected<bool>(fail("APPEND to a non-list"));
      GRAFT_CHECK_OK(checkAcyclic(*l, {v}, 'a'));
      l->items.push_back(v);
      return false;
    }
    case 'e': {
      GRAFT_TRY(auto items, popMark());
      PyRef l = top();
      if (!l || l->kind != Kind::List)
        return l && l->kind == Kind::Unsupported ? Expected<bool>(false)
                                                 : Expected<bool>(fail("APPENDS to a non-list"));
      GRAFT_CHECK_OK(checkAcyclic(*l, items, 'e'));
      l->items.insert(l->items.end(), items.begin(), items.end());
      return false;
    }
    case 's': {
      GRAFT_TRY(PyRef v, pop());
      GRAFT_TRY(PyRef k, pop());
      PyRef d = top();
      if (!d || d->kind != Kind::Dict)
        return d && d->kind == Kind::Unsupported ? Expected<bool>(false)
                                                 : Expected<bool>(fail("SETITEM on a non-dict"));
      GRAFT_CHECK_OK(checkAcyclic(*d, {k, v}, 's'));
      setItem(*d, k, v);
      return false;
    }
    case 'u': {
      GRAFT_TRY(auto items, popMark());
      PyRef d = top();
      if (!d || d->kind != Kind::Dict)
        return d && d->kind == Kind::Unsupported ? Expected<bool>(false)
                                                 : Expected<bool>(fail("SETITEMS on a non-dict"));
      if (items.size() % 2)
        return fail("SETITEMS with an odd number of items");
      GRAFT_CHECK_OK(checkAcyclic(*d, items, 'u'));
      for (std::size_t i = 0; i < items.size(); i += 2)
        setItem(*d, items[i], items[i + 1]);
      return false;
    }
    case 'q': {
      GRAFT_TRY(uint64_t i, uintLE(1));
      return memoPut(i);
    }
    case 'r': {
      GRAFT_TRY(uint64_t i, uintLE(4));
      return memoPut(i);
    }
    case 0x94:
      return memoPut(memo_.size());
    case 'h': {
      GRAFT_TRY(uint64_t i, uintLE(1));
      return memoGet(i);
    }
    case 'j': {
      GRAFT_TRY(uint64_t i, uintLE(4));
      return memoGet(i);
    }
    case 'c': {
      GRAFT_TRY(std::string module, line());
      GRAFT_TRY(std::string nm, line());
      GRAFT_CHECK_OK(push(global(module, nm)));
      return false;
    }
    case 0x93: { // STACK_GLOBAL
      GRAFT_TRY(PyRef nm, pop());
      GRAFT_TRY(PyRef module, pop());
      if (!nm || !module || nm->kind != Kind::Str || module->kind != Kind::Str)
        return fail("STACK_GLOBAL expects two strings");
      GRAFT_CHECK_OK(push(global(module->str, nm->str)));
      return false;
    }
    case 'R': {
      GRAFT_TRY(PyRef args, pop());
      GRAFT_TRY(PyRef fn, pop());
      GRAFT_TRY(PyRef r, apply(fn, args));
      GRAFT_CHECK_OK(push(r));
      return false;
    }
    case 0x81: { // NEWOBJ cls args: building arbitrary objects is refused
      GRAFT_TRY(PyRef args, pop());
      GRAFT_TRY(PyRef cls, pop());
      (void)args;
      GRAFT_CHECK_OK(push(unsupported(
          cls && (cls->kind == Kind::Global || cls->kind == Kind::Unsupported) ? cls->str
                                                                               : "object")));
      return false;
    }
    case 0x92: { // NEWOBJ_EX cls args kwargs
      GRAFT_TRY(PyRef kwargs, pop());
      GRAFT_TRY(PyRef args, pop());
      GRAFT_TRY(PyRef cls, pop());
      (void)kwargs;
      (void)args;
      GRAFT_CHECK_OK(push(unsupported(
          cls && (cls->kind == Kind::Global || cls->kind == Kind::Unsupported) ? cls->str
                                                                               : "object")));
      return false;
    }
    case 'i': { // INST module\nname\n with MARKed args
      GRAFT_TRY(std::string module, line());
      GRAFT_TRY(std::string nm, line());
      GRAFT_TRY(auto items, popMark());
      (void)items;
      GRAFT_CHECK_OK(push(unsupported(module + "." + nm)));
      return false;
    }
    case 'o': { // OBJ: MARK cls args...
      GRAFT_TRY(auto items, popMark());
      std::string cls =
          !items.empty() && items[0] &&
                  (items[0]->kind == Kind::Global || items[0]->kind == Kind::Unsupported)
              ? items[0]->str
              : "object";
      GRAFT_CHECK_OK(push(unsupported(cls)));
      return false;
    }
    case 'b': { // BUILD: obj.__setstate__(state)
      GRAFT_TRY(PyRef state, pop());
      PyRef obj = top();
      if (!obj)
        return fail("BUILD on an empty stack");
      if (obj->kind == Kind::Unsupported)
        return false;
      // OrderedDict state (state_dict()._metadata) and Parameter state carry
      // nothing graft needs; a state holding refused content taints the object.
      if (obj->kind == Kind::Dict || obj->kind == Kind::Tensor) {
        if (const PyObj *u = state ? state->firstUnsupported() : nullptr)
          stack_.back() = unsupported(u->str);
        return false;
      }
      return fail("BUILD on " + obj->describe() + " at offset " + std::to_string(at));
    }
    case 'Q': { // BINPERSID
      GRAFT_TRY(PyRef pid, pop());
      if (!pid)
        return fail("BINPERSID without an id");
      GRAFT_TRY(PyRef v, loader_(*pid));
      GRAFT_CHECK_OK(push(v));
      return false;
    }
    default:
      break;
    }
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02x", op);
    return fail(std::string("unsupported pickle opcode ") + buf + " at offset " +
                std::to_string(at) + " (graft reads only the data subset torch.save emits)");
  }

  /// Whether `from` is `target` or contains it. torch.save never writes a
  /// container that holds itself; refusing one (Python would build it) keeps
  /// the PyObj graph acyclic, so its shared_ptrs free it and every walk over
  /// it (attribute text, describe) ends.
  static bool reaches(const PyObj *from, const PyObj *target) {
    if (from == target || (from->items.empty() && from->dict.empty()))
      return from == target; // a leaf (most inserted values: tensors, strings)
    std::unordered_set<const PyObj *> seen;
    std::vector<const PyObj *> todo{from};
    while (!todo.empty()) {
      const PyObj *o = todo.back();
      todo.pop_back();
      if (!o || !seen.insert(o).second)
        continue;
      if (o == target)
        return true;
      for (const PyRef &i : o->items)
        todo.push_back(i.get());
      for (const auto &[k, v] : o->dict) {
        todo.push_back(k.get());
        todo.push_back(v.get());
      }
    }
    return false;
  }

  /// Fails when inserting `values` into `container` would make it hold itself.
  Status checkAcyclic(const PyObj &container, const std::vector<PyRef> &values, char op) {
    for (const PyRef &v : values)
      if (v && reaches(v.get(), &container))
        return fail(std::string("opcode '") + op + "' makes a " + container.describe() +
                    " contain itself (torch.save writes no cyclic structures)");
    return okStatus();
  }

  static void setItem(PyObj &d, const PyRef &k, const PyRef &v) {
    if (k && k->kind == Kind::Str)
      for (auto &kv : d.dict)
        if (kv.first && kv.first->kind == Kind::Str && kv.first->str == k->str) {
          kv.second = v;
          return;
        }
    d.dict.emplace_back(k, v);
  }

  Expected<bool> memoPut(uint64_t i) {
    if (stack_.empty())
      return fail("memo PUT on an empty stack");
    if (i > 100'000'000)
      return fail("memo index out of range");
    memo_[i] = stack_.back();
    return false;
  }
  Expected<bool> memoGet(uint64_t i) {
    auto it = memo_.find(i);
    if (it == memo_.end())
      return fail("memo GET of unknown index " + std::to_string(i));
    GRAFT_CHECK_OK(push(it->second));
    return false;
  }

  std::string_view data_;
  std::size_t pos_ = 0;
  const PersistentLoader &loader_;
  std::string what_;
  std::vector<PyRef> stack_;
  std::vector<std::size_t> marks_;
  std::map<uint64_t, PyRef> memo_;
};

} // namespace

Expected<PyRef> unpickle(std::string_view bytes, const PersistentLoader &persistentLoad,
                         const std::string &what) {
  Unpickler u(bytes, persistentLoad, what);
  return u.run();
}

Expected<PyRef> loadTorchSave(const std::shared_ptr<ZipReader> &zip, const std::string &what) {
  if (zip->entries().empty())
    return Diagnostic::error(what + ": torch.save archive has no records");
  const std::string &first = zip->entries()[0].name;
  auto slash = first.find('/');
  if (slash == std::string::npos)
    return Diagnostic::error(what + ": torch.save archive record '" + first +
                             "' is not inside a folder");
  const std::string root = first.substr(0, slash + 1);
  if (const ZipEntry *bo = zip->find(root + "byteorder")) {
    GRAFT_TRY(std::string order, zip->read(*bo));
    if (order != "little")
      return Diagnostic::error(what + ": byteorder is '" + order +
                               "'; graft reads little-endian archives only");
  }
  const ZipEntry *pkl = zip->find(root + "data.pkl");
  if (!pkl)
    return Diagnostic::error(what + ": missing record '" + root + "data.pkl'");
  GRAFT_TRY(std::string bytes, zip->read(*pkl));

  std::map<std::string, PyRef> storages; // one graft Storage per key: tied stays tied
  PersistentLoader loader = [&](const PyObj &pid) -> Expected<PyRef> {
    // ('storage', storage_type, key, location, numel)
    if (pid.kind != Kind::Tuple || pid.items.size() < 5 || !pid.items[0] ||
        pid.items[0]->kind != Kind::Str || pid.items[0]->str != "storage")
      return Diagnostic::error(what + ": unsupported persistent id (expected a storage)");
    const PyRef &type = pid.items[1];
    const PyRef &key = pid.items[2];
    const PyRef &numel = pid.items[4];
    if (!key || key->kind != Kind::Str || !numel || numel->kind != Kind::Int)
      return Diagnostic::error(what + ": malformed storage persistent id");
    if (!type || type->kind != Kind::Global)
      return Diagnostic::error(what + ": storage " + key->str + " has type " +
                               (type ? type->str : "?") + ", which graft does not read");
    auto it = storages.find(key->str);
    if (it != storages.end())
      return it->second;
    bool untyped =
        type->str == "torch.UntypedStorage" || type->str == "torch.storage.UntypedStorage";
    std::optional<DType> dt = untyped
                                  ? std::optional<DType>(DType::U8)
                                  : storageClassDType(type->str.substr(type->str.rfind('.') + 1));
    if (!dt)
      return Diagnostic::error(what + ": storage " + key->str + " has type " + type->str +
                               ", which graft does not read");
    std::string recordName = root + "data/" + key->str;
    const ZipEntry *e = zip->find(recordName);
    if (!e)
      return Diagnostic::error(what + ": missing record '" + recordName + "'");
    uint64_t expected = static_cast<uint64_t>(numel->integer) * elementSize(*dt);
    if (numel->integer < 0 || e->size != expected)
      return Diagnostic::error(what + ": record '" + recordName + "' has " +
                               std::to_string(e->size) + " bytes but its storage holds " +
                               std::to_string(numel->integer) + " " + std::string(name(*dt)) +
                               " elements (" + std::to_string(expected) + " bytes)");
    // Mapped in place when stored (a view of the file, or of the inflated
    // archive when the record holding it was deflated); file offsets only
    // for bytes that are in the file.
    GRAFT_TRY(std::shared_ptr<Storage> bytesStorage, zip->map(*e));
    std::optional<uint64_t> at = zip->fileOffset(*e);
    if (reinterpret_cast<uintptr_t>(bytesStorage->data()) %
            std::max<std::size_t>(elementSize(*dt), 8) !=
        0) {
      // Unaligned payload (Python zipfile archives do not align): copy so the
      // data is aligned for its element type.
      const uint8_t *p = bytesStorage->data();
      bytesStorage = Storage::owned(std::vector<uint8_t>(p, p + bytesStorage->size()));
      at.reset();
    }
    PyRef s = PyObj::make(Kind::Storage);
    s->fileOffset = at ? static_cast<int64_t>(*at) : -1;
    s->storage = std::move(bytesStorage);
    s->storageDType = *dt;
    s->untypedStorage = untyped;
    s->str = key->str;
    storages.emplace(key->str, s);
    return s;
  };
  return unpickle(bytes, loader, what);
}

} // namespace graft::pt2
