#include "graft/serialize/TextIR.h"
