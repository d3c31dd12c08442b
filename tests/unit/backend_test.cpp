// Unit tests of the backend interface (runtime/Backend.h) and the executor
// written against it: a "device memory" backend whose buffers the executor
// must only touch through the Device (what a GPU needs), prints and results
// gathered through the world communicator, the null backend, two Sessions on
// two threads, and makeBackend's names and one-line failures.
#include "codegen/CudaLoader.h"
#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "runtime/CpuBackend.h"
#include "runtime/Executor.h"
#include "runtime/NullBackend.h"
#include "runtime/ThreadComm.h"
#include "support/Errors.h"

#include <doctest/doctest.h>

#include <sched.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

using namespace dt;

namespace {

void build(Compilation &s, const std::string &text) {
  PipelineOptions po;
  po.spmd = true;
  po.fusion = true;
  std::ostringstream log;
  bool ok = s.compile("test.dt", text) && runPipeline(s, po, log);
  INFO(s.diags.renderAll());
  REQUIRE(ok);
}

/// Every collective shape, a kernel, BLAS, transpose, gather/scatter, a loop,
/// host values, a mesh that does not cover the world, uneven and empty blocks.
const char *kProgram = R"(
mesh m = [x = 2, y = 2]
mesh q = [t = 2] devices [1, 3]
let a : f32[5, 3] @ m[x, _] = randn(seed=3)
let b : f32[3, 4] @ m[_, y] = randn(seed=4)
let c = relayout(a @ b, m[_, _])
print(c)
let d = relayout(exp(a) * 2.0 + 1.0, m[_, _])
print(sum(d, dim=1))
let e : f32[4, 6] @ m{x: shard(0), y: shard(1)} = arange(dim=1)
print(relayout(e, m{x: shard(1), y: replicate}))
print(relayout(transpose(e), m[_, _]))
let ids : i32[3] @ m[_] = [2, 0, 2]
let r : f32[3, 6] @ m[_, _] = index_select(relayout(e, m[_, _]), ids)
print(r)
let z : f32[1, 6] @ m[x, _] = full(1.5)
print(relayout(z, m[_, _]))
let w : f32[4] @ q[t] = arange(dim=0)
print(relayout(w * w, q[_]))
let h = [1, 2, 3]
print(h + h)
var v : f32[5, 3] @ m[x, _] = a
for i in 0..3 {
  v = v * 0.5 + a
}
print(relayout(v, m[_, _]))
var k = 0
for i in 0..4 { k = k + i }
print(k)
)";

/// Host memory dressed as device memory: every buffer the device makes is
/// Where::Device and registered; every pointer handed to a Device method or
/// a communicator must lie in a registered buffer, and every tensor argument
/// must be a device tensor. Catches an executor that allocates, reads or
/// writes a block itself (as a GPU backend would crash on).
struct Registry {
  std::mutex mu;
  std::map<const char *, size_t> live; ///< start -> bytes
  std::atomic<int64_t> violations{0};
  std::string first;
  void add(const char *p, size_t n) {
    std::lock_guard<std::mutex> lock(mu);
    live[p] = n;
  }
  void remove(const char *p) {
    std::lock_guard<std::mutex> lock(mu);
    live.erase(p);
  }
  void violation(const std::string &what) {
    std::lock_guard<std::mutex> lock(mu);
    if (violations++ == 0)
      first = what;
  }
  /// `p` points into (or at the start of) a live buffer.
  void checkPointer(const void *p, const char *what) {
    std::lock_guard<std::mutex> lock(mu);
    auto *c = static_cast<const char *>(p);
    auto it = live.upper_bound(c);
    if (it == live.begin() ||
        (c != std::prev(it)->first && c >= std::prev(it)->first + std::prev(it)->second)) {
      if (violations++ == 0)
        first = std::string(what) + ": a pointer outside the device's buffers";
    }
  }
  std::map<const void *, size_t> kernelBuffers; ///< NativeKernel handle -> inputs + 1
  /// `p .. p + n` lies in one live buffer (n == 0: anything goes).
  void check(const void *p, int64_t n, const char *what) {
    if (n <= 0)
      return;
    std::lock_guard<std::mutex> lock(mu);
    auto *c = static_cast<const char *>(p);
    auto it = live.upper_bound(c);
    if (it == live.begin() || c + n > std::prev(it)->first + std::prev(it)->second) {
      if (violations++ == 0)
        first = std::string(what) + ": a pointer outside the device's buffers";
    }
  }
};

class CheckedComm final : public Communicator {
public:
  /// `gathers` counts allGatherV calls (null: not counted).
  CheckedComm(Communicator &c, Registry &r, int64_t *gathers) : c_(c), r_(r), gathers_(gathers) {}
  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }
  void allReduce(const void *s, void *d, int64_t n, DType t, ReduceOp op) override {
    r_.check(s, n * dtypeSize(t), "allReduce send");
    r_.check(d, n * dtypeSize(t), "allReduce recv");
    c_.allReduce(s, d, n, t, op);
  }
  void allGatherV(const void *s, void *d, const std::vector<int64_t> &counts, DType t) override {
    if (gathers_)
      ++*gathers_;
    r_.check(s, counts[rank()] * dtypeSize(t), "allGatherV send");
    r_.check(d, totalCount(counts) * dtypeSize(t), "allGatherV recv");
    c_.allGatherV(s, d, counts, t);
  }
  void reduceScatterV(const void *s, void *d, const std::vector<int64_t> &counts, DType t,
                      ReduceOp op) override {
    r_.check(s, totalCount(counts) * dtypeSize(t), "reduceScatterV send");
    r_.check(d, counts[rank()] * dtypeSize(t), "reduceScatterV recv");
    c_.reduceScatterV(s, d, counts, t, op);
  }
  void allToAllV(const void *s, const std::vector<int64_t> &sc, void *d,
                 const std::vector<int64_t> &rc, DType t) override {
    r_.check(s, totalCount(sc) * dtypeSize(t), "allToAllV send");
    r_.check(d, totalCount(rc) * dtypeSize(t), "allToAllV recv");
    c_.allToAllV(s, sc, d, rc, t);
  }
  void broadcast(void *b, int64_t n, DType t, int root) override {
    r_.check(b, n * dtypeSize(t), "broadcast");
    c_.broadcast(b, n, t, root);
  }
  void barrier() override { c_.barrier(); }

private:
  Communicator &c_;
  Registry &r_;
  int64_t *gathers_;
};

class DeviceMemoryDevice final : public CpuDevice {
public:
  DeviceMemoryDevice(ThreadWorld &w, int rank, std::shared_ptr<Registry> reg)
      : CpuDevice(rank), w_(w), reg_(std::move(reg)) {}

  std::shared_ptr<Buffer> allocate(int64_t bytes) override {
    size_t n = ((size_t)bytes + 63) / 64 * 64 + 64;
    void *p = std::aligned_alloc(64, n);
    std::memset(p, 0, n);
    reg_->add(static_cast<const char *>(p), (size_t)bytes);
    std::shared_ptr<Registry> reg = reg_; // buffers may outlive the device (pools)
    return std::make_shared<Buffer>(p, (size_t)bytes, Where::Device, [reg](void *q) {
      reg->remove(static_cast<const char *>(q));
      std::free(q);
    });
  }
  std::shared_ptr<Buffer> allocateUninit(int64_t bytes) override { return allocate(bytes); }
  HostTensor fromHost(const HostTensor &h) override {
    if (h.buf && h.buf->where() == Where::Device)
      reg_->violation("fromHost of a device tensor");
    HostTensor t = empty(h.dtype, h.shape);
    if (t.bytes())
      std::memcpy(t.raw(), h.raw(), t.bytes());
    return t;
  }
  HostTensor toHost(const HostTensor &t) override {
    dev(t, "toHost");
    HostTensor h(t.dtype, t.shape);
    if (h.bytes())
      std::memcpy(h.raw(), t.raw(), h.bytes());
    return h;
  }
  void launch(const NativeKernel &k, void *const *bufs, const int64_t *params) override {
    ++launches;
    for (size_t i = 0; i < reg_->kernelBuffers.at(k.handle); ++i)
      reg_->checkPointer(bufs[i], "launch");
    CpuDevice::launch(k, bufs, params);
  }
  std::optional<HostTensor> matmul(const HostTensor &a, const HostTensor &b, DType out, bool ta,
                                   bool tb) override {
    dev(a, "matmul");
    dev(b, "matmul");
    auto c = CpuDevice::matmul(toHost(a), toHost(b), out, ta, tb);
    if (c)
      return fromHost(*c);
    return c;
  }
  void copyRegion(const void *src, const std::vector<int64_t> &srcShape,
                  const std::vector<int64_t> &srcStart, void *dst,
                  const std::vector<int64_t> &dstShape, const std::vector<int64_t> &dstStart,
                  const std::vector<int64_t> &extent, int64_t esize) override {
    int64_t n = 1, ns = 1, nd = 1;
    for (size_t i = 0; i < extent.size(); ++i)
      n *= extent[i], ns *= srcShape[i], nd *= dstShape[i];
    if (n > 0) {
      reg_->check(src, ns * esize, "copyRegion src");
      reg_->check(dst, nd * esize, "copyRegion dst");
    }
    CpuDevice::copyRegion(src, srcShape, srcStart, dst, dstShape, dstStart, extent, esize);
  }
  HostTensor transpose(const HostTensor &a, const std::vector<int64_t> &perm) override {
    dev(a, "transpose");
    return fromHost(CpuDevice::transpose(toHost(a), perm));
  }
  HostTensor gather(const HostTensor &src, const HostTensor &ids, int64_t dim) override {
    dev(src, "gather");
    dev(ids, "gather");
    return fromHost(CpuDevice::gather(toHost(src), toHost(ids), dim));
  }
  HostTensor scatterAdd(const HostTensor &base, const HostTensor &ids, const HostTensor &src,
                        int64_t dim, bool reassociate) override {
    dev(base, "scatterAdd");
    return fromHost(
        CpuDevice::scatterAdd(toHost(base), toHost(ids), toHost(src), dim, reassociate));
  }
  std::vector<HostTensor> fallbackLocalOp(const Inst &in,
                                          const std::vector<const HostTensor *> &args,
                                          const std::vector<TensorType> &types,
                                          LocalPlace place) override {
    std::vector<HostTensor> host;
    std::vector<const HostTensor *> ptrs;
    host.reserve(args.size());
    for (auto *a : args) {
      dev(*a, opName(in.op));
      host.push_back(toHost(*a));
      ptrs.push_back(&host.back());
    }
    std::vector<HostTensor> out;
    for (auto &t : CpuDevice::fallbackLocalOp(in, ptrs, types, place))
      out.push_back(fromHost(t));
    return out;
  }
  Communicator &world() override { return wrap(w_.world(rank()), &worldGathers); }
  Communicator &group(const std::vector<int> &m) override {
    return wrap(w_.group(rank(), m), nullptr);
  }

  int64_t launches = 0, worldGathers = 0; ///< allGatherV on world()

private:
  void dev(const HostTensor &t, const char *what) {
    if (!t.buf || t.buf->where() != Where::Device)
      reg_->violation(std::string(what) + ": a tensor not in device memory");
  }
  Communicator &wrap(Communicator &c, int64_t *gathers) {
    auto &w = wrapped_[{&c, gathers != nullptr}];
    if (!w)
      w = std::make_unique<CheckedComm>(c, *reg_, gathers);
    return *w;
  }
  ThreadWorld &w_;
  std::shared_ptr<Registry> reg_;
  std::map<std::pair<Communicator *, bool>, std::unique_ptr<CheckedComm>> wrapped_;
};

class DeviceMemoryBackend final : public Backend {
public:
  const char *name() const override { return "device-memory"; }
  NativeKernel compile(const Kernel &k, bool small) override {
    NativeKernel n = jit_.compile(k, small);
    reg->kernelBuffers[n.handle] = k.inputs.size() + 1; // compiled before the ranks start
    return n;
  }
  void run(int ranks, const std::function<void(Device &)> &body) override {
    ThreadWorld w(ranks);
    std::mutex mu;
    w.run([&](int rank) {
      DeviceMemoryDevice d(w, rank, reg);
      body(d);
      std::lock_guard<std::mutex> lock(mu);
      launches += d.launches;
      gathers.push_back(d.worldGathers);
    });
  }
  std::shared_ptr<Registry> reg = std::make_shared<Registry>();
  int64_t launches = 0;
  std::vector<int64_t> gathers;

private:
  CpuKernelCompiler jit_{nullptr, nullptr};
};

} // namespace

TEST_CASE("backend: the executor touches blocks only through the Device (device memory)") {
  for (bool plan : {true, false}) {
    CAPTURE(plan);
    Compilation s(pipelineCompileOptions());
    build(s, kProgram);
    ExecOptions eo;
    eo.memoryPlan = plan;
    std::ostringstream cpuOut, devOut;
    Executor cpu(s.module, cpuOut, eo);
    cpu.run("main", {});
    DeviceMemoryBackend be;
    Executor ex(s.module, be, devOut, eo);
    ex.run("main", {});
    ex.run("main", {}); // a second run reuses the tables and call-site caches
    INFO(be.reg->first);
    CHECK(be.reg->violations == 0);
    CHECK(devOut.str() == cpuOut.str() + cpuOut.str());
    CHECK(be.launches > 0);
    // Every kernel the executor runs goes through Device::launch. A device
    // backend also runs transposes as op kernels (the cpu backend keeps its
    // tiled transpose), so it launches at least the cpu's kernels.
    int64_t kernels = 0, cpuKernels = 0;
    for (auto &r : ex.stats().ranks)
      kernels += r.kernelCalls;
    for (auto &r : cpu.stats().ranks)
      cpuKernels += r.kernelCalls;
    CHECK(kernels >= cpuKernels);
    CHECK(be.launches == 2 * kernels);
  }
}

TEST_CASE("backend: prints and results are gathered to rank 0 through the world communicator") {
  // Rank 0 prints. A replicated value it holds needs no communication; one
  // on a mesh without rank 0, and a sharded result, take one allGatherV over
  // the world on every rank (the program's own collectives run on groups).
  Compilation s(pipelineCompileOptions());
  build(s, R"(
mesh m = [x = 3]
mesh q = [t = 2] devices [1, 2]
fn f(a: f32[4] @ m[x]) -> f32[4] @ m[x] {
  print(a)
  return a * 2.0
}
let a : f32[4] @ m[x] = arange(dim=0)
print(f(a))
let b : f32[3] @ q[t] = arange(dim=0)
print(relayout(b + 1.0, q[_]))
)");
  DeviceMemoryBackend be;
  std::ostringstream out;
  Executor ex(s.module, be, out);
  ex.run("main", {});
  CHECK(out.str() == "[0, 1, 2, 3]\n[0, 2, 4, 6]\n[1, 2, 3]\n");
  REQUIRE(be.gathers.size() == 3);
  for (auto g : be.gathers)
    CHECK(g == 1);
  CHECK(be.reg->violations == 0);
  // A sharded result of `f`, assembled on rank 0 as a host tensor.
  HostTensor arg(DType::F32, {4});
  for (int i = 0; i < 4; ++i)
    arg.set(i, 10 + i);
  DeviceMemoryBackend be2;
  auto res = Executor(s.module, be2, out).run("f", {arg});
  REQUIRE(res.size() == 1);
  CHECK(res[0].shape == std::vector<int64_t>{4});
  CHECK(res[0].get(0) == 20);
  CHECK(res[0].get(3) == 26);
  CHECK(res[0].buf->where() == Where::Host);
  for (auto g : be2.gathers)
    CHECK(g == 1);
  CHECK(be2.reg->violations == 0);
}

TEST_CASE("backend: null runs every rank, computes nothing, launches what cpu launches") {
  Compilation s(pipelineCompileOptions());
  build(s, kProgram);
  std::ostringstream cpuOut, nullOut;
  Executor cpu(s.module, cpuOut);
  cpu.run("main", {});
  NullBackend nb;
  Executor ex(s.module, nb, nullOut);
  ex.run("main", {});
  // Same lines, same shapes, every number zero.
  std::string zeros;
  for (char c : cpuOut.str())
    zeros += c;
  std::istringstream a(cpuOut.str()), b(nullOut.str());
  std::string la, lb;
  int lines = 0;
  while (std::getline(a, la)) {
    REQUIRE(std::getline(b, lb));
    ++lines;
    size_t commasA = std::count(la.begin(), la.end(), ','),
           commasB = std::count(lb.begin(), lb.end(), ',');
    CHECK(commasA == commasB);
    for (char c : lb)
      CHECK((c == '0' || c == '[' || c == ']' || c == ',' || c == ' '));
  }
  CHECK(lines == 10);
  REQUIRE(ex.stats().ranks.size() == cpu.stats().ranks.size());
  for (size_t r = 0; r < cpu.stats().ranks.size(); ++r) {
    CHECK(ex.stats().ranks[r].kernelCalls == cpu.stats().ranks[r].kernelCalls);
    CHECK(ex.stats().ranks[r].collectives == cpu.stats().ranks[r].collectives);
  }
  // The fused kernels compile, and the op kernels of a device backend
  // (transposes) too.
  CHECK(ex.stats().compiles >= ex.stats().kernels);
}

TEST_CASE("backend: two Sessions on two threads share nothing") {
  const char *prog = R"(
mesh m = [x = 4]
let a : f32[64, 32] @ m[x, _] = randn(seed=9)
let b : f32[32, 16] @ m[_, _] = randn(seed=10)
print(relayout(tanh(a @ b) * 3.0, m[_, _]))
)";
  std::string expect;
  {
    Compilation s(pipelineCompileOptions());
    build(s, prog);
    std::ostringstream out;
    Executor(s.module, out).run("main", {});
    expect = out.str();
  }
  std::string got[2];
  std::thread ts[2];
  for (int i = 0; i < 2; ++i)
    ts[i] = std::thread([&, i] {
      for (int rep = 0; rep < 3; ++rep) {
        Compilation s(pipelineCompileOptions());
        build(s, prog);
        std::ostringstream out;
        CpuBackend be;
        Executor(s.module, be, out).run("main", {});
        got[i] += out.str();
      }
    });
  for (auto &t : ts)
    t.join();
  CHECK(got[0] == expect + expect + expect);
  CHECK(got[1] == expect + expect + expect);
}

TEST_CASE("backend: makeBackend knows its names and fails in one line") {
  CHECK(std::string(makeBackend("cpu")->name()) == "cpu");
  CHECK(std::string(makeBackend("null")->name()) == "null");
  try {
    makeBackend("tpu");
    FAIL("no error");
  } catch (const RuntimeFault &e) {
    CHECK(std::string(e.what()) == "unknown backend `tpu` (cpu, mpi, cuda, null)");
  }
  CudaLibraries libs;
  std::string why;
  if (!libs.available(CudaLib::Driver, &why)) {
    try {
      makeBackend("cuda");
      FAIL("no error");
    } catch (const RuntimeFault &e) {
      std::string m = e.what();
      CHECK(m.rfind("--backend cuda: cannot load libcuda", 0) == 0);
      CHECK(m.find('\n') == std::string::npos);
    }
  }
}

TEST_CASE("cpu backend: BLAS threads are the cores divided by the ranks, at least 1") {
  CpuBackend b;
  cpu_set_t set;
  REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
  int cores = CPU_COUNT(&set);
  for (int ranks : {1, 2, 3, cores, cores + 1, 2 * cores + 3}) {
    std::atomic<int> wrong{0};
    b.run(ranks, [&](Device &d) {
      auto *cpu = dynamic_cast<CpuDevice *>(&d);
      if (!cpu || cpu->blasThreads() != std::max(1, cores / ranks))
        ++wrong;
    });
    INFO("ranks " << ranks << " cores " << cores);
    CHECK(wrong == 0);
  }
}

namespace {
/// A CpuDevice with no communicators (kernel launches only).
class LoneCpuDevice final : public CpuDevice {
public:
  LoneCpuDevice() : CpuDevice(0) {}
  Communicator &world() override { throw InternalError("no world"); }
  Communicator &group(const std::vector<int> &) override { throw InternalError("no group"); }
};
} // namespace

TEST_CASE("backend: a large kernel is split along its outer kept dim across threads, same bits") {
  // out0 = in0 * iota(dim 1) + random, out1 = in1 (a row broadcast) - in0;
  // a reduction over dim 1 (dim 0 kept: split along it) and one over dim 0
  // (split along the columns).
  CpuKernelCompiler jit(nullptr, nullptr);
  auto elementwise = [] {
    Kernel k;
    k.rank = 2;
    k.addInput(DType::F32);
    k.addInput(DType::F32);
    k.addOutput(DType::F32);
    k.addOutput(DType::F32);
    int x = k.load(0);
    int r = k.random(RandomKind::Normal, 7, DType::F32);
    k.store(0, k.binary(KOp::Add, k.binary(KOp::Mul, x, k.iota(1, DType::F32)), r));
    k.store(1, k.binary(KOp::Sub, k.load(1), x));
    return k;
  };
  auto reduction = [](int dim) {
    Kernel k;
    k.rank = 2;
    k.addInput(DType::F32);
    k.addOutput(DType::F32);
    k.store(0, k.unary(KOp::Exp, k.load(0)));
    k.setReduce(KReduce::Sum, {dim});
    return k;
  };
  // out0 = table[ids[i], j] * x[i, j]: the table is gathered along dim 0
  // (its rows come from the ids, whatever the chunk of dim 0).
  auto gathered = [] {
    Kernel k;
    k.rank = 2;
    k.addInput(DType::F32); // x
    k.addInput(DType::F32); // table [S, R1]
    k.addInput(DType::I32); // ids [R0]
    k.addOutput(DType::F32);
    k.store(0, k.binary(KOp::Mul, k.gather(1, k.load(2), 0), k.load(0)));
    return k;
  };
  // A sum over rows of table[i, ids[j]] * iota(dim 1) * x[i, j]: split along
  // dim 1, where the table is gathered (its columns come from the ids) and
  // the iota's global offset moves with the chunk.
  auto columns = [] {
    Kernel k;
    k.rank = 2;
    k.addInput(DType::F32); // x
    k.addInput(DType::F32); // table [R0, S]
    k.addInput(DType::I32); // ids [R1]
    k.addOutput(DType::F32);
    int v = k.binary(KOp::Mul, k.gather(1, k.load(2), 1), k.load(0));
    k.store(0, k.binary(KOp::Mul, v, k.iota(1, DType::F32)));
    k.setReduce(KReduce::Sum, {0});
    return k;
  };
  const int64_t R0 = 301, R1 = 701, S = 5; // 211k points, uneven parts
  std::vector<float> x(R0 * R1), row(R1), table(S * std::max(R0, R1));
  std::vector<int32_t> ids(std::max(R0, R1));
  for (int64_t i = 0; i < R0 * R1; ++i)
    x[i] = (float)((i * 37) % 101) * 0.01f - 0.5f;
  for (int64_t j = 0; j < R1; ++j)
    row[j] = (float)j * 0.5f;
  for (size_t i = 0; i < table.size(); ++i)
    table[i] = (float)(i % 13) - 6.0f;
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = (int32_t)((i * 3) % S);
  for (int which = 0; which < 5; ++which) {
    Kernel k = which == 0   ? elementwise()
               : which == 3 ? gathered()
               : which == 4 ? columns()
                            : reduction(which - 1);
    NativeKernel nk = jit.compile(k, false);
    std::vector<std::vector<int64_t>> inSt = {{R1, 1}}, outSt;
    std::vector<int64_t> outN;
    if (which == 3) {
      inSt.push_back({R1, 1}); // the table: its row stride on the gathered dim
      inSt.push_back({1, 0});  // ids along dim 0
      outSt = {{R1, 1}};
      outN = {R0 * R1};
    } else if (which == 4) {
      inSt.push_back({S, 1}); // the table [R0, S], gathered along dim 1
      inSt.push_back({0, 1}); // ids along dim 1
      outSt = {{0, 1}};
      outN = {R1};
    } else if (which == 0) {
      inSt.push_back({0, 1});
      outSt = {{R1, 1}, {R1, 1}};
      outN = {R0 * R1, R0 * R1};
    } else if (which == 1) { // dim 0 reduced: one output element per column
      outSt = {{0, 1}};
      outN = {R1};
    } else { // dim 1 reduced: one per row
      outSt = {{1, 0}};
      outN = {R0};
    }
    auto params = kernelParams(k, {R0, R1}, inSt, outSt, {0, 0}, {R1, 1});
    auto run = [&](int threads) {
      LoneCpuDevice dev;
      dev.setBlasThreads(threads);
      std::vector<std::vector<float>> outs;
      for (int64_t n : outN)
        outs.emplace_back(n, -1.0f);
      std::vector<void *> bufs = {x.data()};
      if (which == 0)
        bufs.push_back(row.data());
      if (which >= 3) {
        bufs.push_back(table.data());
        bufs.push_back(ids.data());
      }
      for (auto &o : outs)
        bufs.push_back(o.data());
      dev.launch(nk, bufs.data(), params.data());
      return outs;
    };
    auto one = run(1);
    if (which == 3) // one thread: the table's rows by the ids
      for (int64_t i = 0; i < R0 * R1; i += 997)
        CHECK(one[0][i] == table[ids[i / R1] * R1 + i % R1] * x[i]);
    if (which == 4) // one thread: column j sums table[i, ids[j]] * x[i, j] * j
      for (int64_t j = 0; j < R1; j += 97) {
        double want = 0;
        for (int64_t i = 0; i < R0; ++i)
          want += (double)(table[i * S + ids[j]] * x[i * R1 + j] * (float)j);
        CHECK(one[0][j] == (float)want);
      }
    for (int threads : {2, 3, 8}) {
      INFO("kernel " << which << ", threads " << threads);
      CHECK(run(threads) == one);
    }
  }
}

TEST_CASE("backend: a collective over an axis of size 1 shares its operand's buffer") {
  // p (4 MiB, from two small operands) is partial over t = 1: the all_reduce
  // is the block itself, not a copy, so the peak stays under 2 p; the values
  // are the reference kernels'.
  const char *prog = R"(mesh m = [t = 1]
let a : f32[1024, 1] @ m[_, t] = randn(seed=1)
let w : f32[1, 1024] @ m[t, _] = randn(seed=2)
let q = relayout(a @ w, m[_, _])
print(relayout(sum(q * 2.0, dims=[0]), m[_]))
)";
  Compilation s(pipelineCompileOptions());
  build(s, prog);
  std::ostringstream out, ref;
  Executor ex(s.module, out);
  ex.run("main", {});
  const int64_t p = 1024 * 1024 * 4;
  REQUIRE(ex.stats().ranks.size() == 1);
  MESSAGE("peak " << ex.stats().ranks[0].peakBytes << " bytes");
  CHECK(ex.stats().ranks[0].peakBytes < p + p / 2);
  CHECK(ex.stats().ranks[0].collectives == 1);
  ExecOptions noJit;
  noJit.jit = false;
  Executor slow(s.module, ref, noJit);
  slow.run("main", {});
  REQUIRE(ex.printed().size() == 1);
  REQUIRE(ex.printed()[0].value.shape == std::vector<int64_t>{1024});
  for (int64_t i = 0; i < 1024; ++i)
    CHECK(ex.printed()[0].value.get(i) == doctest::Approx(slow.printed()[0].value.get(i)));
}
