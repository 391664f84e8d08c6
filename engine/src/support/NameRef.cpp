//===- NameRef.cpp --------------------------------------------------------===//
#include "graft/support/NameRef.h"

#include <ostream>

namespace graft {

void PrintTo(const NameRef &name, std::ostream *os) {
  *os << '"' << static_cast<std::string_view>(name) << '"';
}

} // namespace graft
