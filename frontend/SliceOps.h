// This file implements the interface of the helpers that slicing
// (BuildSlice.cpp) and the joins (BuildJoin.cpp) share: moving a dim between
// sharded and whole, cutting it with constant ids, and reading compile-time
// integer arguments. Internal to the frontend.
#pragma once

#include "frontend/BuildIR.h"

#include <map>
#include <string>

namespace dt::slice {

/// The mesh axes that shard dim `d` of `t`.
std::vector<int> axesSharding(const TensorType &t, int64_t d);
/// `x` relayouted to `to` (itself when it already is).
EV relayoutTo(IRBuilder &b, const EV &x, const TensorType &to, const ast::Expr *ex, SrcLoc loc);
/// `x` with dim `d` on every rank whole (the axes that shard it replicate):
/// the all-gather `explain` shows.
EV unshard(IRBuilder &b, const EV &x, int64_t d, const ast::Expr *ex, SrcLoc loc);
/// `x` sharded again along `d` on `axes` (a local cut, no communication).
EV reshard(IRBuilder &b, const EV &x, int64_t d, const std::vector<int> &axes, const ast::Expr *ex,
           SrcLoc loc);
/// Ids from this many rows on, evenly spaced, are computed (iota), not a constant.
constexpr int64_t kComputedIds = 1024;
/// A constant `i64[n]` of `ids` on `like`'s mesh, replicated (computed from
/// an iota when long and evenly spaced).
EV idConst(IRBuilder &b, const std::vector<int64_t> &ids, const TensorType &like, SrcLoc loc);
/// Rows `ids` of `x` (unsharded along `d`) along `d`; `x` itself for all rows in order.
EV pick(IRBuilder &b, const EV &x, int64_t d, const std::vector<int64_t> &ids, const ast::Expr *ex,
        SrcLoc loc);
/// A compile-time integer (a literal, a `let` constant, size arithmetic).
bool staticInt(IRBuilder &b, const ast::Expr &x, int64_t &out);
/// A list `[2, 3]` of compile-time integers.
bool staticInts(IRBuilder &b, const ast::Expr &x, std::vector<int64_t> &out);
/// The known size of dim `d` of `t`, or -1 after reporting NeedsKnownSize.
int64_t knownSize(IRBuilder &b, const TensorType &t, int64_t d, const std::string &what,
                  SrcLoc loc);
/// The `dim=` keyword in [0, rank); `dflt` when absent; -1 after an error.
int64_t dimKeyword(IRBuilder &b, const ast::Expr &e, int64_t rank, int64_t dflt);
/// An integer expression `c + sum(k * name)` over the names of run-time
/// values (a loop variable, a host integer); `let` constants fold into `c`.
struct Affine {
  int64_t c = 0;
  std::map<std::string, int64_t> terms; ///< no zero coefficients
};
/// `x` as an Affine: integer literals, names, `+`, `-` and a product with a
/// constant factor; false for anything else or on overflow.
bool affineOf(IRBuilder &b, const ast::Expr &x, Affine &out);
/// `lo, lo + step, ...`, `n` of them.
std::vector<int64_t> range(int64_t lo, int64_t n, int64_t step = 1);

} // namespace dt::slice
