//===- ConstantTransformsTest.cpp - pack_int4, transpose, group_sums, ... -===//
//
// Byte-exact expectations for the packing formats ET-VK reads (low_first:
// byte = ((w[2j+1] + 8) << 4) | (w[2j] + 8); high_first the other way round),
// round trips, the data-free planning half (prototypes and identity
// detection), argument binding and its error messages.
//
//===----------------------------------------------------------------------===//
#include "graft/rewrite/ConstantTransforms.h"

#include <gtest/gtest.h>

using namespace graft;
using namespace graft::rewrite;

namespace {

const ConstantTransform &transform(const std::string &name) {
  const ConstantTransform *t = ConstantTransformRegistry::builtin().find(name);
  EXPECT_NE(t, nullptr) << name;
  return *t;
}

/// Binds, plans and computes `name` on one input; fails the test on error.
Tensor apply(const std::string &name, const Tensor &in, std::vector<Argument> pos,
             std::vector<std::pair<std::string, Argument>> kw = {}, bool *identity = nullptr) {
  const ConstantTransform &t = transform(name);
  auto args = bindTransformArgs(t, pos, kw);
  EXPECT_TRUE(args.ok()) << (args.ok() ? "" : args.diags()[0].message);
  TensorProto p = in.proto();
  auto plan = planTransform(t, {&p}, *args);
  EXPECT_TRUE(plan.ok()) << (plan.ok() ? "" : plan.diags()[0].message);
  if (identity)
    *identity = plan->identity;
  auto out = computeTransform(t, {&in}, *args, plan->proto);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.diags()[0].message);
  return out.ok() ? *out : Tensor();
}

std::vector<int64_t> ints(const Tensor &t) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t.numel(); ++i)
    out.push_back(t.getInt(i));
  return out;
}

std::string planError(const std::string &name, const TensorProto &p, std::vector<Argument> pos,
                      std::vector<std::pair<std::string, Argument>> kw = {}) {
  const ConstantTransform &t = transform(name);
  auto args = bindTransformArgs(t, pos, kw);
  if (!args.ok())
    return args.diags()[0].message;
  auto plan = planTransform(t, {&p}, *args);
  return plan.ok() ? "" : plan.diags()[0].message;
}

} // namespace

TEST(ConstantTransforms, RegistryHasTheBuiltins) {
  for (const char *n : {"pack_int4", "unpack_int4", "unpack_int2", "transpose", "pad_to_multiple",
                        "group_sums", "cast", "reshape"})
    EXPECT_NE(ConstantTransformRegistry::builtin().find(n), nullptr) << n;
  EXPECT_EQ(transform("pack_int4").signature(),
            "pack_int4(w, nibbles: enum{low_first, high_first})");
  EXPECT_EQ(transform("pad_to_multiple").signature(),
            "pad_to_multiple(x, dim: int, multiple: int, value: float = 0.0)");
  ConstantTransformRegistry r;
  EXPECT_TRUE(r.add(transform("cast")).ok());
  EXPECT_FALSE(r.add(transform("cast")).ok());
}

TEST(ConstantTransforms, PackInt4NibbleOrders) {
  Tensor w = Tensor::fromInts(DType::I8, {1, 4}, {-8, 7, 0, -1});
  Tensor low = apply("pack_int4", w, {}, {{"nibbles", Argument("low_first")}});
  EXPECT_EQ(low.proto().str(), "u8[1, 2]");
  // low_first: even element + 8 in the low nibble, odd + 8 in the high one.
  EXPECT_EQ(ints(low), (std::vector<int64_t>{0xF0, 0x78}));
  Tensor high = apply("pack_int4", w, {Argument("high_first")});
  EXPECT_EQ(ints(high), (std::vector<int64_t>{0x0F, 0x87}));
  // Unsigned values are stored without the offset.
  Tensor u = Tensor::fromInts(DType::U8, {2}, {3, 15});
  EXPECT_EQ(ints(apply("pack_int4", u, {Argument("low_first")})), std::vector<int64_t>{0xF3});
}

TEST(ConstantTransforms, UnpackInt2ReadsEmbedding2bitsPacking) {
  // ExecuTorch's 2-bit embedding packing: byte = f0 + (f1 << 2) + (f2 << 4) + (f3 << 6),
  // each field the value + 2 (quantize.py QuantizedGroupEmbedding, packed for bitwidth 2).
  //   0x1B = 0b00'01'10'11 -> fields [3, 2, 1, 0] -> [1, 0, -1, -2]
  //   0xE4 = 0b11'10'01'00 -> fields [0, 1, 2, 3] -> [-2, -1, 0, 1]
  Tensor p = Tensor::fromInts(DType::U8, {2, 1}, {0x1B, 0xE4});
  Tensor w = apply("unpack_int2", p, {});
  EXPECT_EQ(w.proto().str(), "i8[2, 4]");
  EXPECT_EQ(ints(w), (std::vector<int64_t>{1, 0, -1, -2, -2, -1, 0, 1}));
  // Only the packed byte layout is accepted.
  EXPECT_NE(planError("unpack_int2", Tensor::fromInts(DType::I8, {1, 1}, {0}).proto(), {})
                .find("must be u8"),
            std::string::npos);
}

TEST(ConstantTransforms, PackUnpackRoundTrip) {
  std::vector<int64_t> vals;
  for (int i = 0; i < 6 * 32; ++i)
    vals.push_back((i * 7 + 3) % 16 - 8);
  Tensor w = Tensor::fromInts(DType::I8, {6, 32}, vals);
  for (const char *order : {"low_first", "high_first"}) {
    Tensor p = apply("pack_int4", w, {Argument(order)});
    EXPECT_EQ(p.proto().str(), "u8[6, 16]");
    Tensor back = apply("unpack_int4", p, {Argument(order)});
    EXPECT_TRUE(back.equal(w)) << order;
  }
  // The two orders disagree on every byte whose nibbles differ.
  Tensor a = apply("pack_int4", w, {Argument("low_first")});
  Tensor b = apply("pack_int4", w, {Argument("high_first")});
  EXPECT_FALSE(a.equal(b));
}

TEST(ConstantTransforms, PackInt4BlockedFastPathMatchesTheScalarDefinition) {
  // 8-bit sources go through a blocked, branch-free loop (64 pairs a block,
  // then a tail); check it byte for byte against the definition on sizes that
  // hit whole blocks and tails, for both orders and both signednesses.
  for (int64_t cols : {2, 126, 128, 130, 384, 1000}) {
    for (DType dt : {DType::I8, DType::U8}) {
      bool isSigned = dt == DType::I8;
      std::vector<int64_t> vals;
      for (int64_t i = 0; i < 3 * cols; ++i)
        vals.push_back((i * 11 + 5) % 16 - (isSigned ? 8 : 0));
      Tensor w = Tensor::fromInts(dt, {3, cols}, vals);
      for (NibbleOrder order : {NibbleOrder::LowFirst, NibbleOrder::HighFirst}) {
        auto packed = packInt4(w, order);
        ASSERT_TRUE(packed.ok()) << render(packed.diags());
        std::vector<int64_t> expect;
        for (std::size_t i = 0; i < vals.size(); i += 2) {
          int64_t even = vals[i] + (isSigned ? 8 : 0), odd = vals[i + 1] + (isSigned ? 8 : 0);
          expect.push_back(order == NibbleOrder::LowFirst ? (odd << 4) | even : (even << 4) | odd);
        }
        EXPECT_EQ(ints(*packed), expect) << cols << " " << name(dt);
      }
    }
  }
  // A value out of range inside a block, and one in the tail, are still
  // reported with their index.
  std::vector<int64_t> vals(2 * 300, 1);
  vals[2 * 70 + 1] = -9;
  auto r = packInt4(Tensor::fromInts(DType::I8, {2, 300}, vals), NibbleOrder::LowFirst);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diags()[0].message, "pack_int4: value -9 at [0, 141] is outside [-8, 7]");
  std::vector<int64_t> u(2 * 300, 3);
  u[2 * 300 - 1] = 16;
  auto ru = packInt4(Tensor::fromInts(DType::U8, {2, 300}, u), NibbleOrder::HighFirst);
  ASSERT_FALSE(ru.ok());
  EXPECT_EQ(ru.diags()[0].message, "pack_int4: value 16 at [1, 299] is outside [0, 15]");
}

TEST(ConstantTransforms, PackInt4RejectsBadInputs) {
  Tensor w = Tensor::fromInts(DType::I8, {2, 2}, {0, 1, 9, 0});
  auto r = packInt4(w, NibbleOrder::LowFirst);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diags()[0].message, "pack_int4: value 9 at [1, 0] is outside [-8, 7]");
  EXPECT_EQ(planError("pack_int4", TensorProto(DType::I8, {4, 5}), {Argument("low_first")}),
            "pack_int4: the last dim must be even, got i8[4, 5] (pad it with pad_to_multiple "
            "first)");
  EXPECT_EQ(planError("pack_int4", TensorProto(DType::F32, {4, 4}), {Argument("low_first")}),
            "pack_int4: input must be an integer tensor, got f32[4, 4]");
  TensorProto q(DType::F32, {4, 32});
  AffineQuant aq;
  aq.blockSize = {1, 32};
  aq.quantDType = DType::I4;
  aq.quantMin = -8;
  aq.quantMax = 7;
  q.quant = aq;
  EXPECT_NE(planError("pack_int4", q, {Argument("low_first")}).find("has a quantization layout"),
            std::string::npos);
}

TEST(ConstantTransforms, TransposeNormalizesDimsAndDetectsIdentity) {
  Tensor s = Tensor::fromDoubles(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor t = apply("transpose", s, {});
  EXPECT_EQ(t.proto().str(), "f32[3, 2]");
  EXPECT_EQ(ints(t), (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
  EXPECT_TRUE(t.isContiguous());
  // -1 and 1 are the same dim: the canonical argument text agrees.
  const ConstantTransform &tr = transform("transpose");
  TensorProto p = s.proto();
  auto a = bindTransformArgs(tr, {Argument(int64_t(0)), Argument(int64_t(-1))}, {});
  auto b = bindTransformArgs(tr, {Argument(int64_t(0)), Argument(int64_t(1))}, {});
  ASSERT_TRUE(planTransform(tr, {&p}, *a).ok());
  ASSERT_TRUE(planTransform(tr, {&p}, *b).ok());
  EXPECT_EQ(a->canonicalText(), "dim0=0, dim1=1");
  EXPECT_EQ(a->canonicalText(), b->canonicalText());
  bool identity = false;
  apply("transpose", s, {Argument(int64_t(1)), Argument(int64_t(1))}, {}, &identity);
  EXPECT_TRUE(identity);
  EXPECT_EQ(planError("transpose", p, {Argument(int64_t(2))}),
            "transpose: dim0 = 2 is out of range for a tensor of rank 2");
}

TEST(ConstantTransforms, PadToMultiple) {
  Tensor s = Tensor::fromDoubles(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor p = apply("pad_to_multiple", s, {},
                   {{"dim", Argument(int64_t(1))}, {"multiple", Argument(int64_t(4))}});
  EXPECT_EQ(p.proto().str(), "f32[2, 4]");
  EXPECT_EQ(ints(p), (std::vector<int64_t>{1, 2, 3, 0, 4, 5, 6, 0}));
  Tensor rows = apply("pad_to_multiple", s,
                      {Argument(int64_t(0)), Argument(int64_t(4)), Argument(int64_t(7))});
  EXPECT_EQ(rows.proto().str(), "f32[4, 3]");
  EXPECT_EQ(ints(rows), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 7, 7}));
  bool identity = false;
  apply("pad_to_multiple", s, {Argument(int64_t(1)), Argument(int64_t(3))}, {}, &identity);
  EXPECT_TRUE(identity);
  EXPECT_EQ(planError("pad_to_multiple", TensorProto(DType::I8, {2, 3}),
                      {Argument(int64_t(1)), Argument(int64_t(4)), Argument(300.0)}),
            "pad_to_multiple: value 300.0 does not fit i8");
  EXPECT_EQ(planError("pad_to_multiple", s.proto(), {Argument(int64_t(1)), Argument(int64_t(0))}),
            "pad_to_multiple: multiple must be positive, got 0");
}

TEST(ConstantTransforms, GroupSumsMatchComputePerGroupSums) {
  // w [N=3, K=4], group_size 2 -> [2 groups, N padded to 8], transposed.
  Tensor w = Tensor::fromInts(DType::I8, {3, 4}, {1, 2, 3, 4, -1, -2, -3, -4, 7, -8, 0, 5});
  Tensor s = apply("group_sums", w, {Argument(int64_t(2))});
  EXPECT_EQ(s.proto().str(), "i32[2, 8]");
  EXPECT_EQ(ints(s), (std::vector<int64_t>{3, -3, -1, 0, 0, 0, 0, 0, 7, -7, 5, 0, 0, 0, 0, 0}));
  Tensor s4 = apply("group_sums", w, {Argument(int64_t(4)), Argument(int64_t(4))});
  EXPECT_EQ(s4.proto().str(), "i32[1, 4]");
  EXPECT_EQ(ints(s4), (std::vector<int64_t>{10, -10, 4, 0}));
  EXPECT_EQ(planError("group_sums", w.proto(), {Argument(int64_t(3))}),
            "group_sums: group_size 3 must be positive and divide K = 4");
}

TEST(ConstantTransforms, CastAndReshape) {
  Tensor x = Tensor::fromDoubles(DType::F32, {2, 3}, {1.5, -2.5, 3, 4, 5, 6});
  Tensor h = apply("cast", x, {Argument(DType::I32)});
  EXPECT_EQ(h.proto().str(), "i32[2, 3]");
  EXPECT_EQ(ints(h), (std::vector<int64_t>{1, -2, 3, 4, 5, 6})) << "float -> int truncates";
  bool identity = false;
  apply("cast", x, {Argument(DType::F32)}, {}, &identity);
  EXPECT_TRUE(identity);
  Tensor r = apply("reshape", x, {Argument::ints({3, -1})});
  EXPECT_EQ(r.proto().str(), "f32[3, 2]");
  EXPECT_EQ(planError("reshape", x.proto(), {Argument::ints({4, -1})}),
            "reshape: cannot infer -1 for 6 elements");
  EXPECT_EQ(planError("reshape", x.proto(), {Argument::ints({5})}),
            "reshape: shape [5] has 5 elements, the input has 6");
}

TEST(ConstantTransforms, ArgumentBindingErrors) {
  const ConstantTransform &t = transform("pack_int4");
  auto unknown = bindTransformArgs(t, {}, {{"order", Argument("low_first")}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.diags()[0].message,
            "pack_int4: unknown argument 'order' (signature: pack_int4(w, nibbles: "
            "enum{low_first, high_first}))");
  auto missing = bindTransformArgs(t, {}, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.diags()[0].message.rfind("pack_int4: missing required argument 'nibbles'", 0),
            0u);
  auto badEnum = bindTransformArgs(t, {Argument("middle_first")}, {});
  ASSERT_FALSE(badEnum.ok());
  EXPECT_EQ(badEnum.diags()[0].message,
            "pack_int4: argument 'nibbles' must be one of low_first, high_first, got middle_first");
  auto badKind = bindTransformArgs(transform("transpose"), {Argument(1.5)}, {});
  ASSERT_FALSE(badKind.ok());
  EXPECT_EQ(badKind.diags()[0].message, "transpose: argument 'dim0' expects an int, got 1.5");
  auto twice = bindTransformArgs(transform("transpose"), {Argument(int64_t(0))},
                                 {{"dim0", Argument(int64_t(1))}});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.diags()[0].message, "transpose: argument 'dim0' given twice");
  // Ints are accepted for floats; canonical text fills defaults in order.
  auto pad = bindTransformArgs(transform("pad_to_multiple"), {Argument(int64_t(1))},
                               {{"multiple", Argument(int64_t(8))}});
  ASSERT_TRUE(pad.ok());
  EXPECT_EQ(pad->canonicalText(), "dim=1, multiple=8, value=0.0");
}
