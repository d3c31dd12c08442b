// This file implements the abstract syntax tree of a `.dt` program: plain
// structs filled by the Bison parser (grammar/parser.yy) and consumed by the
// IR builder (frontend/BuildIR.cpp). Every node carries its source span.
#pragma once

#include "ir/IR.h"

#include <memory>
#include <string>
#include <vector>

namespace dt::ast {

/// One entry of a layout annotation.
/// Placement form `m{x: shard(0), y: partial(sum)}`: entries are per mesh axis
///   (axis = name, kind = "replicate" | "shard" | "partial", dim / reduce).
/// Dims-mapping form `m[_, x, (x, y)]`: entries are per tensor dim
///   (axes = list of mesh axis names; empty = unsharded `_`).
struct LayoutEntry {
  SrcLoc loc;
  // placement form
  std::string axis;
  std::string kind; ///< replicate | shard | partial
  int64_t dim = 0;
  std::string reduce = "sum";
  int64_t order = -1; ///< `shard(d, order=k)`; -1 when not written
  // dims-mapping form: axis names, major first; an integer entry (seed 003's
  // `m[1, 0, -1]`) keeps its decimal text (`1`, `-1`), which no name spells
  std::vector<std::string> axes;
  /// A PyTorch-style `Shard(0)` / `Replicate()` in a dims mapping (an error
  /// the IR builder reports with the dtensor spelling); kind/dim/reduce set.
  bool torch = false;
};

struct LayoutSpec {
  SrcLoc loc;
  std::string mesh;
  bool placementForm = false; ///< `{...}` (true) or `[...]` (false)
  std::vector<LayoutEntry> entries;
};

/// `f32[2, T] @ m[_, x]`; `layout` absent for host tensors.
struct TypeSpec {
  SrcLoc loc;
  std::string dtype;
  std::vector<std::string> dims; ///< each a decimal literal or a size symbol
  std::vector<SrcLoc> dimLocs;
  std::unique_ptr<LayoutSpec> layout;
  /// A bare name without `[...]`: a struct type (`Block`) or a function's
  /// type parameter (`P` of `fn adam[P](...)`); `dtype` holds the name.
  bool bare = false;
};

/// A deep copy (TypeSpec owns its layout).
TypeSpec copyType(const TypeSpec &t);

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

/// Expressions, one struct with a kind (tinygrad-style plain data).
struct Expr {
  enum Kind {
    Number,   ///< `number`, `isInt`
    Bool,     ///< `boolValue`
    String,   ///< `text` (einsum specs, labels)
    Name,     ///< `text`
    List,     ///< `[a, b, ...]`: `args` (nested lists are tensor literals)
    Unary,    ///< `op` in {"-", "!"}; args[0]
    Binary,   ///< `op` in {"+","-","*","/","@","**","==","!=","<","<=",">",">=","&&","||"};
              ///< args[0..1]
    Call,     ///< `callee` (may be dotted `nn.linear`); args; kwargs
    CallExpr, ///< call of a computed callee: args[0] is the callee (e.g. `grad(f)(x)`); rest are
              ///< args
    Layout,   ///< a layout used as a value: `relayout(x, m[_, x])`; `layout`
    Index,    ///< `x[i]` tuple element access of multi-result values; args[0], `number` = index
    /// `x[2:5, i]`: args[0] is the subscripted expression, args[1..] the
    /// subscripts (an expression = an index, Slice, or Group). When args[0]
    /// is a plain name and every subscript is a layout entry, `layout` holds
    /// the same text read as a dims-mapping layout `m[_, (x, y)]`; the IR
    /// builder picks that reading when the name is a mesh.
    Subscript,
    Slice, ///< `lo:hi:step` inside a Subscript; args[0..2], each null when left out
    Group, ///< `(x, y)` inside a Subscript: an axis group of a layout; args = the names
    Field, ///< `f(x).w`: field `text` of the struct value args[0] (a name's field is a
           ///< dotted Name `p.w`)
  };
  Kind kind = Number;
  SrcLoc loc;
  /// The whole expression's source text when it sits on one line (endCol 0
  /// otherwise): what a fix-it replaces. `loc` may be just the operator or
  /// the callee name.
  SrcLoc full;
  double number = 0;
  /// A float Number rounded to odd at f64's precision (truncated, the last
  /// bit set when inexact): a conversion of it to f32/bf16/f16 rounds as the
  /// decimal itself would, once (round to nearest of `number` may round twice).
  double numberOdd = 0;
  bool isInt = false;
  int64_t intValue = 0; ///< Number with `isInt`: the exact value (`number` rounds above 2^53)
  bool boolValue = false;
  std::string text;
  std::string op;
  std::string callee;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<SrcLoc> kwargLocs; ///< where each keyword's name is written
  std::unique_ptr<LayoutSpec> layout;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

struct MeshDecl {
  std::string name;
  std::vector<std::pair<std::string, int64_t>> axes;
  std::vector<SrcLoc> axisLocs;
  std::vector<int64_t> devices; ///< empty = 0..n-1
  std::vector<SrcLoc> deviceLocs;
  bool hasDevices = false;
};

struct Param {
  SrcLoc loc;
  std::string name;
  TypeSpec type;
};

struct FnDecl {
  std::string name;
  SrcLoc loc; ///< the whole declaration
  /// `fn adam[P](p: P, ...)`: type parameters, each bound per call to the
  /// argument's type (a tensor type or a struct); bare names in types.
  std::vector<std::string> typeParams;
  std::vector<SrcLoc> typeParamLocs;
  std::vector<Param> params;
  std::vector<TypeSpec> results; ///< zero, one, or a tuple `-> (A, B)`
  std::vector<StmtPtr> body;
};

/// `struct Block { wq: f32[D, D] @ m[_, tp], ln: f32[D] @ m[_] }`: a record
/// of tensors (and nested structs), fields in declaration order.
struct StructDecl {
  std::string name;
  std::vector<Param> fields;
};

struct Stmt {
  enum Kind {
    Mesh,   ///< `mesh`
    Let,    ///< `let names (: type)? = init`; several names destructure a tuple
    Var,    ///< `var name (: type)? = init`
    Assign, ///< `name = value` (only variables); `p.wq = value` for a struct field
    Fn,     ///< `fn`
    For,    ///< `for name in lo..hi { body }`
    If,     ///< `if value { body } else { elseBody }` (`else if`: one If in elseBody)
    While,  ///< `while value { body }`
    Return, ///< `return values`
    Print,  ///< `print(item, ...)`: string labels and values on one line
    Import, ///< `import name`
    Struct, ///< `struct Name { field: type, ... }`
    ExprStmt,
  };
  Kind kind = ExprStmt;
  SrcLoc loc;
  std::vector<std::string> names; ///< Let/Var/Assign/For target names
  std::vector<SrcLoc> nameLocs;
  std::unique_ptr<TypeSpec> type;     ///< Let/Var annotation (optional)
  ExprPtr value;                      ///< Let/Var init, Assign value, ExprStmt, If/While condition
  std::vector<ExprPtr> values;        ///< Return values, Print items
  ExprPtr lo, hi;                     ///< For bounds
  std::vector<StmtPtr> body;          ///< For/If/While body
  std::vector<StmtPtr> elseBody;      ///< If: the `else` branch (empty without one)
  bool hasElse = false;               ///< If: an `else` was written
  int elseChain = 1;                  ///< If: the `if` and the `else if`s after it
  std::unique_ptr<MeshDecl> mesh;     ///< Mesh
  std::unique_ptr<FnDecl> fn;         ///< Fn
  std::unique_ptr<StructDecl> record; ///< Struct
  std::string module;                 ///< Import
};

struct Program {
  int file = 0;
  std::vector<StmtPtr> stmts;
};

/// Prints the AST back as source-like text (for tests and `dtensorc emit ast`).
std::string printProgram(const Program &p);
/// Prints a type as written: `f32[2*N, H] @ m[_, x]`, a struct's name.
std::string printType(const TypeSpec &t);
/// Prints one expression (binary and unary ones fully parenthesized).
std::string printExpr(const Expr &e);

} // namespace dt::ast
