//===- Builtins.h - Functions .pat expressions may call ---*- C++ -*-===//
//
// The contract between the DSL front end and the rule engine for
// Expr::Kind::Call: every name here may appear in a `where` predicate or a
// computed attribute (`$n = dim($w, 0)`), the front end checks calls against
// these signatures (arity, argument types, result type), and the engine
// evaluates them. A name missing here is an "unknown function" error in
// `graft check`, so a rule can never reach the engine with a call the engine
// does not know. Constant transforms (pack_int4, ...) are not builtins: they
// are rewrite statements, registered in the engine's constant-transform
// registry.
//
// Header-only data so both halves (dsl/ and engine/src/rewrite/) share one
// table without a link dependency; docs/dsl.md documents each function.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace graft::rewrite {

/// Static types of .pat expressions. `Optional` wraps nothing: an argument
/// bound to a `T?` schema parameter has type T and may also be None at match
/// time; functions receiving None return false (predicates) or fail the match.
enum class ExprType : uint8_t {
  Any, ///< not known statically (a capture bound to a `Scalar`/`Any` argument)
  Bool,
  Int, ///< also a symbolic Dim captured from a shape
  Float,
  Number, ///< Int or Float (parameter types only)
  DType,
  String,
  Tensor,  ///< a value: graph input, constant, node result
  IntList, ///< int[] / SymInt[] arguments
  List,    ///< any other list
  None,
};

std::string_view name(ExprType type);

struct BuiltinFunction {
  std::string_view name;
  /// Parameter types; `arity` entries of `params` are used.
  std::array<ExprType, 3> params{};
  uint8_t arity = 0;
  ExprType result = ExprType::Bool;
  std::string_view doc;
};

inline constexpr std::array<BuiltinFunction, 19> kBuiltinFunctions = {{
    {"all_zero",
     {ExprType::Tensor},
     1,
     ExprType::Bool,
     "every element of the constant is 0 (false for None or non-constant values)"},
    {"values_in",
     {ExprType::Tensor, ExprType::Number, ExprType::Number},
     3,
     ExprType::Bool,
     "every element of the constant lies in [lo, hi]"},
    {"dim",
     {ExprType::Tensor, ExprType::Int},
     2,
     ExprType::Int,
     "size of dimension i (negative i counts from the end)"},
    {"rank", {ExprType::Tensor}, 1, ExprType::Int, "number of dimensions"},
    {"dtype", {ExprType::Tensor}, 1, ExprType::DType, "element type"},
    {"numel", {ExprType::Tensor}, 1, ExprType::Int, "number of elements"},
    {"is_none", {ExprType::Any}, 1, ExprType::Bool, "the argument is None (also `x is none`)"},
    {"is_param",
     {ExprType::Any},
     1,
     ExprType::Bool,
     "the value is a constant graph input (parameter, buffer or lifted constant) with an FQN"},
    {"fqn", {ExprType::Tensor}, 1, ExprType::String, "the state-dict name of a constant"},
    {"uses",
     {ExprType::Tensor},
     1,
     ExprType::Int,
     "number of uses of the value in the graph (graph outputs count)"},
    {"is_pow2", {ExprType::Int}, 1, ExprType::Bool, "n > 0 and n is a power of two"},
    {"is_nan",
     {ExprType::Number},
     1,
     ExprType::Bool,
     "the number is NaN (a Scalar argument such as a clamp bound; ints never are)"},
    {"min", {ExprType::Number, ExprType::Number}, 2, ExprType::Number, "the smaller argument"},
    {"max", {ExprType::Number, ExprType::Number}, 2, ExprType::Number, "the larger argument"},
    {"len", {ExprType::List}, 1, ExprType::Int, "number of elements of a list"},
    {"bits", {ExprType::DType}, 1, ExprType::Int, "bit width of a dtype (4 for i4, 32 for f32)"},
    {"is_float", {ExprType::DType}, 1, ExprType::Bool, "the dtype is a floating-point type"},
    {"qmin",
     {ExprType::DType},
     1,
     ExprType::Int,
     "the quantization range's lower end for an integer dtype, what torchao uses when quant_min "
     "is None (-128 for i8, -8 for i4, 0 for u8)"},
    {"qmax",
     {ExprType::DType},
     1,
     ExprType::Int,
     "the quantization range's upper end for an integer dtype, what torchao uses when quant_max "
     "is None (127 for i8, 7 for i4, 255 for u8)"},
}};

/// The builtin called `name`, or null.
inline const BuiltinFunction *findBuiltin(std::string_view fnName) {
  for (const BuiltinFunction &f : kBuiltinFunctions)
    if (f.name == fnName)
      return &f;
  return nullptr;
}

inline std::string_view name(ExprType type) {
  switch (type) {
  case ExprType::Any:
    return "any";
  case ExprType::Bool:
    return "bool";
  case ExprType::Int:
    return "int";
  case ExprType::Float:
    return "float";
  case ExprType::Number:
    return "number";
  case ExprType::DType:
    return "dtype";
  case ExprType::String:
    return "string";
  case ExprType::Tensor:
    return "tensor";
  case ExprType::IntList:
    return "int list";
  case ExprType::List:
    return "list";
  case ExprType::None:
    return "none";
  }
  return "?";
}

} // namespace graft::rewrite
