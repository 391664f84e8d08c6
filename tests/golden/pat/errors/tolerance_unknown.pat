// expect: 5:26: error: unknown tolerance 'eps' (expected atol or rtol)
rule r {
  match { %y = aten.relu($x) }
  rewrite { %y = aten.relu($x) }
  tolerance(atol = 1e-3, eps = 1)
}
