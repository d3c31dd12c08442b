// This file implements the AST builder that the Bison actions of
// grammar/parser.yy call: every action is one call here, so the grammar file
// stays a grammar. The builder turns token spans into SrcLocs, validates what
// the grammar leaves open (placement kinds, `partial` reduce ops, integer
// arguments), and bounds expression depth: a node nested deeper than
// kMaxNesting is reported once as ParseTooDeep and replaced by a leaf, so the
// AST handed to later passes is never deeper than the limit.
//
// Location convention: a Binary or Unary expression spans the whole
// expression when it sits on one line, otherwise its operator; a Call spans
// its callee name; a CallExpr spans its callee expression; statements, lists,
// types and layouts span themselves when on one line, otherwise they point at
// their first byte (endCol 0).
#pragma once

#include "grammar/AST.h"
#include "grammar/Lexer.h"

#include <unordered_map>

namespace dt::gram {

/// A list of names with their locations (`let (a, b)`, `(x, y)` in layouts).
struct NameList {
  std::vector<std::string> names;
  std::vector<SrcLoc> locs;
};

/// Positional and keyword arguments of a call.
struct CallArgs {
  std::vector<ast::ExprPtr> args;
  std::vector<std::pair<std::string, ast::ExprPtr>> kwargs;
  std::vector<SrcLoc> kwargLocs;
};

using StmtList = std::vector<ast::StmtPtr>;
using LayoutPtr = std::unique_ptr<ast::LayoutSpec>;

class Builder {
public:
  Builder(int file, DiagEngine &diags) : file_(file), diags_(diags) {}

  SrcLoc loc(const Span &s) const;
  /// `whole` when it is on one line, else `anchor`.
  SrcLoc loc(const Span &whole, const Span &anchor) const;
  /// `opener`: a bracket the input left open at its end (named in a note).
  void syntaxError(const Span &at, const std::string &message,
                   const Lexer::Opener *opener = nullptr);

  // Expressions.
  ast::ExprPtr number(const std::string &text, bool isInt, const Span &s);
  ast::ExprPtr boolean(bool v, const Span &s);
  ast::ExprPtr string(const std::string &v, const Span &s);
  ast::ExprPtr name(const std::string &v, const Span &s);
  ast::ExprPtr list(std::vector<ast::ExprPtr> items, const Span &s);
  ast::ExprPtr unary(const char *op, ast::ExprPtr e, const Span &opLoc, const Span &whole);
  ast::ExprPtr binary(const std::string &op, ast::ExprPtr l, ast::ExprPtr r, const Span &opLoc,
                      const Span &whole);
  ast::ExprPtr call(const std::string &callee, CallArgs a, const Span &calleeLoc,
                    const Span &whole);
  ast::ExprPtr callExpr(ast::ExprPtr callee, CallArgs a, const Span &whole);
  ast::ExprPtr layoutExpr(LayoutPtr l);
  /// `base.name` on a call result.
  ast::ExprPtr field(ast::ExprPtr base, const std::string &name, const Span &nameLoc,
                     const Span &whole);
  /// `base[items]`: indexing and slicing, or a dims-mapping layout (AST.h).
  ast::ExprPtr subscript(ast::ExprPtr base, std::vector<ast::ExprPtr> items, const Span &s);
  ast::ExprPtr slice(ast::ExprPtr lo, ast::ExprPtr hi, ast::ExprPtr step, const Span &s);
  ast::ExprPtr group(std::vector<ast::ExprPtr> items, const Span &s);
  void addArg(CallArgs &a, ast::ExprPtr e);
  void addKwarg(CallArgs &a, const std::string &k, ast::ExprPtr e, const Span &s);
  void addName(NameList &l, const std::string &n, const Span &s);
  NameList oneName(const std::string &n, const Span &s);
  std::vector<ast::ExprPtr> prepend(ast::ExprPtr first, std::vector<ast::ExprPtr> rest);

  // Types and layouts.
  ast::TypeSpec type(const std::string &dtype, ast::TypeSpec dims, LayoutPtr layout, const Span &s);
  /// A struct type or type parameter named without `[...]`.
  ast::TypeSpec bareType(const std::string &name, const Span &s);
  void addDim(ast::TypeSpec &t, const std::string &d, const Span &s);
  LayoutPtr layout(const std::string &mesh, bool placementForm,
                   std::vector<ast::LayoutEntry> entries, const Span &s);
  /// Dims-mapping entry: `_`, `x` or `(x, y)`.
  ast::LayoutEntry dimEntry(NameList axes, const Span &s);
  /// PyTorch-style entry `Shard(0)`, `Replicate()`, `Partial(sum)` in a
  /// dims-mapping list (marked `torch`; the IR builder reports it).
  /// `shard(d, order=k)`: `kw` must be `order`.
  ast::LayoutEntry shardOrder(ast::LayoutEntry e, const std::string &kw, const std::string &k,
                              const Span &kwLoc);
  ast::LayoutEntry torchEntry(const std::string &kind, const std::string &arg, bool argIsInt,
                              const Span &s);
  /// Placement entry `axis: kind` or `axis: kind(arg)`; `arg` empty if absent.
  ast::LayoutEntry placement(const std::string &axis, const std::string &kind,
                             const std::string &arg, bool argIsInt, const Span &kindLoc,
                             const Span &s);

  // Statements.
  ast::StmtPtr importStmt(const std::string &module, const Span &s);
  ast::StmtPtr meshStmt(const std::string &name, ast::MeshDecl axes, const Span &s);
  void addMeshAxis(ast::MeshDecl &m, const std::string &axis, const std::string &size,
                   const Span &s);
  void addDevice(ast::MeshDecl &m, const std::string &id, const Span &s);
  /// `axes` with the device list of `devices` (parsed separately).
  ast::MeshDecl mergeDevices(ast::MeshDecl axes, ast::MeshDecl devices);
  ast::StmtPtr let(bool isVar, NameList names, std::unique_ptr<ast::TypeSpec> type,
                   ast::ExprPtr init, const Span &s);
  ast::StmtPtr assign(const std::string &name, const Span &nameLoc, ast::ExprPtr v, const Span &s);
  ast::StmtPtr fn(const std::string &name, NameList typeParams, std::vector<ast::Param> params,
                  std::vector<ast::TypeSpec> results, StmtList body, const Span &s);
  ast::StmtPtr structStmt(const std::string &name, std::vector<ast::Param> fields, const Span &s);
  ast::Param param(const std::string &name, ast::TypeSpec t, const Span &s);
  ast::StmtPtr ifStmt(ast::ExprPtr cond, StmtList body, StmtList elseBody, const Span &s);
  ast::StmtPtr whileStmt(ast::ExprPtr cond, StmtList body, const Span &s);
  ast::StmtPtr forStmt(const std::string &var, const Span &varLoc, ast::ExprPtr lo, ast::ExprPtr hi,
                       StmtList body, const Span &s);
  ast::StmtPtr ret(std::vector<ast::ExprPtr> values, const Span &s);
  ast::StmtPtr print(std::vector<ast::ExprPtr> items, const Span &s);
  ast::StmtPtr exprStmt(ast::ExprPtr e, const Span &s);

private:
  ast::ExprPtr leaf(ast::Expr::Kind k, const Span &s);
  /// Records `e`'s depth (1 + deepest child); replaces it by a leaf beyond the limit.
  ast::ExprPtr finish(ast::ExprPtr e);
  int depthOf(const ast::Expr *e) const;
  int64_t toInt(const std::string &text, const Span &s);
  ast::StmtPtr stmt(ast::Stmt::Kind k, const Span &s);

  int file_;
  DiagEngine &diags_;
  std::unordered_map<const ast::Expr *, int> depth_;
  bool reportedDepth_ = false;
};

/// The message of a syntax error: "expected `]` or `,`, found `=`". `expected`
/// holds Bison's token names (as spelled in parser.yy), `found` the
/// lookahead's; the lexer supplies the lookahead's text.
std::string describeSyntaxError(const std::vector<std::string> &expected, const std::string &found,
                                const Lexer &lex);

/// What the Bison parser carries: the lexer it pulls from and the builder.
struct ParseContext {
  Lexer &lex;
  Builder &b;
  ast::Program &program;
};

} // namespace dt::gram
