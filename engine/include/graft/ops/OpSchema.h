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
  bool optional = false;      ///< `T?`
  bool isList = false;        ///< `T[]` / `T[N]`
  int64_t fixedLength = -1;   ///< N of `T[N]`
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

  /// "aten.linear.default"
  std::string qualifiedName() const { return ns + "." + name + "." + overload; }
  /// "aten::linear.default(Tensor input, ...) -> Tensor"
  std::string str() const;
  /// Index of a named argument, or -1.
  int argIndex(std::string_view argName) const;
  /// Number of arguments that may be passed positionally.
  std::size_t numPositional() const;
};

/// Parses one torch schema string. `overload` is taken from the name
/// ("aten::add.Tensor") or defaults to "default".
Expected<OpSchema> parseSchema(std::string_view text);

} // namespace graft
