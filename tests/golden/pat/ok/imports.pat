// Imports load other rule files (relative to this one), each file once.
import "torchao_embedding.pat"
import "linear_q4gsw.pat"

/// A rule next to the imported ones.
rule relu_relu {
  match {
    %a = aten.relu($x)
    %b = aten.relu(%a)
  }
  rewrite {
    %b = aten.relu($x)
  }
}
