// A consumer of the installed graft package: loads a model (.pt2 or .gir),
// fuses it with the shipped rules, partitions it for lavapipe and prints the
// compile summary as JSON. Exits 1 on any diagnostic.
#include "graft/Compiler.h"

#include <iostream>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: graft_consumer MODEL.{pt2,gir}\n";
    return 2;
  }
  graft::SourceManager sources;
  graft::CompileOptions options;
  options.target = "lavapipe";
  options.sources = &sources;
  auto result = graft::compile(argv[1], options);
  if (!result) {
    std::cerr << graft::render(result.diags(), &sources);
    return 1;
  }
  std::cout << result->summary.json() << "\n";
  return result->summary.nodesOut < result->summary.nodesIn ? 0 : 1;
}
