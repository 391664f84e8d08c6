// expect: 2:8: error: cannot import
import "does_not_exist.pat"
