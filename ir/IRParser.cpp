// This file implements the IR text parser (see IRParser.h).
#include "ir/IRParser.h"

#include "ir/Collectives.h"

#include "ir/IRTextCursor.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

namespace dt {

namespace {

constexpr int64_t kMaxValueId = 1 << 20;  ///< bounds the values vector a text can ask for
constexpr int64_t kMaxMeshSize = 1 << 20; ///< bounds the identity device list

using namespace irtext;

class Parser : public TextCursor {
public:
  Parser(const std::string &t, Module &m) : TextCursor(t), m_(m) {}

  void module() {
    for (;;) {
      ws();
      if (eof())
        return;
      size_t at = p_;
      std::string kw = ident("`mesh` or `func`");
      if (kw == "mesh")
        mesh();
      else if (kw == "func")
        function();
      else
        failAt(at, "expected `mesh` or `func`, got `" + kw + "`");
    }
  }

  void typeOnly(TensorType &t) {
    t = type();
    ws();
    if (!eof())
      fail("unexpected text after the type");
  }

private:
  // --- meshes and types ----------------------------------------------------------
  void mesh() {
    auto m = std::make_shared<Mesh>();
    size_t at = (ws(), p_);
    m->name = ident("a mesh name");
    if (m_.findMesh(m->name))
      failAt(at, "mesh `" + m->name + "` is defined twice");
    expect('=');
    expect('[');
    int64_t size = 1;
    do {
      MeshAxis a;
      a.name = ident("a mesh axis name");
      if (m->axisIndex(a.name) >= 0)
        fail("mesh axis `" + a.name + "` is listed twice");
      expect('=');
      a.size = integer();
      if (a.size < 1)
        fail("mesh axis `" + a.name + "` must have a positive size");
      size *= a.size;
      if (size > kMaxMeshSize)
        fail("mesh has more than " + std::to_string(kMaxMeshSize) + " devices");
      m->axes.push_back(a);
    } while (accept(','));
    expect(']');
    if (acceptKeyword("devices")) {
      m->devices = intList();
      if ((int64_t)m->devices.size() != size)
        fail("mesh `" + m->name + "` has " + std::to_string(size) + " devices in its shape but " +
             std::to_string(m->devices.size()) + " device ids");
    } else {
      for (int64_t i = 0; i < size; ++i)
        m->devices.push_back(i);
    }
    m_.meshes.push_back(m);
  }

  Placement placement(const TensorType &) {
    std::string k = ident("a placement");
    if (k == "replicate")
      return Placement::replicate();
    if (k == "shard") {
      expect('(');
      int64_t d = integer();
      if (d < 0 || d > 1 << 20)
        fail("shard dim out of range");
      int64_t order = 0;
      if (accept(',')) {
        std::string kw = ident("`order`");
        if (kw != "order")
          fail("expected `order=` in `shard(dim, order=k)`");
        expect('=');
        order = integer();
        if (order < 0 || order > 1 << 20)
          fail("shard order out of range");
      }
      expect(')');
      return Placement::shard((int)d, (int)order);
    }
    if (k == "partial") {
      expect('(');
      std::string op = ident("a reduce op");
      auto r = parseReduceOp(op);
      if (!r)
        fail("unknown reduce op `" + op + "`");
      expect(')');
      return Placement::partial(*r);
    }
    fail("unknown placement `" + k + "`");
  }

  TensorType type() {
    TensorType t;
    size_t at = (ws(), p_);
    std::string dt = ident("a type");
    auto d = parseDType(dt);
    if (!d)
      failAt(at, "unknown element type `" + dt + "`");
    t.dtype = *d;
    expect('[');
    if (!accept(']')) {
      do {
        if (atIdent()) {
          t.shape.push_back(Dim::symbol(ident("a size")));
        } else {
          int64_t v = integer();
          if (v < 0)
            fail("negative dim size");
          t.shape.push_back(Dim::lit(v));
        }
      } while (accept(','));
      expect(']');
    }
    if (!accept('@'))
      return t;
    at = (ws(), p_);
    std::string mn = ident("a mesh name");
    t.mesh = m_.findMesh(mn);
    if (!t.mesh)
      failAt(at, "unknown mesh `" + mn + "`");
    expect('{');
    std::vector<bool> seen(t.mesh->axes.size(), false);
    t.placements.assign(t.mesh->axes.size(), Placement::replicate());
    if (!accept('}')) {
      do {
        at = (ws(), p_);
        std::string ax = ident("a mesh axis");
        int i = t.mesh->axisIndex(ax);
        if (i < 0)
          failAt(at, "mesh `" + mn + "` has no axis `" + ax + "`");
        if (seen[i])
          failAt(at, "mesh axis `" + ax + "` appears twice");
        seen[i] = true;
        expect(':');
        t.placements[i] = placement(t);
      } while (accept(','));
      expect('}');
    }
    for (size_t i = 0; i < seen.size(); ++i)
      if (!seen[i])
        fail("layout does not name mesh axis `" + t.mesh->axes[i].name + "`");
    // `order=` is printed on a group only when it differs from mesh order;
    // orders given on some members only rank them as written
    canonicalizeShardOrder(t.placements);
    return t;
  }

  // --- values --------------------------------------------------------------------
  int valueId() {
    ws();
    size_t at = p_;
    if (!accept('%'))
      fail("expected a value `%N`" + got());
    if (!std::isdigit((unsigned char)peekc()))
      fail("expected a value number after `%`");
    int64_t id = integer();
    if (id >= kMaxValueId)
      failAt(at, "value id %" + std::to_string(id) + " is too large");
    return (int)id;
  }
  int use() {
    size_t at = (ws(), p_);
    int id = valueId();
    uses_.push_back({id, at});
    return id;
  }
  /// `%N` or `%N:name` (the name touches the colon) at a definition.
  int def(const TensorType *t = nullptr) {
    size_t at = (ws(), p_);
    int id = valueId();
    if (defs_.count(id))
      failAt(at, "value %" + std::to_string(id) + " is defined twice");
    std::string name;
    if (peekc() == ':' && p_ + 1 < s_.size() && (identChar(s_[p_ + 1]) || s_[p_ + 1] == '"')) {
      ++p_;
      if (peekc() == '"')
        name = str();
      else
        while (!eof() && identChar(s_[p_]))
          name += s_[p_++];
    }
    defs_[id] = {t ? *t : TensorType{}, name};
    return id;
  }
  int typedDef() {
    int id = def();
    expect(':');
    defs_[id].type = type();
    return id;
  }
  /// True if the cursor starts `%a, %b =` (the results of the next instruction);
  /// a pure scan that consumes nothing.
  bool atDefs() {
    size_t save = p_;
    bool r = false;
    for (;;) {
      ws();
      if (peekc() != '%')
        break;
      ++p_;
      if (!std::isdigit((unsigned char)peekc()))
        break;
      while (std::isdigit((unsigned char)peekc()))
        ++p_;
      if (peekc() == ':' && p_ + 1 < s_.size() && identChar(s_[p_ + 1])) {
        ++p_;
        while (!eof() && identChar(s_[p_]))
          ++p_;
      } else if (peekc() == ':' && p_ + 1 < s_.size() && s_[p_ + 1] == '"') {
        ++p_;
        try {
          str();
        } catch (ParseError &) {
          break;
        }
      }
      if (accept(','))
        continue;
      r = peek() == '=';
      break;
    }
    p_ = save;
    return r;
  }
  std::vector<int> operands() {
    std::vector<int> r;
    if (peek() != '%' || atDefs())
      return r;
    do
      r.push_back(use());
    while (accept(','));
    return r;
  }

  // --- instructions ---------------------------------------------------------------
  SrcLoc loc() {
    SrcLoc l;
    expect('(');
    int64_t a = integer();
    if (accept('/')) {
      l.file = (int)a;
      a = integer();
    }
    l.line = (int)a;
    expect(':');
    l.col = (int)integer();
    if (accept('-'))
      l.endCol = (int)integer();
    expect(')');
    return l;
  }

  std::string calleeName() {
    expect('@');
    if (peek() == '"')
      return str();
    return ident("a function name");
  }

  void genericAttrs(Attrs &a) {
    expect('{');
    if (accept('}'))
      return;
    do {
      std::string k = ident("an attribute name");
      if (k == "ints")
        a.ints = intList();
      else if (k == "floats") {
        a.floats.clear();
        numbers(a.floats, 0);
      } else if (k == "str")
        a.str = str();
      else if (k == "flag")
        a.flag = true;
      else
        fail("unknown attribute `" + k + "`");
    } while (accept(','));
    expect('}');
  }

  void body(Inst &in) {
    Attrs &a = in.attrs;
    switch (in.op) {
    case Op::Const:
      numberTexts = &constTexts_;
      numbers(a.floats, 0);
      numberTexts = nullptr;
      in.operands = operands();
      return;
    case Op::Fill:
      numberTexts = &constTexts_;
      if (atNumber())
        a.floats = {number()};
      numberTexts = nullptr;
      return;
    case Op::Random:
      if (atIdent() && !atGenericAttrs()) {
        a.str = ident("a distribution");
        if (peek() == '%')
          in.operands.push_back(use()); // a run-time seed
        else
          a.ints = {integer()};
      }
      return;
    case Op::Einsum:
      a.str = str();
      break;
    case Op::Call:
    case Op::Grad:
      a.str = calleeName();
      expect('(');
      if (!accept(')')) {
        do
          in.operands.push_back(use());
        while (accept(','));
        expect(')');
      }
      if (in.op == Op::Grad) {
        keyword("wrt");
        a.ints = intList();
        a.flag = acceptKeyword("value_and_grad");
      }
      return;
    case Op::For:
      if (peek() == '%') { // run-time bounds
        in.operands.push_back(use());
        keyword("to");
        in.operands.push_back(use());
        keyword("step");
        a.ints = {0, 0, integer()};
        a.flag = true;
      } else if (!(peekIdent() == "iter")) {
        int64_t lo = integer();
        keyword("to");
        int64_t hi = integer();
        keyword("step");
        a.ints = {lo, hi, integer()};
      }
      keyword("iter");
      expect('(');
      if (!accept(')')) {
        do
          in.operands.push_back(use());
        while (accept(','));
        expect(')');
      }
      return;
    case Op::Print:
      in.operands = operands();
      a.str = str();
      return;
    default:
      break;
    }
    in.operands = operands();
    switch (in.op) {
    case Op::Iota:
    case Op::IndexSelect:
    case Op::IndexAdd:
      if (acceptKeyword("dim"))
        a.ints = {integer()};
      break;
    case Op::Cumsum:
      if (acceptKeyword("dim"))
        a.ints = {integer()};
      a.flag = acceptKeyword("reverse");
      break;
    case Op::ReduceSum:
    case Op::ReduceMax:
    case Op::ReduceMin:
      keyword("dims");
      a.ints = intList();
      break;
    case Op::Transpose:
      keyword("perm");
      a.ints = intList();
      break;
    default:
      if (opInfo(in.op).cls == OpClass::Collective) {
        keyword("axes");
        a.ints = intList();
        if (in.op == Op::SliceGather) {
          keyword("from");
          a.floats = {(double)integer()};
        }
      }
      break;
    }
  }

  bool atGenericAttrs() {
    if (peekIdent() != "attrs")
      return false;
    size_t save = p_;
    p_ += 5;
    bool r = peek() == '{';
    p_ = save;
    return r;
  }

  /// Integer Const/Fill: the values parsed as doubles are re-read exactly
  /// from their text into `ints` (Attrs: integer constants live there).
  void exactIntConst(Inst &in, size_t at) {
    if ((in.op != Op::Const && in.op != Op::Fill) || in.results.size() != 1 ||
        !constInInts(defs_[in.results[0]].type.dtype) || in.attrs.floats.empty())
      return;
    in.attrs.ints.clear();
    for (const std::string &t : constTexts_) {
      int64_t v = 0;
      auto r = std::from_chars(t.data(), t.data() + t.size(), v);
      if (r.ec != std::errc() || r.ptr != t.data() + t.size())
        failAt(at, "`" + t + "` is not an integer of `" +
                       dtypeName(defs_[in.results[0]].type.dtype) + "`");
      in.attrs.ints.push_back(v);
    }
    in.attrs.floats.clear();
  }

  Inst inst(int depth) {
    Inst in;
    constTexts_.clear();
    if (peek() == '%') {
      do
        in.results.push_back(def());
      while (accept(','));
      expect('=');
    }
    size_t at = (ws(), p_);
    std::string name = ident("an op name");
    if (!parseOpName(name, in.op))
      failAt(at, "unknown op `" + name + "`");
    body(in);
    if (atGenericAttrs()) {
      p_ += 5;
      genericAttrs(in.attrs);
    }
    while (peek() == '{')
      in.regions.push_back(region(depth + 1));
    if (!in.results.empty()) {
      expect(':');
      for (size_t i = 0; i < in.results.size(); ++i) {
        if (i)
          expect(',');
        defs_[in.results[i]].type = type();
      }
      exactIntConst(in, at);
    }
    if (acceptKeyword("loc"))
      in.loc = loc();
    return in;
  }

  void blockArgs(Block &b) {
    expect('(');
    if (!accept(')')) {
      do
        b.args.push_back(typedDef());
      while (accept(','));
      expect(')');
    }
    expect(':');
  }

  void insts(Block &b, int depth) {
    while (peek() != '}') {
      if (eof())
        fail("missing `}`");
      b.insts.push_back(inst(depth));
    }
    ++p_;
  }

  Block region(int depth) {
    if (depth > kMaxDepth)
      fail("regions nest deeper than " + std::to_string(kMaxDepth));
    Block b;
    expect('{');
    if (accept('^'))
      blockArgs(b);
    insts(b, depth);
    return b;
  }

  void function() {
    defs_.clear();
    uses_.clear();
    Function f;
    size_t at = (ws(), p_);
    f.name = calleeName();
    if (m_.find(f.name))
      failAt(at, "function `@" + f.name + "` is defined twice");
    expect('(');
    if (!accept(')')) {
      do
        f.params.push_back(typedDef());
      while (accept(','));
      expect(')');
    }
    if (acceptStr("->")) {
      expect('(');
      if (!accept(')')) {
        do
          f.results.push_back(type());
        while (accept(','));
        expect(')');
      }
    }
    if (acceptKeyword("loc"))
      f.loc = loc();
    expect('{');
    if (accept('^'))
      blockArgs(f.body);
    else
      f.body.args = f.params;
    insts(f.body, 0);
    int maxId = -1;
    for (auto &[id, v] : defs_)
      maxId = std::max(maxId, id);
    for (auto &[id, pos] : uses_) {
      if (!defs_.count(id))
        failAt(pos, "use of undefined value %" + std::to_string(id));
    }
    f.values.resize((size_t)(maxId + 1));
    for (int i = 0; i <= maxId; ++i)
      f.values[i].id = i;
    for (auto &[id, v] : defs_) {
      f.values[id].type = v.type;
      f.values[id].name = v.name;
    }
    m_.functions.push_back(std::move(f));
  }

  struct DefInfo {
    TensorType type;
    std::string name;
  };
  Module &m_;
  std::map<int, DefInfo> defs_;
  std::vector<std::string> constTexts_; ///< number texts of the Const/Fill being parsed
  std::vector<std::pair<int, size_t>> uses_;
};

} // namespace

bool parseIR(const std::string &text, Module &out, std::string &err) {
  Parser p(text, out);
  try {
    p.module();
    return true;
  } catch (ParseError &e) {
    err = p.where(e.pos) + ": " + e.msg;
    return false;
  }
}

bool parseTypeText(const std::string &text, const Module &m, TensorType &out, std::string &err) {
  Module tmp;
  tmp.meshes = m.meshes;
  Parser p(text, tmp);
  try {
    p.typeOnly(out);
    return true;
  } catch (ParseError &e) {
    err = p.where(e.pos) + ": " + e.msg;
    return false;
  }
}

} // namespace dt
