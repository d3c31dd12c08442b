// dtensor's embedding API: the compiler and runtime inside a host C++
// program. The one header a host includes; it exposes no internal header
// (the Session is a pointer to its implementation). Documented, with a
// complete example, in docs/embedding.md.
//
//   dtensor::Session s;                                  // cpu backend
//   if (!s.compile("mesh m = [x = 2]\n"
//                  "fn f(a: f32[N] @ m[x]) -> f32[N] @ m[x] { return a * 2.0 }\n"))
//     for (auto &d : s.diagnostics()) std::cerr << d.rendered;
//   std::vector<float> a = {1, 2, 3, 4};
//   auto r = s.call("f", {dtensor::TensorView(a.data(), {4})});
//   const float *out = r[0].data<float>();               // 2, 4, 6, 8
//
// Errors are values: compile() returns false and diagnostics() describes
// each error (kind, message, file, line, column, hint); call() and the
// readers throw dtensor::Error, which carries the same diagnostics. Nothing
// is printed and nothing exits.
//
// Threads: Sessions share nothing, so several may run at once on different
// threads. One Session is used by one thread at a time: a second thread that
// enters it while it is busy gets Error(Usage) saying so (it never waits or
// corrupts the session); move it to hand it to another thread.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtensor {

/// `BF16` and `F16` hold raw 16-bit patterns (bfloat16, IEEE half): pass
/// them with TensorView(DType::BF16, shape, ptr); Tensor::at widens them.
enum class DType { F32, F64, I32, I64, Bool, BF16, F16 };

/// Bytes of one element (Bool: 1, BF16/F16: 2).
std::size_t dtypeSize(DType dt);
/// `f32`, `f64`, `i32`, `i64`, `bool`, `bf16`, `f16`.
const char *dtypeName(DType dt);

/// A non-owning view of host memory: a dtype, a shape and a pointer to the
/// elements, row-major and contiguous. Calls read it in place where the
/// layout allows (no copy into the session), so it must stay valid during
/// the call.
struct TensorView {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void *data = nullptr;

  TensorView() = default;
  TensorView(DType dt, std::vector<int64_t> shape, const void *data)
      : dtype(dt), shape(std::move(shape)), data(data) {}
  TensorView(const float *p, std::vector<int64_t> shape) : TensorView(DType::F32, shape, p) {}
  TensorView(const double *p, std::vector<int64_t> shape) : TensorView(DType::F64, shape, p) {}
  TensorView(const int32_t *p, std::vector<int64_t> shape) : TensorView(DType::I32, shape, p) {}
  TensorView(const int64_t *p, std::vector<int64_t> shape) : TensorView(DType::I64, shape, p) {}
  TensorView(const bool *p, std::vector<int64_t> shape) : TensorView(DType::Bool, shape, p) {}
  /// The number of elements; -1 when a size is negative or the product
  /// (or its bytes) does not fit in int64_t (`call` refuses such a view).
  int64_t numel() const;
};

/// A tensor read back from a session: its global value (or one rank's
/// block), in host memory it shares with the session's result (no copy).
class Tensor {
public:
  Tensor() = default;
  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  /// The number of elements; 0 for a default-constructed Tensor (no data).
  int64_t numel() const;
  const void *raw() const { return data_; }
  template <class T> const T *data() const { return static_cast<const T *>(data_); }
  /// Element i as a double (any dtype); Error(Usage) for an index out of
  /// range or a Tensor without data (default-constructed).
  double at(int64_t i) const;
  /// As dtensorc prints it: `[[20, 14], [56, 41]]`.
  std::string str() const;
  /// The program's type of the value: `f32[2, 2] @ m{x: shard(0)}` (empty
  /// for a tensor that did not come from the program).
  const std::string &type() const { return type_; }
  TensorView view() const { return TensorView(dtype_, shape_, data_); }

private:
  friend class Session;
  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_;
  std::shared_ptr<const void> owner_;
  const void *data_ = nullptr;
  std::string type_;
  std::shared_ptr<const void> layout_; ///< the program's type (blocks())
};

/// One diagnostic, as the compiler reports it.
struct Diagnostic {
  enum class Severity { Error, Warning, Note, Remark };
  Severity severity = Severity::Error;
  std::string kind;         ///< the diagnostic's kind, e.g. `ShardingMismatch`, `ParseError`
  std::string message;      ///< `operand shardings disagree on mesh axis `x``
  std::string file;         ///< the source's name (compile()'s `name`, or the file)
  int line = 0, column = 0; ///< 1-based; 0 when not tied to a place
  std::string hint;         ///< the fix, may be empty
  std::vector<std::string> notes;
  std::string rendered; ///< the whole text as dtensorc prints it (source line, caret)
};

/// What call() and the readers throw. `diagnostics` is set for errors in
/// the program (a call that does not type-check, an unknown name) and, for
/// a Runtime error, holds the fault as its last diagnostic (kind
/// `RuntimeError`): file, line and column of the op that failed (a module's
/// line when it failed inside a module's function, 0 when not tied to a
/// line), a note `called from FILE:L:C` for each call it came through.
class Error : public std::runtime_error {
public:
  enum class Kind {
    Compile, ///< the program or the call does not compile: see diagnostics
    Runtime, ///< a fault while running (an index out of range, a backend failure)
    Usage,   ///< a bad request (an unknown value name, a null view)
    Internal ///< a compiler bug
  };
  Error(Kind kind, const std::string &what, std::vector<Diagnostic> diags = {})
      : std::runtime_error(what), kind(kind), diagnostics(std::move(diags)) {}
  Kind kind;
  std::vector<Diagnostic> diagnostics;
};

/// One rank's block of a distributed value.
struct Block {
  int rank = 0;   ///< the rank's index in the value's mesh
  int device = 0; ///< its device id (world rank)
  Tensor tensor;
};

struct Options {
  /// Where ranks run: `cpu` (threads), `cuda` (one GPU), `null`, or `mpi`
  /// (under mpirun: every process makes the same Session and the same calls;
  /// only the process of world rank 0 gets call() results, value() and
  /// takeOutput() text; the others get an empty result vector, and value()
  /// throws Error(Usage) saying so).
  std::string backend = "cpu";
  /// World size (number of ranks); 0: as many as the program's meshes need.
  int world = 0;
  /// Folders searched by `import`, before the stdlib.
  std::vector<std::string> importPaths;
  /// The stdlib (`import nn`, `import optim`): the installed package's, set
  /// by its CMake config (`find_package(dtensor)`); else $DTENSOR_STDLIB or
  /// the one next to the executable or in the source tree. A folder that does
  /// not exist is refused (Error(Usage) from the constructor).
#ifdef DTENSOR_STDLIB_DIR
  std::string stdlibDir = DTENSOR_STDLIB_DIR;
#else
  std::string stdlibDir;
#endif
  /// A folder where compiled CPU kernels are kept across processes (as
  /// `dtensorc` keeps them in ~/.cache/dtensor/kernels), so a host program's
  /// second start compiles nothing; empty: none. Made when missing; a path
  /// that is no folder, or cannot be made, is Error(Usage).
  std::string kernelCache;
  /// Deterministic mode (`dtensorc run --deterministic`, docs/language.md):
  /// every value bit-identical on any mesh and layout of the program.
  bool deterministic = false;
  /// Whether programs may read and write files (`load`, `save` and the
  /// checkpoints). A host that runs programs from an untrusted source turns
  /// it off: those calls are then compile errors (kind `FileAccessOff`).
  bool fileAccess = true;
  /// Limits for untrusted programs, 0 for dtensor's defaults: elements of
  /// one tensor (a larger declaration is a compile error; default 2^32), and
  /// iterations of one `while` or run-time-bound `for` (past it the call
  /// throws Error(Runtime); default: no limit).
  int64_t maxTensorElements = 0;
  int64_t maxLoopTrips = 0;
};

/// One program: a compiler, a runtime and the values of its top-level names.
class Session {
public:
  explicit Session(Options opts = {});
  ~Session();
  /// Movable; a moved-from Session throws Error(Usage) from every member.
  Session(Session &&) noexcept;
  Session &operator=(Session &&) noexcept;
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  /// Compiles `source` (named `name` in diagnostics) and runs its top-level
  /// statements; the meshes, functions and values it defines persist for
  /// later sources and calls, and nothing earlier runs again. False when it
  /// does not compile (diagnostics() says why; the session is unchanged);
  /// throws Error(Runtime) for a fault while running.
  bool compile(const std::string &source, const std::string &name = "<source>");
  bool compileFile(const std::string &path);
  /// The diagnostics of the last compile() or call().
  const std::vector<Diagnostic> &diagnostics() const;
  /// What the program printed (`print`) since the last takeOutput().
  std::string takeOutput();

  /// An argument of call(): host data, or a top-level value of the program.
  struct Arg {
    Arg(const TensorView &v) : view(v) {}
    Arg(const Tensor &t) : view(t.view()) {}
    Arg(const char *valueName) : name(valueName ? valueName : ""), byName(true) {}
    Arg(std::string valueName) : name(std::move(valueName)), byName(true) {}
    TensorView view;
    std::string name;    ///< the session's value of this name (byName)
    bool byName = false; ///< a value named (an empty name is refused)
  };

  /// Calls the top-level function `fn`. Host data is the global value; it
  /// takes the parameter's declared layout (distributed to the ranks).
  /// Generic functions (size symbols, `@ *`) are instantiated for the
  /// arguments' shapes; each signature compiles once and later calls reuse
  /// it. Returns the global results (partial values reduced). Throws Error.
  std::vector<Tensor> call(const std::string &fn, const std::vector<Arg> &args);

  bool hasFunction(const std::string &fn) const;
  /// A top-level value of that name: a tensor, or a struct (passed to
  /// call() by name; value() reads its fields by name).
  bool hasValue(const std::string &name) const;
  /// The global value of the top-level name `name` (`let`/`var`). Throws Error.
  Tensor value(const std::string &name) const;
  /// Each rank's block of `name` as the program lays it out. Throws Error.
  std::vector<Block> blocks(const std::string &name) const;
  /// Each rank's block of a tensor call() or value() returned, as its type
  /// lays it out (a host tensor: one block).
  std::vector<Block> blocks(const Tensor &t) const;
  /// The instances call() has compiled (each signature once).
  int compiledCalls() const;

private:
  struct Impl;
  /// The session's state; throws Error(Usage) on a moved-from Session.
  Impl &impl() const;
  std::unique_ptr<Impl> impl_;
};

} // namespace dtensor
