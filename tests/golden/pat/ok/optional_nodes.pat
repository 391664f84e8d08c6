// Optional nodes: '?' means the node may be absent; then its result is its
// first argument (or the one named after 'else').

/// relu(relu(v)) == relu(v), with an optional view and an optional bias in
/// front; the interior %b stays (the rewrite uses it), the inner relu goes.
rule relu_relu_optional {
  match {
    %v = (aten.view_copy | aten._unsafe_view)(_, _)?
    %b = aten.add.Tensor(_, %v)? else %v
    %r = aten.relu(%b)
    %s = aten.relu(%r)
  }
  rewrite {
    %s = aten.relu(%b)
  }
}

/// Commutativity comes from the op registry: add(x, x) in either order.
rule double_to_mul {
  match {
    %y = aten.add.Tensor($x, $x)
  }
  rewrite {
    %y = aten.mul.Scalar($x, 2)
  }
}
