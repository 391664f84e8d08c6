//===- Pickle.h - A restricted reader for torch.save payloads ---*- C++ -*-===//
//
// torch.save writes a ZIP archive holding `data.pkl` (a Python pickle) and one
// record per tensor storage (`data/<key>`). The pickle names Python callables
// (GLOBAL opcodes) that Python would import and call. graft never calls
// anything: it recognizes a fixed list of names and interprets them itself:
//
//   collections.OrderedDict                  -> an ordered dict
//   torch._utils._rebuild_tensor_v2 / _v3    -> a Tensor viewing a storage
//   torch._utils._rebuild_parameter(_with_state) -> the same, marked Parameter
//   torch.<T>Storage, torch.UntypedStorage   -> storage element types
//   torch.<dtype>, torch.device, torch.Size, torch.serialization._get_layout
//   torch._tensor._rebuild_from_type_v2 +
//   torch._utils._rebuild_wrapper_subclass   -> a tensor-subclass shell with
//                                               its attribute dict (torchao)
//   torchao's IntxUnpackedToInt8TensorActivationQuantization member, pickled
//   by name (builtins.getattr(cls, "INT8_ASYM_PER_TOKEN")) or by value
//   (cls("int8_asym_per_token"))           -> its string value
//
// Any other global, and any object construction (NEWOBJ, INST, OBJ), yields
// an Unsupported value carrying the class name, so the caller can report
// which state-dict entry (FQN) held it. Opcodes outside pickle protocols 2-5's
// data subset are hard errors. Storages are memory-mapped straight out of the
// archive, and one storage key is one graft Storage (tied weights stay tied).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Argument.h"
#include "graft/ir/Tensor.h"
#include "graft/serialize/Zip.h"
#include "graft/support/Expected.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace graft::pt2 {

struct PyObj;
using PyRef = std::shared_ptr<PyObj>;

struct PyObj {
  enum class Kind {
    None,
    Bool,
    Int,
    Float,
    Str,
    Bytes,
    Tuple,
    List,
    Dict,
    Global,   ///< a recognized callable or class (name in `str`)
    Storage,  ///< a tensor storage (persistent id)
    Tensor,   ///< a plain tensor or Parameter
    Subclass, ///< a tensor-subclass shell: class in `str`, attributes in `dict`
    /// A fake tensor serialize_torch_artifact pickled (no data): its
    /// TensorMeta JSON in `str`, `isParameter`.
    FakeTensor,
    DType,
    Device,
    Layout,
    Unsupported, ///< something graft refuses to build; class in `str`
  };
  Kind kind = Kind::None;
  bool boolean = false;
  int64_t integer = 0;
  double floating = 0;
  std::string str;
  std::vector<PyRef> items;
  std::vector<std::pair<PyRef, PyRef>> dict;
  // Storage
  std::shared_ptr<graft::Storage> storage;
  DType storageDType = DType::U8;
  bool untypedStorage = false;
  int64_t fileOffset = -1; ///< absolute file offset of a mapped storage, -1 when copied
  // Tensor / Subclass
  graft::Tensor tensor;
  bool isParameter = false;
  bool requiresGrad = false;
  DType dtype = DType::F32;            ///< DType objects and subclass logical dtype
  std::vector<int64_t> sizes, strides; ///< subclass logical shape
  graft::Device device;
  graft::Layout layout = graft::Layout::Strided;

  static PyRef make(Kind k) {
    auto o = std::make_shared<PyObj>();
    o->kind = k;
    return o;
  }
  /// Dict lookup by string key.
  PyRef get(const std::string &key) const;
  /// The first Unsupported value reachable from this object, or null.
  const PyObj *firstUnsupported() const;
  std::string describe() const; ///< short type name for messages
};

/// Loads the torch.save archive `zip` (usually nested in a .pt2 record).
/// `what` names it in errors.
Expected<PyRef> loadTorchSave(const std::shared_ptr<ZipReader> &zip, const std::string &what);

/// Unpickles `bytes` with persistent ids resolved by `persistentLoad`.
using PersistentLoader = std::function<Expected<PyRef>(const PyObj &pid)>;
Expected<PyRef> unpickle(std::string_view bytes, const PersistentLoader &persistentLoad,
                         const std::string &what);

} // namespace graft::pt2
