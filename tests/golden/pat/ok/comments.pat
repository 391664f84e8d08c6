// File header comment.
// Second line of the header.

import "optional_nodes.pat"  // trailing comment on an import

// A comment between the import and the rule, separated by blank lines.

/// Doc comment line 1.
/// Doc comment line 2.
rule commented benefit 3 {  // after the rule header
  // Leading comment of the match section.
  match {  // after 'match {'
    // Leading comment of a statement.
    %a = aten.relu($x)  // trailing comment of a statement

    // After a blank line.
    %b = aten.relu(%a)
    // Dangling comment at the end of the match block.
  }
  where {
    // A where block with only a comment and one predicate.
    uses(%a) == 1  // trailing
  }
  rewrite {
    %b = aten.relu($x)
  }  // after the rewrite block
  example {}
  tolerance(atol = 0)  // after the tolerance
}  // after the rule

// Trailing comment at the end of the file.
