// Host shim for tests/cudasim: lets g++ compile a kernel emitted by
// codegen/CudaEmitter as ordinary C++ and run it on the CPU, each CUDA thread
// of a block (256) a fiber (ucontext) on the calling thread, switched only at
// __syncthreads, __shfl_xor_sync and __syncwarp (cooperative barriers: a
// fiber that arrives yields until the last one of its block or warp has).
// An OS thread per CUDA thread did the same with real barriers, but on a
// 2-core machine each barrier phase woke 256 threads: half the test's time
// was the kernel's scheduler. Not a GPU: it checks the emitted kernel's
// *semantics* (indexing, fast paths, reductions, RNG) against the
// interpreter where no GPU is available. Host libm replaces CUDA's.

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <ucontext.h>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __shared__ static
struct dim3s {
  unsigned x = 0, y = 0, z = 0;
};
struct uint4 {
  unsigned x, y, z, w;
};
struct uint2 {
  unsigned x, y;
};
inline dim3s threadIdx, blockIdx;
inline dim3s blockDim, gridDim;
inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline float __uint_as_float(unsigned i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned i;
  std::memcpy(&i, &f, 4);
  return i;
}
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __double2float_rn(double d) { return (float)d; }
inline long long __double_as_longlong(double f) {
  long long i;
  std::memcpy(&i, &f, 8);
  return i;
}
inline double __longlong_as_double(long long i) {
  double f;
  std::memcpy(&f, &i, 8);
  return f;
}
using std::cos;
using std::exp;
using std::fabs;
using std::log;
using std::pow;
using std::sin;
using std::sqrt;
using std::tanh;
/// The fibers of the block being run: simLaunch switches among them.
struct SimFibers {
  ucontext_t main;
  std::vector<ucontext_t> ctx;
  unsigned cur = 0;
};
inline SimFibers *simFibers;
/// Back to simLaunch's loop, which resumes the next fiber in turn.
inline void simYield() { swapcontext(&simFibers->ctx[simFibers->cur], &simFibers->main); }
/// A barrier of n fibers: the last to arrive starts a new generation and
/// goes on; the others yield until it has.
struct SimBarrier {
  unsigned n, arrived = 0, gen = 0;
  void arrive_and_wait() {
    const unsigned g = gen;
    if (++arrived == n) {
      arrived = 0;
      ++gen;
      return;
    }
    while (gen == g)
      simYield();
  }
};
struct SimWarp {
  SimBarrier bar{32};
  uint64_t slot[32];
};
inline SimWarp *simWarp;
inline SimBarrier *simBlock;
template <class T> T __shfl_xor_sync(unsigned, T v, int off) {
  int lane = threadIdx.x & 31;
  uint64_t raw = 0;
  std::memcpy(&raw, &v, sizeof(T));
  simWarp->slot[lane] = raw;
  simWarp->bar.arrive_and_wait();
  uint64_t o = simWarp->slot[lane ^ off];
  simWarp->bar.arrive_and_wait();
  T r;
  std::memcpy(&r, &o, sizeof(T));
  return r;
}
inline void __syncwarp(unsigned = 0xffffffffu) { simWarp->bar.arrive_and_wait(); }
inline void __syncthreads() { simBlock->arrive_and_wait(); }
/// The body every fiber of a launch runs (its thread index is simFibers->cur).
inline void (*simBody)(void *);
inline void *simBodyArg;
inline void simFiberMain() { simBody(simBodyArg); }
// A fiber per CUDA thread of a block: the block's fibers run the grid's
// blocks one after another (a barrier between blocks, as __shared__ arrays
// are one per kernel here). A fiber that returns early waits at that
// barrier; it took part in no __syncthreads or shuffle after its return, as
// on a GPU. Fibers run in thread order until they block, each resumed with
// its own threadIdx and warp.
constexpr size_t kSimStack = 128 << 10; ///< a fiber's stack
/// The stacks of a block's 256 fibers, allocated once (pages touched as used).
inline char *simStacks() {
  static char *stacks = static_cast<char *>(std::malloc(256 * kSimStack));
  return stacks;
}
template <class F> void simLaunch(unsigned grid, unsigned block, F kernel) {
  if (block > 256 || block % 32 != 0)
    std::abort(); // the emitted kernels and the data kernels use 256
  gridDim.x = grid;
  blockDim.x = block;
  SimBarrier blk{block}, next{block};
  simBlock = &blk;
  std::vector<SimWarp> warps(block / 32);
  SimFibers fibers;
  fibers.ctx.resize(block);
  SimFibers *outer = simFibers;
  simFibers = &fibers;
  std::vector<char> done(block, 0);
  auto body = [&] {
    const unsigned t = fibers.cur;
    for (unsigned b = 0; b < grid; ++b) {
      blockIdx.x = b;
      kernel();
      next.arrive_and_wait();
    }
    done[t] = 1;
  };
  simBody = [](void *f) { (*static_cast<decltype(body) *>(f))(); };
  simBodyArg = &body;
  for (unsigned t = 0; t < block; ++t) {
    getcontext(&fibers.ctx[t]);
    fibers.ctx[t].uc_stack.ss_sp = simStacks() + (size_t)t * kSimStack;
    fibers.ctx[t].uc_stack.ss_size = kSimStack;
    fibers.ctx[t].uc_link = &fibers.main;
    makecontext(&fibers.ctx[t], simFiberMain, 0);
  }
  for (unsigned left = block; left > 0;)
    for (unsigned t = 0; t < block; ++t) {
      if (done[t])
        continue;
      fibers.cur = t;
      threadIdx.x = t;
      simWarp = &warps[t / 32];
      swapcontext(&fibers.main, &fibers.ctx[t]);
      left -= done[t];
    }
  simFibers = outer;
}
