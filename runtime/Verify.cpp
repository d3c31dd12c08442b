// This file implements differential verification helpers (see Verify.h).
#include "runtime/Verify.h"

#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "runtime/Format.h"
#include "runtime/RefKernels.h"
#include "runtime/Reference.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

namespace dt {

std::string parseMeshOverride(const std::string &text, MeshOverride &out) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    return "expected NAME=[a,b,...], got `" + text + "`";
  out.mesh = text.substr(0, eq);
  std::string rest = text.substr(eq + 1);
  if (rest.size() < 2 || rest.front() != '[' || rest.back() != ']')
    return "expected NAME=[a,b,...], got `" + text + "`";
  out.sizes.clear();
  std::stringstream ss(rest.substr(1, rest.size() - 2));
  std::string item;
  while (std::getline(ss, item, ',')) {
    char *end = nullptr;
    errno = 0;
    long long v = std::strtoll(item.c_str(), &end, 10);
    while (end && *end == ' ')
      ++end;
    if (!end || *end || item.find_first_not_of(' ') == std::string::npos)
      return "bad axis size `" + item + "` in `" + text + "`";
    if (errno == ERANGE || v < 1)
      return "axis size `" + item + "` in `" + text + "` is not a positive 64-bit integer";
    out.sizes.push_back(v);
  }
  if (out.sizes.empty())
    return "no axis sizes in `" + text + "`";
  return "";
}

std::string applyMeshOverride(std::string &text, const MeshOverride &o) {
  std::regex decl("\\bmesh\\s+" + o.mesh +
                  "\\s*=\\s*\\[([^\\]]*)\\](\\s*devices\\s*\\[[^\\]]*\\])?");
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string line = text.substr(pos, end - pos);
    std::string code = line.substr(0, line.find('#'));
    std::smatch mt;
    if (std::regex_search(code, mt, decl)) {
      std::vector<std::string> names;
      std::stringstream ss(mt[1].str());
      for (std::string item; std::getline(ss, item, ',');) {
        auto eq = item.find('=');
        if (eq == std::string::npos)
          return "cannot read the axes of mesh `" + o.mesh + "`";
        std::string n = item.substr(0, eq);
        n.erase(0, n.find_first_not_of(" \t"));
        n.erase(n.find_last_not_of(" \t") + 1);
        names.push_back(n);
      }
      if (names.size() != o.sizes.size())
        return "mesh `" + o.mesh + "` has " + std::to_string(names.size()) +
               (names.size() == 1 ? " axis" : " axes") + ", the override gives " +
               std::to_string(o.sizes.size()) + " sizes";
      std::string repl = "mesh " + o.mesh + " = [";
      for (size_t i = 0; i < names.size(); ++i) {
        if (o.sizes[i] < 1)
          return "mesh axis sizes must be at least 1";
        repl += (i ? ", " : "") + names[i] + " = " + std::to_string(o.sizes[i]);
      }
      repl += "]"; // devices become 0..n-1
      line = code.substr(0, mt.position(0)) + repl + line.substr(mt.position(0) + mt.length(0));
      text = text.substr(0, pos) + line + text.substr(end);
      return "";
    }
    pos = end + 1;
  }
  return "the program declares no mesh `" + o.mesh + "` on one line";
}

namespace {

struct Tol {
  double rtol, atol;
};

Tol tolerance(DType dt) {
  switch (dt) {
  case DType::F32:
    return {1e-4, 1e-5};
  case DType::F64:
    return {1e-10, 1e-10};
  case DType::BF16: // 8 significant bits: one rounding is 2^-9 relative
    return {2e-2, 1e-2};
  case DType::F16: // 11 significant bits
    return {4e-3, 1e-3};
  default:
    return {0, 0};
  }
}

/// Folds one element pair into `c`.
void compareElem(double a, double r, Tol tol, OutputCheck &c) {
  if (std::isnan(a) || std::isnan(r)) {
    if (std::isnan(a) != std::isnan(r)) {
      c.pass = false;
      c.maxAbs = INFINITY;
    }
    return;
  }
  if (std::isinf(a) || std::isinf(r)) {
    if (a != r) {
      c.pass = false;
      c.maxAbs = INFINITY;
    }
    return;
  }
  double d = std::fabs(a - r);
  c.maxAbs = std::max(c.maxAbs, d);
  // Relative to references that are not (nearly) zero: next to 0 the
  // absolute tolerance decides, and a quotient there says nothing.
  if (d > 0 && r != 0 && std::fabs(r) >= tol.atol)
    c.maxRel = std::max(c.maxRel, d / std::fabs(r));
  if (d > tol.atol + tol.rtol * std::fabs(r))
    c.pass = false;
}

/// Tokens of a formatted tensor: numbers, `true`, `false`, `nan`, `inf`, `...`.
std::vector<std::string> tokens(const std::string &s) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == '[' || ch == ']' || ch == ',' || ch == ' ' || ch == '\n') {
      if (!cur.empty())
        out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty())
    out.push_back(cur);
  return out;
}

double tokenValue(const std::string &t, bool &ok) {
  ok = true;
  if (t == "true")
    return 1;
  if (t == "false")
    return 0;
  if (t == "nan" || t == "-nan")
    return NAN;
  if (t == "inf")
    return INFINITY;
  if (t == "-inf")
    return -INFINITY;
  char *end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  ok = end && !*end;
  return v;
}

/// Compares printed text with the reference's, token by token: numbers
/// within `tol` (token k within `tols[k]` where given), anything else
/// exactly.
OutputCheck compareText(const std::string &what, const std::string &ref, const std::string &text,
                        Tol tol, const std::vector<Tol> &tols = {}) {
  OutputCheck c;
  c.what = what;
  auto a = tokens(text), r = tokens(ref);
  if (a.size() != r.size()) {
    c.pass = false;
    c.note = "printed `" + text + "`, the reference printed `" + ref + "`";
    return c;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == "..." || r[i] == "...") {
      if (a[i] != r[i])
        c.pass = false;
      continue;
    }
    bool oka = false, okr = false;
    double va = tokenValue(a[i], oka), vr = tokenValue(r[i], okr);
    if (!oka || !okr) {
      c.pass &= a[i] == r[i];
      continue;
    }
    compareElem(va, vr, i < tols.size() ? tols[i] : tol, c);
  }
  if (!c.pass && c.note.empty() && text.size() < 200 && ref.size() < 200)
    c.note = "printed `" + text + "`, the reference printed `" + ref + "`";
  return c;
}

OutputCheck compareText(const std::string &what, const std::string &ref, const HostTensor &got) {
  OutputCheck c = compareText(what, ref, formatTensor(got), tolerance(got.dtype));
  c.type = std::string(dtypeName(got.dtype)) + ref::dimsStr(got.shape);
  return c;
}

OutputCheck compareTensors(const std::string &what, const HostTensor &ref, const HostTensor &got) {
  OutputCheck c;
  c.what = what;
  c.type = std::string(dtypeName(got.dtype)) + ref::dimsStr(got.shape);
  if (ref.dtype != got.dtype || ref.shape != got.shape) {
    c.pass = false;
    c.note =
        "the reference returned " + std::string(dtypeName(ref.dtype)) + ref::dimsStr(ref.shape);
    return c;
  }
  Tol tol = tolerance(got.dtype);
  for (int64_t i = 0; i < got.numel(); ++i)
    compareElem(got.get(i), ref.get(i), tol, c);
  return c;
}

std::string fmt(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

} // namespace

std::vector<OutputCheck> compareOutputs(const std::string &refPrinted,
                                        const std::vector<HostTensor> &refResults,
                                        const std::vector<PrintedValue> &printed,
                                        const std::vector<HostTensor> &results) {
  std::vector<OutputCheck> out;
  std::vector<std::string> lines;
  std::stringstream ss(refPrinted);
  for (std::string l; std::getline(ss, l);)
    lines.push_back(l);
  size_t n = std::max(lines.size(), printed.size());
  for (size_t i = 0; i < n; ++i) {
    std::string what = "print #" + std::to_string(i + 1);
    if (i < printed.size() && !printed[i].label.empty())
      what += " `" + printed[i].label + "`";
    if (i >= printed.size() || i >= lines.size()) {
      OutputCheck c;
      c.what = what;
      c.pass = false;
      c.note =
          i >= printed.size() ? "only the reference printed it" : "the reference did not print it";
      out.push_back(c);
      continue;
    }
    if (!printed[i].isLine) {
      out.push_back(compareText(what, lines[i], printed[i].value));
      continue;
    }
    // A line of several items: compared token by token, each value's
    // numbers at its own dtype's tolerance (found in order among the line's
    // tokens, past the labels); a number of a label at f32's.
    std::vector<std::string> lineTokens = tokens(printed[i].line);
    std::vector<Tol> tols(lineTokens.size(), tolerance(DType::F32));
    size_t at = 0;
    for (const HostTensor &v : printed[i].lineValues) {
      std::vector<std::string> own = tokens(formatTensor(v));
      if (own.empty())
        continue;
      for (size_t p = at; p + own.size() <= lineTokens.size(); ++p)
        if (std::equal(own.begin(), own.end(), lineTokens.begin() + (std::ptrdiff_t)p)) {
          std::fill(tols.begin() + (std::ptrdiff_t)p,
                    tols.begin() + (std::ptrdiff_t)(p + own.size()), tolerance(v.dtype));
          at = p + own.size();
          break;
        }
    }
    out.push_back(compareText(what, lines[i], printed[i].line, tolerance(DType::F32), tols));
  }
  for (size_t i = 0; i < std::max(refResults.size(), results.size()); ++i) {
    std::string what = "result " + std::to_string(i) + " of main";
    if (i >= refResults.size() || i >= results.size()) {
      OutputCheck c;
      c.what = what;
      c.pass = false;
      c.note = "the runs return different numbers of values";
      out.push_back(c);
      continue;
    }
    out.push_back(compareTensors(what, refResults[i], results[i]));
  }
  return out;
}

bool allPass(const std::vector<OutputCheck> &checks) {
  for (auto &c : checks)
    if (!c.pass)
      return false;
  return true;
}

std::string formatChecks(const std::vector<OutputCheck> &checks) {
  std::string out;
  int bad = 0;
  for (auto &c : checks) {
    out += std::string(c.pass ? "PASS " : "FAIL ") + c.what;
    if (!c.type.empty())
      out += ": " + c.type;
    out += ", max abs diff " + fmt(c.maxAbs) + ", max rel diff " + fmt(c.maxRel) + "\n";
    if (!c.note.empty())
      out += "  " + c.note + "\n";
    bad += c.pass ? 0 : 1;
  }
  if (bad == 0)
    out += "PASS (" + std::to_string(checks.size()) + " outputs)\n";
  else
    out += "FAIL (" + std::to_string(bad) + " of " + std::to_string(checks.size()) +
           " outputs differ)\n";
  return out;
}

VerifyResult verifyFile(const std::string &path, const std::vector<MeshOverride> &overrides,
                        int ranks, Backend *backend) {
  VerifyResult vr;
  std::string text;
  if (Compilation c; !c.readFile(path, text)) { // the reason, as `run` gives it
    vr.diagnostics = c.diags.renderAll();
    return vr;
  }
  return verifySource(path == "-" ? "<stdin>" : path, text, overrides, ranks, {}, backend);
}

VerifyResult verifySource(const std::string &path, std::string text,
                          const std::vector<MeshOverride> &overrides, int ranks,
                          const CompileOptions &options, Backend *backend) {
  VerifyResult vr;
  for (auto &o : overrides) {
    std::string why = applyMeshOverride(text, o);
    if (!why.empty())
      throw RuntimeFault("--mesh: " + why);
  }
  // One front end; the reference runs the global program, the executor the
  // per-rank one, both compiled from the same (unchanged) global module.
  Compilation c(pipelineCompileOptions(options));
  std::ostringstream log;
  bool ok = c.compile(path, text);
  std::shared_ptr<const CompiledProgram> ref, dist;
  if (ok) {
    PipelineOptions po;
    ref = compileProgram(c, po, log);
    po.spmd = true;
    if (backend && std::string(backend->name()) == "cuda")
      po.target = CodeTarget::Cuda; // kernels for every source, as Session::run
    dist = ref ? compileProgram(c, po, log) : nullptr;
  }
  vr.diagnostics += c.diags.renderAll();
  if (!ref || !dist)
    return vr;
  vr.compiled = true;
  std::ostringstream refOut, distOut;
  ReferenceEvaluator ev(ref->module(), refOut);
  ev.setMaxLoopTrips(options.maxLoopTrips);
  auto refResults = ev.run("main", {});
  ExecOptions eo{ranks, false, false};
  eo.maxLoopTrips = options.maxLoopTrips;
  std::unique_ptr<Executor> ex = backend ? std::make_unique<Executor>(*dist, *backend, distOut, eo)
                                         : std::make_unique<Executor>(dist->module(), distOut, eo);
  auto results = ex->run("main", {});
  vr.checks = compareOutputs(refOut.str(), refResults, ex->printed(), results);
  return vr;
}

RunOutputs runDistributed(const std::string &path, std::string text,
                          const std::vector<MeshOverride> &overrides, const CompileOptions &options,
                          bool jit) {
  RunOutputs r;
  for (auto &o : overrides) {
    std::string why = applyMeshOverride(text, o);
    if (!why.empty())
      throw RuntimeFault("--mesh: " + why);
  }
  Compilation c(pipelineCompileOptions(options));
  std::ostringstream log, out;
  std::shared_ptr<const CompiledProgram> dist;
  if (c.compile(path, text)) {
    PipelineOptions po;
    po.spmd = true;
    dist = compileProgram(c, po, log);
  }
  r.diagnostics = c.diags.renderAll();
  if (!dist)
    return r;
  r.compiled = true;
  ExecOptions eo;
  eo.jit = jit;
  Executor ex(dist->module(), out, eo);
  r.results = ex.run("main", {});
  r.printed = ex.printed();
  return r;
}

namespace {

std::string elementText(const HostTensor &t, int64_t i) {
  HostTensor one(t.dtype, {});
  size_t w = dtypeSize(t.dtype);
  std::memcpy(one.raw(), static_cast<const char *>(t.raw()) + i * w, w);
  uint64_t bits = 0;
  std::memcpy(&bits, one.raw(), std::min(w, sizeof bits));
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%0*llx", (int)(2 * w), (unsigned long long)bits);
  return formatTensor(one) + " (" + hex + ")";
}

std::string tensorBits(const HostTensor &a, const HostTensor &b) {
  if (a.dtype != b.dtype || a.shape != b.shape)
    return "dtype or shape differs";
  size_t w = dtypeSize(a.dtype);
  auto *pa = static_cast<const char *>(a.raw()), *pb = static_cast<const char *>(b.raw());
  for (int64_t i = 0; i < a.numel(); ++i)
    if (std::memcmp(pa + i * w, pb + i * w, w) != 0)
      return "element " + std::to_string(i) + ": " + elementText(a, i) + " vs " + elementText(b, i);
  return "";
}

} // namespace

std::string compareBits(const RunOutputs &a, const RunOutputs &b) {
  if (a.printed.size() != b.printed.size() || a.results.size() != b.results.size())
    return "the runs have different numbers of outputs";
  for (size_t i = 0; i < a.printed.size(); ++i) {
    auto &x = a.printed[i], &y = b.printed[i];
    std::string what = "print #" + std::to_string(i + 1);
    if (x.isLine != y.isLine)
      return what + ": differs";
    std::string d = x.isLine ? (x.line == y.line ? "" : "`" + x.line + "` vs `" + y.line + "`")
                             : tensorBits(x.value, y.value);
    if (!d.empty())
      return what + (x.isLine ? "" : " \"" + x.label + "\"") + ": " + d;
  }
  for (size_t i = 0; i < a.results.size(); ++i)
    if (auto d = tensorBits(a.results[i], b.results[i]); !d.empty())
      return "result " + std::to_string(i) + " of main: " + d;
  return "";
}

} // namespace dt
