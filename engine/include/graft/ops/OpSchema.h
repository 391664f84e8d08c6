//===- OpSchema.h - What an op is: schema, properties, rules ---*- C++ -*-===//
//
// Op schemas use torch's own schema language, as in native_functions.yaml:
//   aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor
// parsed from the op declaration YAML files in engine/ops/.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Argument.h"
#include "graft/support/Expected.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graft {

/// A schema type, e.g. `Tensor?`, `int[2]`, `SymInt[]`, `ScalarType?`.
struct SchemaType {
  enum class Base {
    Tensor,
    Int,
    SymInt,
    Float,
    Bool,
    Str,
    Scalar, ///< int, float or bool
    ScalarType,
    Layout,
    Device,
    MemoryFormat,
    Generator,
    Any,
  };
  Base base = Base::Tensor;
  bool optional = false;        ///< `T?`
  bool isList = false;          ///< `T[]` / `T[N]`
  int64_t fixedLength = -1;     ///< N of `T[N]`
  bool elementOptional = false; ///< `Tensor?[]`
  /// Alias annotation text, e.g. "a" or "a!" (mutated) for `Tensor(a!)`.
  std::string alias;

  bool isTensorLike() const { return base == Base::Tensor; }
  bool isMutable() const { return !alias.empty() && alias.back() == '!'; }
  std::string str() const;
};

struct SchemaArg {
  std::string name;
  SchemaType type;
  /// Default value as an Argument (None, ints, floats, bools, strings,
  /// dtypes, lists); absent when the argument is required.
  std::optional<Argument> defaultValue;
  bool keywordOnly = false;
  /// What None stands for, when the op declares it (YAML `none_means`):
  /// the low (`qmin`) or high (`qmax`) end of the quantization range of the
  /// integer dtype passed as argument `noneRangeOf` of the same schema. torchao
  /// resolves an omitted quant_min/quant_max this way, so the matcher compares
  /// a None here by the value it means (docs/rewrite-engine.md). -1: None is
  /// just None.
  int16_t noneRangeOf = -1;
  bool noneRangeMax = false;
};

struct SchemaReturn {
  std::string name; ///< often empty
  SchemaType type;
};

/// Op properties, declared in YAML.
struct OpProperties {
  bool commutative = false; ///< first two tensor args may be swapped
  bool elementwise = false;
  bool view = false;        ///< output aliases input 0 (view/alias op)
  bool sideEffects = false; ///< never dead-code eliminated
  /// Exists only to constrain/assert symbolic values; may be dropped once
  /// the constraint is discharged (sym_constrain_range_for_size, _assert_scalar).
  bool ephemeral = false;
};

struct OpSchema {
  std::string ns;       ///< "aten"
  std::string name;     ///< "linear"
  std::string overload; ///< "default" when the schema names none
  std::vector<SchemaArg> args;
  std::vector<SchemaReturn> returns;
  OpProperties properties;
  /// Name of the shape/dtype inference rule (see ShapeInference.h), and the
  /// reference kernel (defaults to ns.name.overload). Empty: none.
  std::string inferRule;
  std::string kernel;
  std::string doc;    ///< one-line semantics, for docs and `graft ops`
  std::string source; ///< YAML file it was declared in

  /// Whether some argument is mutated in place (`Tensor(a!)`).
  bool mutatesAnArgument() const {
    for (const SchemaArg &a : args)
      if (a.type.isMutable())
        return true;
    return false;
  }

  /// Older signatures of the same op that graphs exported with earlier
  /// library versions still carry. Example: torchao's affine quant ops used to
  /// take `str? zero_point_domain="INT"`, which current torchao removed.
  /// Declared in YAML as `legacy_schemas: [...]` on the op; each must have the
  /// op's qualified name. BoundArgs::bind tries the current schema first, then
  /// these in order, and records which one matched (BoundArgs::schema() is the
  /// matched one, BoundArgs::legacyIndex() says which). Legacy schemas share
  /// the op's properties, inference rule and kernel, which therefore read
  /// arguments by name and test optional ones with BoundArgs::has().
  std::vector<OpSchema> legacySchemas;

  /// "aten.linear.default"
  std::string qualifiedName() const { return ns + "." + name + "." + overload; }
  /// "aten::linear.default(Tensor input, ...) -> Tensor"
  std::string str() const;
  /// Index of a named argument, or -1.
  int argIndex(std::string_view argName) const;
  /// Number of arguments that may be passed positionally.
  std::size_t numPositional() const;
};

/// The dtype with c10 ScalarType number `index` (0 u8, 1 i8, 2 i16, 3 i32,
/// 4 i64, 5 f16, 6 f32, 7 f64, 11 bool, 15 bf16, ...), as schema defaults and
/// serialized programs spell dtypes; nullopt for numbers graft has no dtype
/// for (the bitsN types) or out of range.
std::optional<DType> dtypeFromScalarTypeIndex(int64_t index);
/// The inverse of dtypeFromScalarTypeIndex (-1 for graft-only dtypes).
int64_t scalarTypeIndex(DType dtype);

/// Parses one torch schema string. `overload` is taken from the name
/// ("aten::add.Tensor") or defaults to "default". Errors quote the schema and
/// carry a range whose column is the 1-based offset into `text` (line 1,
/// file "<schema>"), so callers embedding the schema elsewhere can shift it.
Expected<OpSchema> parseSchema(std::string_view text);

} // namespace graft
