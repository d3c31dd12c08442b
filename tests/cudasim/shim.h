// Host shim for tests/cudasim: lets g++ compile a kernel emitted by
// codegen/CudaEmitter as ordinary C++ and run it on the CPU, one std::thread
// per CUDA thread of a block (256), with real barriers for __syncthreads and
// per-warp barriers for __shfl_xor_sync and __syncwarp. Not a GPU: it checks the emitted
// kernel's *semantics* (indexing, fast paths, reductions, RNG) against the
// interpreter where no GPU is available. Host libm replaces CUDA's.

#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <thread>
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
inline thread_local dim3s threadIdx, blockIdx;
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
struct SimWarp {
  std::barrier<> *bar;
  uint64_t slot[32];
};
inline thread_local SimWarp *simWarp;
inline std::barrier<> *simBlock;
template <class T> T __shfl_xor_sync(unsigned, T v, int off) {
  int lane = threadIdx.x & 31;
  uint64_t raw = 0;
  std::memcpy(&raw, &v, sizeof(T));
  simWarp->slot[lane] = raw;
  simWarp->bar->arrive_and_wait();
  uint64_t o = simWarp->slot[lane ^ off];
  simWarp->bar->arrive_and_wait();
  T r;
  std::memcpy(&r, &o, sizeof(T));
  return r;
}
inline void __syncwarp(unsigned = 0xffffffffu) { simWarp->bar->arrive_and_wait(); }
inline void __syncthreads() { simBlock->arrive_and_wait(); }
// One thread per CUDA thread of a block, started once per launch: the block's
// threads run the grid's blocks one after another (a barrier between blocks,
// as __shared__ arrays are one per kernel here). A thread that returns early
// waits at that barrier; it took part in no __syncthreads or shuffle after
// its return, as on a GPU.
template <class F> void simLaunch(unsigned grid, unsigned block, F kernel) {
  gridDim.x = grid;
  blockDim.x = block;
  std::barrier<> blk(block), next(block);
  simBlock = &blk;
  std::vector<SimWarp> warps(block / 32);
  for (auto &w : warps)
    w.bar = new std::barrier<>(32);
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < block; ++t)
    ts.emplace_back([&, t] {
      threadIdx.x = t;
      simWarp = &warps[t / 32];
      for (unsigned b = 0; b < grid; ++b) {
        blockIdx.x = b;
        kernel();
        next.arrive_and_wait();
      }
    });
  for (auto &t : ts)
    t.join();
  for (auto &w : warps)
    delete w.bar;
}
