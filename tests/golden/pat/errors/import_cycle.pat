// expect: 3:8: error: import cycle
// A file that imports itself.
import "import_cycle.pat"
