// This file implements the embedding API (include/dtensor/dtensor.hpp) on a
// runtime Session: host views become HostTensors that adopt the host's
// memory (no copy), results share the session's buffers, and diagnostics
// are read from the DiagEngine as values.
#include "dtensor/dtensor.hpp"

#include "frontend/BuildIR.h"
#include "runtime/Backend.h"
#include "runtime/Format.h"
#include "runtime/Launch.h"
#include "runtime/LocalOps.h"
#include "runtime/Session.h"
#include "support/Checked.h"
#include "support/Errors.h"
#include "support/LowPrecision.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <sstream>

namespace dtensor {

namespace {

dt::DType toInternal(DType d) {
  switch (d) {
  case DType::F32:
    return dt::DType::F32;
  case DType::F64:
    return dt::DType::F64;
  case DType::I32:
    return dt::DType::I32;
  case DType::I64:
    return dt::DType::I64;
  case DType::Bool:
    return dt::DType::Bool;
  case DType::BF16:
    return dt::DType::BF16;
  case DType::F16:
    return dt::DType::F16;
  }
  return dt::DType::F32;
}

DType fromInternal(dt::DType d) {
  switch (d) {
  case dt::DType::F32:
    return DType::F32;
  case dt::DType::F64:
    return DType::F64;
  case dt::DType::I32:
    return DType::I32;
  case dt::DType::I64:
    return DType::I64;
  case dt::DType::Bool:
    return DType::Bool;
  case dt::DType::BF16:
    return DType::BF16;
  case dt::DType::F16:
    return DType::F16;
  }
  return DType::F32;
}

/// The element count; -1 for a negative size or one whose bytes (at
/// `elemBytes` each) overflow int64_t.
int64_t product(const std::vector<int64_t> &shape, int64_t elemBytes) {
  if (std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; }))
    return -1;
  auto n = dt::checkedProduct(shape, [](int64_t d) { return d; });
  return n && dt::checkedMul(*n, elemBytes) ? *n : -1;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace

std::size_t dtypeSize(DType dt) { return dt::dtypeSize(toInternal(dt)); }
const char *dtypeName(DType dt) { return dt::dtypeName(toInternal(dt)); }
int64_t TensorView::numel() const { return product(shape, (int64_t)dtypeSize(dtype)); }
/// A Tensor that should hold elements but has no data (a default-constructed one).
static bool holdsNoData(const void *data, const std::vector<int64_t> &shape, DType dt) {
  return !data && product(shape, (int64_t)dtypeSize(dt)) != 0;
}

int64_t Tensor::numel() const {
  return data_ ? product(shape_, (int64_t)dtypeSize(dtype_)) : 0; // a default one holds nothing
}

double Tensor::at(int64_t i) const {
  if (!data_)
    throw Error(Error::Kind::Usage, "this Tensor holds no data (a default-constructed Tensor; "
                                    "results of call() and value() hold theirs)");
  if (i < 0 || i >= numel())
    throw Error(Error::Kind::Usage, "element " + std::to_string(i) +
                                        " is out of range for a tensor of " +
                                        std::to_string(numel()) + " elements");
  switch (dtype_) {
  case DType::F32:
    return data<float>()[i];
  case DType::F64:
    return data<double>()[i];
  case DType::I32:
    return data<int32_t>()[i];
  case DType::I64:
    return (double)data<int64_t>()[i];
  case DType::Bool:
    return data<bool>()[i] ? 1 : 0;
  case DType::BF16:
    return dt::bf16ToFloat(data<uint16_t>()[i]);
  case DType::F16:
    return dt::halfToFloat(data<uint16_t>()[i]);
  }
  return 0;
}

std::string Tensor::str() const {
  if (holdsNoData(data_, shape_, dtype_))
    return "(no data: a default-constructed Tensor)";
  dt::HostTensor h;
  h.dtype = toInternal(dtype_);
  h.shape = shape_;
  h.buf = std::make_shared<dt::Buffer>(const_cast<void *>(data_), (size_t)h.bytes(),
                                       dt::Where::Host, [](void *) {});
  return dt::formatTensor(h);
}

struct Session::Impl {
  std::unique_ptr<dt::Session> s;
  /// The mpi backend in a job of several processes: the program's values are
  /// world rank 0's only (the others hold their types).
  bool mpiJob = false;
  std::vector<Diagnostic> diags;
  std::ostringstream out;
  std::atomic<bool> busy{false};

  /// Marks the session in use for a scope: a second thread that enters it
  /// meanwhile gets Error(Usage) instead of racing.
  struct Enter {
    Impl &im;
    explicit Enter(Impl &i) : im(i) {
      if (im.busy.exchange(true))
        throw Error(Error::Kind::Usage,
                    "this dtensor::Session is in use by another thread (a Session is used by one "
                    "thread at a time; use one Session per thread)");
      im.collected = false;
    }
    ~Enter() { im.busy.store(false); }
  };

  /// The session's diagnostics as values; clears the engine.
  void collect() {
    dt::DiagEngine &de = s->diags();
    const dt::SourceManager &sm = s->compilation().sources;
    diags.clear();
    for (const dt::Diagnostic &d : de.all())
      diags.push_back(toApi(d, sm, de));
    de.clear();
    collected = true;
  }

  static Diagnostic toApi(const dt::Diagnostic &d, const dt::SourceManager &sm,
                          const dt::DiagEngine &de) {
    Diagnostic v;
    v.severity = (Diagnostic::Severity)(int)d.severity;
    v.kind = dt::diagIdName(d.id);
    v.message = d.message;
    if (d.loc.file >= 0 && d.loc.file < sm.count())
      v.file = sm.path(d.loc.file);
    v.line = d.loc.line;
    v.column = d.loc.col;
    v.hint = d.hint;
    v.notes = d.notes;
    v.rendered = de.render(d);
    return v;
  }

  /// Set by collect(), cleared when an API call enters: an Error carries
  /// the diagnostics of its own call only, never an earlier call's.
  bool collected = false;

  [[noreturn]] void fail(Error::Kind kind, const std::string &what) {
    throw Error(kind, what, collected ? diags : std::vector<Diagnostic>{});
  }

  /// Why `name` has no value here: none in the program, or (the mpi
  /// backend) one held by the process of world rank 0 only.
  std::string noValue(const std::string &name, bool typed) const {
    if (!typed)
      return "the program has no value `" + name + "`";
    return "`" + name +
           "` is held by the process of world rank 0: under the mpi backend, "
           "values and call() results are that process's only (the others get none)";
  }

  /// Error(Usage) naming the fields to read when `name` is a struct value
  /// (a Tensor is one tensor; a call takes the struct by its name).
  void notStruct(const std::string &name) {
    auto sv = s->structValue(name);
    if (!sv)
      return;
    std::string leaves;
    for (size_t i = 0; i < sv->second.size(); ++i)
      leaves += (i ? ", `" : "`") + sv->second[i] + "`";
    fail(Error::Kind::Usage, "`" + name + "` is a value of struct `" + sv->first +
                                 "`, not one tensor: read its fields by name (" + leaves +
                                 "), or pass `" + name + "` to a call");
  }

  /// Runs `f`, turning the runtime's exceptions into Error.
  template <class F> auto guard(F &&f) -> decltype(f()) {
    try {
      return f();
    } catch (const dt::RuntimeFault &e) {
      collect();
      // The fault itself as a diagnostic: kind RuntimeError, at the failed
      // line when it has one, a note per call it came through.
      dt::SourceManager &sm = s->compilation().sources;
      diags.push_back(toApi(dt::faultDiagnostic(e, sm), sm, dt::DiagEngine(sm)));
      fail(Error::Kind::Runtime, e.what());
    } catch (const dt::InternalError &e) {
      collect();
      fail(Error::Kind::Internal, std::string("internal error: ") + e.what());
    }
  }

  Tensor tensor(const dt::HostTensor &h, const dt::TensorType *type) const {
    Tensor t;
    t.dtype_ = fromInternal(h.dtype);
    t.shape_ = h.shape;
    t.owner_ = h.buf;
    t.data_ = h.raw();
    if (type) {
      t.type_ = type->str();
      t.layout_ = std::make_shared<dt::TensorType>(*type);
    }
    return t;
  }

  std::vector<Block> blocksOf(const dt::HostTensor &v, const dt::TensorType &t) const {
    std::vector<Block> out;
    if (t.isHost()) {
      out.push_back(Block{0, 0, tensor(v, nullptr)});
      return out;
    }
    const dt::Mesh &mesh = *t.mesh;
    for (int64_t r = 0; r < mesh.size(); ++r) {
      Block b;
      b.rank = (int)r;
      b.device = (int)mesh.devices[r];
      b.tensor = tensor(dt::blockOfGlobal(v, t, r), nullptr);
      out.push_back(std::move(b));
    }
    return out;
  }
};

Session::Session(Options opts) : impl_(std::make_unique<Impl>()) {
  if (opts.world < 0)
    throw Error(Error::Kind::Usage, "Options::world is " + std::to_string(opts.world) +
                                        "; give the number of ranks, or 0 for as many as the "
                                        "program's meshes need");
  if (opts.backend != "cpu" && opts.backend != "cuda" && opts.backend != "null" &&
      opts.backend != "mpi")
    throw Error(Error::Kind::Usage,
                "Options::backend is `" + opts.backend + "`; use one of " + dt::backendNames());
  impl_->mpiJob = opts.backend == "mpi" && dt::detectLaunch().size > 1;
  dt::SessionOptions so;
  so.backend = opts.backend;
  so.pipeline.target = opts.backend == "cuda" ? dt::CodeTarget::Cuda : dt::CodeTarget::Llvm;
  so.exec.ranks = opts.world;
  so.keepValues = true;
  so.kernelCache = opts.kernelCache;
  so.compile.deterministic = opts.deterministic;
  if (opts.maxTensorElements < 0 || opts.maxLoopTrips < 0)
    throw Error(Error::Kind::Usage, "Options::maxTensorElements and Options::maxLoopTrips are "
                                    "counts: 0 for the default, else positive");
  so.compile.fileAccess = opts.fileAccess;
  if (opts.maxTensorElements > 0)
    so.compile.maxTensorElements = opts.maxTensorElements;
  so.compile.maxLoopTrips = opts.maxLoopTrips;
  so.exec.maxLoopTrips = opts.maxLoopTrips;
  impl_->s = std::make_unique<dt::Session>(so);
  // The host's folders first, then the installed stdlib, then the defaults.
  std::vector<std::string> paths = opts.importPaths;
  std::error_code ec;
  if (!opts.stdlibDir.empty() && !std::filesystem::is_directory(opts.stdlibDir, ec))
    throw Error(Error::Kind::Usage, "Options::stdlibDir `" + opts.stdlibDir +
                                        "` is not a folder (the stdlib: `nn.dt`, `optim.dt`); "
                                        "leave it empty for the default");
  if (!opts.stdlibDir.empty())
    paths.push_back(opts.stdlibDir);
  // A kernel cache that cannot be one is the host's mistake: said, not a
  // cost paid silently at every start.
  if (!opts.kernelCache.empty() && !std::filesystem::is_directory(opts.kernelCache, ec)) {
    if (std::filesystem::exists(opts.kernelCache, ec))
      throw Error(Error::Kind::Usage,
                  "Options::kernelCache `" + opts.kernelCache + "` is not a folder");
    std::filesystem::create_directories(opts.kernelCache, ec);
    if (ec)
      throw Error(Error::Kind::Usage, "Options::kernelCache `" + opts.kernelCache +
                                          "` cannot be made: " + ec.message());
  }
  auto &sp = impl_->s->compilation().options.stdlibPaths;
  sp.insert(sp.begin(), paths.begin(), paths.end());
}

Session::~Session() = default;

Session::Impl &Session::impl() const {
  if (!impl_)
    throw Error(Error::Kind::Usage, "this dtensor::Session was moved from; use the Session it "
                                    "was moved to");
  return *impl_;
}
Session::Session(Session &&) noexcept = default;
Session &Session::operator=(Session &&) noexcept = default;

bool Session::compile(const std::string &source, const std::string &name) {
  Impl &im = impl();
  Impl::Enter enter(im);
  im.s->diags().clear();
  bool ok = im.guard([&] { return im.s->compile(name, source); });
  if (ok) {
    std::ostringstream log;
    ok = im.guard([&] { return im.s->run(im.out, log); });
  }
  im.collect();
  return ok;
}

bool Session::compileFile(const std::string &path) {
  Impl &im = impl();
  std::string text;
  {
    Impl::Enter enter(im);
    im.s->diags().clear();
    if (!im.s->compilation().readFile(path, text)) {
      im.collect();
      return false;
    }
  }
  return compile(text, path);
}

const std::vector<Diagnostic> &Session::diagnostics() const {
  Impl &im = impl();
  Impl::Enter enter(im);
  return im.diags;
}

std::string Session::takeOutput() {
  Impl &im = impl();
  Impl::Enter enter(im); // a call() on another thread may be printing
  std::string s = im.out.str();
  im.out.str("");
  return s;
}

std::vector<Tensor> Session::call(const std::string &fn, const std::vector<Arg> &args) {
  Impl &im = impl();
  Impl::Enter enter(im);
  im.diags.clear();
  std::vector<dt::TensorType> types;
  std::vector<dt::HostTensor> values;
  // The host memory the call adopts: a result that lies in it (an identity
  // or a reshape of an argument) is copied out, since the view is only
  // valid during the call.
  std::vector<std::pair<const char *, const char *>> adopted;
  std::vector<std::string> structs; // per argument: its struct, "" for a tensor
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg &a = args[i];
    structs.emplace_back();
    if (a.byName && a.name.empty())
      im.fail(Error::Kind::Usage, "argument " + std::to_string(i + 1) + " of `" + fn +
                                      "` names no value (an empty name)");
    // Every process refuses alike (one that went on would wait in the
    // call's collectives for the others).
    if (!a.name.empty() && im.mpiJob)
      im.fail(Error::Kind::Usage,
              "argument " + std::to_string(i + 1) + " of `" + fn + "` names the value `" + a.name +
                  "`: under the mpi backend the program's values are held by the process of "
                  "world rank 0 only; pass the data as a view (every process the same)");
    if (auto sv = a.name.empty() ? std::nullopt : im.s->structValue(a.name)) {
      // A struct value passes its leaves, in field order.
      structs.back() = sv->first;
      for (const std::string &leaf : sv->second) {
        const dt::HostTensor *v = im.s->valueOf(leaf);
        auto t = im.s->typeOf(leaf);
        if (!v || !t)
          im.fail(Error::Kind::Usage, "argument " + std::to_string(i + 1) + " of `" + fn +
                                          "`: the program has no value `" + leaf + "`");
        types.push_back(*t);
        values.push_back(*v);
      }
      continue;
    }
    if (!a.name.empty()) {
      const dt::HostTensor *v = im.s->valueOf(a.name);
      auto t = im.s->typeOf(a.name);
      if (!v || !t)
        im.fail(Error::Kind::Usage, "argument " + std::to_string(i + 1) + " of `" + fn +
                                        "`: the program has no value `" + a.name + "`");
      types.push_back(*t);
      values.push_back(*v);
      continue;
    }
    const TensorView &view = a.view;
    int64_t n = view.numel();
    const std::string which = "argument " + std::to_string(i + 1) + " of `" + fn + "`: ";
    if (n < 0)
      im.fail(Error::Kind::Usage, which + "the view's shape " + shapeText(view.shape) +
                                      (std::any_of(view.shape.begin(), view.shape.end(),
                                                   [](int64_t d) { return d < 0; })
                                           ? " has a negative size"
                                           : " has more bytes than fit in 64 bits"));
    if (n > 0 && !view.data)
      im.fail(Error::Kind::Usage, which + "a view of shape " + shapeText(view.shape) +
                                      " without data (a null pointer)");
    dt::HostTensor h;
    h.dtype = toInternal(view.dtype);
    h.shape = view.shape;
    // Adopts the host's memory: the runtime never writes its arguments.
    h.buf = std::make_shared<dt::Buffer>(const_cast<void *>(view.data), (size_t)h.bytes(),
                                         dt::Where::Host, [](void *) {});
    if (h.bytes() > 0)
      adopted.push_back({(const char *)view.data, (const char *)view.data + h.bytes()});
    dt::TensorType t;
    t.dtype = h.dtype;
    for (int64_t d : view.shape)
      t.shape.push_back(dt::Dim::lit(d));
    types.push_back(t);
    values.push_back(std::move(h));
  }
  std::vector<dt::HostTensor> results;
  bool ok = im.guard([&] { return im.s->call(fn, types, values, results, im.out, structs); });
  if (!ok) {
    im.collect();
    im.fail(Error::Kind::Compile,
            im.diags.empty() ? "`" + fn + "` does not compile" : im.diags.front().message);
  }
  std::vector<Tensor> out;
  const auto &rt = im.s->lastCallResults();
  for (size_t i = 0; i < results.size(); ++i) {
    const char *p = (const char *)results[i].raw();
    const char *e = p ? p + results[i].bytes() : p;
    for (auto &[lo, hi] : adopted)
      if (p && p < hi && lo < e) {
        results[i] = results[i].clone();
        break;
      }
    out.push_back(im.tensor(results[i], i < rt.size() ? &rt[i] : nullptr));
  }
  return out;
}

bool Session::hasFunction(const std::string &fn) const {
  Impl::Enter enter(impl());
  return impl().s->compilation().builderState->functions.count(fn) > 0;
}

bool Session::hasValue(const std::string &name) const {
  Impl &im = impl();
  Impl::Enter enter(im);
  return im.s->valueOf(name) != nullptr || im.s->structValue(name).has_value();
}

Tensor Session::value(const std::string &name) const {
  Impl &im = impl();
  Impl::Enter enter(im);
  im.notStruct(name);
  const dt::HostTensor *v = im.s->valueOf(name);
  auto t = im.s->typeOf(name);
  if (!v || !t)
    im.fail(Error::Kind::Usage, im.noValue(name, t.has_value()));
  return im.tensor(*v, &*t);
}

std::vector<Block> Session::blocks(const std::string &name) const {
  Impl &im = impl();
  Impl::Enter enter(im);
  im.notStruct(name);
  const dt::HostTensor *v = im.s->valueOf(name);
  auto t = im.s->typeOf(name);
  if (!v || !t)
    im.fail(Error::Kind::Usage, im.noValue(name, t.has_value()));
  return im.blocksOf(*v, *t);
}

std::vector<Block> Session::blocks(const Tensor &t) const {
  Impl &im = impl();
  Impl::Enter enter(im);
  if (holdsNoData(t.data_, t.shape_, t.dtype_))
    throw Error(Error::Kind::Usage, "this Tensor holds no data (a default-constructed Tensor)");
  dt::HostTensor h;
  h.dtype = toInternal(t.dtype_);
  h.shape = t.shape_;
  // The blocks may share the tensor's memory: they keep its owner alive.
  h.buf = std::make_shared<dt::Buffer>(const_cast<void *>(t.data_), (size_t)h.bytes(),
                                       dt::Where::Host, [keep = t.owner_](void *) {});
  if (!t.layout_) {
    dt::TensorType host;
    host.dtype = h.dtype;
    for (int64_t d : t.shape_)
      host.shape.push_back(dt::Dim::lit(d));
    return im.blocksOf(h, host);
  }
  return im.blocksOf(h, *std::static_pointer_cast<const dt::TensorType>(t.layout_));
}

int Session::compiledCalls() const {
  Impl &im = impl();
  Impl::Enter enter(im);
  return (int)im.s->callInstances();
}

} // namespace dtensor
