// Benchmark: deterministic mode (`--deterministic`, docs/language.md) against
// the default mode on the same programs, in one run: time per run of the
// program (best of `reps` after a warm-up run that compiles the kernels) and
// the ratio default / deterministic (>= 0.8 is the target: deterministic at
// least 0.8x the default speed). The programs:
//   * mlp_tp   examples/mlp_tp.dt scaled to B x D x H x C, 2x2 mesh (data
//              and tensor parallel: sharded contractions, partial gradients);
//   * mlp_1x1  the same on one rank (matmul kernel and sequential reductions);
//   * fsdp     examples/fsdp.dt scaled, 4 ranks (gathered weights, gradients
//              reduce-scattered);
//   * reduce   sums and softmax over a row-sharded [R, K] matrix, 4 ranks;
//   * sums     a layer norm's row sums, a bias-gradient column sum and a
//              full-sum loss over the same matrix, one rank.
// Prints the load averages before and after (the machine is shared).
// Not a timed test.
//
// usage: deterministic_bench [B D H C] [steps] [reps]   (default 512 256 512 128, 3, 3)
#include "BenchUtil.h"
#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "runtime/Executor.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

using namespace dt;
using dt::bench::best;

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string loadavg() {
  std::string s = readFile("/proc/loadavg");
  return s.substr(0, s.find(' ', s.find(' ', s.find(' ') + 1) + 1));
}

/// An example resized: D/H/C, its 32 examples -> `b`, its 20 steps -> `steps`,
/// its mesh declaration -> `mesh`.
std::string scaled(std::string text, const std::string &meshDecl, int64_t b, int64_t d, int64_t h,
                   int64_t c, int steps) {
  auto n = [](int64_t v) { return std::to_string(v); };
  text = std::regex_replace(text, std::regex("let D = 8"), "let D = " + n(d));
  text = std::regex_replace(text, std::regex("let H = 16"), "let H = " + n(h));
  text = std::regex_replace(text, std::regex("let C = 4"), "let C = " + n(c));
  text = std::regex_replace(text, std::regex("f32\\[32, D\\]"), "f32[" + n(b) + ", D]");
  text = std::regex_replace(text, std::regex("\\[32, 1\\]"), "[" + n(b) + ", 1]");
  text =
      std::regex_replace(text, std::regex("for step in 0\\.\\.20"), "for step in 0.." + n(steps));
  text = std::regex_replace(text, std::regex("\\nmesh [a-z]+ = \\[[^\\]]*\\]"), "\n" + meshDecl);
  return text;
}

/// Seconds per run of `text` (best of `reps`, after a warm-up run).
double timeProgram(const std::string &text, bool deterministic, int reps, std::string &printed) {
  CompileOptions co;
  co.deterministic = deterministic;
  co.stdlibPaths.push_back(DT_SOURCE_DIR "/stdlib");
  Compilation c(pipelineCompileOptions(co));
  if (!c.compile("bench.dt", text)) {
    std::fprintf(stderr, "%s", c.diags.renderAll().c_str());
    std::exit(1);
  }
  PipelineOptions po;
  po.spmd = true;
  std::ostringstream log;
  auto prog = compileProgram(c, po, log);
  if (!prog) {
    std::fprintf(stderr, "%s", c.diags.renderAll().c_str());
    std::exit(1);
  }
  std::ostringstream out;
  Executor ex(prog->module(), out);
  ex.run("main", {}); // compiles the kernels
  printed = out.str();
  return best(reps, [&] { ex.run("main", {}); });
}

} // namespace

int main(int argc, char **argv) {
  int64_t b = 512, d = 256, h = 512, c = 128;
  int steps = 3, reps = 3;
  if (argc >= 5) {
    b = std::atoll(argv[1]), d = std::atoll(argv[2]), h = std::atoll(argv[3]);
    c = std::atoll(argv[4]);
  }
  if (argc >= 6)
    steps = std::atoi(argv[5]);
  if (argc >= 7)
    reps = std::atoi(argv[6]);
  std::string mlp = readFile(DT_SOURCE_DIR "/examples/mlp_tp.dt");
  std::string fsdp = readFile(DT_SOURCE_DIR "/examples/fsdp.dt");
  int64_t rows = b * 8, cols = d * 4;
  auto n = [](int64_t v) { return std::to_string(v); };
  std::string reduce = "import nn\nmesh m = [x = 4]\nlet a : f32[" + n(rows) + ", " + n(cols) +
                       "] @ m[x, _] = randn(seed=1)\nvar acc : f32[" + n(cols) +
                       "] @ m[_] = zeros()\nfor i in 0.." + n(steps * 3) +
                       " {\n  let s = relayout(sum(a * a, dim=0), m[_])\n"
                       "  let p = relayout(sum(nn.softmax(a), dim=0), m[_])\n"
                       "  acc = acc + s + p\n}\nprint(relayout(sum(acc), m[]))\n";
  // One rank, the sums a training step ends in: a layer norm over rows (sums
  // over the last dim, with a broadcast operand), a bias gradient (a sum
  // over rows) and a full-sum loss.
  std::string sums =
      "import nn\nmesh m = [x = 1]\nlet a : f32[" + n(rows) + ", " + n(cols) +
      "] @ m[_, _] = randn(seed=1)\nlet g : f32[" + n(cols) + "] @ m[_] = ones()\nlet z : f32[" +
      n(cols) + "] @ m[_] = zeros()\nvar acc : f32[" + n(cols) +
      "] @ m[_] = zeros()\nvar loss : f32[] @ m[] = zeros()\nfor i in 0.." + n(steps * 3) +
      " {\n  let y = nn.layer_norm(a, g, z)\n"
      "  acc = acc + sum(y, dim=0)\n  loss = loss + sum(y * y)\n}\n"
      "print(sum(acc) + loss)\n";
  struct Case {
    const char *name;
    std::string text;
  } cases[] = {
      {"mlp_tp 2x2", scaled(mlp, "mesh m = [dp = 2, tp = 2]", b, d, h, c, steps)},
      {"mlp_tp 1x1", scaled(mlp, "mesh m = [dp = 1, tp = 1]", b, d, h, c, steps)},
      {"fsdp 4", scaled(fsdp, "mesh f = [dp = 4]", b, d, h, c, steps)},
      {"reduce 4", reduce},
      {"sums 1", sums},
  };
  std::printf("deterministic vs default mode: B=%lld D=%lld H=%lld C=%lld, %d steps, best of %d\n",
              (long long)b, (long long)d, (long long)h, (long long)c, steps, reps);
  std::printf("load average before: %s\n", loadavg().c_str());
  std::printf("%-12s %12s %16s %8s\n", "program", "default ms", "deterministic ms", "ratio");
  for (auto &k : cases) {
    std::string p0, p1;
    double t0 = timeProgram(k.text, false, reps, p0);
    double t1 = timeProgram(k.text, true, reps, p1);
    std::printf("%-12s %12.1f %16.1f %7.2fx\n", k.name, t0 * 1e3, t1 * 1e3, t0 / t1);
  }
  std::printf("load average after: %s\n", loadavg().c_str());
  std::printf("(ratio = default time / deterministic time; target >= 0.8)\n");
  return 0;
}
