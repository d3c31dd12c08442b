// This file implements `ast::printProgram`: the AST back as source text, used
// by the parser tests and `dtensorc emit ast`. The output re-parses to the same
// AST (parse(print(x)) prints as print(x)). Canonical choices: one statement a
// line, blocks indented by two spaces, every Binary and Unary expression in
// parentheses (so precedence is visible), layouts in the notation they were
// written in, placement kinds lowercase with `partial(op)` always spelled out,
// floats in their shortest round-tripping form with a `.` or exponent.
#include "grammar/AST.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace dt::ast {
namespace {

class Printer {
public:
  std::string out;

  void stmts(const std::vector<StmtPtr> &list, int indent) {
    for (const auto &s : list) {
      out.append((size_t)indent, ' ');
      stmt(*s, indent);
      out += '\n';
    }
  }

private:
  static std::string number(const Expr &e) {
    char buf[64];
    if (e.isInt)
      return std::to_string(e.intValue);
    for (int prec = 1; prec <= 17; ++prec) {
      std::snprintf(buf, sizeof buf, "%.*g", prec, e.number);
      if (std::strtod(buf, nullptr) == e.number)
        break;
    }
    std::string s = buf;
    if (s.find_first_of(".eEn") == std::string::npos)
      s += ".0";
    return s;
  }

  static std::string quoted(const std::string &s) {
    std::string q = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\')
        q += '\\', q += c;
      else if (c == '\n')
        q += "\\n";
      else if (c == '\t')
        q += "\\t";
      else
        q += c;
    }
    return q + "\"";
  }

  void layout(const LayoutSpec &l) {
    out += l.mesh;
    if (l.mesh == "*")
      return; // the layout-generic `@ *` has no entries (and `*[]` does not parse)
    out += l.placementForm ? '{' : '[';
    for (size_t i = 0; i < l.entries.size(); ++i) {
      const LayoutEntry &e = l.entries[i];
      if (i)
        out += ", ";
      if (l.placementForm) {
        out += e.axis + ": " + e.kind;
        if (e.kind == "shard")
          out += "(" + std::to_string(e.dim) +
                 (e.order >= 0 ? ", order=" + std::to_string(e.order) : "") + ")";
        if (e.kind == "partial")
          out += "(" + e.reduce + ")";
      } else if (e.axes.empty()) {
        out += '_';
      } else if (e.axes.size() == 1) {
        out += e.axes[0];
      } else {
        out += '(';
        for (size_t j = 0; j < e.axes.size(); ++j)
          out += (j ? ", " : "") + e.axes[j];
        out += ')';
      }
    }
    out += l.placementForm ? '}' : ']';
  }

public:
  void type(const TypeSpec &t) {
    if (t.bare) {
      out += t.dtype;
      return;
    }
    out += t.dtype + "[";
    for (size_t i = 0; i < t.dims.size(); ++i)
      out += (i ? ", " : "") + t.dims[i];
    out += "]";
    if (t.layout) {
      out += " @ ";
      layout(*t.layout);
    }
  }

private:

  void args(const std::vector<ExprPtr> &as, size_t from,
            const std::vector<std::pair<std::string, ExprPtr>> &kws) {
    out += '(';
    bool first = true;
    for (size_t i = from; i < as.size(); ++i, first = false) {
      if (!first)
        out += ", ";
      expr(*as[i]);
    }
    for (const auto &kw : kws) {
      if (!first)
        out += ", ";
      first = false;
      out += kw.first + "=";
      expr(*kw.second);
    }
    out += ')';
  }

  void exprList(const std::vector<ExprPtr> &es) {
    for (size_t i = 0; i < es.size(); ++i) {
      if (i)
        out += ", ";
      expr(*es[i]);
    }
  }

public:
  void expr(const Expr &e) {
    switch (e.kind) {
    case Expr::Number:
      out += number(e);
      break;
    case Expr::Bool:
      out += e.boolValue ? "true" : "false";
      break;
    case Expr::String:
      out += quoted(e.text);
      break;
    case Expr::Name:
      out += e.text;
      break;
    case Expr::List:
      out += '[';
      exprList(e.args);
      out += ']';
      break;
    case Expr::Unary:
      out += "(" + e.op;
      expr(*e.args[0]);
      out += ')';
      break;
    case Expr::Binary:
      out += '(';
      expr(*e.args[0]);
      out += " " + e.op + " ";
      expr(*e.args[1]);
      out += ')';
      break;
    case Expr::Call:
      out += e.callee;
      args(e.args, 0, e.kwargs);
      break;
    case Expr::CallExpr: {
      // A callee that is not itself a call is parenthesized: `(f)(x)`.
      bool paren = e.args[0]->kind != Expr::Call && e.args[0]->kind != Expr::CallExpr;
      if (paren)
        out += '(';
      expr(*e.args[0]);
      if (paren)
        out += ')';
      args(e.args, 1, e.kwargs);
      break;
    }
    case Expr::Layout:
      layout(*e.layout);
      break;
    case Expr::Index:
      expr(*e.args[0]);
      out += "[" + std::to_string((long long)e.number) + "]";
      break;
    case Expr::Subscript:
      expr(*e.args[0]);
      out += '[';
      for (size_t i = 1; i < e.args.size(); ++i) {
        if (i > 1)
          out += ", ";
        expr(*e.args[i]);
      }
      out += ']';
      break;
    case Expr::Slice:
      for (size_t i = 0; i < 3; ++i) {
        if (i > 0 && (i < 2 || e.args[2]))
          out += ':';
        if (e.args[i])
          expr(*e.args[i]);
      }
      break;
    case Expr::Group:
      out += '(';
      for (size_t i = 0; i < e.args.size(); ++i) {
        if (i > 0)
          out += ", ";
        expr(*e.args[i]);
      }
      out += ')';
      break;
    case Expr::Field:
      expr(*e.args[0]);
      out += "." + e.text;
      break;
    }
  }

  void block(const std::vector<StmtPtr> &body, int indent) {
    out += "{\n";
    stmts(body, indent + 2);
    out.append((size_t)indent, ' ');
    out += '}';
  }

  void stmt(const Stmt &s, int indent) {
    switch (s.kind) {
    case Stmt::Import:
      out += "import " + s.module;
      break;
    case Stmt::Mesh: {
      const MeshDecl &m = *s.mesh;
      out += "mesh " + m.name + " = [";
      for (size_t i = 0; i < m.axes.size(); ++i)
        out += (i ? ", " : "") + m.axes[i].first + " = " + std::to_string(m.axes[i].second);
      out += "]";
      if (m.hasDevices) {
        out += " devices [";
        for (size_t i = 0; i < m.devices.size(); ++i)
          out += (i ? ", " : "") + std::to_string(m.devices[i]);
        out += "]";
      }
      break;
    }
    case Stmt::Let:
    case Stmt::Var:
      out += s.kind == Stmt::Let ? "let " : "var ";
      if (s.names.size() == 1) {
        out += s.names[0];
      } else {
        out += '(';
        for (size_t i = 0; i < s.names.size(); ++i)
          out += (i ? ", " : "") + s.names[i];
        out += ')';
      }
      if (s.type) {
        out += " : ";
        type(*s.type);
      }
      out += " = ";
      expr(*s.value);
      break;
    case Stmt::Assign:
      out += s.names[0] + " = ";
      expr(*s.value);
      break;
    case Stmt::Fn: {
      const FnDecl &f = *s.fn;
      out += "fn " + f.name;
      if (!f.typeParams.empty()) {
        out += '[';
        for (size_t i = 0; i < f.typeParams.size(); ++i)
          out += (i ? ", " : "") + f.typeParams[i];
        out += ']';
      }
      out += "(";
      for (size_t i = 0; i < f.params.size(); ++i) {
        out += (i ? ", " : "") + f.params[i].name + ": ";
        type(f.params[i].type);
      }
      out += ") ";
      if (f.results.size() == 1) {
        out += "-> ";
        type(f.results[0]);
        out += ' ';
      } else if (f.results.size() > 1) {
        out += "-> (";
        for (size_t i = 0; i < f.results.size(); ++i) {
          if (i)
            out += ", ";
          type(f.results[i]);
        }
        out += ") ";
      }
      block(f.body, indent);
      break;
    }
    case Stmt::Struct: {
      out += "struct " + s.record->name + " {";
      for (size_t i = 0; i < s.record->fields.size(); ++i) {
        out += (i ? ", " : " ") + s.record->fields[i].name + ": ";
        type(s.record->fields[i].type);
      }
      out += s.record->fields.empty() ? "}" : " }";
      break;
    }
    case Stmt::For:
      out += "for " + s.names[0] + " in ";
      expr(*s.lo);
      out += "..";
      expr(*s.hi);
      out += ' ';
      block(s.body, indent);
      break;
    case Stmt::If:
      out += "if ";
      expr(*s.value);
      out += ' ';
      block(s.body, indent);
      if (s.hasElse) {
        out += " else ";
        block(s.elseBody, indent);
      }
      break;
    case Stmt::While:
      out += "while ";
      expr(*s.value);
      out += ' ';
      block(s.body, indent);
      break;
    case Stmt::Return:
      out += "return";
      if (!s.values.empty())
        out += ' ';
      exprList(s.values);
      break;
    case Stmt::Print:
      out += "print(";
      exprList(s.values);
      out += ')';
      break;
    case Stmt::ExprStmt:
      expr(*s.value);
      break;
    }
  }
};

} // namespace

TypeSpec copyType(const TypeSpec &t) {
  TypeSpec c;
  c.loc = t.loc;
  c.dtype = t.dtype;
  c.dims = t.dims;
  c.dimLocs = t.dimLocs;
  c.bare = t.bare;
  if (t.layout)
    c.layout = std::make_unique<LayoutSpec>(*t.layout);
  return c;
}

std::string printType(const TypeSpec &t) {
  Printer pr;
  pr.type(t);
  return pr.out;
}

std::string printExpr(const Expr &e) {
  Printer pr;
  pr.expr(e);
  return pr.out;
}

std::string printProgram(const Program &p) {
  Printer pr;
  pr.stmts(p.stmts, 0);
  return pr.out;
}

} // namespace dt::ast
