//===- Host.cpp - Host-side scalar steps of a device program ----------------===//
//
// Ops a device program runs on the host: factories computed from
// per-call scalars and uploaded (full, arange, ones, zeros,
// scalar_tensor), shape queries, the assertion ops, Python sym
// arithmetic, and the scalar reads (_local_scalar_dense, select_as_symint)
// that turn a small device tensor into a SymInt. No shader of its own.
//
//===----------------------------------------------------------------------===//
#include "KernelCommon.h"
#include "Lowering.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace graft::vk {

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Lowerings
//===----------------------------------------------------------------------===//

namespace {

/// Ops whose result is computed on the host from arguments alone (no tensor
/// data): factories (full) are uploaded, shape queries and assertions
/// produce scalars.
Lowering hostLowering(const char *kernel, bool readsTensorData, bool upload) {
  Lowering l;
  l.kernel = kernel;
  l.placement = Placement::Host;
  l.run = [=](NodeArgs &a) -> Results {
    const BoundArgs &b = a.bound();
    std::vector<RuntimeValue> resolved;
    Status status;
    for (std::size_t i = 0; i < b.size(); ++i)
      b.at(i).forEachValue([&](Value *v) {
        if (!status.ok())
          return;
        if (v->isTensor()) {
          if (readsTensorData) {
            auto t = a.state().hostTensor(v);
            if (!t.ok()) {
              status = t.takeFailure();
              return;
            }
            resolved.emplace_back(*t);
          } else {
            auto t = a.state().deviceTensor(v);
            if (!t.ok()) {
              status = t.takeFailure();
              return;
            }
            resolved.emplace_back(metadataTensor(t->dtype, t->sizes));
          }
        } else {
          auto it = a.state().env.find(v);
          if (it == a.state().env.end()) {
            status = Diagnostic::internal("operand %" + v->name() + " is undefined");
            return;
          }
          resolved.push_back(it->second.scalar);
        }
      });
    GRAFT_CHECK_OK(status);
    GRAFT_TRY(auto outs, runReferenceKernel(a.node(), b, resolved));
    std::vector<LoweredValue> r;
    for (RuntimeValue &v : outs) {
      if (Tensor *t = std::get_if<Tensor>(&v)) {
        if (upload) {
          GRAFT_TRY(DeviceTensor d, uploadTensor(a.ctx(), *t));
          r.emplace_back(std::move(d));
        } else {
          r.emplace_back(*t);
        }
      } else if (int64_t *i = std::get_if<int64_t>(&v)) {
        r.emplace_back(*i);
      } else if (double *d = std::get_if<double>(&v)) {
        r.emplace_back(*d);
      } else {
        r.emplace_back(std::get<bool>(v));
      }
    }
    return r;
  };
  return l;
}

/// _local_scalar_dense / select_as_symint: read one element back (the
/// host-side scalar read ExecuTorch's select_as_symint does), so a dynamic
/// slice position stays inside the Vulkan program.
Lowering scalarReadLowering(bool select) {
  Lowering l = hostLowering("host_scalar_read", true, false);
  if (select) {
    l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &) -> std::string {
      const TensorProto *x = protoOf(b, "x");
      if (!x || deviceElem(x->dtype) != DeviceElem::I32)
        return "x must be an integer tensor";
      return {};
    };
    // Gather the one selected element on the device, then read 4 bytes.
    l.run = [](NodeArgs &a) -> Results {
      GRAFT_TRY(DeviceTensor x, a.tensor("x"));
      auto dim = a.integer("dim"), index = a.integer("index");
      if (!dim || !index)
        return a.error("dim and index must be ints");
      int64_t r = static_cast<int64_t>(x.sizes.size());
      int64_t d = *dim < 0 ? *dim + r : *dim;
      if (d < 0 || d >= r)
        return a.error("select dim " + std::to_string(*dim) + " is out of range");
      int64_t size = x.sizes[static_cast<std::size_t>(d)];
      int64_t i = *index < 0 ? *index + size : *index;
      if (i < 0 || i >= size)
        return a.error("select: index " + std::to_string(*index) + " is out of range for dim " +
                       std::to_string(*dim) + " of size " + std::to_string(size));
      if (x.numel() / size != 1)
        return a.error("the selected slice must be a single integer element");
      int64_t stride = 1;
      for (int64_t k = d + 1; k < r; ++k)
        stride *= x.sizes[static_cast<std::size_t>(k)];
      // A user input (input_pos) is still on the host: read it there, so a
      // decode step's position costs no flush of the recorded work.
      if (auto it = a.state().env.find(a.value("x"));
          it != a.state().env.end() && it->second.host.defined())
        return std::vector<LoweredValue>{it->second.host.contiguous().getInt(i * stride)};
      int32_t v = 0;
      GRAFT_CHECK_OK(a.ctx().download(*x.buffer, &v, 4, static_cast<std::size_t>(i * stride) * 4));
      return std::vector<LoweredValue>{int64_t(v)};
    };
  }
  return l;
}

} // namespace

void addHostLowerings(LoweringTable &m) {
  m["aten.full.default"] = hostLowering("host_full", false, true);
  m["aten.sym_size.int"] = hostLowering("host", false, false);
  m["aten.sym_numel.default"] = hostLowering("host", false, false);
  m["aten.sym_constrain_range_for_size.default"] = hostLowering("host", false, false);
  m["aten.sym_constrain_range.default"] = hostLowering("host", false, false);
  m["aten._assert_scalar.default"] = hostLowering("host", false, false);
  // Python sym arithmetic on host scalars (engine/ops/sym.yaml), run by the
  // reference kernels: the narrow end u0 + seqlen stays in the program.
  for (const char *t :
       {"operator.add", "operator.sub",  "operator.mul",    "operator.floordiv", "operator.mod",
        "operator.neg", "torch.sym_max", "torch.sym_min",   "operator.eq",       "operator.ne",
        "operator.lt",  "operator.le",   "operator.gt",     "operator.ge",       "operator.truediv",
        "operator.pow", "operator.pos",  "operator.and_",   "operator.or_",      "torch.sym_not",
        "math.trunc",   "torch.sym_int", "torch.sym_float", "torch.sym_sqrt",    "torch.sym_ite"})
    m[t] = hostLowering("host", false, false);
  m["aten._local_scalar_dense.default"] = scalarReadLowering(false);
  m["et_vk.select_as_symint.default"] = scalarReadLowering(true);
  // Factories of the KV-cache export's indices (arange(seq_len) + start_pos):
  // computed on the host from per-call scalars and uploaded.
  m["aten.arange.default"] = hostLowering("host_arange", false, true);
  m["aten.arange.start"] = hostLowering("host_arange", false, true);
  m["aten.arange.start_step"] = hostLowering("host_arange", false, true);
  m["aten.ones.default"] = hostLowering("host_full", false, true);
  m["aten.zeros.default"] = hostLowering("host_full", false, true);
  m["aten.scalar_tensor.default"] = hostLowering("host_full", false, true);
}

} // namespace graft::vk
