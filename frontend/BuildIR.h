// This file implements the interface of the IR builder: the pass that turns
// the AST into the typed global-view IR. It resolves names (meshes, values,
// variables, functions, imported modules), infers shapes (symbolic inside
// generic functions), checks every op with ir/Infer (the placement type
// checker) and reports every error with a fix, recovering so that one file
// reports all of its errors: a failed expression yields a poison value that
// silences the errors that would follow from it.
//
// Functions are generic over size symbols and, with `@ *` layouts, over the
// caller's placements; each distinct call signature is instantiated once as an
// IR function with concrete types. A generic function whose layouts are all
// written is also checked once on its own, symbolically, where it is defined.
#pragma once

#include "frontend/Compilation.h"
#include "grammar/AST.h"
#include "ir/Infer.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

namespace dt {

/// The keyword argument `name` of a call, or null.
const ast::Expr *kwarg(const ast::Expr &call, const std::string &name);
/// Whether `x` is a source call that takes its shape from a declared type
/// (`randn(seed=1)`), or arithmetic with one inside (`randn(seed=1) * 0.1`).
bool typedSource(const ast::Expr &x);

/// Both distributed, same dtype and shape: a relayout turns one into the other.
bool onlyLayoutDiffers(const TensorType &a, const TensorType &b);

/// The candidate closest to `name` when `name` looks like a typo of it.
std::optional<std::string> closestName(const std::string &name,
                                       const std::vector<std::string> &candidates);

/// A struct type (`struct Block { ... }`): fields in declaration order, each
/// a tensor type (placement included) or a nested struct. Struct values are
/// lowered away here: a value is its leaves (the tensor fields, nested ones
/// flattened in order), one SSA value each; the IR never sees a struct.
struct StructDef {
  std::string name;
  SrcLoc loc;
  struct Field {
    std::string name;
    SrcLoc loc;
    TensorType type;                      ///< a tensor field
    std::shared_ptr<const StructDef> sub; ///< or a nested struct
  };
  std::vector<Field> fields;
  /// The leaves in order: their path (`wq`, `attn.wq`) and declared type.
  std::vector<std::pair<std::string, TensorType>> leaves;
};
using StructRef = std::shared_ptr<const StructDef>;

/// What a name means in a scope.
struct Binding {
  /// Struct: a struct value named `p`; its leaves are bound as `p.wq`,
  /// `p.attn.wq` (nested structs as Struct bindings `p.attn`).
  enum Kind { Value, Var, Const, Struct } kind = Value;
  int id = -1;          ///< current SSA value (-1: poison)
  TensorType declared;  ///< Var: the placement fixed for life
  int64_t constant = 0; ///< Const: a compile-time integer (loop bounds)
  SrcLoc loc;
  StructRef record; ///< Struct: its type
};

/// An expression's value: one or more SSA values, or a bare literal not yet
/// given a type, or poison after an error.
struct EV {
  std::vector<int> ids;
  bool poison = false;
  bool literal = false;
  double number = 0; ///< the value (rounded for integers above 2^53)
  /// A float literal as written: its decimal rounded to odd at f64's
  /// precision (ast::Expr::numberOdd), which f32/bf16/f16 constants are made
  /// from; folded arithmetic has none.
  std::optional<double> numberOdd;
  int64_t ival = 0; ///< `isInt` or `isBool`: the exact value
  bool isInt = false;
  bool isBool = false;
  /// Per element of the value (a tuple has several): its struct, or null for
  /// one tensor; a struct element spans its leaves in `ids`. Empty: every id
  /// is one tensor element.
  std::vector<StructRef> parts;
  bool hasStruct() const {
    for (auto &p : parts)
      if (p)
        return true;
    return false;
  }
  /// The elements one by one (a struct element keeps its `parts`).
  std::vector<EV> elements() const;
  static EV bad() {
    EV e;
    e.poison = true;
    return e;
  }
  static EV one(int id) {
    EV e;
    e.ids = {id};
    return e;
  }
  bool single() const { return !poison && !literal && ids.size() == 1 && !hasStruct(); }
};

/// `x`'s type with dim `d` kept at size 1 (a keepdim reduction broadcast
/// back against `x`): x's placements, but `d` unsharded unless it already
/// has size 1 (then exactly x's placements); dtype `dt`.
TensorType keptDimType(const TensorType &x, int64_t d, DType dt);

/// The Const/Fill attributes of literal `v` as dtype `t` (IR.h: integers
/// exact in `ints`; a float literal into an integer dtype truncates).
Attrs constAttrs(const EV &v, DType t);

struct FnInfo {
  const ast::FnDecl *decl = nullptr;
  std::string qualified; ///< `nn.linear`
  bool generic = true;   ///< has `@ *` layouts: checked per instantiation only
  bool broken = false;   ///< its symbolic check failed: calls yield poison
  bool checked = false;  ///< its symbolic check passed (a non-generic function)
  std::map<std::string, std::string> instances; ///< signature -> IR function name
  /// The top-level `let` constants declared above it (none for a module's
  /// function): all its signature and body see of the program's constants.
  std::map<std::string, Binding> consts;
  /// Which build (BuilderState::builds) declared it: a later input may
  /// declare the function again (the REPL: fix it and rerun).
  uint64_t build = 0;
};

/// Everything that outlives one compile() call (the REPL compiles line by line).
struct Compilation::BuilderState {
  std::map<std::string, MeshRef> meshes;
  std::map<std::string, FnInfo> functions;
  std::vector<std::unique_ptr<ast::Program>> programs; ///< keeps FnDecls alive
  std::map<std::string, Binding> globals;              ///< top-level names
  std::set<std::string> imported;                      ///< every module loaded, by any file
  std::map<std::string, std::string> importedFrom;     ///< each loaded module's file
  /// Which modules each file imported itself ("" is the program): a module
  /// reaches `nn.f` only when it wrote `import nn`, not because the program
  /// (or another module) did.
  std::map<std::string, std::set<std::string>> importsOf;
  std::map<std::string, StructRef> structs; ///< `Block`, `nn.Linear`
  /// Structs refused as too large: a type that names one says so.
  std::set<std::string> structsTooLarge;
  /// Checkpoint folders a `save_checkpoint` writes earlier in the program: a
  /// later `load_checkpoint` of one is checked when it runs, not against
  /// what the folder holds at compile time.
  /// folder -> tensor name -> the dtype and global shape it writes; a later
  /// `load_checkpoint` of it takes (or checks) its type from there.
  std::map<std::string, std::map<std::string, TensorType>> checkpointsSaved;
  /// Tensor files a `save` writes earlier in the program: path -> tensor
  /// name ("" for `.npy`) -> the dtype and global shape it writes. A later
  /// `load` of one is checked against that, not against the file on disk.
  std::map<std::string, std::map<std::string, TensorType>> filesSaved;
  int instanceCounter = 0;
  /// Functions declared again by a later input: each bump drops every
  /// compiled instance (the runtime Session's call cache too), since any of
  /// them may call the old body.
  uint64_t redefinitions = 0;
  uint64_t builds = 0; ///< Compilation::build calls so far (the REPL's inputs)
  /// Instructions of `main` verified after an earlier build and unchanged
  /// since (a session's inputs append to `main`; one that rolls `main` back
  /// lowers this): the next verification starts after them.
  size_t verifiedMainInsts = 0;
  /// Functions other than `main` verified after an earlier build, the
  /// module's first ones (a session appends functions; a rollback lowers
  /// this): VerifyOptions::trustedFunctions.
  size_t verifiedFunctions = 0;
  /// How to take back each change made to `functions`, in the order they
  /// were made (an instance made, a function declared or declared again): a
  /// check that drops what it made, and a session that rolls an input back,
  /// undo the steps after their mark instead of copying every function's
  /// entry beforehand (an input then costs what it adds).
  std::vector<std::function<void(std::map<std::string, FnInfo> &)>> functionsUndo;
  void undoFunctions(size_t mark) {
    while (functionsUndo.size() > mark) {
      auto undo = std::move(functionsUndo.back());
      functionsUndo.pop_back();
      undo(functions);
    }
  }
};

class IRBuilder {
public:
  IRBuilder(Compilation &s);

  /// Builds one parsed program into `main` (top level) and new functions.
  void buildProgram(ast::Program &prog);

  // ---- statements (BuildIR.cpp)
  void stmt(const ast::Stmt &s);
  void block(const std::vector<ast::StmtPtr> &body);
  void meshDecl(const ast::Stmt &s);
  void letOrVar(const ast::Stmt &s);
  void assign(const ast::Stmt &s);
  // ---- control flow (BuildControl.cpp)
  void forLoop(const ast::Stmt &s);
  void ifStmt(const ast::Stmt &s);
  void whileLoop(const ast::Stmt &s);
  // The variables a `for`/`if`/`while` carries (BuildControl.cpp):
  /// the outer `var`s that `bodies` assign (a struct variable as its fields)
  /// and their values before the construct;
  void carriedVars(const std::vector<const std::vector<ast::StmtPtr> *> &bodies,
                   std::vector<std::string> &carried, std::vector<int> &before);
  /// binds each as a new argument of `body` in `scope`;
  void bindCarriedArgs(Block &body, std::map<std::string, Binding> &scope,
                       const std::vector<std::string> &carried, const std::vector<int> &before);
  /// appends their current values to `y`, false when one is poison;
  bool yieldCarried(const std::vector<std::string> &carried, Inst &y);
  /// gives `in` one result per carried variable, binds it and emits `in`; when
  /// not `ok` emits nothing and poisons them.
  void finishCarried(Inst in, const std::vector<std::string> &carried,
                     const std::vector<int> &before, bool ok);
  /// The condition of an `if`/`while` (`what`) as a host `bool[]` value: a
  /// host scalar, or a replicated rank-0 bool read on every rank; -1 after
  /// reporting why not.
  int condition(const ast::Expr &e, const char *what);
  /// An integer scalar (a `for` bound, a random `seed`; `what` names it in
  /// messages): a constant in `c` (and -1 in `id`), or a run-time host
  /// `i64[]` value in `id` (a host integer, or a replicated rank-0 integer
  /// read on every rank); false after an error.
  bool intScalar(const ast::Expr &e, const char *what, int64_t &c, int &id);
  /// A run-time seed `sid` (intScalar's host i64) for a random tensor of type
  /// `t`: replicated on t's mesh (a rank-0 value the random's kernel reads), or
  /// itself for a host `t`; -1 after an error.
  int seedFor(int sid, const TensorType &t, const ast::Expr *sx, SrcLoc loc);
  void importModule(const ast::Stmt &s);
  void fnDecl(const ast::Stmt &s, const std::string &prefix);
  void returnStmt(const ast::Stmt &s);
  void printStmt(const ast::Stmt &s);

  /// The value of a rank-0 host integer defined by a constant (loop bounds).
  std::optional<int64_t> hostIntConstant(int id);

  // ---- functions (BuildCall.cpp)
  EV callUser(const std::string &name, FnInfo &fn, const std::vector<EV> &args,
              const std::vector<const ast::Expr *> &argExprs, SrcLoc loc);
  /// Returns the IR function name for `fn` instantiated on `argTypes` (the
  /// leaves of the arguments; `argShape` gives each argument's struct, null
  /// for a tensor, empty when all are tensors), or "". `resultShape` gets the
  /// struct of each result.
  std::string instantiate(FnInfo &fn, const std::vector<TensorType> &argTypes,
                          const std::vector<const ast::Expr *> &argExprs, SrcLoc loc,
                          const std::vector<StructRef> &argShape = {},
                          std::vector<StructRef> *resultShape = nullptr);
  /// Replaces the errors raised while instantiating `fn` for a call (the
  /// diagnostics from `firstDiag` on) by one error at the call, with a note
  /// pointing into the body and, when moving one argument to another layout
  /// makes the call type-check, that conversion as the hint.
  void reportInCall(FnInfo &fn, const std::vector<TensorType> &argTypes,
                    const std::vector<const ast::Expr *> &argExprs, SrcLoc loc, size_t firstDiag,
                    int errorsBefore);
  /// The cheapest single-argument relayout that makes the call type-check.
  std::optional<std::pair<size_t, TensorType>>
  findArgumentFix(FnInfo &fn, const std::vector<TensorType> &argTypes, SrcLoc loc);
  /// Instantiates `fn` on `types` silently and undoes it; true if it type-checks.
  bool trialInstantiate(FnInfo &fn, const std::vector<TensorType> &types, SrcLoc loc);
  EV gradCall(const ast::Expr &callee, const std::vector<EV> &args,
              const std::vector<const ast::Expr *> &argExprs, SrcLoc loc);

  // ---- structs (BuildStruct.cpp)
  /// One parameter or result of an instance: a written type, or an exact
  /// type (a struct's leaf, a type parameter's binding).
  struct FlatParam {
    std::string name;
    SrcLoc loc;
    const ast::TypeSpec *spec = nullptr;
    std::optional<TensorType> exact;
  };
  struct Signature {
    std::vector<FlatParam> params, results;
    std::vector<StructRef> resultShape;
    std::vector<std::pair<std::string, StructRef>> structParams; ///< bound as structs
  };
  /// Expands `fn`'s struct-typed and type-parameter parameters and results
  /// into leaves for a call with these arguments; reports mismatches.
  bool expandSignature(FnInfo &fn, const std::vector<TensorType> &argTypes,
                       const std::vector<StructRef> &argShape,
                       const std::vector<const ast::Expr *> &argExprs, SrcLoc loc, Signature &sig);
  void structDecl(const ast::Stmt &s);
  /// The struct named `name` here (a module's own first), or null.
  StructRef findStruct(const std::string &name) const;
  /// Reports a bare type name that is no struct.
  void unknownType(const ast::TypeSpec &spec);
  /// `Block(wq=..., ln=...)`: each field built as an initializer of its type.
  EV construct(const StructRef &def, const ast::Expr &e);
  /// The value of struct binding `name` (its leaves looked up), or null.
  EV structValue(const std::string &name, const Binding &b);
  /// Binds `v` (one struct element) as `name`, its leaves as `name.path`;
  /// variables keep their leaves' types (`declared`, else the value's).
  void bindStruct(const std::string &name, const EV &v, bool isVar, SrcLoc loc,
                  const StructRef &declared = nullptr);
  /// Checks that `v` is a value of struct `want` with every leaf of its
  /// declared type; reports the first mismatch at `e` with the relayout.
  bool conformStruct(const EV &v, const StructRef &want, const ast::Expr *e, SrcLoc loc);
  /// `let`/`var` of a struct type (annotated) or of a struct value.
  void structLet(const ast::Stmt &s, const StructRef &declared, EV v);
  void structAssign(const ast::Stmt &s, Binding &b);
  /// The leaf names of struct binding `name` (`p.wq`, ...), or {name}.
  std::vector<std::string> leafNames(const std::string &name);
  /// `names` with every struct name replaced by its leaves (no duplicates):
  /// the variables a loop or branch carries.
  std::vector<std::string> leafNames(const std::vector<std::string> &names);
  /// Applies `one` field by field when an operand is a struct (elementwise
  /// lifting: `p - lr * g`, `sqrt(v)`); all struct operands share one type.
  /// False when no operand is a struct.
  bool lift(const std::vector<EV> &operands, SrcLoc loc,
            const std::function<EV(const std::vector<EV> &)> &one, EV &out);
  /// `relayout(s, Block)`: every leaf moved to the declared type of `Block`.
  EV relayoutStruct(const EV &x, const ast::Expr &e);
  /// `f(x).w`: field `e.text` of the struct value `v`.
  EV fieldOf(const EV &v, const ast::Expr &e);
  /// A dotted name that is not bound: a missing field of a struct value.
  bool reportField(const ast::Expr &e);

  // ---- rank- and dtype-generic signatures (BuildGeneric.cpp)
  /// Checks where `d` (qualified `q`) is defined that its `...` dims and
  /// dtype parameters (`T[..., D]`) can be bound; sets `generic` when it has
  /// any (then it is checked per call). False after reporting an error.
  bool checkGenericSignature(const ast::FnDecl &d, const std::string &q, bool &generic);
  /// Binds the `...` batch dims (`batch`, unset when no parameter has `...`)
  /// and the dtype parameters of a call from its arguments; reports a rank
  /// too small for a `...` type and conflicting bindings.
  bool bindGenerics(FnInfo &fi, const std::vector<FlatParam> &params,
                    const std::vector<TensorType> &argTypes,
                    const std::vector<const ast::Expr *> &argExprs, SrcLoc loc,
                    std::optional<Shape> &batch, std::map<std::string, DType> &dtypes);
  /// The argument dim that dim `d` of `spec` names for an argument with
  /// `rank` dims (dims after a `...` shift by its length), or -1 for `...`.
  static int argDim(const ast::TypeSpec &spec, size_t d, int rank);
  /// The compact size text (`(H*E)`) of `e` when it is size arithmetic on
  /// names and integers; `usesSymbol` is set when a name is a size symbol.
  bool sizeText(const ast::Expr &e, std::string &out, bool &usesSymbol);
  /// The element type `name` names here: a bound dtype parameter or a dtype.
  std::optional<DType> dtypeNamed(const std::string &name) const;

  // ---- expressions (BuildExpr.cpp)
  EV expr(const ast::Expr &e);
  EV binary(const ast::Expr &e);
  EV call(const ast::Expr &e);
  /// A builtin call, dispatched through the builtin table (Builtins.h);
  /// `handled` is false when `name` is no builtin.
  EV builtin(const std::string &name, const ast::Expr &e, bool &handled);
  /// True when `e` has lo..hi positional arguments, else an `ArgCount` error.
  bool builtinArgs(const std::string &name, const ast::Expr &e, size_t lo, size_t hi);
  // Single-op builtins (BuildBuiltin.cpp), called by the table.
  EV reduceBuiltin(const std::string &name, const ast::Expr &e);
  EV einsumBuiltin(const std::string &name, const ast::Expr &e);
  EV transposeBuiltin(const std::string &name, const ast::Expr &e);
  EV reshapeBuiltin(const std::string &name, const ast::Expr &e);
  EV indexBuiltin(const std::string &name, const ast::Expr &e);
  EV castBuiltin(const std::string &name, const ast::Expr &e);
  EV relayoutBuiltin(const std::string &name, const ast::Expr &e);
  EV toHostBuiltin(const std::string &name, const ast::Expr &e);
  EV fillLikeBuiltin(const std::string &name, const ast::Expr &e);
  EV arangeLikeBuiltin(const std::string &name, const ast::Expr &e);
  /// Builtins written as other ops (`gelu`, `softplus`, `clamp`, `square`,
  /// `isnan`, `isfinite`): false when `name` is none of them.
  bool composite(const std::string &name, const ast::Expr &e, EV &out, bool &handled);
  /// `argmax`/`argmin(x, dim=d)`: i64 global indices; over a sharded dim two
  /// all-reduces (the extreme value, then the first index holding it).
  /// argmax/argmin along the `dim=` of `e`, or along `dim` when it is >= 0;
  /// with `among` (a bool mask of x's type), only among its true elements
  /// (topk's later rounds; at least one per reduced slice must be true).
  EV argReduce(const std::string &name, const ast::Expr &e, EV x, const TensorType &t,
               int64_t dim = -1, EV among = {});
  /// `cumsum(x, dim=d)` along a dim that no mesh axis shards.
  EV cumsum(const ast::Expr &e, EV x, const TensorType &t);

  // ---- slicing and joins (BuildSlice.cpp)
  /// `x[2:5, i, ::2]`: index_selects of constant ids, a sharded dim gathered
  /// and sharded again; integer indices drop their dims.
  EV subscript(const ast::Expr &e);
  /// Run-time integer index `iv` into a dim of size `n` of `xt` as the
  /// `i64[1]` (or `i32[1]`) ids of an `index_select` on `xt`'s mesh.
  EV dynamicIndex(EV iv, const TensorType &xt, int64_t n, const ast::Expr &s);
  /// A run-time integer index `iv` (rank 0) as a replicated value on `xt`'s
  /// mesh; an error at `s` for anything else.
  EV indexOnMesh(EV iv, const TensorType &xt, const ast::Expr &s);
  /// `one_hot(ids, n)` and `gather(x, ids, dim=d)` (BuildGather.cpp).
  EV gatherBuiltin(const std::string &name, const ast::Expr &e);
  /// `dropout(x, p, seed=s)` and `topk(x, 1, dim=d)` (BuildSampling.cpp).
  EV samplingBuiltin(const std::string &name, const ast::Expr &e);
  /// `to_local(x)` and `from_local(blocks..., layout)` (BuildLocal.cpp).
  EV localBuiltin(const std::string &name, const ast::Expr &e);
  /// `concat`, `stack`, `split`, `chunk`, `pad`.
  EV cutBuiltin(const std::string &name, const ast::Expr &e);
  /// `xs` (same dtype, rank and sizes but along `d`) joined along `d`; the
  /// result is sharded along `d` as `xs[0]` is.
  EV join(const std::string &name, std::vector<EV> xs, const std::vector<const ast::Expr *> &exs,
          int64_t d, SrcLoc loc);
  /// The dims-mapping layout that subscript expression `e` spells when its
  /// base names a mesh (or no value), else null.
  const ast::LayoutSpec *subscriptLayout(const ast::Expr &e);

  // ---- tensor files (BuildData.cpp)
  /// `load(path[, name])`: with `declared`, a value of that type whose
  /// ranks read their blocks (the file's dtype and shape are checked now);
  /// without, a host value of the file's dtype and shape.
  EV loadCall(const ast::Expr &e, const TensorType *declared);
  /// `save(path, x)` / `save(path, "name", x, ...)`.
  EV saveCall(const ast::Expr &e);
  /// `load_checkpoint(dir, name)`, `save_checkpoint(dir, name, value, ...)`.
  EV loadCheckpointCall(const ast::Expr &e, const TensorType *declared);
  EV saveCheckpointCall(const ast::Expr &e);
  /// `time()`: the monotonic clock in seconds, a host f64 scalar.
  EV timeCall(const ast::Expr &e);
  /// One item of a `print`: a literal becomes a scalar value.
  EV printItem(const ast::Expr &x);
  /// `path` relative to the folder of the source file of `loc`.
  std::string dataPath(const std::string &path, SrcLoc loc);
  /// Emits `op` on `operands` (poison in, poison out), reporting type errors
  /// at `loc` with a relayout hint naming `exprs[i]`.
  EV emit(Op op, const std::vector<EV> &operands, const std::vector<const ast::Expr *> &exprs,
          SrcLoc loc, Attrs attrs = {}, std::vector<TensorType> given = {});
  /// Gives a bare literal a type: rank 0, `like`'s dtype and mesh, replicated.
  int materialize(const EV &lit, const TensorType &like, SrcLoc loc);
  /// Whether the literal `v` may be stored in `t`'s dtype: an integer out of
  /// `i32`'s range, a fraction (or NaN, inf) in an integer tensor and a
  /// number in a bool one are errors reported at `loc`, never a silent clamp
  /// or truncation. `operand`: `v` is an operand of an op, whose rule
  /// decides about bools.
  bool literalFits(const EV &v, const TensorType &t, SrcLoc loc, bool operand = false);
  /// A source-op initializer (`ones()`, literal lists, ...) typed by `t`,
  /// also inside arithmetic (`randn(seed=1) * 0.1`, `-ones()`).
  EV initializer(const ast::Expr &init, const TensorType &t);
  EV tensorLiteral(const ast::Expr &e, const TensorType *t);

  // ---- types and layouts (BuildTypes.cpp)
  std::optional<TensorType> resolveType(const ast::TypeSpec &spec,
                                        const std::map<std::string, Dim> *symbols);
  /// The size written as `text` (`4`, `B`, `2*B+1`): integers, size symbols
  /// (`symbols`, else the current function's) and `let` constants; symbolic
  /// (named by its text) when a symbol is unbound or symbolic inside a
  /// generic function. Reports unknown names and bad sizes at `loc`.
  std::optional<Dim> sizeOf(const std::string &text, const std::map<std::string, Dim> *symbols,
                            SrcLoc loc);
  /// The value of the `let` constant `name` in scope, if it is one.
  std::optional<int64_t> constNamed(const std::string &name);
  std::optional<TensorType> applyLayout(const ast::LayoutSpec &spec, DType dt, const Shape &shape);
  std::string layoutText(const TensorType &t) const; ///< `m[_, x]` or `m{x: partial(sum)}`
  /// Reports a PyTorch-style placement list `m[Shard(0), Replicate()]`.
  std::nullopt_t torchLayout(const ast::LayoutSpec &spec, const MeshRef &mesh, int rank);
  std::string exprText(const ast::Expr *e) const;
  /// `relayout(e, m[x, _])`: the call that moves `e` to `t`'s layout.
  std::string relayoutText(const ast::Expr *e, const TensorType &t) const;
  /// `fn(e, layout)` (fn = relayout or distribute); when `e` already is such
  /// a call, the same call with the new layout (never one nested in another).
  std::string moveText(const std::string &fn, const ast::Expr *e, const TensorType &t) const;
  /// The expression that turns `e` (of type `from`) into type `to`, same
  /// dtype and shape: `relayout` on one mesh, `distribute` from the host,
  /// `to_host`, and `distribute(to_host(e), ...)` between meshes.
  std::string conversionText(const ast::Expr *e, const TensorType &from,
                             const TensorType &to) const;
  /// Sets `d`'s hint and fix-it to conversionText(), or to a `cast` when only
  /// the dtype differs; false (nothing set) when no conversion exists (the
  /// shape differs, or the dtype and the layout both do).
  bool conversionHint(Diagnostic &d, const ast::Expr *e, const TensorType &from,
                      const TensorType &to) const;
  /// Sets `d`'s hint to "write `shown`" (default: `replacement`) and, when
  /// `e`'s source span is known, the fix-it replacing `e` with `replacement`.
  void fixHint(Diagnostic &d, const ast::Expr *e, const std::string &replacement,
               const std::string &shown = "") const;
  /// Reports `err` with the operands named by their source text and a hint;
  /// `typeChecks` checks the op on other operand types: a hint is only given
  /// when the operands it changes pass.
  void reportTypeError(const TypeError &err, SrcLoc loc,
                       const std::vector<const ast::Expr *> &exprs,
                       const std::vector<TensorType> &types,
                       const std::function<Inferred(const std::vector<TensorType> &)> &typeChecks,
                       bool atOperand = false);

  /// False after reporting the first keyword argument of call `e` (of
  /// `name`) that is not among `accepted`: an unknown keyword is an error,
  /// never ignored (`mean(x, axis=1)` would otherwise average everything).
  /// `user`: the called function's declaration (it takes no keywords).
  bool knownKeywords(const std::string &name, const ast::Expr &e,
                     const std::vector<std::string> &accepted, const ast::FnDecl *user = nullptr);
  /// Argument `pos` (0-based) of call `e` to `name`, or its keyword `key=`;
  /// null when neither is given. Both given is an error (`ArgGivenTwice`,
  /// never one of them silently dropped): null, and `twice` set.
  const ast::Expr *argOrKeyword(const std::string &name, const ast::Expr &e, size_t pos,
                                const std::string &key, bool &twice);
  /// Reports that struct `def` has no field `field`: the field meant as the
  /// hint, else the list of its fields.
  void noField(const StructDef &def, const std::string &field, SrcLoc at);
  /// EV::bad(), reporting `NeedsTensor` for builtin `call` when `x` is not
  /// poison already (a bare number, a tuple: never a silent drop).
  EV needsTensor(const EV &x, const ast::Expr &call);
  /// `cast` of a bare number: the number converted to `to` as an element
  /// would be, still a bare literal.
  EV castLiteral(const EV &x, DType to);
  /// False after reporting a name of `save`/`save_checkpoint` call `e` (its
  /// odd arguments) holding a newline or another control byte.
  bool namesOneLine(const ast::Expr &e, const std::string &fn);
  /// Reports a `let (a, b) = v` whose names do not match v's parts.
  void destructureCount(SrcLoc loc, size_t parts, size_t names);
  /// A builtin written as several ops (gather, concat, stack) checks its
  /// operands up front: all host, or all on one mesh. Otherwise reports the
  /// mix on the user's operands `exprs` (with a `distribute` hint) and
  /// returns false.
  bool sameWorld(SrcLoc loc, const std::vector<const ast::Expr *> &exprs,
                 const std::vector<TensorType> &types);

  /// When one of `candidates` is close to `wrong`, sets the hint "did you
  /// mean `...`?" with the fix-it that corrects `wrong` inside `span`.
  bool didYouMean(Diagnostic &d, const std::string &wrong,
                  const std::vector<std::string> &candidates, SrcLoc span);
  /// Every function a call can name here: builtins, user and module functions.
  std::vector<std::string> functionNames() const;
  /// The names a function or struct `name` written here may stand for, in
  /// order: inside a module, its own `mod.name`, and a qualified name as
  /// written (another module's); never the importing program's unqualified
  /// names. At top level, the name itself. A qualified `nn.f` only when the
  /// file being built imported `nn` itself (or is `nn`).
  std::vector<std::string> scopedNames(const std::string &name) const;
  /// The module being built, without the dot ("" for the program).
  std::string currentModule() const;
  /// Whether this file wrote `import mod` (or is `mod`).
  bool importedHere(const std::string &mod) const;
  /// For an unknown `name`: when the program declares it below the use (a
  /// constant below a function, any `let`/`var` below a top-level use), a
  /// hint to move it up; inside a function, for a tensor of the program, a
  /// hint to pass it as an argument.
  bool declaredBelow(Diagnostic &d, const std::string &name) const;
  /// The hint for an unknown function that the program defines further down.
  bool definedBelow(Diagnostic &d, const std::string &name) const;
  /// The hint for assigning `name`, which is no `var`: declare it (or, for
  /// a field `a.w`, the struct `a`) with `var`.
  static std::string varHint(const std::string &name);
  /// Every name a value expression can refer to here.
  std::vector<std::string> namesInScope() const;
  void dtypeMismatchHint(Diagnostic &d, const std::vector<const ast::Expr *> &exprs,
                         const std::vector<TensorType> &types);
  void meshMismatchHint(Diagnostic &d, const std::vector<const ast::Expr *> &exprs,
                        const std::vector<TensorType> &types,
                        const std::function<Inferred(const std::vector<TensorType> &)> &typeChecks);
  void matmulShapeHint(Diagnostic &d, const std::vector<const ast::Expr *> &exprs,
                       const std::vector<TensorType> &types,
                       const std::function<Inferred(const std::vector<TensorType> &)> &typeChecks);

  /// Reports a shape whose element count (literal dims; symbols count as 1)
  /// overflows or exceeds SessionOptions::maxTensorElements at `loc`.
  bool checkElements(const Shape &shape, SrcLoc loc);
  /// The integer value of literal `v` in `out`; reports one that does not
  /// fit int64_t (literals are doubles) at `loc`.
  bool literalInt(const EV &v, SrcLoc loc, int64_t &out);

  // ---- helpers
  Function &fn() { return *fnStack_.back(); }
  Block &blk() { return *blockStack_.back(); }
  const TensorType &typeOf(int id) { return fn().type(id); }
  Binding *lookup(const std::string &name);
  void bind(const std::string &name, Binding b);
  DiagEngine &diags() { return s_.diags; }

  Compilation &s_;
  Compilation::BuilderState &st_;
  std::vector<Function *> fnStack_;
  std::vector<Block *> blockStack_;
  std::vector<std::map<std::string, Binding>> scopes_;
  /// Size symbols of the function being built (generic check or instance).
  const std::map<std::string, Dim> *symbols_ = nullptr;
  /// Set when an expression reads the value of a size symbol that is
  /// symbolic (`if N > 2` in a function checked where it is defined): that
  /// check is dropped and the function is checked at each call instead.
  bool symbolAsValue_ = false;
  /// The `...` batch dims of the instance being built (null: none bound, so
  /// `...` is an error) and its dtype parameters (`T` of `T[..., D]`).
  const Shape *batch_ = nullptr;
  const std::map<std::string, DType> *dtypeParams_ = nullptr;
  /// Set while building a function body: declared results and what `return` saw.
  std::vector<TensorType> *expectedResults_ = nullptr;
  std::vector<bool> *expectedAny_ = nullptr; ///< per result: written `@ *`
  bool sawReturn_ = false;
  /// Building an `if`/`while` condition: a replicated rank-0 operand that
  /// meets a host one is read to the host (BuildControl.cpp, condition()).
  bool hostCondition_ = false;
  /// In a condition: the replicated rank-0 operands of an elementwise op
  /// that also has a host operand become host values (to_host).
  void hostScalarsInCondition(Op op, std::vector<int> &ids, std::vector<TensorType> &types,
                              const std::vector<const ast::Expr *> &exprs, SrcLoc loc);
  /// Functions whose bodies are being built (a call of one is recursion).
  std::set<std::string> instantiating_;
  /// Meshes whose declaration in this compile had an error (reported): a
  /// layout naming one fails without a second, misleading `unknown mesh`.
  std::set<std::string> badMeshes_;
  /// Set while a `where` initializes a declared numeric type: the dtype its
  /// two bare branches take (else f32, i64 or bool by their literals).
  std::optional<DType> bareBranchDtype_;
  std::string modulePrefix_; ///< `nn.` while building an imported module
  int currentFile_ = 0;
  /// "line 7" for a place in the file of `from`, else "nn.dt:7" (or "[3]:7",
  /// an earlier input of a session): where a note points.
  std::string lineOf(SrcLoc at, SrcLoc from) const;
  int quiet_ = 0; ///< > 0 inside a trial instantiation (findArgumentFix)
  /// > 0 while the instance a `grad` differentiates is built: every callee
  /// gets its body (autodiff reads them), none a declared-results stub.
  int needBodies_ = 0;
  /// Set while a call binds a function's signature: the `let` constants
  /// its declaration saw (FnInfo::consts), in place of the caller's scopes.
  /// A name that is none of them is the signature's size symbol, whatever
  /// the caller or a later line binds to it (`B` in `nn.linear`).
  const std::map<std::string, Binding> *signatureConsts_ = nullptr;
  /// The program's top-level scope while a function called from it is
  /// built: an unknown name there that is a constant declared below the
  /// function gets a hint saying so (declaredBelow).
  const std::map<std::string, Binding> *programScope_ = nullptr;
  /// The program whose statements are being built (a struct named before
  /// its declaration is found there, for the hint).
  const ast::Program *buildingProgram_ = nullptr;
};

} // namespace dt
