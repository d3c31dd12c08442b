// Unit tests for ir/Types: printing, mesh coordinates, torch.chunk blocks.
#include "ir/Types.h"

#include <doctest/doctest.h>

using namespace dt;

static MeshRef mesh32() {
  auto m = std::make_shared<Mesh>();
  m->name = "m";
  m->axes = {{"x", 3}, {"y", 2}};
  for (int i = 0; i < 6; ++i)
    m->devices.push_back(i);
  return m;
}

TEST_CASE("types: canonical printing of both notations") {
  TensorType t = replicatedType(DType::F32, {Dim::lit(2), Dim::lit(3)}, mesh32());
  t.placements[0] = Placement::shard(1);
  CHECK(t.str() == "f32[2, 3] @ m{x: shard(1), y: replicate}");
  CHECK(t.dimsMappingStr() == "m[_, x]");
  t.placements[1] = Placement::partial(ReduceOp::Sum);
  CHECK(t.dimsMappingStr() == "");
}

TEST_CASE("types: mesh coordinates are row-major") {
  auto m = mesh32();
  CHECK(m->coords(0) == std::vector<int64_t>{0, 0});
  CHECK(m->coords(1) == std::vector<int64_t>{0, 1});
  CHECK(m->coords(5) == std::vector<int64_t>{2, 1});
  CHECK(m->rankOf({1, 1}) == 3);
}

TEST_CASE("types: torch.chunk blocks, uneven and empty") {
  CHECK(chunkRange(7, 4, 0) == std::pair<int64_t, int64_t>{0, 2});
  CHECK(chunkRange(7, 4, 3) == std::pair<int64_t, int64_t>{6, 1});
  CHECK(chunkRange(2, 4, 1) == std::pair<int64_t, int64_t>{1, 1});
  CHECK(chunkRange(2, 4, 2).second == 0);
  CHECK(chunkRange(2, 4, 3).second == 0);
}

TEST_CASE("types: local block of a 2-axis sharded dim is mesh-order flattened") {
  TensorType t = replicatedType(DType::F32, {Dim::lit(6), Dim::lit(4)}, mesh32());
  t.placements[0] = Placement::shard(0);
  t.placements[1] = Placement::shard(0);
  auto b = localBlock(t, 3); // coords (1, 1) -> chunk 3 of 6
  CHECK(b.offset[0] == 3);
  CHECK(b.shape[0] == 1);
  CHECK(b.shape[1] == 4);
}
