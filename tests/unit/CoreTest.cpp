// Core IR tests: dtypes, narrow-float conversions, symbolic dims, prototypes,
// storage, tensors and graph mutation.
#include "graft/ir/Graph.h"
#include "graft/ir/Verifier.h"
#include "graft/support/BoxedOptional.h"
#include "graft/support/FileIO.h"
#include "graft/support/FloatBits.h"
#include "graft/support/LargeAlloc.h"
#include "graft/support/SlabArena.h"
#include "graft/support/StableVector.h"
#include "graft/support/StringArena.h"
#include "graft/support/StringViewMap.h"
#include "graft/support/Xxh64.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>

using namespace graft;

TEST(DType, NamesRoundTrip) {
  for (int i = 0; i < kNumDTypes; ++i) {
    DType d = static_cast<DType>(i);
    EXPECT_EQ(parseDType(name(d)), d) << name(d);
    EXPECT_EQ(parseDType(std::string("torch.") + std::string(torchName(d))), d);
  }
  EXPECT_EQ(parseDType("float"), DType::F32);
  EXPECT_FALSE(parseDType("f33"));
}

TEST(DType, BoundsAndPromotion) {
  EXPECT_EQ(integerBounds(DType::I4), std::make_pair(int64_t(-8), int64_t(7)));
  EXPECT_EQ(integerBounds(DType::U4), std::make_pair(int64_t(0), int64_t(15)));
  EXPECT_EQ(integerBounds(DType::I8), std::make_pair(int64_t(-128), int64_t(127)));
  EXPECT_FALSE(integerBounds(DType::F32));
  EXPECT_EQ(promoteTypes(DType::BF16, DType::F32), DType::F32);
  EXPECT_EQ(promoteTypes(DType::BF16, DType::F16), DType::F32);
  EXPECT_EQ(promoteTypes(DType::U8, DType::I8), DType::I16);
  EXPECT_EQ(promoteTypes(DType::I32, DType::BF16), DType::BF16);
  EXPECT_EQ(promoteTypes(DType::Bool, DType::I64), DType::I64);
  EXPECT_EQ(promoteTypes(DType::I8, DType::I64), DType::I64);
}

TEST(FloatBits, HalfRoundsToNearestEven) {
  // 1 + 2^-11 is exactly halfway between 1 and 1 + 2^-10: ties to even (1).
  EXPECT_EQ(floatToHalfBits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even): rounds up.
  EXPECT_EQ(floatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7C00);              // overflow to inf
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -24)), 0x0001); // smallest subnormal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -25)), 0x0000); // tie -> even (0)
  EXPECT_EQ(halfBitsToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(halfBitsToFloat(0xC000), -2.0f);
}

TEST(FloatBits, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(floatToBFloat16Bits(1.0f), 0x3F80);
  // 1 + 2^-8 is the midpoint of 1 and 1 + 2^-7: ties to even -> 1.
  EXPECT_EQ(floatToBFloat16Bits(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(floatToBFloat16Bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(bfloat16BitsToFloat(floatToBFloat16Bits(0.1f)), 0.10009765625f);
}

TEST(FloatBits, Float8Formats) {
  EXPECT_EQ(float8BitsToFloat(floatToFloat8Bits(448.0f, DType::F8E4M3FN), DType::F8E4M3FN), 448.0f);
  EXPECT_TRUE(
      std::isnan(float8BitsToFloat(floatToFloat8Bits(1000.0f, DType::F8E4M3FN), DType::F8E4M3FN)));
  EXPECT_EQ(float8BitsToFloat(floatToFloat8Bits(57344.0f, DType::F8E5M2), DType::F8E5M2), 57344.0f);
  EXPECT_TRUE(std::isinf(float8BitsToFloat(floatToFloat8Bits(1e6f, DType::F8E5M2), DType::F8E5M2)));
  EXPECT_EQ(floatToFloat8Bits(1.0f, DType::F8E4M3FN), 0x38);
  EXPECT_EQ(float8BitsToFloat(0x01, DType::F8E4M3FN), std::ldexp(1.0f, -9)); // subnormal
  // 1.0625 is the midpoint of 1 and 1.125 in e4m3: ties to even -> 1.0.
  EXPECT_EQ(floatToFloat8Bits(1.0625f, DType::F8E4M3FN), 0x38);
  EXPECT_EQ(float8BitsToFloat(floatToFloat8Bits(4.0f, DType::F8E8M0FNU), DType::F8E8M0FNU), 4.0f);
  EXPECT_EQ(float8BitsToFloat(floatToFloat8Bits(1.0f, DType::F8E4M3FNUZ), DType::F8E4M3FNUZ), 1.0f);
  EXPECT_EQ(fp4E2M1BitsToFloat(floatToFp4E2M1Bits(2.5f)), 2.0f);   // tie -> even
  EXPECT_EQ(fp4E2M1BitsToFloat(floatToFp4E2M1Bits(-5.0f)), -4.0f); // tie -> even
  EXPECT_EQ(fp4E2M1BitsToFloat(floatToFp4E2M1Bits(9.0f)), 6.0f);   // saturates
}

TEST(Dim, LinearArithmetic) {
  Dim s0 = Dim::symbol("s0"), s1 = Dim::symbol("s1");
  EXPECT_EQ((s0 * 2 + 1).str(), "2*s0+1");
  EXPECT_EQ((s0 + s1 - s0).str(), "s1");
  EXPECT_EQ((s0 * 4).floorDiv(2).str(), "2*s0");
  EXPECT_TRUE((s0 * s1).isOpaque());
  EXPECT_EQ(Dim(7).floorDiv(2), Dim(3));
  EXPECT_EQ(Dim(-7).floorDiv(2), Dim(-4));
  SymbolTable t;
  t.declare("s0", {1, 2048});
  EXPECT_EQ(t.upperBound(s0 * 2 + 1), 4097);
  EXPECT_EQ(t.lowerBound(s0 * 2 + 1), 3);
  EXPECT_FALSE(t.upperBound(s1));
}

TEST(Dim, SymbolicPartIsSharedAndValueSemantic) {
  // Copies share the immutable symbolic part; arithmetic never changes the
  // operand it was computed from.
  Dim s0 = Dim::symbol("s0");
  Dim a = s0 + 3;
  Dim b = a; // shares a's symbolic part
  Dim c = b - 3;
  EXPECT_EQ(a.str(), "s0+3");
  EXPECT_EQ(b.str(), "s0+3");
  EXPECT_EQ(c, s0);
  EXPECT_TRUE(c.isSymbol());
  // Terms that cancel leave a plain constant, equal to one built directly.
  Dim zero = (s0 * 2 + 5) - s0 * 2;
  EXPECT_TRUE(zero.isConstant());
  EXPECT_EQ(zero, Dim(5));
  EXPECT_TRUE(zero.terms().empty());
  EXPECT_TRUE(zero.opaqueExpr().empty());
  // Equal expressions built separately compare equal; different ones do not.
  EXPECT_EQ(Dim::symbol("s0") * 2, s0 + s0);
  EXPECT_NE(s0 * 2, s0 * 3);
  EXPECT_NE(s0, Dim(0));
  EXPECT_EQ(Dim::opaque("s0*s1"), s0 * Dim::symbol("s1"));
  // Moved-from dims are valid constants; self-assignment keeps the value.
  Dim m = std::move(a);
  EXPECT_EQ(m.str(), "s0+3");
  Dim &self = m;
  m = self;
  EXPECT_EQ(m.str(), "s0+3");
  Shape shape{s0, 4, s0 * 2};
  Shape copy = shape;
  shape.clear();
  EXPECT_EQ(str(copy), "[s0, 4, 2*s0]");
}

TEST(SmallVector, InlineThenSpillsAndBehavesLikeAVector) {
  using V = SmallVector<std::string, 2>;
  V v{"a", "b"};
  EXPECT_EQ(v.capacity(), 2u); // in place
  v.push_back(v[0]);           // spills; the argument aliases the old storage
  v.insert(v.begin() + 1, "x");
  EXPECT_EQ((std::vector<std::string>(v.begin(), v.end())),
            (std::vector<std::string>{"a", "x", "b", "a"}));
  v.erase(v.begin(), v.begin() + 2);
  EXPECT_EQ(v.size(), 2u);
  EXPECT_EQ(v.front(), "b");
  V w = v;            // copy of a spilled vector
  V m = std::move(v); // steals the heap buffer
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(m, w);
  V small{"p"};
  V moved = std::move(small); // inline elements are moved one by one
  EXPECT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0], "p");
  moved.insert(moved.begin(), w.begin(), w.end());
  EXPECT_EQ((std::vector<std::string>(moved.begin(), moved.end())),
            (std::vector<std::string>{"b", "a", "p"}));
  moved.resize(5, "z");
  EXPECT_EQ(moved.back(), "z");
  moved.resize(1);
  EXPECT_EQ(moved.size(), 1u);
  EXPECT_THROW(moved.at(3), std::out_of_range);
  Shape s{1, Dim::symbol("s0"), 3, 4, 5}; // a rank-5 shape spills too
  EXPECT_EQ(str(s), "[1, s0, 3, 4, 5]");
}

TEST(TensorProto, AffineBuffers) {
  TensorProto p(DType::F32, {64, 128});
  AffineQuant q;
  q.blockSize = {1, 32};
  q.quantDType = DType::I4;
  q.quantMin = -8;
  q.quantMax = 7;
  q.packedInt4 = true;
  p.quant = q;
  auto bufs = p.buffers();
  ASSERT_TRUE(bufs.ok());
  ASSERT_EQ(bufs->size(), 2u);
  EXPECT_EQ((*bufs)[0].name, "qdata");
  EXPECT_EQ((*bufs)[0].dtype, DType::U8);
  EXPECT_EQ(str((*bufs)[0].shape), "[64, 64]");
  EXPECT_EQ(str((*bufs)[1].shape), "[64, 4]");
  EXPECT_EQ(p.totalBytes(), 64 * 64 + 64 * 4 * 4);
  EXPECT_EQ(p.str(), "f32[64, 128]{quant=affine(block=[1, 32], qdtype=i4, range=[-8, 7], "
                     "scale=f32, zero_point=none, packed=low_first)}");
  q.blockSize = {1, 48};
  p.quant = q;
  EXPECT_FALSE(p.buffers().ok());
}

TEST(TensorProto, BlockScaledFloatBuffers) {
  TensorProto p(DType::BF16, {Dim::symbol("s0"), 64});
  p.quant = NvFp4{16, true};
  auto bufs = p.buffers();
  ASSERT_TRUE(bufs.ok());
  ASSERT_EQ(bufs->size(), 4u);
  EXPECT_EQ(str((*bufs)[0].shape), "[s0, 32]");
  EXPECT_EQ((*bufs)[1].dtype, DType::F8E4M3FN);
  EXPECT_EQ(str((*bufs)[1].shape), "[s0, 4]");
  EXPECT_EQ((*bufs)[3].name, "row_amax");
  EXPECT_FALSE(p.totalBytes()); // symbolic

  TensorProto m(DType::F32, {4, 64});
  m.quant = MxFp8{DType::F8E4M3FN, 32};
  auto mb = m.buffers();
  ASSERT_TRUE(mb.ok());
  EXPECT_EQ((*mb)[1].dtype, DType::F8E8M0FNU);
  EXPECT_EQ(str((*mb)[1].shape), "[4, 2]");

  TensorProto b(DType::F32, {300, 256});
  b.quant = Fp8Blockwise{DType::F8E4M3FN, {128, 128}};
  auto bb = b.buffers();
  ASSERT_TRUE(bb.ok());
  EXPECT_EQ(str((*bb)[1].shape), "[3, 2]");
}

TEST(TensorProto, FlattenUnflatten) {
  TensorProto p(DType::F32, {2, 4});
  AffineQuant q;
  q.blockSize = {1, 2};
  q.zeroPointDType = DType::I8;
  p.quant = q;
  Tensor qdata = Tensor::fromInts(DType::I8, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor scale = Tensor::fromDoubles(DType::F32, {2, 2}, {0.5, 0.25, 1, 2});
  Tensor zp = Tensor::fromInts(DType::I8, {2, 2}, {0, 1, 0, -1});
  auto qt = unflatten(p, {{"zero_point", zp}, {"qdata", qdata}, {"scale", scale}});
  ASSERT_TRUE(qt.ok()) << render(qt.diags());
  auto flat = flatten(*qt);
  ASSERT_TRUE(flat.ok());
  ASSERT_EQ(flat->size(), 3u);
  EXPECT_EQ((*flat)[0].first.name, "qdata");
  EXPECT_EQ((*flat)[2].first.name, "zero_point");
  // Missing, mis-shaped and unknown buffers are rejected with a reason.
  EXPECT_FALSE(unflatten(p, {{"qdata", qdata}, {"scale", scale}}).ok());
  EXPECT_FALSE(unflatten(p, {{"qdata", qdata}, {"scale", qdata}, {"zero_point", zp}}).ok());
  auto extra = unflatten(p, {{"qdata", qdata}, {"scale", scale}, {"zero_point", zp}, {"x", zp}});
  ASSERT_FALSE(extra.ok());
  EXPECT_NE(extra.diags()[0].message.find("unexpected buffer 'x'"), std::string::npos);
}

TEST(Storage, MapsFileWithoutCopy) {
  std::string path = ::testing::TempDir() + "graft_storage_test.bin";
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 10000; ++i)
      out.put(static_cast<char>(i & 0xFF));
  }
  auto s = Storage::mapFile(path, 4099, 16);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE((*s)->isMapped());
  EXPECT_EQ((*s)->data()[0], 4099 & 0xFF);
  EXPECT_FALSE(Storage::mapFile(path, 9990, 16).ok());
  EXPECT_FALSE(Storage::mapFile(path + ".missing", 0, 1).ok());
  // Two views of one storage (tied weights) share bytes.
  Tensor a(DType::U8, {4}, *s, 0), b(DType::U8, {2, 2}, *s, 0);
  EXPECT_EQ(a.storage().get(), b.storage().get());
  EXPECT_EQ(b.getInt(3), a.getInt(3));
  // A view of a whole-file mapping (how an archive's weights are mapped):
  // mapped, read-only, keeps the mapping alive, and reads the same bytes
  // after its pages (and its neighbours' on shared pages) are released.
  std::shared_ptr<Storage> v;
  {
    auto whole = Storage::mapFile(path, 0, 10000);
    ASSERT_TRUE(whole.ok());
    v = Storage::view(*whole, 4099, 16);
    EXPECT_TRUE(v->isMapped());
    EXPECT_EQ(v->mutableData(), nullptr);
    EXPECT_EQ(v->path(), path);
  }
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(v->size(), 16u);
    for (std::size_t i = 0; i < v->size(); ++i)
      EXPECT_EQ(v->data()[i], (4099 + i) & 0xFF);
    v->releasePages();
  }
  std::remove(path.c_str());
}

TEST(Tensor, ConversionsFollowTorch) {
  Tensor f = Tensor::fromDoubles(DType::F32, {4}, {2.7, -2.7, 300.0, -0.5});
  Tensor i = f.to(DType::I8);
  EXPECT_EQ(i.getInt(0), 2); // truncation toward zero
  EXPECT_EQ(i.getInt(1), -2);
  EXPECT_EQ(i.getInt(2), 44); // 300 wraps modulo 256 like torch on x86
  EXPECT_EQ(i.getInt(3), 0);
  Tensor t = Tensor(DType::F32, {2, 2}, f.storage(), 0, {1, 2}); // transposed view
  EXPECT_FALSE(t.isContiguous());
  EXPECT_EQ(t.getDouble(1), f.getDouble(2));
  EXPECT_TRUE(t.contiguous().isContiguous());
}

TEST(Tensor, CloneMaterializesStridedViews) {
  // clone() walks a strided view row by row; every element must land where
  // element-wise indexing (getInt) says, for each element size and for
  // permuted, sliced (offset) and broadcast (stride 0) views.
  for (DType dt : {DType::U8, DType::I16, DType::I32, DType::I64}) {
    std::vector<int64_t> vals(2 * 3 * 5);
    for (std::size_t i = 0; i < vals.size(); ++i)
      vals[i] = static_cast<int64_t>(i * 7 % 97);
    Tensor base = Tensor::fromInts(dt, {2, 3, 5}, vals);
    struct View {
      std::vector<int64_t> sizes, strides;
      int64_t offset;
    };
    for (const View &v : {View{{5, 3, 2}, {1, 5, 15}, 0}, View{{3, 2, 5}, {5, 15, 1}, 0},
                          View{{2, 2, 2}, {15, 5, 2}, 1}, View{{4, 3}, {0, 5}, 2},
                          View{{3}, {5}, 4}, View{{}, {}, 7}}) {
      Tensor t(dt, v.sizes, base.storage(), v.offset, v.strides);
      Tensor c = t.clone();
      ASSERT_TRUE(c.isContiguous());
      ASSERT_EQ(c.sizes(), t.sizes());
      for (int64_t i = 0; i < t.numel(); ++i)
        EXPECT_EQ(c.getInt(i), t.getInt(i)) << name(dt) << " element " << i;
    }
  }
}

TEST(Xxh64, ReferenceVectors) {
  // Published XXH64 values (seed 0): the program file's blob hashes must be
  // what any xxHash implementation computes.
  auto h = [](const char *s) { return xxh64(s, std::strlen(s)); };
  EXPECT_EQ(h(""), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(h("a"), 0xD24EC4F1A98C6E5Bull);
  EXPECT_EQ(h("abc"), 0x44BC2CF5AD770999ull);
  EXPECT_EQ(h("Nobody inspects the spammish repetition"), 0xFBCEA83C8A378BF1ull);
  // Every tail length (0..31 bytes after the stripes) reaches its own path.
  std::vector<uint8_t> buf(100);
  for (std::size_t i = 0; i < buf.size(); ++i)
    buf[i] = static_cast<uint8_t>(i * 37 + 11);
  std::set<uint64_t> seen;
  for (std::size_t n = 0; n <= buf.size(); ++n)
    seen.insert(xxh64(buf.data(), n));
  EXPECT_EQ(seen.size(), buf.size() + 1);
  EXPECT_NE(xxh64(buf.data(), 64, 1), xxh64(buf.data(), 64, 0));
}

TEST(Graph, UseListsAndRewiring) {
  Graph g("g");
  Value *x = g.addInput(InputKind::UserInput, "x", TensorProto(DType::F32, {4}));
  Node *a = g.createNode("aten.relu.default", {x}, {},
                         {{"a", ValueKind::Tensor, TensorProto(DType::F32, {4})}});
  Node *b = g.createNode("aten.add.Tensor", {a->output(), a->output()}, {},
                         {{"b", ValueKind::Tensor, TensorProto(DType::F32, {4})}});
  g.addOutput(b->output());
  EXPECT_EQ(a->output()->users().size(), 2u);
  g.replaceAllUsesWith(a->output(), x);
  EXPECT_FALSE(a->output()->hasUses());
  EXPECT_EQ(x->users().size(), 3u); // relu + add twice
  g.eraseNode(a);
  EXPECT_EQ(g.numNodes(), 1u);
  EXPECT_EQ(g.findValue("a"), nullptr);
  EXPECT_EQ(g.uniqueName("b"), "b_1");
  EXPECT_EQ(x->users().size(), 2u);
}

TEST(Graph, ErasedNodeSlotsAreReused) {
  // Nodes and values live in the graph's slab arenas; an erased node's slot
  // is handed to the next node, and the list stays in order.
  Graph g("g");
  Value *x = g.addInput(InputKind::UserInput, "x", TensorProto(DType::F32, {4}));
  std::vector<Node *> made;
  for (int i = 0; i < 100; ++i)
    made.push_back(
        g.createNode("aten.relu.default", {i ? made.back()->output() : x}, {},
                     {{"r" + std::to_string(i), ValueKind::Tensor, TensorProto(DType::F32, {4})}}));
  g.addOutput(made.back()->output());
  // Drop r50 from the chain, then erase it.
  g.replaceAllUsesWith(made[50]->output(), made[49]->output());
  Node *gone = made[50];
  g.eraseNode(gone);
  Node *fresh = g.createNode("aten.neg.default", {made[49]->output()}, {},
                             {{"n", ValueKind::Tensor, TensorProto(DType::F32, {4})}}, made[51]);
  EXPECT_EQ(fresh, gone); // the freed slot, reused
  EXPECT_EQ(g.numNodes(), 100u);
  auto it = g.nodes().begin();
  std::advance(it, 50);
  EXPECT_EQ(&*it, fresh);
  EXPECT_EQ(fresh->name(), "n");
  EXPECT_EQ(g.findValue("r50"), nullptr);
  EXPECT_EQ(g.findValue("r99"), made.back()->output());
  // The erased result's name is free again: unique names reuse it, and a
  // new value given it is the one found.
  EXPECT_EQ(g.uniqueName("r50"), "r50");
  Node *again = g.createNode("aten.relu.default", {fresh->output()}, {},
                             {{"r50", ValueKind::Tensor, TensorProto(DType::F32, {4})}}, made[51]);
  EXPECT_EQ(g.findValue("r50"), again->output());
  EXPECT_EQ(g.uniqueName("r50"), "r50_1");
}

TEST(ProtoTable, EqualPrototypesShareOneInternedCopy) {
  ProtoTable t;
  const TensorProto *a = t.intern(TensorProto(DType::F32, {4, 8}));
  EXPECT_EQ(t.intern(TensorProto(DType::F32, {4, 8})), a);
  EXPECT_NE(t.intern(TensorProto(DType::F32, {8, 4})), a);
  EXPECT_NE(t.intern(TensorProto(DType::I8, {4, 8})), a);
  TensorProto sym(DType::F32, {1, Dim::symbol("s0")});
  const TensorProto *s = t.intern(sym);
  EXPECT_EQ(t.intern(TensorProto(DType::F32, {1, Dim::symbol("s0")})), s);
  EXPECT_NE(t.intern(TensorProto(DType::F32, {1, Dim::symbol("s1")})), s);
  TensorProto strided = *a;
  strided.strides = Shape{1, 4};
  EXPECT_NE(t.intern(strided), a);
  // Many distinct prototypes (the table grows): earlier copies stay put.
  for (int64_t i = 1; i <= 1000; ++i)
    EXPECT_EQ(t.intern(TensorProto(DType::I32, {i}))->shape[0].constant(), i);
  EXPECT_EQ(t.intern(TensorProto(DType::F32, {4, 8})), a);
  EXPECT_EQ(a->shape[1].constant(), 8);
  EXPECT_EQ(t.size(), 1006u);
  // A moved table keeps its copies where they are; the moved-from one is
  // empty and interns afresh (not into the table it moved to).
  ProtoTable moved(std::move(t));
  EXPECT_EQ(moved.intern(TensorProto(DType::F32, {4, 8})), a);
  EXPECT_EQ(moved.size(), 1006u);
  EXPECT_EQ(t.size(), 0u); // NOLINT(bugprone-use-after-move): reuse is specified
  const TensorProto *fresh = t.intern(TensorProto(DType::F32, {4, 8}));
  EXPECT_NE(fresh, a);
  EXPECT_EQ(t.size(), 1u);
}

TEST(Graph, ValuesShareInternedPrototypes) {
  Graph g("g");
  TensorProto p(DType::F32, {4});
  Value *x = g.addInput(InputKind::UserInput, "x", p);
  Value *a = g.createNode("aten.relu.default", {x}, {}, {{"a", ValueKind::Tensor, p}})->output();
  EXPECT_EQ(&a->proto(), &x->proto());
  const TensorProto &before = a->proto();
  g.setProto(a, TensorProto(DType::F16, {4}));
  EXPECT_EQ(a->proto().dtype, DType::F16);
  EXPECT_EQ(before.dtype, DType::F32); // a reference taken before still reads the old one
  EXPECT_EQ(g.protos().size(), 2u);
}

TEST(Graph, ValuesKnowHowOftenTheyAreGraphOutputs) {
  // The count is what a rewrite asks ("may this result go?") at every
  // match, so it is kept by the graph instead of scanning the outputs.
  Graph g("g");
  TensorProto p(DType::F32, {4});
  Value *x = g.addInput(InputKind::UserInput, "x", p);
  Value *a = g.createNode("aten.relu.default", {x}, {}, {{"a", ValueKind::Tensor, p}})->output();
  Value *b = g.createNode("aten.relu.default", {x}, {}, {{"b", ValueKind::Tensor, p}})->output();
  EXPECT_FALSE(a->isGraphOutput());
  g.addOutput(a);
  g.addOutput(a); // the same value returned twice
  g.addOutput(x);
  EXPECT_EQ(a->numOutputUses(), 2u);
  EXPECT_EQ(x->numOutputUses(), 1u);
  EXPECT_TRUE(verify(g).empty()) << render(verify(g));
  g.setOutputValue(1, b);
  EXPECT_EQ(a->numOutputUses(), 1u);
  EXPECT_EQ(b->numOutputUses(), 1u);
  g.replaceAllUsesWith(a, b); // outputs follow a replaced value
  EXPECT_FALSE(a->isGraphOutput());
  EXPECT_EQ(b->numOutputUses(), 2u);
  EXPECT_EQ(g.outputs()[0].value, b);
  EXPECT_TRUE(verify(g).empty()) << render(verify(g));
}

TEST(Graph, NamesAndFqnsAreTheGraphsOwnCopies) {
  Graph g("g");
  TensorProto p(DType::F32, {4});
  Value *w;
  {
    // The caller's strings die right after the call: the graph copied them.
    std::string name = "layers_0_wq_weight_with_a_name_past_the_small_string_size";
    std::string fqn = "layers.0.wq.weight.with.an.fqn.past.the.small.string.size";
    w = g.addInput(InputKind::Parameter, name, p, fqn);
    name.assign(name.size(), '#');
    fqn.assign(fqn.size(), '#');
  }
  EXPECT_EQ(w->name(), "layers_0_wq_weight_with_a_name_past_the_small_string_size");
  EXPECT_EQ(g.inputs()[0].fqn, "layers.0.wq.weight.with.an.fqn.past.the.small.string.size");
  EXPECT_EQ(g.findConstant("layers.0.wq.weight.with.an.fqn.past.the.small.string.size")->value, w);
  // A NameRef reads as a string: NUL-terminated, concatenates, converts.
  NameRef n = w->name();
  EXPECT_EQ(std::strlen(n.c_str()), n.size());
  EXPECT_EQ("%" + n + ":" + std::string("x"), "%" + std::string(n) + ":x");
  std::string copy = n;
  EXPECT_EQ(copy, n);
  EXPECT_EQ(g.findValue("layers_0_wq_weight"), nullptr);
  EXPECT_TRUE(g.inputs()[0].fqn.starts_with("layers.0."));

  // A reused result slot (ErasedResults::Reuse) takes its next name in its
  // own bytes when it fits, else in fresh storage; both are found by name,
  // and the old name is not.
  Value *x = g.addInput(InputKind::UserInput, "x", p);
  auto relu = [&](std::string_view name) {
    return g.createNode("aten.relu.default", {x}, {}, {{std::string(name), ValueKind::Tensor, p}});
  };
  Node *a = relu("a_rather_long_result_name_0");
  Value *slot = a->output();
  g.eraseNode(a, Graph::ErasedResults::Reuse);
  Node *b = relu("short");
  ASSERT_EQ(b->output(), slot); // the slot, reused
  EXPECT_EQ(b->output()->name(), "short");
  EXPECT_EQ(std::strlen(b->output()->name().c_str()), 5u);
  EXPECT_EQ(g.findValue("short"), slot);
  EXPECT_EQ(g.findValue("a_rather_long_result_name_0"), nullptr);
  g.eraseNode(b, Graph::ErasedResults::Reuse);
  Node *c = relu("a_name_longer_than_any_name_this_slot_had_before");
  ASSERT_EQ(c->output(), slot);
  EXPECT_EQ(c->output()->name(), "a_name_longer_than_any_name_this_slot_had_before");
  EXPECT_EQ(g.findValue("a_name_longer_than_any_name_this_slot_had_before"), slot);
  EXPECT_EQ(g.findValue("short"), nullptr);
  // The first value's name was never touched by the slot's renames.
  EXPECT_EQ(w->name(), "layers_0_wq_weight_with_a_name_past_the_small_string_size");
  g.addOutput(c->output());
  auto diags = verify(g);
  EXPECT_TRUE(diags.empty()) << render(diags);
}

TEST(Graph, ConstantsAreIndexedByFqn) {
  Graph g("g");
  TensorProto p;
  p.dtype = DType::F32;
  p.shape = {Dim(2)};
  g.addInput(InputKind::UserInput, "x", p, "user.fqn"); // not a constant
  g.addScalarInput(ValueKind::SymInt, "n");
  Value *w = g.addInput(InputKind::Parameter, "w", p, "layer.weight");
  Value *b = g.addInput(InputKind::Buffer, "b", p, "layer.buf");
  g.addInput(InputKind::Parameter, "anon", p); // no FQN: not indexed
  Value *dup = g.addInput(InputKind::Parameter, "w2", p, "layer.weight");
  EXPECT_EQ(g.numConstants(), 2u);
  ASSERT_NE(g.findConstant("layer.weight"), nullptr);
  EXPECT_EQ(g.findConstant("layer.weight")->value, w); // the first of two
  EXPECT_NE(g.findConstant("layer.weight")->value, dup);
  EXPECT_EQ(g.findConstant("layer.buf")->value, b);
  EXPECT_EQ(g.findConstant("user.fqn"), nullptr);
  EXPECT_EQ(g.findConstant(""), nullptr);
  EXPECT_EQ(g.findConstant("layer.buf", StringViewMap<int>::hash("layer.buf"))->value, b);
  // Found across the index's growth, at the same addresses.
  g.reserveConstants(5000);
  for (int i = 0; i < 3000; ++i)
    g.addInput(InputKind::Parameter, "c" + std::to_string(i), p, "c." + std::to_string(i));
  EXPECT_EQ(g.numConstants(), 3002u);
  for (int i = 0; i < 3000; i += 7)
    EXPECT_EQ(g.findConstant("c." + std::to_string(i))->value->name(), "c" + std::to_string(i));
  EXPECT_EQ(g.findConstant("layer.weight")->value, w);
}

TEST(Graph, RandomInitIsDeterministic) {
  Graph g;
  Value *w = g.addInput(InputKind::Parameter, "w", TensorProto(DType::I8, {8, 8}), "w");
  GraphInput *in = g.inputFor(w);
  in->init = RandomInit{7, -8, 7};
  const Tensor &t = in->data();
  bool sawMin = false, sawMax = false;
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t v = t.getInt(i);
    ASSERT_GE(v, -8);
    ASSERT_LE(v, 7);
    sawMin |= v == -8;
    sawMax |= v == 7;
  }
  EXPECT_TRUE(sawMin && sawMax);
  EXPECT_TRUE(t.equal(generateRandom(w->proto(), RandomInit{7, -8, 7})));
  EXPECT_FALSE(t.equal(generateRandom(w->proto(), RandomInit{8, -8, 7})));
}

TEST(FileIO, AtomicWriteLeavesNoTempFiles) {
  std::string dir = ::testing::TempDir();
  std::string path = dir + "graft_atomic.txt";
  ASSERT_TRUE(writeFileAtomic(path, "hello").ok());
  EXPECT_EQ(*readFile(path), "hello");
  EXPECT_FALSE(writeFileAtomic(dir + "no/such/dir/file.txt", "x").ok());
  EXPECT_FALSE(readFile(dir + "does-not-exist").ok());
}

TEST(StringViewMap, InsertFindEraseAcrossRehashes) {
  // Enough keys that the slot array (32 B per slot) passes the huge-page
  // threshold: the allocateLarge path is exercised, not only operator new.
  std::vector<std::string> keys;
  for (int i = 0; i < 100000; ++i)
    keys.push_back("layers." + std::to_string(i) + ".attention.wq.weight");
  StringViewMap<int> m;
  for (int i = 0; i < static_cast<int>(keys.size()); ++i)
    EXPECT_TRUE(m.insert(keys[static_cast<std::size_t>(i)], i));
  EXPECT_FALSE(m.insert(keys[7], -1)); // present: not overwritten
  ASSERT_EQ(m.size(), keys.size());
  EXPECT_EQ(*m.find(keys[7]), 7);
  m.insertOrAssign(keys[7], 70);
  EXPECT_EQ(*m.find(keys[7]), 70);
  EXPECT_EQ(m.find("layers.100000.attention.wq.weight"), nullptr);
  // Backward-shift deletion keeps every other key reachable.
  for (std::size_t i = 0; i < keys.size(); i += 2)
    EXPECT_TRUE(m.erase(keys[i]));
  EXPECT_FALSE(m.erase(keys[0]));
  EXPECT_EQ(m.size(), keys.size() / 2);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const int *hit = m.find(keys[i], StringViewMap<int>::hash(keys[i]));
    if (i % 2 == 0) {
      EXPECT_EQ(hit, nullptr) << keys[i];
    } else {
      ASSERT_NE(hit, nullptr) << keys[i];
      EXPECT_EQ(*hit, i == 7 ? 70 : static_cast<int>(i));
    }
  }
  // Copies are independent; moves leave the source empty.
  StringViewMap<int> copy = m;
  copy.insertOrAssign(keys[1], -5);
  EXPECT_EQ(*m.find(keys[1]), 1);
  EXPECT_EQ(*copy.find(keys[1]), -5);
  StringViewMap<int> moved = std::move(copy);
  EXPECT_EQ(moved.size(), m.size());
  EXPECT_EQ(*moved.find(keys[1]), -5);
  EXPECT_TRUE(copy.empty()); // NOLINT(bugprone-use-after-move): specified empty
  EXPECT_EQ(copy.find(keys[1]), nullptr);
  moved.clear();
  EXPECT_EQ(moved.find(keys[3]), nullptr);
  EXPECT_TRUE(moved.insert(keys[3], 3));
}

TEST(LargeAlloc, HugePageBlocksAreAlignedAndUsable) {
  // Small blocks come from operator new; large ones are whole 2 MiB pages.
  EXPECT_EQ(largeCapacity(1000), 1000u);
  std::size_t big = kHugePageBytes + 12345;
  std::size_t cap = largeCapacity(big);
  EXPECT_GE(cap, big);
  for (std::size_t bytes : {std::size_t(64), big}) {
    std::size_t mapped = largeBytesMapped();
    auto *p = static_cast<unsigned char *>(allocateLarge(bytes));
#if defined(__linux__)
    // Huge-page blocks are counted (memory reports add them to malloc's).
    EXPECT_EQ(largeBytesMapped() - mapped, bytes >= kHugePageBytes ? cap : 0u);
#endif
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignof(std::max_align_t), 0u);
#if defined(__linux__)
    if (bytes >= kHugePageBytes) {
      EXPECT_EQ(cap % kHugePageBytes, 0u);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % kHugePageBytes, 0u);
    }
#endif
    for (std::size_t i = 0; i < bytes; i += 4096)
      p[i] = static_cast<unsigned char>(i);
    p[bytes - 1] = 7;
    EXPECT_EQ(p[bytes - 1], 7);
    deallocateLarge(p, bytes);
  }
  deallocateLarge(nullptr, big); // a no-op, like operator delete
}

TEST(SlabArena, LargeArenasHandOutDistinctSlotsAndReuseFreedOnes) {
  // 200k slots of 64 B: chunks grow past the huge-page size.
  SlabArena arena;
  std::vector<void *> slots;
  std::set<void *> seen;
  for (int i = 0; i < 200000; ++i) {
    void *p = arena.allocate(64);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0xAB, 64);
    EXPECT_TRUE(seen.insert(p).second);
    slots.push_back(p);
  }
  EXPECT_EQ(arena.allocate(128), nullptr); // another size: the caller's heap
  arena.deallocate(slots[123]);
  EXPECT_EQ(arena.allocate(64), slots[123]);
}

namespace {
struct Named {
  std::string name;
  int n = 0;
};
struct NameOf {
  std::string_view operator()(const Named *x) const { return x->name; }
};
} // namespace

TEST(StringViewMap, KeyReadThroughTheValue) {
  // Slots of a KeyOf map hold a hash and the value only; lookups compare
  // the key the value reports.
  static_assert(sizeof(StringViewMap<Named *, NameOf>) == sizeof(StringViewMap<Named *>));
  std::vector<std::unique_ptr<Named>> items;
  StringViewMap<Named *, NameOf> m;
  for (int i = 0; i < 5000; ++i) {
    items.push_back(std::make_unique<Named>(Named{"v" + std::to_string(i), i}));
    EXPECT_TRUE(m.insert(items.back()->name, items.back().get()));
  }
  EXPECT_EQ((*m.find("v4321"))->n, 4321);
  EXPECT_EQ(m.find("v5000"), nullptr);
  // insertOrAssign under an existing name: the new value answers for it.
  Named other{"v17", -17};
  m.insertOrAssign(other.name, &other);
  EXPECT_EQ((*m.find("v17"))->n, -17);
  EXPECT_EQ(m.size(), 5000u);
  EXPECT_TRUE(m.erase("v17"));
  EXPECT_EQ(m.find("v17"), nullptr);
  EXPECT_EQ((*m.find("v18"))->n, 18);
}

TEST(StableVector, ElementsNeverMoveAndIterateInOrder) {
  StableVector<std::string, 4> v;
  std::vector<const std::string *> addrs;
  for (int i = 0; i < 37; ++i)
    addrs.push_back(&v.emplace_back("entry number " + std::to_string(i)));
  ASSERT_EQ(v.size(), 37u);
  for (std::size_t i = 0; i < addrs.size(); ++i) {
    EXPECT_EQ(&v[i], addrs[i]); // no element moved as chunks were added
    EXPECT_EQ(v[i], "entry number " + std::to_string(i));
  }
  EXPECT_EQ(v.back(), "entry number 36");
  int i = 0;
  for (const std::string &s : v)
    EXPECT_EQ(s, "entry number " + std::to_string(i++));
  EXPECT_EQ(i, 37);
  EXPECT_EQ(std::distance(v.begin(), v.end()), 37);
  // A copy is deep; a move keeps the elements where they are.
  StableVector<std::string, 4> copy = v;
  copy[0] = "changed";
  EXPECT_EQ(v[0], "entry number 0");
  StableVector<std::string, 4> moved = std::move(v);
  EXPECT_EQ(&moved[5], addrs[5]);
  EXPECT_TRUE(v.empty()); // NOLINT(bugprone-use-after-move): specified empty
  moved.clear();
  EXPECT_TRUE(moved.empty());
  moved.push_back("again");
  EXPECT_EQ(moved.front(), "again");
}

TEST(StringArena, CopiesStayPutAcrossChunksAndResetReusesTheFirst) {
  StringArena arena;
  std::vector<std::string_view> views;
  std::vector<std::string> want;
  // Enough text for several chunks (the first is 4 KiB, then they double).
  for (int i = 0; i < 2000; ++i) {
    want.push_back("layers." + std::to_string(i) + ".attention.wq.weight.pack_int4_low_first");
    views.push_back(arena.copy(want.back()));
  }
  for (std::size_t i = 0; i < views.size(); ++i)
    EXPECT_EQ(views[i], want[i]); // nothing moved as chunks were added
  EXPECT_GE(arena.bytesReserved(), arena.bytesUsed());
  EXPECT_EQ(arena.copy(""), std::string_view());
  // Arrays are aligned and value-initialized.
  std::span<std::string_view> arr = arena.array<std::string_view>(3);
  ASSERT_EQ(arr.size(), 3u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(arr.data()) % alignof(std::string_view), 0u);
  EXPECT_TRUE(arr[0].empty() && arr[2].empty());
  // A moved arena keeps its strings where they were.
  StringArena moved = std::move(arena);
  EXPECT_EQ(views[1234], want[1234]);
  // reset keeps one chunk: small transactions reuse it without allocating.
  moved.reset();
  EXPECT_EQ(moved.bytesUsed(), 0u);
  std::size_t reserved = moved.bytesReserved();
  for (int round = 0; round < 100; ++round) {
    moved.reset();
    EXPECT_EQ(moved.copy("per-transaction key"), "per-transaction key");
  }
  EXPECT_EQ(moved.bytesReserved(), reserved);
}

TEST(Graph, TargetsAreInternedAndResultNamesTakeAPassedHash) {
  Graph g("g");
  Value *x = g.addInput(InputKind::UserInput, "x", TensorProto(DType::F32, {4}));
  std::string target = "torchao.dequantize_affine.default"; // past the small-string size
  Node *a = g.createNode(target, {x}, {}, {{"a", ValueKind::Tensor, TensorProto(DType::F32, {4})}});
  target.assign("something else entirely"); // the graph kept its own copy
  Node *b = g.createNode("torchao.dequantize_affine.default", {a->output()}, {},
                         {{"b", ValueKind::Tensor, TensorProto(DType::F32, {4})}});
  EXPECT_EQ(a->target(), "torchao.dequantize_affine.default");
  EXPECT_EQ(&a->target(), &b->target()); // one copy per distinct target
  // A caller's buffer of result specs, names hashed by the caller.
  std::vector<Graph::ResultSpec> specs(2);
  specs[0].name = "r0";
  specs[0].nameHash = StringViewMap<Value *>::hash("r0");
  specs[0].proto = TensorProto(DType::F16, {2});
  specs[1].name = "r1"; // no hash: the graph computes it
  specs[1].proto = TensorProto(DType::I8, {3});
  Node *c = g.createNodeWithSpecs("aten.split.default", {b->output()}, {}, std::span(specs));
  ASSERT_EQ(c->numOutputs(), 2u);
  EXPECT_EQ(g.findValue("r0"), c->output(0));
  EXPECT_EQ(g.findValue("r0", StringViewMap<Value *>::hash("r0")), c->output(0));
  EXPECT_EQ(g.findValue("r1"), c->output(1));
  EXPECT_EQ(c->output(1)->proto().dtype, DType::I8);
  EXPECT_EQ(c->output(1)->resultIndex(), 1u);
}

TEST(Graph, SignatureHintIsForgottenWhenArgumentsOrSchemaChange) {
  Graph g("g");
  Value *x = g.addInput(InputKind::UserInput, "x", TensorProto(DType::F32, {4}));
  Value *y = g.addInput(InputKind::UserInput, "y", TensorProto(DType::F32, {4}));
  Node *n = g.createNode("aten.relu.default", {x}, {},
                         {{"r", ValueKind::Tensor, TensorProto(DType::F32, {4})}});
  EXPECT_EQ(n->signatureHint(), Node::kSignatureUnknown);
  n->setSignatureHint(0);
  EXPECT_EQ(n->signatureHint(), 0);
  n->setArgs({y}, {});
  EXPECT_EQ(n->signatureHint(), Node::kSignatureUnknown);
  n->setSignatureHint(-1);
  g.replaceAllUsesWith(y, x);
  EXPECT_EQ(n->signatureHint(), Node::kSignatureUnknown);
  n->setSignatureHint(-1);
  n->setSchema(nullptr);
  EXPECT_EQ(n->signatureHint(), Node::kSignatureUnknown);
}

TEST(StableVector, ChunksDoubleThenStayAtTheCap) {
  // Chunks of 2, 4, 8, ... 2 * 2^10 elements, then 2048 each: past the
  // geometric part, indexing switches to fixed chunks.
  using SV = StableVector<uint64_t, 2>;
  EXPECT_EQ(SV::chunkCapacity(0), 2u);
  EXPECT_EQ(SV::chunkCapacity(3), 16u);
  EXPECT_EQ(SV::chunkCapacity(10), 2048u);
  EXPECT_EQ(SV::chunkCapacity(11), 2048u);
  EXPECT_EQ(SV::chunkCapacity(40), 2048u);
  SV v;
  std::vector<const uint64_t *> addrs;
  const uint64_t n = 3 * 4094 + 17; // the geometric part holds 2 * (2^11 - 1)
  for (uint64_t i = 0; i < n; ++i)
    addrs.push_back(&v.emplace_back(i * 7));
  ASSERT_EQ(v.size(), n);
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(&v[i], addrs[i]) << i;
    ASSERT_EQ(v[i], i * 7) << i;
  }
  // Neighbours within a chunk are contiguous; the last geometric element and
  // the first fixed one are in different chunks.
  EXPECT_EQ(&v[6] + 1, &v[7]); // chunk 2 holds elements 6..13
  EXPECT_EQ(&v[4094 + 1], &v[4094] + 1);
  uint64_t sum = 0;
  for (uint64_t x : v)
    sum += x;
  EXPECT_EQ(sum, 7 * n * (n - 1) / 2);
}

TEST(BoxedOptional, BehavesLikeAnOptionalAndCopiesDeeply) {
  BoxedOptional<std::string> a;
  EXPECT_FALSE(a);
  EXPECT_TRUE(a == std::nullopt);
  EXPECT_EQ(a.value_or("fallback"), "fallback");
  EXPECT_THROW((void)a.value(), std::bad_optional_access);
  a = std::string("abc");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(*a, "abc");
  EXPECT_EQ(a->size(), 3u);
  BoxedOptional<std::string> b = a; // deep copy: b's string is its own
  *a += "d";
  EXPECT_EQ(*b, "abc");
  EXPECT_FALSE(a == b);
  b = a;
  EXPECT_TRUE(a == b);
  EXPECT_TRUE(a == std::string("abcd"));
  EXPECT_EQ(a.optional(), std::optional<std::string>("abcd"));
  BoxedOptional<std::string> c = std::move(a);
  EXPECT_EQ(*c, "abcd");
  c = std::nullopt;
  EXPECT_FALSE(c.has_value());
  c.emplace(3, 'x');
  EXPECT_EQ(*c, "xxx");
  c = std::optional<std::string>();
  EXPECT_FALSE(c);
  // From an alternative of a variant, as TensorProto::quant is assigned.
  BoxedOptional<QuantLayout> q = AffineQuant{};
  EXPECT_TRUE(std::holds_alternative<AffineQuant>(*q));
  // One pointer: the point of the type.
  static_assert(sizeof(BoxedOptional<QuantLayout>) == sizeof(void *));
}

TEST(CompactShape, EmptyIsOnePointerAndEditsLikeAShape) {
  static_assert(sizeof(CompactShape) == sizeof(void *));
  CompactShape s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.size(), 0u);
  EXPECT_TRUE(s.shape().empty());
  s.push_back(Dim(4));
  s.push_back(Dim(1));
  EXPECT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0], Dim(4));
  CompactShape t = s; // deep copy
  s.clear();
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(t.shape(), (Shape{Dim(4), Dim(1)}));
  s = Shape{}; // assigning an empty shape keeps it one null pointer
  EXPECT_TRUE(s.empty());
  s = t;
  EXPECT_TRUE(s == t);
  TensorProto p(DType::F32, {Dim(2), Dim(4)});
  EXPECT_TRUE(p.isContiguous());
  EXPECT_EQ(p.effectiveStrides(), (Shape{Dim(4), Dim(1)}));
  p.strides = {Dim(1), Dim(2)};
  EXPECT_FALSE(p.isContiguous());
  EXPECT_EQ(p.effectiveStrides(), (Shape{Dim(1), Dim(2)}));
}

TEST(StringViewMap, EraseEntryFindsByHashAndValue) {
  StringViewMap<int> m;
  uint64_t h = m.hash("k");
  m.insertOrAssign("k", 1, h);
  EXPECT_FALSE(m.eraseEntry(h, 2)); // same hash, another value: stays
  EXPECT_NE(m.find("k", h), nullptr);
  EXPECT_TRUE(m.eraseEntry(h, 1));
  EXPECT_EQ(m.find("k", h), nullptr);
  EXPECT_FALSE(m.eraseEntry(h, 1));
}

TEST(LargeAlloc, ZeroedBlocksReadAsZeroAndCountAsMapped) {
  for (std::size_t bytes : {std::size_t(100), 2 * kHugePageBytes + 8}) {
    std::size_t ever = largeBytesMappedEver();
    auto *p = static_cast<unsigned char *>(allocateLargeZeroed(bytes));
    ASSERT_NE(p, nullptr);
    bool zero = true;
    for (std::size_t i = 0; i < bytes; i += 509)
      zero = zero && p[i] == 0;
    EXPECT_TRUE(zero && p[bytes - 1] == 0);
#if defined(__linux__)
    EXPECT_EQ(largeBytesMappedEver() - ever, bytes >= kHugePageBytes ? largeCapacity(bytes) : 0u);
#endif
    p[bytes - 1] = 1;
    deallocateLarge(p, bytes);
  }
}

TEST(LargeAlloc, MappedBlocksBypassMallocFromTheThreshold) {
  // Below kMappedBytes a block comes from operator new; from it on, a
  // mapping of its own (counted as mapped until freed), writable throughout.
  for (std::size_t bytes :
       {std::size_t(64), kMappedBytes - 1, kMappedBytes, 3 * kMappedBytes + 5}) {
    std::size_t ever = largeBytesMappedEver(), now = largeBytesMapped();
    auto *p = static_cast<unsigned char *>(allocateMapped(bytes));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignof(std::max_align_t), 0u);
    std::memset(p, 0xab, bytes);
    EXPECT_EQ(p[bytes - 1], 0xab);
#if defined(__linux__)
    std::size_t mapped = bytes >= kMappedBytes ? (bytes + 4095) / 4096 * 4096 : 0;
    EXPECT_EQ(largeBytesMappedEver() - ever, mapped) << bytes;
    EXPECT_EQ(largeBytesMapped() - now, mapped) << bytes;
#endif
    deallocateMapped(p, bytes);
    EXPECT_EQ(largeBytesMapped(), now);
  }
  // A stable vector and a string arena past the threshold keep their
  // contents across chunks.
  StableVector<std::array<char, 200>> big;
  for (int i = 0; i < 20000; ++i)
    big.emplace_back().fill(static_cast<char>(i));
  for (int i = 0; i < 20000; i += 97)
    EXPECT_EQ(big[static_cast<std::size_t>(i)][199], static_cast<char>(i));
  StringArena arena;
  std::vector<std::string_view> views;
  for (int i = 0; i < 60000; ++i)
    views.push_back(arena.copy("string number " + std::to_string(i)));
  for (int i = 0; i < 60000; i += 101)
    EXPECT_EQ(views[static_cast<std::size_t>(i)], "string number " + std::to_string(i));
}

TEST(StringViewMap, ReservedBigTableStartsEmptyAndFills) {
  // 300k entries: the slot array is a zeroed huge-page mapping, not written
  // up front; every slot must still read as empty until filled.
  StringViewMap<std::size_t> m;
  m.reserve(300000);
  EXPECT_TRUE(m.empty());
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < 300000; ++i)
    keys.push_back("k" + std::to_string(i));
  for (std::size_t i = 0; i < keys.size(); ++i)
    EXPECT_TRUE(m.insert(keys[i], i));
  EXPECT_EQ(m.size(), keys.size());
  for (std::size_t i = 0; i < keys.size(); i += 997)
    EXPECT_EQ(*m.find(keys[i]), i);
  EXPECT_EQ(m.find("absent"), nullptr);
}
