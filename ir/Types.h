// This file implements the vocabulary of dtensor's type system: element types,
// (possibly symbolic) dimensions, device meshes, placements and the tensor type
// `dtype[shape] @ mesh{axis: placement, ...}` that every IR value carries.
//
// Semantics (the contract every pass and backend relies on):
//  * A Mesh is an n-d grid of devices with named axes. Rank r's coordinate is
//    the row-major unravel of r over the axis sizes; `devices` maps rank ->
//    physical device id (identity when omitted).
//  * A Layout holds exactly one Placement per mesh axis:
//      Replicate  - every rank along the axis holds the full value,
//      Shard(d)   - tensor dim d is split into contiguous blocks (torch.chunk
//                   rule: block = ceil(n / k), trailing blocks smaller or empty),
//      Partial(op)- every rank holds a same-shaped partial value; the true value
//                   is `op` over the ranks of the axis.
//  * Several mesh axes may shard the same tensor dim; they then split it as one
//    flattened axis in the group's order (first axis major), like GSPMD tiles
//    and XLA's `('model', 'data')`. The order is part of the type: each Shard
//    placement carries its position in the group (`order`, 0 = major); the
//    default (every order 0) is mesh-axis order. `(y, x)` and `(x, y)` are
//    different layouts of the same dim.
//  * A TensorType with no mesh is a host (local) value; mixing host and
//    distributed values needs an explicit conversion.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dt {

/// Element types. `Bool` is stored as one byte. `BF16` and `F16` are
/// storage types (two bytes): arithmetic on them is done in f32 and each
/// result rounded to nearest even (support/LowPrecision.h).
enum class DType { F32, F64, I32, I64, Bool, BF16, F16 };

const char *dtypeName(DType t);
std::optional<DType> parseDType(const std::string &s);
int64_t dtypeSize(DType t);
bool isFloat(DType t);        ///< f32, f64, bf16, f16
bool isLowPrecision(DType t); ///< bf16, f16: computed in f32

/// A tensor dimension: a literal size or a size symbol (`T`, `H`) that a
/// generic function binds at each call.
struct Dim {
  int64_t value = 0; ///< the size when `sym` is empty
  std::string sym;   ///< non-empty for a symbolic size
  static Dim lit(int64_t v) { return Dim{v, ""}; }
  static Dim symbol(std::string s) { return Dim{0, std::move(s)}; }
  bool isSym() const { return !sym.empty(); }
  /// Symbolic sizes are equal when they are the same product of names
  /// (`H*D` and `D*H`), else when their text is.
  bool operator==(const Dim &o) const {
    return sym == o.sym ? isSym() || value == o.value : isSym() && o.isSym() && sameProduct(o);
  }
  bool sameProduct(const Dim &o) const;
  bool operator!=(const Dim &o) const { return !(*this == o); }
  std::string str() const;
};
using Shape = std::vector<Dim>;
/// A symbolic size's canonical text: spaces and outer parentheses dropped,
/// and a pure product's inner parentheses too (`(N*M)*2` is `N*M*2`); the
/// factors keep the order written (Dim::operator== compares products).
std::string canonicalSize(const std::string &text);
/// A size as a product: the integer factor and the sorted names (a
/// non-product symbolic size is one opaque name). nullopt for a negative
/// size or an overflow.
struct SizeProduct {
  int64_t coef = 1;
  std::vector<std::string> names;
  bool operator==(const SizeProduct &o) const { return coef == o.coef && names == o.names; }
  bool operator!=(const SizeProduct &o) const { return !(*this == o); }
};
std::optional<SizeProduct> sizeProduct(const Dim &d);
/// Whether `a` divides `b`; `b / a` and `a * b` (nullopt on overflow).
bool divides(const SizeProduct &a, const SizeProduct &b);
std::optional<SizeProduct> times(const SizeProduct &a, const SizeProduct &b);
/// The product as a Dim (a literal when it has no names).
Dim sizeDim(const SizeProduct &p);
std::string shapeStr(const Shape &s); ///< `[2, T]`
bool isConcrete(const Shape &s);
/// Requires a concrete shape; INT64_MAX when the product overflows (the
/// IR builder rejects such shapes, see SessionOptions::maxTensorElements).
int64_t numElements(const Shape &s);
/// The product of the literal dims (symbols count as 1), nullopt on overflow.
std::optional<int64_t> checkedNumElements(const Shape &s);
std::vector<int64_t> concreteDims(const Shape &s); ///< requires a concrete shape

struct MeshAxis {
  std::string name;
  int64_t size = 1;
};

/// A named device mesh: `mesh m = [x = 3, y = 2] devices [..]`.
struct Mesh {
  std::string name;
  std::vector<MeshAxis> axes;
  std::vector<int64_t> devices; ///< rank -> device id; size() entries

  int64_t size() const;                         ///< INT64_MAX when the product overflows
  int axisIndex(const std::string &axis) const; ///< -1 if unknown
  /// Coordinate of `rank` along every axis (row-major, last axis fastest).
  std::vector<int64_t> coords(int64_t rank) const;
  int64_t rankOf(const std::vector<int64_t> &coords) const;
  std::string str() const; ///< `m = [x = 3, y = 2] devices [0, 1, ...]`
  bool operator==(const Mesh &o) const {
    if (name != o.name || axes.size() != o.axes.size() || devices != o.devices)
      return false;
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i].name != o.axes[i].name || axes[i].size != o.axes[i].size)
        return false;
    return true;
  }
};
using MeshRef = std::shared_ptr<const Mesh>;

enum class ReduceOp { Sum, Avg, Max, Min };
const char *reduceOpName(ReduceOp op);
std::optional<ReduceOp> parseReduceOp(const std::string &s);

struct Placement {
  enum Kind { Replicate, Shard, Partial } kind = Replicate;
  int dim = 0;                 ///< tensor dim for Shard
  ReduceOp op = ReduceOp::Sum; ///< reduction for Partial
  /// For Shard: this axis's position among the axes sharding `dim` (0 =
  /// major). Ties (the default 0 everywhere) fall back to mesh-axis order;
  /// canonical types number every group 0..k-1 (canonicalizeShardOrder), so
  /// comparing placements axis by axis also compares the group's order.
  int order = 0;

  static Placement replicate() { return {}; }
  static Placement shard(int d, int order = 0) { return {Shard, d, ReduceOp::Sum, order}; }
  static Placement partial(ReduceOp o = ReduceOp::Sum) { return {Partial, 0, o, 0}; }
  bool isShard() const { return kind == Shard; }
  bool isPartial() const { return kind == Partial; }
  bool isReplicate() const { return kind == Replicate; }
  bool operator==(const Placement &o) const {
    return sameKind(o) && (kind != Shard || order == o.order);
  }
  bool operator!=(const Placement &o) const { return !(*this == o); }
  /// Equal but for the position in a multi-axis group.
  bool sameKind(const Placement &o) const {
    return kind == o.kind && (kind != Shard || dim == o.dim) && (kind != Partial || op == o.op);
  }
  std::string str() const; ///< `replicate`, `shard(1)`, `partial(sum)` (no order)
};

/// The full type of a value. `mesh == nullptr` means a host value (then
/// `placements` is empty).
struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  MeshRef mesh;
  std::vector<Placement> placements; ///< one per mesh axis

  bool isHost() const { return mesh == nullptr; }
  int rank() const { return (int)shape.size(); }
  bool hasPartial() const;
  /// Mesh axes that shard tensor dim `d`, major first (by `order`, ties in
  /// mesh order). This order is the one every block computation follows.
  std::vector<int> axesShardingDim(int d) const;
  /// True when the axes sharding dim `d` split it in mesh-axis order (the
  /// default, printed without `order=`).
  bool meshOrdered(int d) const;
  /// Canonical text: `f32[2, 3] @ m{x: shard(1), y: replicate}`; both source
  /// notations print this way. Host values print as `f32[2, 3]`.
  std::string str() const;
  /// The placement of mesh axis `a` as the placement form writes it:
  /// `shard(0, order=1)` in a group that is not in mesh order.
  std::string placementStr(size_t a) const;
  /// Just the layout part: `m{x: shard(1), y: replicate}` (empty for host).
  std::string layoutStr() const;
  /// The dims-mapping spelling `m[_, x]` when no axis is Partial, else "".
  std::string dimsMappingStr() const;
  bool sameLayout(const TensorType &o) const;
  bool operator==(const TensorType &o) const;
  bool operator!=(const TensorType &o) const { return !(*this == o); }
};

/// Renumbers the `order` of every multi-axis group to 0..k-1 in its current
/// effective order (and 0 on a single-axis shard and on non-shards).
void canonicalizeShardOrder(std::vector<Placement> &ps);
/// True when `ps` is already canonical (what the verifier demands).
bool isCanonicalShardOrder(const std::vector<Placement> &ps);

/// Fully replicated layout on `mesh` (or host when mesh is null).
TensorType replicatedType(DType dt, Shape shape, MeshRef mesh);

/// torch.chunk block of dim size `n` split `k` ways, for chunk `i`:
/// returns {offset, length}; length may be 0 for trailing chunks.
std::pair<int64_t, int64_t> chunkRange(int64_t n, int64_t k, int64_t i);

/// The local (per-rank) shape and global offset of `rank`'s block of a tensor
/// of type `t` (concrete shape). Partial and Replicate axes do not split; a
/// dim sharded by several axes is split over them flattened in the group's
/// order (axesShardingDim: first axis major). The one place that says which
/// block a rank holds: collectives, kernels, files and checkpoints use it.
struct LocalBlock {
  std::vector<int64_t> offset;
  std::vector<int64_t> shape;
};
LocalBlock localBlock(const TensorType &t, int64_t rank);

} // namespace dt
