// Differential tests of the CPU JIT (codegen/LLVMCodegen + codegen/CpuJIT)
// against the reference interpreter of the kernel IR: every op on every dtype
// over corner-case values, and random kernels (random DAGs of every op, every
// dtype, ranks 0..4, random shapes with size-0 dims, broadcasting and
// permuted strides, with and without reductions). Tolerance: ints and bools
// exactly; floats bitwise (NaNs of any payload count as equal) because the JIT
// calls the same libm functions as the interpreter with libcall simplification
// off; float *sums* within 2^-40 * sum|x| plus one f32 ulp (the JIT may
// reassociate the f64 accumulation). Every failure prints the kernel's seed.
#include "codegen/CpuJIT.h"
#include "codegen/KernelIR.h"
#include "support/Diagnostics.h"

#include "kernel_test_util.h"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <tuple>
#include <unistd.h>

using namespace dt;
using namespace dt::ktest;

TEST_CASE("kernel jit: every op on every dtype over corner-case values") {
  CpuJIT jit;
  std::mt19937_64 rng(1);
  const DType all[] = {DType::F32,  DType::F64,  DType::I32, DType::I64,
                       DType::Bool, DType::BF16, DType::F16};
  int tested = 0;
  for (int opi = 0; opi < kNumKOps; ++opi) {
    KOp op = (KOp)opi;
    if (op == KOp::Load || op == KOp::Const || op == KOp::Random || op == KOp::Iota)
      continue;
    for (DType t : all)
      for (DType to : all) {
        if (op != KOp::Cast && to != t)
          continue;
        auto built = oneNode(op, t, to);
        if (!built)
          continue; // not defined on this dtype
        Kernel &k = *built;
        INFO(printKernel(k));
        // Every pair of corner values (n = corners^arity, capped).
        Case c = makeCase(k, rng, /*cornerValues=*/true);
        CHECK(runAndCompare(jit, k, c) == "");
        ++tested;
      }
  }
  CHECK(tested > 80);
  MESSAGE("op/dtype kernels tested: " << tested);
}

TEST_CASE("kernel jit: random kernels match the interpreter") {
  CpuJIT jit;
  const int kKernels = 300;
  int reductions = 0, elementwise = 0;
  for (int s = 0; s < kKernels; ++s) {
    uint64_t seed = 1000 + s;
    std::mt19937_64 rng(seed);
    Kernel k = randomKernel(rng);
    (k.reduce == KReduce::None ? elementwise : reductions)++;
    for (int rep = 0; rep < 2; ++rep) { // two shapes per kernel, one compile
      Case c = makeCase(k, rng, false);
      std::string err = runAndCompare(jit, k, c);
      INFO("seed " << seed << " rep " << rep << "\n" << printKernel(k) << describe(c));
      CHECK(err == "");
      if (!err.empty())
        break;
    }
  }
  CHECK(jit.compiles() <= kKernels);
  MESSAGE("random kernels: " << elementwise << " elementwise, " << reductions
                             << " reductions; compile time " << jit.compileSeconds() << " s for "
                             << jit.compiles() << " kernels");
}

TEST_CASE("kernel jit: the cache compiles an unchanged kernel once, for every size") {
  CpuJIT jit;
  Kernel k;
  k.name = "a";
  k.rank = 1;
  k.addInput(DType::F32);
  k.addOutput(DType::F32);
  k.store(0, k.unary(KOp::Exp, k.load(0)));
  CpuJIT::KernelFn f = jit.compile(k);
  Kernel same = k;
  same.name = "b"; // the name is not part of the kernel's identity
  CHECK((jit.compile(same) == f));
  CHECK(jit.compiles() == 1);
  CHECK(jit.cacheHits() == 1);
  for (int64_t n : {0, 1, 7, 1000, 4097}) {
    std::vector<float> x(n, 1.0f), y(n, 0.0f);
    void *bufs[] = {x.data(), y.data()};
    int64_t p[] = {n, 1, 1};
    f(bufs, p);
    for (int64_t i = 0; i < n; ++i)
      REQUIRE(y[i] == std::exp(1.0f));
  }
  Kernel other = k;
  other.nodes[1].op = KOp::Log;
  CHECK((jit.compile(other) != f));
  CHECK(jit.compiles() == 2);
}

TEST_CASE("kernel jit: a sharded random/iota block equals the slice of the full tensor") {
  CpuJIT jit;
  for (DType t : {DType::F32, DType::F64}) {
    Kernel k;
    k.rank = 2;
    k.addOutput(t);
    k.addOutput(t);
    k.addOutput(DType::I64);
    k.store(0, k.random(RandomKind::Normal, 42, t));
    k.store(1, k.random(RandomKind::Uniform, 43, t));
    k.store(2, k.iota(1, DType::I64));
    CpuJIT::KernelFn f = jit.compile(k);
    const int64_t N = 7, M = 9;
    std::vector<double> full[2];
    std::vector<int64_t> fullIota(N * M);
    for (auto &v : full)
      v.assign(N * M, 0);
    auto run = [&](int64_t r0, int64_t c0, int64_t rows, int64_t cols, std::vector<double> *o,
                   std::vector<int64_t> &io, bool interp) {
      size_t es = t == DType::F32 ? 4 : 8;
      std::vector<char> b0(rows * cols * es), b1(rows * cols * es);
      void *bufs[] = {b0.data(), b1.data(), io.data()};
      auto p =
          kernelParams(k, {rows, cols}, {}, {{cols, 1}, {cols, 1}, {cols, 1}}, {r0, c0}, {M, 1});
      if (interp)
        interpretKernel(k, bufs, p.data());
      else
        f(bufs, p.data());
      for (int i = 0; i < rows * cols; ++i) {
        o[0][i] = t == DType::F32 ? ((float *)b0.data())[i] : ((double *)b0.data())[i];
        o[1][i] = t == DType::F32 ? ((float *)b1.data())[i] : ((double *)b1.data())[i];
      }
    };
    run(0, 0, N, M, full, fullIota, true);
    // Rank (1, 1) of a 2x3 mesh sharding both dims: rows [4, 7), cols [3, 6).
    std::vector<double> part[2];
    for (auto &v : part)
      v.assign(9, 0);
    std::vector<int64_t> partIota(9);
    run(4, 3, 3, 3, part, partIota, false);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        CHECK(part[0][i * 3 + j] == full[0][(4 + i) * M + 3 + j]);
        CHECK(part[1][i * 3 + j] == full[1][(4 + i) * M + 3 + j]);
        CHECK(partIota[i * 3 + j] == 3 + j);
      }
    // The normal samples are f32 values, widened for f64.
    CHECK(full[0][5] == (double)kernelNormal(42, 5));
  }
}

TEST_CASE("kernel jit: the contiguous fast path vectorizes") {
  CpuJIT jit;
  Kernel k;
  k.rank = 1;
  k.addInput(DType::F32);
  k.addInput(DType::F32);
  k.addOutput(DType::F32);
  k.store(0, k.binary(KOp::Add, k.binary(KOp::Mul, k.load(0), k.load(1)), k.load(0)));
  std::string ir = jit.emitLLVM(k, true);
  CHECK(ir.find(" x float>") != std::string::npos);
  Kernel r;
  r.rank = 1;
  r.addInput(DType::F32);
  r.addOutput(DType::F32);
  r.store(0, r.load(0));
  r.setReduce(KReduce::Sum, {0});
  std::string rir = jit.emitLLVM(r, true);
  CHECK(rir.find("x double>") != std::string::npos);
}

TEST_CASE("kernel jit: work on uniform inputs runs once per launch, outside the vector loop") {
  // Adam's bias correction: p / (1 - pow(0.9, t)) with t a rank-0 value.
  CpuJIT jit;
  Kernel k;
  k.rank = 2;
  int t = k.addInput(DType::F32, /*uniform=*/true);
  int p = k.addInput(DType::F32);
  k.addOutput(DType::F32);
  int corr = k.binary(KOp::Sub, k.constant(1, DType::F32),
                      k.binary(KOp::Pow, k.constant(0.9, DType::F32), k.load(t)));
  k.store(0, k.binary(KOp::Div, k.load(p), corr));
  std::vector<bool> inv = invariantNodes(k);
  CHECK(inv[corr]);
  CHECK_FALSE(inv[k.stores[0].node]);
  CHECK(printKernel(k).find("in0 : f32 uniform") != std::string::npos);
  std::string ir = jit.emitLLVM(k, true);
  size_t calls = 0;
  for (size_t at = ir.find("call float @powf"); at != std::string::npos;
       at = ir.find("call float @powf", at + 1))
    ++calls;
  CHECK(calls == 1);                                // once per launch
  CHECK(ir.find(" x float>") != std::string::npos); // the loop vectorizes
  // Same bits as the interpreter, with a non-zero t and a broadcast row.
  Case c;
  c.shape = {3, 257};
  c.inStr = {{0, 0}, {257, 1}};
  c.outStr = {{257, 1}};
  c.inputs.emplace_back(sizeof(float));
  float tv = 7;
  std::memcpy(c.inputs.back().data(), &tv, sizeof tv);
  c.inputs.emplace_back(3 * 257 * sizeof(float));
  std::mt19937_64 rng(5);
  for (int64_t e = 0; e < 3 * 257; ++e)
    fillValue(rng, DType::F32, c.inputs.back().data(), e, false);
  c.outElems = {3 * 257};
  CHECK(runAndCompare(jit, k, c) == "");
  // An empty iteration space may pass null buffers: nothing is read.
  auto fn = jit.compile(k);
  std::vector<int64_t> params = kernelParams(k, {0, 4}, {{0, 0}, {4, 1}}, {{4, 1}});
  void *none[3] = {nullptr, nullptr, nullptr};
  fn(none, params.data());
}

TEST_CASE("kernel jit: concurrent compiles from rank threads share one cache") {
  CpuJIT jit;
  auto make = [](KOp op) {
    Kernel k;
    k.rank = 1;
    k.addInput(DType::F64);
    k.addOutput(DType::F64);
    k.store(0, k.unary(op, k.load(0)));
    return k;
  };
  const KOp ops[] = {KOp::Exp, KOp::Tanh, KOp::Neg, KOp::Sqrt};
  std::vector<std::thread> threads;
  std::vector<int> ok(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      Kernel k = make(ops[t % 4]);
      CpuJIT::KernelFn f = jit.compile(k);
      std::vector<double> x(100, 0.5), y(100), ref(100);
      void *b[] = {x.data(), y.data()}, *rb[] = {x.data(), ref.data()};
      int64_t p[] = {100, 1, 1};
      f(b, p);
      interpretKernel(k, rb, p);
      ok[t] = y == ref;
    });
  for (auto &th : threads)
    th.join();
  CHECK(ok == std::vector<int>(8, 1));
  CHECK(jit.compiles() == 4);
  CHECK(jit.cacheHits() == 4);
}

TEST_CASE("kernel jit: precompile builds a batch on threads; compile() then finds each") {
  // 40 random kernels (some repeated in the batch, one already compiled, one
  // invalid), precompiled on 4 threads: each compile() afterwards returns
  // code equal to the interpreter's, nothing is compiled twice, and the
  // counters read as if compile() had made them one by one.
  CpuJIT jit;
  std::vector<Kernel> ks;
  std::mt19937_64 rng(77);
  for (int s = 0; s < 40; ++s)
    ks.push_back(randomKernel(rng));
  jit.compile(ks[3]); // in the cache before the batch
  Kernel invalid = ks[5];
  invalid.stores[0].node = 9999; // stores no node: verifyKernel rejects it
  std::vector<const Kernel *> batch;
  for (const Kernel &k : ks)
    batch.push_back(&k);
  batch.push_back(&ks[7]); // twice in one batch
  batch.push_back(&invalid);
  std::set<std::string> distinct;
  for (const Kernel &k : ks)
    distinct.insert(printKernel(k, false));
  jit.precompile(batch, 4);
  CHECK(jit.compiles() == (int64_t)distinct.size());
  for (const Kernel &k : ks) {
    Case c = makeCase(k, rng, false);
    std::string err = runAndCompare(jit, k, c);
    INFO(printKernel(k));
    CHECK(err == "");
  }
  CHECK(jit.compiles() == (int64_t)distinct.size());
  // The first compile() of each precompiled kernel is its compile; every
  // other call is a hit (ks[3]'s, compiled before the batch, too).
  CHECK(jit.cacheHits() == (int64_t)ks.size() - (int64_t)distinct.size() + 1);
  CHECK_THROWS_AS(jit.compile(invalid), InternalError);
}

TEST_CASE("kernel jit: a reduction over a non-innermost dim adds whole rows, bitwise as before") {
  // Sum over dim 0 of a row-major matrix: the kept-innermost schedule keeps a
  // row of accumulators and reads rows contiguously (vectorized); a sum over
  // the last dim keeps the scalar accumulator. Every output element still
  // accumulates in row-major order over the reduced dims, so the results are
  // bitwise the interpreter's, on every dtype and op, at tile boundaries
  // (511, 512, 513, 1100 columns), for a strided (transposed) input, an
  // input broadcast along the reduced dim and a rank-3 reduction over dims
  // {0, 1} with iota in the kernel.
  CpuJIT jit;
  auto rowKernel = [](DType t, KReduce op, int rank, std::vector<int> dims, bool iota) {
    Kernel k;
    k.rank = rank;
    k.addInput(t);
    k.addOutput(t);
    int x = k.load(0);
    if (iota)
      x = k.binary(KOp::Add, x, k.iota(0, t));
    k.store(0, x);
    k.setReduce(op, std::move(dims));
    return k;
  };
  {
    Kernel k = rowKernel(DType::F32, KReduce::Sum, 2, {0}, false);
    std::string ir = jit.emitLLVM(k, true);
    CHECK(ir.find("accrow") != std::string::npos);
    CHECK(ir.find("x double>") != std::string::npos);
    Kernel inner = rowKernel(DType::F32, KReduce::Sum, 2, {1}, false);
    CHECK(jit.emitLLVM(inner, true).find("accrow") == std::string::npos);
  }
  std::mt19937_64 rng(7);
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64})
    for (KReduce op : {KReduce::Sum, KReduce::Max, KReduce::Min})
      for (int64_t cols : {1, 511, 512, 513, 1100})
        for (int layout = 0; layout < 4; ++layout) {
          bool rank3 = layout == 3;
          Kernel k = rank3 ? rowKernel(t, op, 3, {0, 1}, true) : rowKernel(t, op, 2, {0}, false);
          int64_t rows = 5;
          std::vector<int64_t> shape =
              rank3 ? std::vector<int64_t>{2, 3, cols} : std::vector<int64_t>{rows, cols};
          int64_t n = rank3 ? 6 * cols : rows * cols;
          std::vector<int64_t> in, out;
          if (rank3) {
            in = {3 * cols, cols, 1};
            out = {0, 0, 1};
          } else if (layout == 0) {
            in = {cols, 1}; // row-major
            out = {0, 1};
          } else if (layout == 1) {
            in = {1, rows}; // the transpose of a column-major block
            out = {0, 1};
          } else {
            in = {0, 1}; // one row broadcast along the reduced dim
            out = {0, 1};
          }
          size_t es = dtypeSize(t);
          std::vector<char> x(n * es), a(cols * es), b(cols * es);
          for (int64_t i = 0; i < n; ++i)
            ktest::fillValue(rng, t, x.data(), i, ktest::coin(rng, 0.02));
          auto p = kernelParams(k, shape, {in}, {out}, {}, {});
          void *ja[] = {x.data(), a.data()};
          void *ib[] = {x.data(), b.data()};
          jit.compile(k)(ja, p.data());
          interpretKernel(k, ib, p.data());
          INFO(dtypeName(t) << " " << kreduceName(op) << " cols " << cols << " layout " << layout);
          for (int64_t j = 0; j < cols; ++j) {
            bool same = std::memcmp(&a[j * es], &b[j * es], es) == 0;
            if (!same && isFloat(t))
              same = std::isnan(ktest::readF(t, a, j)) && std::isnan(ktest::readF(t, b, j));
            // Default mode's float max/min is llvm.maximum/minimum (split by
            // the vectorizer): a tie of -0 and +0 may give either zero.
            if (!same && isFloat(t) && op != KReduce::Sum && !k.deterministic)
              same = ktest::readF(t, a, j) == 0 && ktest::readF(t, b, j) == 0;
            CHECK(same);
            if (!same)
              break;
          }
        }
}

TEST_CASE(
    "kernel jit: the disk cache compiles a kernel once per machine, and survives corruption") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("dt-kcache-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  Kernel k;
  k.rank = 1;
  k.addInput(DType::F32);
  k.addOutput(DType::F32);
  k.store(0, k.unary(KOp::Exp, k.binary(KOp::Mul, k.load(0), k.constant(0.5, DType::F32))));
  Case c;
  c.shape = {37};
  c.inStr = {{1}};
  c.outStr = {{1}};
  c.inputs.emplace_back(37 * sizeof(float));
  std::mt19937_64 rng(9);
  for (int64_t e = 0; e < 37; ++e)
    fillValue(rng, DType::F32, c.inputs.back().data(), e, false);
  c.outElems = {37};
  auto runWith = [&](CpuJIT &jit) { return runCase(k, c, jit.compile(k)); };
  CpuJIT::Options o;
  o.diskCache = dir.string();
  std::vector<std::vector<char>> first;
  {
    CpuJIT a(o);
    first = runWith(a);
    CHECK(a.compiles() == 1);
    CHECK(a.diskHits() == 0);
  }
  CHECK(first == runCase(k, c, nullptr)); // the interpreter's bits
  REQUIRE(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}) == 1);
  fs::path entry = fs::directory_iterator(dir)->path();
  {
    CpuJIT b(o); // another process, in effect: loads, compiles nothing
    CHECK(runWith(b) == first);
    CHECK(b.compiles() == 0);
    CHECK(b.diskHits() == 1);
  }
  { // another opt level is another entry
    CpuJIT::Options o0 = o;
    o0.optLevel = 0;
    CpuJIT q(o0);
    CHECK(runWith(q) == first);
    CHECK(q.compiles() == 1);
  }
  // Truncated, garbage and bit-flipped entries are compiled again.
  auto size = fs::file_size(entry);
  for (int damage = 0; damage < 3; ++damage) {
    if (damage == 0) {
      fs::resize_file(entry, size / 2);
    } else {
      std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
      // 1: the magic; 2: inside the object's code (caught by the checksum).
      f.seekp(damage == 1 ? 0 : (std::streamoff)(size - size / 4));
      f.write("garbage!", 8);
    }
    CpuJIT d(o);
    CHECK(runWith(d) == first);
    CHECK(d.compiles() == 1);
    CHECK(d.diskHits() == 0);
    CHECK(fs::file_size(entry) == size); // rewritten whole
  }
  // A folder that cannot be written only costs the compile.
  CpuJIT::Options bad;
  bad.diskCache = "/proc/no-such-dir/kernels";
  CpuJIT e(bad);
  CHECK(runWith(e) == first);
  CHECK(e.compiles() == 1);
  fs::remove_all(dir);
}

namespace {
/// Equal bits, or both NaN, element by element.
bool sameOrNaN(DType t, const std::vector<char> &a, const std::vector<char> &b) {
  if (!isFloat(t))
    return a == b;
  for (size_t i = 0; i * dtypeSize(t) < a.size(); ++i) {
    double x = readF(t, a, (int64_t)i), y = readF(t, b, (int64_t)i);
    if (!(std::isnan(x) && std::isnan(y)) &&
        std::memcmp(&a[i * dtypeSize(t)], &b[i * dtypeSize(t)], dtypeSize(t)) != 0)
      return false;
  }
  return true;
}
} // namespace

TEST_CASE("kernel jit: lifted constants and seeds give the kernel's own results") {
  // Random kernels (constants of every dtype, random nodes), lifted: the
  // interpreter and the JIT read the values after the params and give the
  // unlifted kernel's bits (sums: the JIT's, which may reassociate, within
  // runAndCompare's tolerance of the interpreter).
  CpuJIT jit;
  int lifted = 0;
  for (int s = 0; s < 150; ++s) {
    std::mt19937_64 rng(5000 + s);
    Kernel k = randomKernel(rng);
    std::vector<int64_t> values;
    Kernel lk = liftConstants(k, values);
    INFO("seed " << 5000 + s << "\n" << printKernel(k) << printKernel(lk));
    REQUIRE(verifyKernel(lk) == "");
    REQUIRE((int)values.size() == numLifted(lk));
    lifted += !values.empty();
    Case c = makeCase(k, rng, false);
    auto ref = runCase(k, c, nullptr);
    auto refLifted = runCase(lk, c, nullptr, values);
    auto baked = runCase(k, c, jit.compile(k));
    auto got = runCase(lk, c, jit.compile(lk), values);
    for (size_t o = 0; o < k.outputs.size(); ++o) {
      CHECK(sameOrNaN(k.outputs[o], ref[o], refLifted[o]));
      if (k.reduce == KReduce::None)
        CHECK(sameOrNaN(k.outputs[o], baked[o], got[o]));
    }
    if (k.reduce != KReduce::None)
      CHECK(runAndCompare(jit, k, c) == "");
  }
  CHECK(lifted > 50);
}

TEST_CASE("kernel jit: kernels that differ only in constants or seeds compile once") {
  auto scaleAdd = [](double a, double b, uint64_t seed) {
    Kernel k;
    k.rank = 1;
    k.addInput(DType::F32);
    k.addOutput(DType::F32);
    int x = k.binary(KOp::Mul, k.load(0), k.constant(a, DType::F32));
    x = k.binary(KOp::Add, x, k.constant(b, DType::F32));
    x = k.binary(KOp::Add, x, k.random(RandomKind::Normal, seed, DType::F32));
    k.store(0, x);
    return k;
  };
  CpuJIT jit;
  std::vector<int64_t> v1, v2;
  Kernel k1 = liftConstants(scaleAdd(0.5, 2, 7), v1), k2 = liftConstants(scaleAdd(3, -1e30, 8), v2);
  CHECK(printKernel(k1) == printKernel(k2));
  CHECK(v1 != v2);
  CpuJIT::KernelFn f = jit.compile(k1);
  CHECK((jit.compile(k2) == f));
  CHECK(jit.compiles() == 1);
  const int64_t n = 1000;
  std::vector<float> x(n), y(n), want(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = (float)i - 300;
  for (auto [k, v, a, b, seed] :
       {std::tuple{&k1, &v1, 0.5f, 2.0f, 7}, {&k2, &v2, 3.0f, -1e30f, 8}}) {
    std::vector<int64_t> p = {n, 1, 1, 0, 1};
    p.insert(p.end(), v->begin(), v->end());
    void *bufs[] = {x.data(), y.data()};
    f(bufs, p.data());
    for (int64_t i = 0; i < n; ++i)
      REQUIRE(y[i] == x[i] * a + b + kernelNormal(seed, i));
    (void)k;
  }
  // Divisors and pow operands stay in the kernel, folded by the compiler.
  Kernel d;
  d.rank = 1;
  d.addInput(DType::F32);
  d.addOutput(DType::F32);
  int q = d.binary(KOp::Div, d.load(0), d.constant(2, DType::F32));
  d.store(0, d.binary(KOp::Pow, q, d.constant(3, DType::F32)));
  std::vector<int64_t> none;
  CHECK(numLifted(liftConstants(d, none)) == 0);
  CHECK(none.empty());
}

TEST_CASE("kernel jit: a run-time seed gives the values of the same constant seed") {
  // random(seed = a uniform i64 / i32 input) equals random(seed = that
  // constant), on the JIT and the interpreter, negative seeds sign-extended.
  CpuJIT jit;
  for (DType t : {DType::F32, DType::F64})
    for (RandomKind kind : {RandomKind::Normal, RandomKind::Uniform})
      for (int64_t seed : {int64_t(0), int64_t(7), int64_t(-3), int64_t(1) << 40}) {
        Kernel run, fixed;
        run.rank = fixed.rank = 2;
        int s64 = run.load(run.addInput(DType::I64, true));
        int s32 = run.load(run.addInput(DType::I32, true));
        run.store(run.addOutput(t), run.randomSeeded(kind, s64, t));
        run.store(run.addOutput(t), run.randomSeeded(kind, s32, t));
        fixed.store(fixed.addOutput(t), fixed.random(kind, (uint64_t)seed, t));
        fixed.store(fixed.addOutput(t), fixed.random(kind, (uint64_t)(int64_t)(int32_t)seed, t));
        REQUIRE(verifyKernel(run) == "");
        const std::vector<int64_t> shape = {5, 33};
        const int64_t n = 5 * 33;
        int64_t seedBuf = seed;
        int32_t seed32 = (int32_t)seed;
        std::vector<char> a(n * dtypeSize(t)), b(n * dtypeSize(t)), c(n * dtypeSize(t)),
            d(n * dtypeSize(t));
        auto params = [&](const Kernel &k) {
          std::vector<std::vector<int64_t>> in(k.inputs.size(), {0, 0});
          std::vector<std::vector<int64_t>> out(k.outputs.size(), {33, 1});
          return kernelParams(k, shape, in, out, {2, 9}, {50, 1});
        };
        for (bool interp : {false, true}) {
          void *rb[] = {&seedBuf, &seed32, a.data(), b.data()};
          void *fb[] = {c.data(), d.data()};
          auto rp = params(run), fp = params(fixed);
          if (interp) {
            interpretKernel(run, rb, rp.data());
            interpretKernel(fixed, fb, fp.data());
          } else {
            jit.compile(run)(rb, rp.data());
            jit.compile(fixed)(fb, fp.data());
          }
          INFO("seed " << seed << " interp " << interp);
          CHECK(a == c);
          CHECK(b == d);
        }
        std::vector<int64_t> values;
        CHECK(numLifted(liftConstants(run, values)) == 0); // nothing to lift: it is read
      }
}

TEST_CASE("kernel jit: a square is a multiply, other powers the C library's") {
  // `x ** 2` is `x * x` (KernelIR.h): no libm call in the optimized code, and
  // the values equal the product bit for bit (a run-time exponent of 2 too).
  auto powKernel = [](DType t, std::optional<double> exponent) {
    Kernel k;
    k.rank = 1;
    int x = k.load(k.addInput(t));
    int e = exponent ? k.constant(*exponent, t) : k.load(k.addInput(t));
    k.store(k.addOutput(t), k.binary(KOp::Pow, x, e));
    return k;
  };
  CpuJIT jit;
  for (DType t : {DType::F32, DType::F64}) {
    const char *libm = t == DType::F32 ? "@powf(" : "@pow(";
    CHECK(jit.emitLLVM(powKernel(t, 2.0), true).find(libm) == std::string::npos);
    CHECK(jit.emitLLVM(powKernel(t, 3.0), true).find(libm) != std::string::npos);
  }
  std::mt19937_64 rng(3);
  std::vector<float> x(4096), two(4096, 2.0f), y(4096), z(4096);
  for (float &v : x)
    v = std::ldexp(std::uniform_real_distribution<float>(1, 2)(rng), (int)uni(rng, -60, 60));
  int64_t p[] = {4096, 1, 1};
  void *b1[] = {x.data(), y.data()};
  jit.compile(powKernel(DType::F32, 2.0))(b1, p);
  int64_t p2[] = {4096, 1, 1, 1};
  void *b2[] = {x.data(), two.data(), z.data()};
  jit.compile(powKernel(DType::F32, std::nullopt))(b2, p2);
  for (size_t i = 0; i < x.size(); ++i) {
    REQUIRE(y[i] == x[i] * x[i]);
    REQUIRE(z[i] == x[i] * x[i]);
  }
}
