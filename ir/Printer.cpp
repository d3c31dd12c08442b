// This file implements the IR printer (see Printer.h for the text form).
#include "ir/Printer.h"

#include "ir/Collectives.h"

#include <cctype>
#include <charconv>
#include <cmath>

namespace dt {

namespace {

bool isBareName(const std::string &s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!(std::isalnum((unsigned char)c) || c == '_' || c == '.'))
      return false;
  return true;
}

std::string intList(const std::vector<int64_t> &v) {
  std::string r = "[";
  for (size_t i = 0; i < v.size(); ++i)
    r += (i ? ", " : "") + std::to_string(v[i]);
  return r + "]";
}

std::string floatList(const std::vector<double> &v) {
  std::string r = "[";
  for (size_t i = 0; i < v.size(); ++i)
    r += (i ? ", " : "") + printDouble(v[i]);
  return r + "]";
}

/// Nested list of `data` (printed numbers) shaped by `dims` (row-major).
void nested(const std::vector<std::string> &data, const std::vector<int64_t> &dims, size_t d,
            size_t &pos, std::string &out) {
  if (d == dims.size()) {
    out += data[pos++];
    return;
  }
  out += '[';
  for (int64_t i = 0; i < dims[d]; ++i) {
    if (i)
      out += ", ";
    nested(data, dims, d + 1, pos, out);
  }
  out += ']';
}

std::string locStr(const SrcLoc &l) {
  std::string r = " loc(";
  if (l.file)
    r += std::to_string(l.file) + "/";
  r += std::to_string(l.line) + ":" + std::to_string(l.col);
  if (l.endCol)
    r += "-" + std::to_string(l.endCol);
  return r + ")";
}

class Printer {
public:
  Printer(const Function &f, const PrintOptions &o) : f_(f), opts_(o) {}

  std::string use(int id) const { return "%" + std::to_string(id); }

  std::string def(int id) const {
    std::string r = use(id);
    if (opts_.names && id >= 0 && id < (int)f_.values.size()) {
      const std::string &n = f_.values[id].name;
      if (!n.empty())
        r += ":" + (isBareName(n) ? n : quoteString(n));
    }
    return r;
  }

  std::string typeOf(int id) const {
    if (id < 0 || id >= (int)f_.values.size())
      return "<bad value>";
    return printType(f_.values[id].type);
  }

  std::string typedDef(int id) const { return def(id) + ": " + typeOf(id); }

  /// The dtype of a one-result instruction (F32 when it has none or a bad id).
  DType resultDType(const Inst &in) const {
    if (in.results.size() != 1 || in.results[0] < 0 || in.results[0] >= (int)f_.values.size())
      return DType::F32;
    return f_.values[in.results[0]].type.dtype;
  }

  std::string operands(const Inst &in, size_t from = 0) const {
    std::string r;
    for (size_t i = from; i < in.operands.size(); ++i)
      r += (i > from ? ", " : "") + use(in.operands[i]);
    return r;
  }

  void inst(const Inst &in, int indent, std::string &out) const {
    out.append(indent, ' ');
    for (size_t i = 0; i < in.results.size(); ++i)
      out += (i ? ", " : "") + def(in.results[i]);
    if (!in.results.empty())
      out += " = ";
    out += opName(in.op);
    Attrs rest = in.attrs;
    body(in, rest, out);
    genericAttrs(rest, out);
    for (auto &r : in.regions)
      region(r, indent, out);
    if (!in.results.empty()) {
      out += " : ";
      for (size_t i = 0; i < in.results.size(); ++i)
        out += (i ? ", " : "") + typeOf(in.results[i]);
    }
    if (opts_.locs && in.loc.known())
      out += locStr(in.loc);
  }

  /// The op-specific part after the op name; clears the attribute fields it prints.
  void body(const Inst &in, Attrs &rest, std::string &out) const {
    const Attrs &a = in.attrs;
    auto spaced = [&](const std::string &s) {
      if (!s.empty())
        out += " " + s;
    };
    switch (in.op) {
    case Op::Const: {
      std::vector<int64_t> dims;
      bool shaped = false;
      bool ints = constInInts(resultDType(in));
      std::vector<std::string> data;
      if (ints)
        for (int64_t v : a.ints)
          data.push_back(std::to_string(v)); // exact: integer constants live in `ints`
      else
        for (double v : a.floats)
          data.push_back(printDouble(v));
      if (in.results.size() == 1 && in.results[0] >= 0 && in.results[0] < (int)f_.values.size()) {
        const Shape &s = f_.values[in.results[0]].type.shape;
        if (isConcrete(s) && !s.empty()) {
          dims = concreteDims(s);
          shaped = numElements(s) == (int64_t)data.size();
        }
      }
      if (shaped) {
        size_t pos = 0;
        out += ' ';
        nested(data, dims, 0, pos, out);
      } else if (data.size() == 1) {
        out += " " + data[0];
      } else {
        out += " [";
        for (size_t i = 0; i < data.size(); ++i)
          out += (i ? ", " : "") + data[i];
        out += "]";
      }
      if (ints)
        rest.ints.clear();
      else
        rest.floats.clear();
      spaced(operands(in));
      return;
    }
    case Op::Fill:
      if (constInInts(resultDType(in)) && a.ints.size() == 1) {
        out += " " + std::to_string(a.ints[0]);
        rest.ints.clear();
      } else if (!constInInts(resultDType(in)) && a.floats.size() == 1) {
        out += " " + printDouble(a.floats[0]);
        rest.floats.clear();
      }
      break;
    case Op::Random:
      if (isBareName(a.str) && a.ints.size() == 1 && in.operands.empty()) {
        out += " " + a.str + " " + std::to_string(a.ints[0]);
        rest.str.clear();
        rest.ints.clear();
      } else if (isBareName(a.str) && a.ints.empty() && in.operands.size() == 1) {
        out += " " + a.str + " " + use(in.operands[0]); // a run-time seed
        rest.str.clear();
        return;
      }
      break;
    case Op::Einsum:
      out += " " + quoteString(a.str);
      rest.str.clear();
      break;
    case Op::Call:
    case Op::Grad:
      out += " @" + (isBareName(a.str) ? a.str : quoteString(a.str)) + "(" + operands(in) + ")";
      rest.str.clear();
      if (in.op == Op::Grad) {
        out += " wrt " + intList(a.ints);
        rest.ints.clear();
        if (a.flag)
          out += " value_and_grad";
        rest.flag = false;
      }
      return;
    case Op::For:
      // Run-time bounds (flag): `for %lo to %hi step 1 iter(...)`.
      if (a.flag && a.ints.size() == 3 && in.operands.size() >= 2) {
        out += " " + use(in.operands[0]) + " to " + use(in.operands[1]) + " step " +
               std::to_string(a.ints[2]);
        rest.ints.clear();
        rest.flag = false;
        out += " iter(" + operands(in, 2) + ")";
        return;
      }
      if (a.ints.size() == 3) {
        out += " " + std::to_string(a.ints[0]) + " to " + std::to_string(a.ints[1]) + " step " +
               std::to_string(a.ints[2]);
        rest.ints.clear();
      }
      out += " iter(" + operands(in) + ")";
      return;
    case Op::Print:
      spaced(operands(in));
      out += " " + quoteString(a.str);
      rest.str.clear();
      return;
    default:
      break;
    }
    spaced(operands(in));
    switch (in.op) {
    case Op::Iota:
    case Op::IndexSelect:
    case Op::IndexAdd:
      if (a.ints.size() == 1) {
        out += " dim " + std::to_string(a.ints[0]);
        rest.ints.clear();
      }
      break;
    case Op::Cumsum:
      if (a.ints.size() == 1) {
        out += " dim " + std::to_string(a.ints[0]);
        rest.ints.clear();
      }
      if (a.flag)
        out += " reverse";
      rest.flag = false;
      break;
    case Op::ReduceSum:
    case Op::ReduceMax:
    case Op::ReduceMin:
      out += " dims " + intList(a.ints);
      rest.ints.clear();
      break;
    case Op::Transpose:
      out += " perm " + intList(a.ints);
      rest.ints.clear();
      break;
    default:
      if (opInfo(in.op).cls == OpClass::Collective) {
        out += " axes " + intList(a.ints);
        rest.ints.clear();
        if (in.op == Op::SliceGather) {
          out += " from " + std::to_string(sliceOffset(a));
          rest.floats.clear();
        }
      }
      break;
    }
  }

  static void genericAttrs(const Attrs &r, std::string &out) {
    if (r == Attrs{})
      return;
    std::string parts;
    auto add = [&](const std::string &s) { parts += (parts.empty() ? "" : ", ") + s; };
    if (!r.ints.empty())
      add("ints " + intList(r.ints));
    if (!r.floats.empty())
      add("floats " + floatList(r.floats));
    if (!r.str.empty())
      add("str " + quoteString(r.str));
    if (r.flag)
      add("flag");
    out += " attrs{" + parts + "}";
  }

  void region(const Block &b, int indent, std::string &out) const {
    out += " {\n";
    if (!b.args.empty()) {
      out.append(indent + 2, ' ');
      out += "^(";
      for (size_t i = 0; i < b.args.size(); ++i)
        out += (i ? ", " : "") + typedDef(b.args[i]);
      out += "):\n";
    }
    block(b, indent + 2, out);
    out.append(indent, ' ');
    out += "}";
  }

  void block(const Block &b, int indent, std::string &out) const {
    for (auto &in : b.insts) {
      inst(in, indent, out);
      out += "\n";
    }
  }

  void function(std::string &out) const {
    out += "func @" + (isBareName(f_.name) ? f_.name : quoteString(f_.name)) + "(";
    for (size_t i = 0; i < f_.params.size(); ++i)
      out += (i ? ", " : "") + typedDef(f_.params[i]);
    out += ")";
    if (!f_.results.empty()) {
      out += " -> (";
      for (size_t i = 0; i < f_.results.size(); ++i)
        out += (i ? ", " : "") + printType(f_.results[i]);
      out += ")";
    }
    if (opts_.locs && f_.loc.known())
      out += locStr(f_.loc);
    out += " {\n";
    if (!f_.body.args.empty() && f_.body.args != f_.params) {
      // The body's arguments are the parameters by convention; say so when not.
      out += "  ^(";
      for (size_t i = 0; i < f_.body.args.size(); ++i)
        out += (i ? ", " : "") + typedDef(f_.body.args[i]);
      out += "):\n";
    }
    block(f_.body, 2, out);
    out += "}\n";
  }

private:
  const Function &f_;
  const PrintOptions &opts_;
};

} // namespace

std::string printDouble(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

std::string quoteString(const std::string &s) {
  static const char *hex = "0123456789abcdef";
  std::string r = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += (char)c;
    } else if (c == '\n') {
      r += "\\n";
    } else if (c == '\t') {
      r += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      r += "\\x";
      r += hex[c >> 4];
      r += hex[c & 15];
    } else {
      r += (char)c;
    }
  }
  return r + "\"";
}

std::string printType(const TensorType &t) {
  if (!t.mesh && t.placements.empty())
    return t.str();
  if (t.mesh && t.placements.size() == t.mesh->axes.size())
    return t.str();
  std::string r = std::string(dtypeName(t.dtype)) + shapeStr(t.shape) + " @ " +
                  (t.mesh ? t.mesh->name : std::string("?")) + "{";
  for (size_t i = 0; i < t.placements.size(); ++i) {
    bool named = t.mesh && i < t.mesh->axes.size();
    r += (i ? ", " : "") + (named ? t.mesh->axes[i].name : std::string("?")) + ": " +
         t.placements[i].str();
  }
  return r + "}";
}

std::string printInst(const Function &f, const Inst &inst, const PrintOptions &opts, int indent) {
  std::string out;
  Printer(f, opts).inst(inst, indent, out);
  return out;
}

std::string printFunction(const Function &f, const PrintOptions &opts) {
  std::string out;
  Printer(f, opts).function(out);
  return out;
}

std::string printModule(const Module &m, const PrintOptions &opts) {
  std::string out;
  for (auto &mesh : m.meshes)
    out += "mesh " + mesh->str() + "\n";
  for (auto &f : m.functions) {
    if (!out.empty())
      out += "\n";
    out += printFunction(f, opts);
  }
  return out;
}

} // namespace dt
