//===- SymExpr.h - sympy expression text <-> graft Dims ---*- C++ -*-===//
//
// torch.export writes symbolic sizes as sympy expressions: `srepr` form in
// current versions ("Add(Symbol('s0', integer=True, positive=True),
// Integer(1))") and `str` form in old ones ("s0 + 1"). graft's Dim is an
// integer-linear expression; anything else (FloorDiv, Max, Mod, products of
// symbols) becomes an opaque Dim whose text is what the text IR prints.
// Writing goes the other way and always produces srepr.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Shape.h"
#include "graft/support/Expected.h"

#include <functional>
#include <string>
#include <string_view>

namespace graft::pt2 {

/// Maps a symbol name as written in the file to the IR's name.
using SymbolRenamer = std::function<std::string(const std::string &)>;

/// Parses a sympy expression (srepr or str form). Errors quote the text.
Expected<Dim> parseSymExpr(std::string_view text, const SymbolRenamer &rename);

/// If `text` is exactly one symbol (srepr `Symbol('x', ...)` or a bare name),
/// its name; otherwise empty.
std::string bareSymbolName(std::string_view text);

/// Maps an IR symbol name to the name written in the file.
using SymbolNamer = std::function<std::string(const std::string &)>;

/// sympy srepr of a Dim. Backed symbols (names starting with 's') carry
/// integer=True, positive=True; others (unbacked 'u' symbols) integer=True.
/// Opaque dims are re-parsed from their text.
Expected<std::string> dimToSrepr(const Dim &dim, const SymbolNamer &name);

/// srepr of one symbol.
std::string symbolSrepr(const std::string &fileName);

} // namespace graft::pt2
