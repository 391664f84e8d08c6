//===- VulkanKvCacheTest.cpp - KV caches on the device against the interpreter -===//
//
// The KV-cache kernels (llama.update_cache, llama.custom_sdpa,
// llama.sdpa_with_kv_cache, aten.index_copy(_), arange, an SDPA mask computed
// at run time) against the reference interpreter, and the executor's mutable
// buffers: under MutableBuffers::OnDevice the caches stay on the device across
// calls (nothing of their size is uploaded or downloaded per call) and a
// prefill followed by decode steps matches Interpreter::run with a
// MutableState step for step, caches included (bit-exact: the writes copy
// values). Then the whole KV-cache Llama of `graft synth llama --kv-cache
// custom|plain` (4w and 8da4w, tied embeddings): one partition, no CPU node,
// prefill + decode on the device against the interpreter on the original
// graph.
//
//===----------------------------------------------------------------------===//
#include "VulkanTestUtil.h"

#include "CompileTestUtil.h"
#include "SynthTestUtil.h"
#include "graft/Compiler.h"
#include "graft/serialize/ProgramFile.h"
#include "graft/vulkan/ProgramShaders.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

using namespace graft;
using namespace graft::vktest;

namespace {

constexpr Tolerance kExact{0, 0};
/// The softmax's exp is the driver's (GLSL leaves its precision open); every
/// other step of the attention is the reference's own order (sdpa_kv.glsl).
constexpr Tolerance kTranscendental{2e-7, 2e-6};

struct Step {
  std::map<std::string, int64_t> symbols; ///< symbol and symint-input values
  uint64_t seed = 1;
};

/// Runs `gir` step after step on the interpreter (carrying a MutableState)
/// and on the device (MutableBuffers::OnDevice), on the same random inputs:
/// every user output within `tol` at every step, and after the last step
/// every mutable buffer bit-exact. Returns the device executor's stats of
/// the last step.
vk::ExecutorStats checkSteps(const std::string &gir, const std::vector<Step> &steps,
                             Tolerance tol) {
  auto g = parseGraph(gir, "t.gir");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : render(g.diags()));
  if (!g.ok())
    return {};
  vk::ExecutorOptions opts;
  opts.mutableBuffers = vk::ExecutorOptions::MutableBuffers::OnDevice;
  auto exec = vk::GraphExecutor::create(*context(), **g, opts);
  EXPECT_TRUE(exec.ok()) << (exec.ok() ? "" : render(exec.diags()));
  if (!exec.ok())
    return {};
  EXPECT_EQ((*exec)->numCpuNodes() + (*exec)->numCpuFallbackNodes(), 0u);
  Interpreter interp;
  MutableState state;
  std::size_t userOutputs = 0;
  for (const GraphOutput &o : (*g)->outputs())
    userOutputs += o.kind == OutputKind::UserOutput;
  for (const Step &s : steps) {
    SCOPED_TRACE("step with seed " + std::to_string(s.seed));
    auto inputs = makeRandomInputs(**g, s.seed, s.symbols);
    EXPECT_TRUE(inputs.ok()) << (inputs.ok() ? "" : render(inputs.diags()));
    if (!inputs.ok())
      return {};
    auto ref = interp.run(**g, *inputs, state);
    auto dev = (*exec)->run(*inputs);
    EXPECT_TRUE(ref.ok()) << (ref.ok() ? "" : render(ref.diags()));
    EXPECT_TRUE(dev.ok()) << (dev.ok() ? "" : render(dev.diags()));
    if (!ref.ok() || !dev.ok())
      return {};
    EXPECT_EQ(dev->size(), userOutputs) << "OnDevice returns the user outputs only";
    std::size_t d = 0;
    for (std::size_t i = 0; i < (*g)->outputs().size(); ++i) {
      if ((*g)->outputs()[i].kind != OutputKind::UserOutput)
        continue;
      const Tensor &want = std::get<Tensor>((*ref)[i]);
      const Tensor &got = std::get<Tensor>((*dev)[d++]);
      std::string why = allClose(got, want, tol);
      EXPECT_TRUE(why.empty()) << "output " << i << ": " << why;
    }
  }
  auto devState = (*exec)->mutableState();
  EXPECT_TRUE(devState.ok()) << (devState.ok() ? "" : render(devState.diags()));
  if (devState.ok()) {
    EXPECT_EQ(devState->buffers.size(), state.buffers.size());
    for (const auto &[fqn, want] : state.buffers) {
      const Tensor *got = devState->find(fqn);
      EXPECT_NE(got, nullptr) << fqn;
      if (got) {
        EXPECT_EQ(allClose(*got, want, kExact), "") << fqn;
      }
    }
  }
  return (*exec)->stats();
}

/// Both caches [1, M, Hkv, D] start random (so a missed or misplaced write
/// shows), updated at %pos, then attended to.
std::string customGraph(const std::string &dt, int64_t H, int64_t Hkv, int64_t D, int64_t M,
                        const std::string &sdpaTail = "none, 0.0, true") {
  std::ostringstream g;
  std::string cache =
      dt + "[1, " + std::to_string(M) + ", " + std::to_string(Hkv) + ", " + std::to_string(D) + "]";
  g << "graph @t {\n  sym s0 : [1, " << M << "]\n"
    << "  buffer %kc : " << cache << " fqn=\"k_cache\" = random(seed=3, min=-1, max=1)\n"
    << "  buffer %vc : " << cache << " fqn=\"v_cache\" = random(seed=4, min=-1, max=1)\n"
    << "  input %q : " << dt << "[1, s0, " << H << ", " << D << "]\n"
    << "  input %k : " << dt << "[1, s0, " << Hkv << ", " << D << "]\n"
    << "  input %v : " << dt << "[1, s0, " << Hkv << ", " << D << "]\n"
    << "  input %pos : symint\n"
    << "  %u1 : " << dt << "[1] = llama.update_cache.default(%k, %kc, %pos)\n"
    << "  %u2 : " << dt << "[1] = llama.update_cache.default(%v, %vc, %pos)\n"
    << "  %o : " << dt << "[1, s0, " << H << ", " << D
    << "] = llama.custom_sdpa.default(%q, %kc, %vc, %pos, " << sdpaTail << ")\n"
    << "  mutate buffer \"k_cache\" = %kc\n  mutate buffer \"v_cache\" = %vc\n"
    << "  output %o\n}\n";
  return g.str();
}

/// A prefill of `prefill` positions at 0, then one position per step.
std::vector<Step> prefillThenDecode(int64_t prefill, int64_t decodeSteps) {
  std::vector<Step> steps = {{{{"s0", prefill}, {"pos", 0}}, 11}};
  for (int64_t i = 0; i < decodeSteps; ++i)
    steps.push_back({{{"s0", 1}, {"pos", prefill + i}}, uint64_t(12 + i)});
  return steps;
}

TEST(VulkanKvCache, UpdateCacheAndCustomSdpaAcrossCalls) {
  GRAFT_REQUIRE_VULKAN();
  struct Shape {
    int64_t H, Hkv, D, M, prefill;
  };
  // GQA 2:1 and 4:1, no grouping; head dims and row lengths that are not
  // multiples of the 64-wide workgroups.
  for (Shape s : {Shape{4, 2, 8, 16, 5}, Shape{4, 1, 33, 12, 3}, Shape{3, 3, 16, 70, 66}}) {
    std::string g = customGraph("f32", s.H, s.Hkv, s.D, s.M);
    SCOPED_TRACE(g);
    checkSteps(g, prefillThenDecode(s.prefill, 3), kTranscendental);
  }
}

TEST(VulkanKvCache, CustomSdpaScaleNonCausalAndHalf) {
  GRAFT_REQUIRE_VULKAN();
  // An explicit (and a negative) scale, no causal mask: every key up to
  // start_pos + S attends.
  for (const char *tail : {"none, 0.0, true, 0.3", "none, 0.0, false", "none, 0.0, true, -0.5"}) {
    std::string g = customGraph("f32", 4, 2, 8, 16, tail);
    SCOPED_TRACE(g);
    checkSteps(g, prefillThenDecode(4, 2), kTranscendental);
  }
  if (!context()->info().storageBuffer16BitAccess)
    GTEST_SKIP() << "no 16-bit storage for the f16 variant";
  // f16: computed in f32, rounded once to f16 (one f16 ulp of tolerance for
  // the exp's last bit propagating through the rounding).
  std::string g = customGraph("f16", 4, 2, 16, 16);
  SCOPED_TRACE(g);
  checkSteps(g, prefillThenDecode(3, 2), Tolerance{1e-7, 1e-3});
}

TEST(VulkanKvCache, CachesStayOnTheDeviceBetweenCalls) {
  GRAFT_REQUIRE_VULKAN();
  // A decode step moves its inputs and logits, never a cache: each cache is
  // 1*64*2*32*4 = 16 KiB, the per-call traffic a few hundred bytes.
  std::string g = customGraph("f32", 4, 2, 32, 64);
  vk::ExecutorStats last = checkSteps(g, prefillThenDecode(4, 3), kTranscendental);
  const uint64_t cacheBytes = 64 * 2 * 32 * 4;
  EXPECT_GT(last.dispatches, 0u);
  EXPECT_LT(last.bytesUploaded, cacheBytes);
  EXPECT_LT(last.bytesDownloaded, cacheBytes);
}

TEST(VulkanKvCache, PerRunStartsFromTheGraphsData) {
  GRAFT_REQUIRE_VULKAN();
  // The default mode: every run starts from the graph's caches and returns
  // the mutated caches as outputs (what `graft run --check` compares).
  std::string gir = customGraph("f32", 4, 2, 8, 16);
  auto g = parseGraph(gir, "t.gir");
  ASSERT_TRUE(g.ok()) << render(g.diags());
  auto exec = vk::GraphExecutor::create(*context(), **g);
  ASSERT_TRUE(exec.ok()) << render(exec.diags());
  EXPECT_EQ((*exec)->mutableBufferNames(), (std::vector<std::string>{"k_cache", "v_cache"}));
  auto inputs = makeRandomInputs(**g, 5, {{"s0", 2}, {"pos", 3}});
  ASSERT_TRUE(inputs.ok());
  auto ref = Interpreter().run(**g, *inputs);
  ASSERT_TRUE(ref.ok()) << render(ref.diags());
  for (int run = 0; run < 2; ++run) {
    auto out = (*exec)->run(*inputs);
    ASSERT_TRUE(out.ok()) << render(out.diags());
    ASSERT_EQ(out->size(), 3u);
    vk::Comparison c = vk::compareValues(*out, *ref);
    EXPECT_EQ(c.firstProblem, "");
    EXPECT_LE(c.maxAbsError, 1e-6) << "run " << run;
    // The caches it returns equal the reference's exactly.
    for (std::size_t i = 0; i < 2; ++i)
      EXPECT_EQ(allClose(std::get<Tensor>((*out)[i]), std::get<Tensor>((*ref)[i]), kExact), "");
  }
  // A buffer read when asked: the graph's data, then (OnDevice) the update.
  auto k0 = (*exec)->mutableBuffer("k_cache");
  ASSERT_TRUE(k0.ok()) << render(k0.diags());
  EXPECT_FALSE((*exec)->mutableBuffer("nope").ok());
}

TEST(VulkanKvCache, SdpaWithKvCache) {
  GRAFT_REQUIRE_VULKAN();
  std::string g = R"(graph @t {
  sym s0 : [1, 16]
  buffer %kc : f32[1, 16, 2, 8] fqn="k_cache" = random(seed=3, min=-1, max=1)
  buffer %vc : f32[1, 16, 2, 8] fqn="v_cache" = random(seed=4, min=-1, max=1)
  input %q : f32[1, s0, 4, 8]
  input %k : f32[1, s0, 2, 8]
  input %v : f32[1, s0, 2, 8]
  input %pos : symint
  %n : symint = aten.sym_size.int(%q, 1)
  %o : f32[1, s0, 4, 8] = llama.sdpa_with_kv_cache.default(%q, %k, %v, %kc, %vc, %pos, %n, none, 0.0, true)
  mutate buffer "k_cache" = %kc
  mutate buffer "v_cache" = %vc
  output %o
}
)";
  checkSteps(g, prefillThenDecode(5, 3), kTranscendental);
}

/// The plain export's cache update: indices = arange(S) + start_pos, then
/// index_copy_ into caches [1, Hkv, M, D] along dim 2; the attention reads
/// the updated caches through a mask narrowed from tril at the position.
TEST(VulkanKvCache, PlainFormIndexCopyArangeAndRuntimeMask) {
  GRAFT_REQUIRE_VULKAN();
  std::ostringstream mask;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      mask << (i || j ? ", " : "") << (j <= i ? "true" : "false");
  std::string g = R"(graph @t {
  sym s0 : [1, 16]
  buffer %mask : bool[16, 16] fqn="mask" persistent=false = [)" +
                  mask.str() + R"(]
  buffer %kc : f32[1, 2, 16, 8] fqn="k_cache" = random(seed=3, min=-1, max=1)
  buffer %vc : f32[1, 2, 16, 8] fqn="v_cache" = random(seed=4, min=-1, max=1)
  input %q : f32[1, 4, s0, 8]
  input %k : f32[1, 2, s0, 8]
  input %v : f32[1, 2, s0, 8]
  input %pos : symint
  %n : symint = aten.sym_size.int(%q, 2)
  %end : symint = operator.add(%pos, %n)
  %m : bool[s0, 16] = aten.slice.Tensor(%mask, 0, %pos, %end)
  %ar : i64[s0] = aten.arange.default(%n, device=cpu, pin_memory=false)
  %idx : i64[s0] = aten.add.Tensor(%ar, %pos)
  %kn : f32[1, 2, 16, 8] = aten.index_copy_.default(%kc, 2, %idx, %k)
  %vn : f32[1, 2, 16, 8] = aten.index_copy_.default(%vc, 2, %idx, %v)
  %o : f32[1, 4, s0, 8] = aten.scaled_dot_product_attention.default(%q, %kn, %vn, %m, enable_gqa=true)
  mutate buffer "k_cache" = %kn
  mutate buffer "v_cache" = %vn
  output %o
}
)";
  checkSteps(g, prefillThenDecode(4, 3), kTranscendental);
}

TEST(VulkanKvCache, IndexCopyRepeatedAndOutOfRangeIndices) {
  GRAFT_REQUIRE_VULKAN();
  // The functional form on an input, every dtype class, and a repeated index
  // (the last slice wins, as the reference's loop writes it).
  std::string g = R"(graph @t {
  const %idx : i64[4] fqn="idx" = [69, 0, 69, 3]
  const %idx2 : i64[2] fqn="idx2" = [5, 1]
  input %x : f32[3, 70, 5]
  input %s : f32[3, 4, 5]
  input %xi : i32[6, 7]
  input %si : i32[2, 7]
  %o : f32[3, 70, 5] = aten.index_copy.default(%x, 1, %idx, %s)
  %oi : i32[6, 7] = aten.index_copy.default(%xi, -2, %idx2, %si)
  output %o
  output %oi
}
)";
  checkGraph(g, kExact, 23);
  // An index past the destination is a user error, not a stray write.
  std::string bad = R"(graph @t {
  input %x : f32[2, 8]
  input %s : f32[1, 8]
  input %i : i64[1]
  %o : f32[2, 8] = aten.index_copy_.default(%x, 0, %i, %s)
  mutate input "x" = %o
  output %o
}
)";
  auto graph = parseGraph(bad, "t.gir");
  ASSERT_TRUE(graph.ok()) << render(graph.diags());
  auto exec = vk::GraphExecutor::create(*context(), **graph);
  ASSERT_TRUE(exec.ok()) << render(exec.diags());
  Tensor x = Tensor::fromDoubles(DType::F32, {2, 8}, std::vector<double>(16, 1.0));
  Tensor s = Tensor::fromDoubles(DType::F32, {1, 8}, std::vector<double>(8, 2.0));
  auto ok = (*exec)->run({x, s, Tensor::fromInts(DType::I64, {1}, {1})});
  ASSERT_TRUE(ok.ok()) << render(ok.diags());
  // The user input is rebound to a copy: the caller's tensor is untouched.
  EXPECT_EQ(x.getDouble(8), 1.0);
  EXPECT_EQ(std::get<Tensor>((*ok)[0]).getDouble(8), 2.0);
  auto out = (*exec)->run({x, s, Tensor::fromInts(DType::I64, {1}, {2})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.diags()[0].message.find("out of bounds"), std::string::npos)
      << out.diags()[0].message;
}

/// KVCache.update without dynamic shapes: k_out[:, :, input_pos] = k_val,
/// an index_put_ on the cache buffer at positions read from an input (the
/// random positions repeat: the last write wins, as in the reference).
TEST(VulkanKvCache, IndexPutOnCacheAcrossCalls) {
  GRAFT_REQUIRE_VULKAN();
  std::string g = R"(graph @t {
  buffer %kc : f32[1, 2, 16, 8] fqn="k_cache" = random(seed=3, min=-1, max=1)
  input %k : f32[1, 2, 5, 8]
  input %p : i64[5]
  %kn : f32[1, 2, 16, 8] = aten.index_put_.default(%kc, [none, none, %p], %k)
  %o : f32[1, 2, 16, 8] = aten.mul.Scalar(%kn, 2.0)
  mutate buffer "k_cache" = %kn
  output %o
}
)";
  checkSteps(g, {{{}, 31}, {{}, 32}, {{}, 33}}, kExact);
}

TEST(VulkanKvCache, IndexPutNegativeIndicesAndSliceScatter) {
  GRAFT_REQUIRE_VULKAN();
  // Functional forms: negative indices count from the end; slice_scatter
  // with a negative start and an end past the dim (clamped).
  checkGraph(R"(graph @t {
  const %idx : i64[3] fqn="idx" = [-1, 2, -7]
  input %x : f32[4, 7, 3]
  input %v : f32[4, 3, 3]
  input %xi : i32[5, 9]
  input %si : i32[5, 4]
  %o : f32[4, 7, 3] = aten.index_put.default(%x, [none, %idx], %v)
  %s : i32[5, 9] = aten.slice_scatter.default(%xi, %si, 1, -4, 100)
  %s0 : f32[4, 7, 3] = aten.slice_scatter.default(%x, %v, 1, 2, 5)
  output %o
  output %s
  output %s0
}
)",
             kExact, 29);
}

/// Views read only by views are not materialized: their readers compose
/// with them (custom_sdpa gets transpose(transpose(k_cache)) as the cache
/// buffer itself). A composition the view op cannot express on strides
/// (reshape / view of a transposed tensor) materializes the operand first.
TEST(VulkanKvCache, ViewChainsComposeWithoutCopies) {
  GRAFT_REQUIRE_VULKAN();
  std::string identity = R"(graph @t {
  input %x : f32[2, 3, 5]
  %t1 : f32[5, 3, 2] = aten.transpose.int(%x, 0, 2)
  %t2 : f32[2, 3, 5] = aten.transpose.int(%t1, 0, 2)
  %o : f32[2, 3, 5] = aten.mul.Scalar(%t2, 3.0)
  output %o
}
)";
  checkGraph(identity, kExact, 41);
  auto g = parseGraph(identity, "t.gir");
  ASSERT_TRUE(g.ok());
  auto exec = vk::GraphExecutor::create(*context(), **g);
  ASSERT_TRUE(exec.ok()) << render(exec.diags());
  auto in = makeRandomInputs(**g, 41);
  ASSERT_TRUE(in.ok());
  ASSERT_TRUE((*exec)->run(*in).ok());
  EXPECT_EQ((*exec)->stats().dispatches, 1u) << "the transposes cancel: only the mul runs";
  checkGraph(R"(graph @t {
  input %x : f32[2, 3, 4, 5]
  %t : f32[2, 4, 3, 5] = aten.transpose.int(%x, 1, 2)
  %s : f32[2, 2, 3, 5] = aten.slice.Tensor(%t, 1, 1, 3)
  %p : f32[5, 2, 3, 2] = aten.permute.default(%s, [3, 0, 2, 1])
  %r : f32[5, 12] = aten.reshape.default(%p, [5, 12])
  %u : f32[2, 4, 3, 5] = aten.transpose.int(%x, 1, 2)
  %v : f32[2, 4, 15] = aten.view.default(%u, [2, 4, 15])
  %w : f32[2, 4, 3, 5] = aten.transpose.int(%x, 2, 1)
  %e : f32[4, 3, 5] = aten.select.int(%w, 0, 1)
  %e2 : f32[3, 5] = aten.select.int(%e, 0, 2)
  output %r
  output %v
  output %e2
}
)",
             kExact, 43);
}

/// The mask-building ops of the other export spellings (RingKVCache,
/// static-shape attention): comparisons with torch's promotion (a float
/// number makes an integer tensor f32; an integer tensor against a float
/// one compares in the float's dtype; NaN compares false except ne and is
/// nonzero; -0 == 0), logical ops, tril, masked_fill and the factories, all
/// exact.
TEST(VulkanKvCache, MaskOps) {
  GRAFT_REQUIRE_VULKAN();
  checkGraph(R"(graph @t {
  const %c : f32[5] fqn="c" = [0.5, -1.0, 0.25, 0.0, 2.0]
  input %a : f32[3, 1, 5]
  input %b : f32[4, 5]
  input %i : i64[2, 7]
  input %j : i64[7]
  input %n : symint
  %lt : bool[3, 4, 5] = aten.lt.Tensor(%a, %b)
  %ge : bool[3, 1, 5] = aten.ge.Scalar(%a, 0.25)
  %eq : bool[2, 7] = aten.eq.Scalar(%i, 3)
  %ne : bool[2, 7] = aten.ne.Tensor(%i, %j)
  %gt : bool[2, 7] = aten.gt.Scalar(%i, 2.5)
  %le : bool[2, 7] = aten.le.Scalar(%i, %n)
  %mx : bool[3, 1, 5] = aten.le.Tensor(%a, %c)
  %an : bool[3, 4, 5] = aten.logical_and.default(%lt, %ge)
  %or : bool[2, 7] = aten.logical_or.default(%eq, %i)
  %no : bool[2, 7] = aten.logical_not.default(%ne)
  %tr : f32[4, 5] = aten.tril.default(%b, 1)
  %ti : i64[2, 7] = aten.tril.default(%i, -1)
  %tb : bool[3, 4, 5] = aten.tril.default(%lt)
  %mf : f32[3, 4, 5] = aten.masked_fill.Scalar(%a, %lt, 2.5)
  %mi : i64[2, 7] = aten.masked_fill.Scalar(%i, %eq, -4)
  %on : f32[2, 3] = aten.ones.default([2, %n], dtype=f32, device=cpu, pin_memory=false)
  %ze : i64[3] = aten.zeros.default([3], dtype=i64)
  %st : f32[] = aten.scalar_tensor.default(%n)
  %z : f32[3, 1, 5] = aten.mul.Scalar(%a, 0.0)
  %nn : f32[3, 1, 5] = aten.div.Scalar(%z, 0.0)
  %nlt : bool[3, 4, 5] = aten.lt.Tensor(%nn, %b)
  %nne : bool[3, 1, 5] = aten.ne.Scalar(%nn, 0.5)
  %neq : bool[3, 1, 5] = aten.eq.Tensor(%nn, %nn)
  %nno : bool[3, 1, 5] = aten.logical_not.default(%nn)
  %zz : bool[3, 1, 5] = aten.eq.Scalar(%z, 0.0)
  %zno : bool[3, 1, 5] = aten.logical_not.default(%z)
  output %nlt
  output %nne
  output %neq
  output %nno
  output %zz
  output %zno
  output %lt
  output %ge
  output %eq
  output %ne
  output %gt
  output %le
  output %mx
  output %an
  output %or
  output %no
  output %tr
  output %ti
  output %tb
  output %mf
  output %mi
  output %on
  output %ze
  output %st
}
)",
             kExact, 47, {{"n", 3}});
  if (!context()->info().storageBuffer16BitAccess)
    GTEST_SKIP() << "no 16-bit storage for the f16 variants";
  // f16: the number is rounded to f16 before comparing (0.1 -> 0.0999756).
  checkGraph(R"(graph @t {
  input %h : f16[9, 70]
  %lt : bool[9, 70] = aten.lt.Scalar(%h, 0.1)
  %tr : f16[9, 70] = aten.tril.default(%h, 3)
  output %lt
  output %tr
}
)",
             kExact, 53);
}

TEST(VulkanKvCache, UpdateCachePastTheCacheIsAnError) {
  GRAFT_REQUIRE_VULKAN();
  auto g = parseGraph(customGraph("f32", 4, 2, 8, 16), "t.gir");
  ASSERT_TRUE(g.ok()) << render(g.diags());
  auto exec = vk::GraphExecutor::create(*context(), **g);
  ASSERT_TRUE(exec.ok()) << render(exec.diags());
  auto inputs = makeRandomInputs(**g, 5, {{"s0", 3}, {"pos", 14}});
  ASSERT_TRUE(inputs.ok());
  auto out = (*exec)->run(*inputs);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.diags()[0].message.find("exceed the cache"), std::string::npos)
      << out.diags()[0].message;
}

} // namespace

namespace {

//===-- The KV-cache Llama, compiled and decoded on the device ------------===//

struct LlamaCase {
  SynthKvCache form;
  SynthQuant quant;
  /// 0: Llama's RoPE; else HuggingFace RoPE (--use-hf-rope) with this
  /// partial_rotary_factor, fused into et_vk.apply_rotary_emb_hf.
  double hfRope = 0;
  /// Run with ContextOptions::stagedTransfers: buffers unmapped, every
  /// upload and download a staging copy, as on a discrete GPU.
  bool staged = false;
  /// Run under the validation layer's synchronization validation: a
  /// missing barrier between dependent commands (Commands.cpp records them
  /// only where a command depends on another) fails the run.
  bool validate = false;
};

std::string llamaCaseName(const ::testing::TestParamInfo<LlamaCase> &info) {
  std::string q = std::string(name(info.param.quant));
  q.erase(std::remove(q.begin(), q.end(), '-'), q.end());
  std::string hf = info.param.hfRope == 0     ? ""
                   : info.param.hfRope == 1.0 ? "_hf_rope"
                                              : "_hf_rope_partial";
  return std::string(name(info.param.form)) + "_q" + q + hf + (info.param.staged ? "_staged" : "") +
         (info.param.validate ? "_sync_validated" : "");
}

class VulkanKvCacheLlama : public graft::testing::ScratchDirTest,
                           public ::testing::WithParamInterface<LlamaCase> {};

TEST_P(VulkanKvCacheLlama, OnePartitionDecodesLikeTheInterpreter) {
  const LlamaCase c = GetParam();
  LlamaSynthOptions o = graft::testing::tinyLlama(c.quant);
  o.kvCache = c.form;
  o.useHfRope = c.hfRope != 0;
  o.partialRotaryFactor = c.hfRope != 0 ? c.hfRope : 1.0;
  std::string model = graft::testing::writeSynthesizedPt2(o, path("kv.pt2"));
  ASSERT_FALSE(::testing::Test::HasFailure());
  CompileOptions opts;
  opts.output = path("kv.vkprog");
  auto program = graft::testing::compileToOnePartition(model, opts);
  ASSERT_TRUE(program);
  if (c.hfRope != 0) {
    std::size_t fused = 0;
    for (const ProgramNodePlan &p : program->plan)
      fused += p.target == "et_vk.apply_rotary_emb_hf.default";
    EXPECT_EQ(fused, static_cast<std::size_t>(o.layers)) << "one fused HF RoPE per layer";
  }

  GRAFT_REQUIRE_VULKAN();
  auto original = load(model);
  ASSERT_TRUE(original.ok()) << render(original.diags());
  auto plan = vk::compiledPlan(*program);
  ASSERT_TRUE(plan.ok()) << render(plan.diags());
  vk::ExecutorOptions eo;
  eo.plan = *plan;
  eo.mutableBuffers = vk::ExecutorOptions::MutableBuffers::OnDevice;
  // As `graft run` does: only the SPIR-V the program carries (a variant its
  // kernels use but codegen left out is an error), on a context of its own.
  vk::ContextOptions co;
  co.stagedTransfers = c.staged;
  co.synchronizationValidation = c.validate;
  auto ctx = vk::Context::create(co);
  ASSERT_TRUE(ctx.ok()) << render(ctx.diags());
  if (c.validate) {
    ASSERT_TRUE((*ctx)->synchronizationValidationEnabled())
        << "the Vulkan validation layer is not installed (Debian: vulkan-validationlayers, which "
           "scripts/install-deps.sh installs)";
  }
  if (c.staged) {
    EXPECT_FALSE((*ctx)->hostMappedBuffers());
  }
  ASSERT_TRUE(vk::usePrecompiledShaders(**ctx, *program, "kv.vkprog").ok());
  auto exec = vk::GraphExecutor::create(**ctx, *program->graph, eo);
  ASSERT_TRUE(exec.ok()) << render(exec.diags());
  EXPECT_EQ((*exec)->numCpuNodes(), 0u);
  EXPECT_EQ((*exec)->mutableBufferNames().size(), 4u) << "k and v caches of 2 layers";

  // A prefill of 4 tokens at position 0, then one token per call, each
  // against the interpreter carrying its own cache on the original graph.
  const std::vector<int64_t> ids = {5, 17, 3, 88, 42, 42, 9, 60, 1};
  Interpreter interp;
  MutableState state;
  for (const graft::testing::DecodeStep &s : graft::testing::decodeSteps(ids, 4)) {
    SCOPED_TRACE(s.trace());
    auto ref = interp.run(*original->graph, s.inputs, state);
    ASSERT_TRUE(ref.ok()) << render(ref.diags());
    auto dev = (*exec)->run(s.inputs);
    ASSERT_TRUE(dev.ok()) << render(dev.diags());
    ASSERT_EQ(dev->size(), 1u) << "the logits only";
    vk::Comparison cmp = vk::compareValues({dev->back()}, {ref->back()});
    EXPECT_EQ(cmp.firstProblem, "");
    EXPECT_LT(cmp.maxAbsError, 1e-4);
    EXPECT_EQ(cmp.mismatchedNonFinite, 0);
    if (s.begin > 0) {
      // A decode step moves its tokens, position, scalar reads and logits:
      // less than one cache ([1, 16, 2, 16] f32, 2 KiB), so no cache made a
      // host round trip.
      const uint64_t cacheBytes = 16 * 2 * 16 * 4;
      EXPECT_LT((*exec)->stats().bytesUploaded, cacheBytes);
      EXPECT_LT((*exec)->stats().bytesDownloaded, cacheBytes);
      // One submission per step: the positions are read from input_pos on
      // the host, never by downloading (which would flush) mid-step.
      EXPECT_EQ((*exec)->stats().flushes, 1u);
    }
  }
  // The device caches are the interpreter's (up to the kernels' rounding
  // upstream of the writes).
  auto devState = (*exec)->mutableState();
  ASSERT_TRUE(devState.ok()) << render(devState.diags());
  ASSERT_EQ(devState->buffers.size(), state.buffers.size());
  for (const auto &[fqn, want] : state.buffers) {
    const Tensor *got = devState->find(fqn);
    ASSERT_NE(got, nullptr) << fqn;
    EXPECT_EQ(allClose(*got, want, Tolerance{1e-4, 0}), "") << fqn;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Forms, VulkanKvCacheLlama,
    ::testing::Values(LlamaCase{SynthKvCache::Custom, SynthQuant::W4},
                      LlamaCase{SynthKvCache::Custom, SynthQuant::W8A8W4},
                      LlamaCase{SynthKvCache::Plain, SynthQuant::W4},
                      LlamaCase{SynthKvCache::Plain, SynthQuant::W8A8W4},
                      LlamaCase{SynthKvCache::Custom, SynthQuant::W4, 1.0},
                      LlamaCase{SynthKvCache::Custom, SynthQuant::W4, 0.5},
                      LlamaCase{SynthKvCache::Custom, SynthQuant::W8A8W4, 0, true},
                      LlamaCase{SynthKvCache::Plain, SynthQuant::W4, 0, true},
                      LlamaCase{SynthKvCache::Custom, SynthQuant::W8A8W4, 0, true, true},
                      LlamaCase{SynthKvCache::Plain, SynthQuant::W4, 0, false, true}),
    llamaCaseName);

} // namespace
