// Imports cycle_b.pat, which imports this file back.
import "cycle_b.pat"
