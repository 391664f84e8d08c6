// Imports cycle_a.pat: the cycle the errors/import_cycle.pat test reports.
import "cycle_a.pat"
