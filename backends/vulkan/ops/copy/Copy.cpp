//===- Copy.cpp - Views, copies, dtype conversions and cat ------------------===//
//
// View ops compute their result's sizes and strides by running the
// reference view kernel on a data-free tensor (so shapes, negative dims and
// index errors match it), then alias, defer or gather; clone/_to_copy/to
// convert, and cat copies each part into its slice. All run copy.glsl,
// which every other family also uses for dtype promotion.
//
//===----------------------------------------------------------------------===//
#include "KernelCommon.h"
#include "Lowering.h"
#include "graft/ir/Shape.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace graft::vk {

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

namespace {

struct CopyPush {
  int32_t rank, numel, inOffset, outOffset;
  int32_t sizes[kMaxRank], inStrides[kMaxRank], outStrides[kMaxRank];
  int32_t intBits;
  int32_t contiguous;
};

int32_t intBitsOf(DType d) {
  switch (d) {
  case DType::Bool:
    return 0;
  case DType::I8:
    return 8;
  case DType::U8:
    return -8;
  case DType::I16:
    return 16;
  case DType::U16:
    return -16;
  default:
    return 32;
  }
}

Status copyInto(Context &ctx, const DeviceTensor &out, const DeviceTensor &src,
                const std::vector<int64_t> &sizes, const std::vector<int64_t> &inStrides,
                int64_t inOffset, const std::vector<int64_t> &outStrides, int64_t outOffset) {
  if (sizes.size() > kMaxRank)
    return kernelError("copy", "rank " + std::to_string(sizes.size()) + " exceeds 8");
  CopyPush pc{};
  pc.rank = i32(static_cast<int64_t>(sizes.size()));
  pc.numel = i32(product(sizes));
  pc.inOffset = i32(inOffset);
  pc.outOffset = i32(outOffset);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    pc.sizes[i] = i32(sizes[i]);
    pc.inStrides[i] = i32(inStrides[i]);
    pc.outStrides[i] = i32(outStrides[i]);
  }
  pc.intBits = intBitsOf(out.dtype);
  std::vector<int64_t> c = contiguousStrides(sizes);
  pc.contiguous = inStrides == c && outStrides == c ? 1 : 0;
  std::string variant = "copy_" + shaderDType(src.dtype) + "_" + shaderDType(out.dtype);
  return ctx.dispatch1D(variant, {out.buffer.get(), src.buffer.get()}, &pc, sizeof(pc),
                        static_cast<uint64_t>(pc.numel));
}

} // namespace

Expected<DeviceTensor> gather(Context &ctx, const DeviceTensor &src, std::vector<int64_t> sizes,
                              std::vector<int64_t> strides, int64_t offset) {
  if (sizes.size() != strides.size())
    return Diagnostic::internal("vulkan gather: sizes and strides differ in rank");
  // Bounds: the largest index read must lie inside src.
  int64_t maxIndex = offset, minIndex = offset;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0)
      return allocateTensor(ctx, src.dtype, sizes);
    int64_t span = (sizes[i] - 1) * strides[i];
    (span > 0 ? maxIndex : minIndex) += span;
  }
  if (minIndex < 0 || maxIndex >= std::max<int64_t>(src.numel(), 1))
    return Diagnostic::internal("vulkan gather: view reads outside its source " +
                                sizesStr(src.sizes));
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, src.dtype, sizes));
  GRAFT_CHECK_OK(copyInto(ctx, out, src, sizes, strides, offset, contiguousStrides(sizes), 0));
  return out;
}

Expected<DeviceTensor> cast(Context &ctx, const DeviceTensor &src, DType dtype) {
  if (src.dtype == dtype)
    return src;
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, dtype, src.sizes));
  std::vector<int64_t> c = contiguousStrides(src.sizes);
  if (src.sizes.size() > kMaxRank) {
    // Flatten: a cast does not care about the shape.
    std::vector<int64_t> flat = {src.numel()};
    GRAFT_CHECK_OK(copyInto(ctx, out, src, flat, {1}, 0, {1}, 0));
    return out;
  }
  GRAFT_CHECK_OK(copyInto(ctx, out, src, src.sizes, c, 0, c, 0));
  return out;
}

Expected<DeviceTensor> cat(Context &ctx, const std::vector<DeviceTensor> &inputs, int64_t dim) {
  if (inputs.empty())
    return kernelError("cat", "needs at least one tensor");
  const DeviceTensor &first = inputs[0];
  int64_t rank = static_cast<int64_t>(first.sizes.size());
  if (dim < 0 || dim >= rank)
    return kernelError("cat", "dim out of range");
  std::vector<int64_t> outSizes = first.sizes;
  outSizes[static_cast<std::size_t>(dim)] = 0;
  for (const DeviceTensor &t : inputs) {
    if (t.dtype != first.dtype || static_cast<int64_t>(t.sizes.size()) != rank)
      return kernelError("cat", "inputs must share dtype and rank");
    for (int64_t d = 0; d < rank; ++d)
      if (d != dim &&
          t.sizes[static_cast<std::size_t>(d)] != first.sizes[static_cast<std::size_t>(d)])
        return kernelError("cat", "sizes " + sizesStr(t.sizes) + " and " + sizesStr(first.sizes) +
                                      " differ outside dim " + std::to_string(dim));
    outSizes[static_cast<std::size_t>(dim)] += t.sizes[static_cast<std::size_t>(dim)];
  }
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, first.dtype, outSizes));
  std::vector<int64_t> outStrides = contiguousStrides(outSizes);
  int64_t at = 0;
  for (const DeviceTensor &t : inputs) {
    if (t.numel() > 0)
      GRAFT_CHECK_OK(copyInto(ctx, out, t, t.sizes, contiguousStrides(t.sizes), 0, outStrides,
                              at * outStrides[static_cast<std::size_t>(dim)]));
    at += t.sizes[static_cast<std::size_t>(dim)];
  }
  return out;
}

Expected<DeviceTensor> reshape(const DeviceTensor &src, std::vector<int64_t> sizes) {
  if (product(sizes) != src.numel())
    return kernelError("view", "cannot view " + sizesStr(src.sizes) + " as " + sizesStr(sizes));
  DeviceTensor out = src;
  out.sizes = std::move(sizes);
  return out;
}

namespace {
/// stream.glsl's copies and the vec4s each invocation copies (its PER).
struct StreamCopyForm {
  const char *variant;
  uint64_t vec4sPerInvocation;
};
constexpr StreamCopyForm kGpuStreamCopies[] = {{"stream_copy_vec4", 1}, {"stream_copy_vec4x4", 4}};
constexpr StreamCopyForm kTexelStreamCopy = {"stream_copy_vec4t", 8};
constexpr StreamCopyForm kWideStreamCopy = {"stream_copy_vec4w", 8};

/// The device's candidate copies for `in`, the default first.
std::vector<StreamCopyForm> streamCopyForms(Context &ctx, const DeviceTensor &in) {
  if (!wideVec4(ctx, DType::F32))
    return {std::begin(kGpuStreamCopies), std::end(kGpuStreamCopies)};
  return {texelReads(ctx, in.buffer->size()) ? kTexelStreamCopy : kWideStreamCopy};
}
} // namespace

std::vector<std::string> streamCopyVariants(Context &ctx, const DeviceTensor &in) {
  std::vector<std::string> names;
  for (const StreamCopyForm &f : streamCopyForms(ctx, in))
    names.push_back(f.variant);
  return names;
}

Status streamCopy(Context &ctx, const DeviceTensor &in, const DeviceTensor &out,
                  std::string_view variant) {
  if (in.dtype != DType::F32 || out.dtype != DType::F32 || in.numel() != out.numel() ||
      in.numel() % 4 != 0)
    return kernelError("stream", "needs two f32 tensors of one size, a multiple of 4 (got " +
                                     sizesStr(in.sizes) + " and " + sizesStr(out.sizes) + ")");
  GRAFT_CHECK_OK(checkInt32("stream", in.numel()));
  const std::vector<StreamCopyForm> candidates = streamCopyForms(ctx, in);
  auto form = variant.empty()
                  ? candidates.begin()
                  : std::find_if(candidates.begin(), candidates.end(),
                                 [&](const StreamCopyForm &f) { return variant == f.variant; });
  if (form == candidates.end()) {
    std::string names;
    for (const StreamCopyForm &f : candidates)
      names += (names.empty() ? "" : ", ") + std::string(f.variant);
    return kernelError("stream",
                       "'" + std::string(variant) +
                           "' is not a stream copy this device runs (candidates: " + names + ")");
  }
  const int32_t numVec4 = i32(in.numel() / 4);
  const uint64_t per = form->vec4sPerInvocation;
  return ctx.dispatch1D(form->variant, {out.buffer.get(), in.buffer.get()}, &numVec4,
                        sizeof(numVec4), (static_cast<uint64_t>(numVec4) + per - 1) / per);
}

//===----------------------------------------------------------------------===//
// Lowerings
//===----------------------------------------------------------------------===//

namespace {

/// The view op a target (or its *_copy variant) computes.
std::string viewKernelTarget(const std::string &target) {
  std::string t = target;
  auto pos = t.find("_copy.");
  if (pos != std::string::npos && t.rfind("aten._to_copy", 0) != 0 &&
      t.rfind("aten._reshape_copy", 0) != 0)
    t.erase(pos, 5);
  if (t == "aten._reshape_copy.default" || t == "aten._unsafe_view.default")
    t = "aten.reshape.default";
  return t;
}

Lowering viewLowering() {
  Lowering l;
  l.kernel = "view";
  l.check = [](const Node &node, const BoundArgs &, const DeviceInfo &) -> std::string {
    if (!KernelRegistry::builtin().find(viewKernelTarget(node.target())))
      return "no view kernel for " + node.target();
    return rankReason(node, 8);
  };
  l.run = [](NodeArgs &a) -> Results {
    // Shapes only: run the reference view kernel on a data-free tensor. An
    // operand that is itself a deferred view (State::deferredViews) enters
    // with its strides and offset into its base buffer, so a chain of views
    // composes into one gather, or none: transpose(transpose(k_cache)), how
    // ExecuTorch's custom KV cache hands its caches to custom_sdpa, is the
    // cache buffer itself.
    const BoundArgs &b = a.bound();
    GraphExecutor::State &st = a.state();
    auto forEachValue = [&](auto &&fn) {
      for (std::size_t i = 0; i < b.size(); ++i)
        b.at(i).forEachValue(fn);
    };
    const Value *input = nullptr;
    forEachValue([&](Value *v) {
      if (v->isTensor() && !input)
        input = v;
    });
    if (!input)
      return a.error("a view needs a tensor operand");
    auto runView = [&](const Tensor &meta) -> Expected<Tensor> {
      std::vector<RuntimeValue> resolved;
      forEachValue([&](Value *v) {
        if (v->isTensor()) {
          resolved.emplace_back(meta);
          return;
        }
        auto it = st.env.find(v);
        resolved.push_back(it == st.env.end() ? RuntimeValue(int64_t(0)) : it->second.scalar);
      });
      const Kernel *k = KernelRegistry::builtin().find(viewKernelTarget(a.node().target()));
      if (!k)
        return a.error("no view kernel for " + a.node().target());
      KernelArgs kargs(b, resolved, a.node().name());
      GRAFT_TRY(auto outs, (*k)(kargs));
      if (outs.size() != 1 || !std::holds_alternative<Tensor>(outs[0]))
        return Diagnostic::internal("view kernel of " + a.node().target() +
                                    " did not return one tensor");
      return std::get<Tensor>(outs[0]);
    };
    DeviceTensor src;
    std::optional<Tensor> view;
    if (auto d = st.deferredViews.find(input); d != st.deferredViews.end()) {
      const GraphExecutor::State::DeferredView &dv = d->second;
      Tensor meta = metadataTensor(dv.base.dtype, dv.sizes, dv.offset, dv.strides);
      // reshape (and the interpreter's view, which shares its kernel) copies
      // what strides cannot express, and a copy of a metadata tensor would
      // read its placeholder storage: ask first, with the target sizes from
      // the same op on a contiguous operand.
      bool composes = true;
      if (std::string k = viewKernelTarget(a.node().target());
          k == "aten.reshape.default" || k == "aten.view.default") {
        GRAFT_TRY(Tensor shaped, runView(metadataTensor(dv.base.dtype, dv.sizes)));
        composes = viewStrides(dv.sizes, dv.strides, shaped.sizes()).has_value();
      }
      std::optional<Expected<Tensor>> composed;
      if (composes)
        composed.emplace(runView(meta));
      if (composed && composed->ok() && (*composed)->storage() == meta.storage()) {
        src = dv.base;
        view = std::move(**composed);
      } else {
        // A view op that had to copy (reshape of a non-contiguous view) or
        // rejects the strides (view): materialize the operand, then view it.
        GRAFT_TRY(src, gather(a.ctx(), dv.base, dv.sizes, dv.strides, dv.offset));
        GRAFT_TRY(Tensor v, runView(metadataTensor(src.dtype, src.sizes)));
        view = std::move(v);
      }
    }
    if (!view) {
      GRAFT_TRY(src, st.deviceTensor(input));
      GRAFT_TRY(Tensor v, runView(metadataTensor(src.dtype, src.sizes)));
      view = std::move(v);
    }
    if (view->isContiguous() && view->offset() == 0) {
      // A reshape, or a leading prefix of the buffer (slice of dim 0): alias.
      DeviceTensor r = src;
      r.sizes = view->sizes();
      return one(std::move(r));
    }
    if (st.deferrable(a.node())) {
      // Only views read this value: keep it as strides into src.
      st.deferredViews[a.node().output()] = {src, view->sizes(), view->strides(), view->offset()};
      return one(src);
    }
    return one(gather(a.ctx(), src, view->sizes(), view->strides(), view->offset()));
  };
  return l;
}

Lowering copyLowering() {
  Lowering l;
  l.kernel = "copy";
  l.check = [](const Node &node, const BoundArgs &, const DeviceInfo &) -> std::string {
    return rankReason(node, 8);
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    GRAFT_TRY(DeviceTensor r, cast(a.ctx(), x, a.outDType()));
    if (r.buffer == x.buffer) {
      // clone must not alias: an explicit copy (values are immutable here,
      // but a fresh buffer keeps ownership simple).
      std::vector<int64_t> st(x.sizes.size(), 1);
      for (int64_t i = static_cast<int64_t>(x.sizes.size()) - 2; i >= 0; --i)
        st[static_cast<std::size_t>(i)] =
            st[static_cast<std::size_t>(i + 1)] * x.sizes[static_cast<std::size_t>(i + 1)];
      if (x.sizes.size() <= 8) {
        GRAFT_TRY(r, gather(a.ctx(), x, x.sizes, st, 0));
      }
    }
    return one(std::move(r));
  };
  return l;
}

/// aten.repeat (TensorShape.cpp: self, padded with leading 1s, tiled
/// repeats[i] times along dim i). One gather reads self as the interleaved
/// view [r0, p0, r1, p1, ...] with stride 0 over each r; its contiguous
/// result is the repeated tensor, [r0 * p0, r1 * p1, ...]. A factor of 1 or
/// a dim of size 1 needs no dim of its own in that view.
Lowering repeatLowering() {
  Lowering l;
  l.kernel = "copy";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *x = protoOf(b, "self");
    const Argument *arg = b.find("repeats");
    auto reps = arg ? arg->intList() : std::nullopt;
    if (!x || !reps)
      return "repeats must be ints known when compiling";
    if (reps->size() < x->shape.size())
      return "fewer repeats than self's dims";
    std::size_t lead = reps->size() - x->shape.size();
    int64_t readDims = 0;
    for (std::size_t i = 0; i < reps->size(); ++i) {
      readDims += (*reps)[i] != 1;
      if (i >= lead) {
        const Dim &d = x->shape[i - lead];
        readDims += !(d.isConstant() && d.constant() == 1);
      }
    }
    if (readDims > 8)
      return "the repeat reads self through " + std::to_string(readDims) +
             " dims; the copy kernel takes 8";
    return rankReason(node, 8);
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    auto reps = a.intList("repeats");
    if (!reps || reps->size() < x.sizes.size())
      return a.error("Number of dimensions of repeat dims can not be smaller than number of "
                     "dimensions of tensor");
    std::vector<int64_t> padded(reps->size() - x.sizes.size(), 1);
    padded.insert(padded.end(), x.sizes.begin(), x.sizes.end());
    std::vector<int64_t> st = contiguousStrides(padded), sizes, strides, out;
    for (std::size_t i = 0; i < padded.size(); ++i) {
      int64_t r = (*reps)[i], p = padded[i];
      if (r < 0)
        return a.error("Trying to create tensor with negative dimension " + std::to_string(r * p));
      if (r != 1) {
        sizes.push_back(r);
        strides.push_back(0);
      }
      if (p != 1) {
        sizes.push_back(p);
        strides.push_back(st[i]);
      }
      out.push_back(r * p);
    }
    GRAFT_TRY(DeviceTensor g, gather(a.ctx(), x, sizes, strides, 0));
    return one(reshape(g, out));
  };
  return l;
}

/// aten.copy, the functional copy_: src converted to self's dtype and
/// broadcast to self's shape; only self's shape is read.
Lowering functionalCopyLowering() {
  Lowering l;
  l.kernel = "copy";
  l.check = [](const Node &node, const BoundArgs &, const DeviceInfo &) -> std::string {
    return rankReason(node, 8);
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor self, a.tensor("self"));
    GRAFT_TRY(DeviceTensor src, a.tensor("src"));
    GRAFT_TRY(std::vector<int64_t> b, broadcastSizes("copy", {&self.sizes, &src.sizes}));
    if (b != self.sizes)
      return a.error("src " + sizesStr(src.sizes) + " is not broadcastable to self " +
                     sizesStr(self.sizes));
    GRAFT_TRY(DeviceTensor c, asDType(a.ctx(), src, a.outDType()));
    return one(gather(a.ctx(), c, self.sizes, broadcastStrides(c.sizes, self.sizes), 0));
  };
  return l;
}

Lowering catLowering() {
  Lowering l;
  l.kernel = "copy";
  l.check = [](const Node &node, const BoundArgs &, const DeviceInfo &) -> std::string {
    return rankReason(node, 8);
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(std::vector<DeviceTensor> ts, a.tensorList("tensors"));
    DType out = a.outDType();
    std::vector<DeviceTensor> parts;
    for (DeviceTensor &t : ts) {
      // Legacy 1-D empty tensors are skipped, as torch.cat does.
      if (t.sizes.size() == 1 && t.sizes[0] == 0)
        continue;
      GRAFT_TRY(DeviceTensor c, asDType(a.ctx(), t, out));
      parts.push_back(std::move(c));
    }
    if (parts.empty())
      return a.error("cat of only empty tensors");
    int64_t rank = static_cast<int64_t>(parts[0].sizes.size());
    int64_t dim = a.integer("dim").value_or(0);
    if (dim < -rank || dim >= rank)
      return a.error("cat dim " + std::to_string(dim) + " is out of range");
    if (dim < 0)
      dim += rank;
    return one(cat(a.ctx(), parts, dim));
  };
  return l;
}

} // namespace

void addCopyLowerings(LoweringTable &m) {
  for (const char *v : {"aten.t.default",
                        "aten.transpose.int",
                        "aten.permute.default",
                        "aten.view.default",
                        "aten.reshape.default",
                        "aten._unsafe_view.default",
                        "aten.unsqueeze.default",
                        "aten.squeeze.default",
                        "aten.squeeze.dim",
                        "aten.squeeze.dims",
                        "aten.expand.default",
                        "aten.slice.Tensor",
                        "aten.select.int",
                        "aten.alias.default",
                        "aten.t_copy.default",
                        "aten.transpose_copy.int",
                        "aten.permute_copy.default",
                        "aten.view_copy.default",
                        "aten.unsqueeze_copy.default",
                        "aten.squeeze_copy.dims",
                        "aten.squeeze_copy.dim",
                        "aten.squeeze_copy.default",
                        "aten.expand_copy.default",
                        "aten.slice_copy.Tensor",
                        "aten.select_copy.int",
                        "aten._reshape_copy.default"})
    m[v] = viewLowering();
  m["aten.alias_copy.default"] = viewLowering();
  m["aten.cat.default"] = catLowering();
  m["aten.clone.default"] = copyLowering();
  m["aten.lift_fresh_copy.default"] = copyLowering();
  m["dim_order_ops._clone_dim_order.default"] = copyLowering();
  m["aten.copy.default"] = functionalCopyLowering();
  m["aten.repeat.default"] = repeatLowering();
  m["aten._to_copy.default"] = copyLowering();
  m["aten.to.dtype"] = copyLowering();
  m["dim_order_ops._to_dim_order_copy.default"] = copyLowering();
}

} // namespace graft::vk
