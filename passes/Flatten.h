// This file implements flattening: a function is made straight-line by
// inlining every call (recursively) and unrolling every `for` loop (bounds are
// compile-time constants). Autodiff runs on the flattened copy of a function.
//
// Needs: a verified function whose callees are in the module.
// Guarantees: the same function, without call/for/yield, computing the same
// values; value ids of the original instructions are kept.
#pragma once

#include "ir/IR.h"

#include <string>

namespace dt {

/// Flattens `f` in place; returns false with `why` if it cannot (e.g. an
/// unrolled loop would exceed a size limit).
bool flattenFunction(const Module &m, Function &f, std::string &why);

} // namespace dt
