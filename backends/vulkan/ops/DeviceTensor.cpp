//===- DeviceTensor.cpp - Device tensors: dtypes, upload, download -------===//
//
// How a logical dtype lives on the device (f32, f16, or int32 for bool and
// every integer dtype, as ExecuTorch's Vulkan backend downcasts 64-bit
// values) and the tensor transfers every op family builds on. The launchers
// themselves are in the families (ops/<family>/<Family>.cpp): each validates
// its operands (user errors for bad shapes/dtypes), fills a push-constant
// struct whose layout mirrors the shader's std430 block (all members 4
// bytes), picks the variant by name (<template>_<params...>, see the
// family's *.yaml) and records the dispatch.
//
//===----------------------------------------------------------------------===//
#include "KernelCommon.h"

#include "graft/support/FloatBits.h"

#include <cstring>
#include <limits>

namespace graft::vk {

int64_t DeviceTensor::numel() const {
  return product(sizes);
}

std::optional<DeviceElem> deviceElem(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return DeviceElem::F32;
  case DType::F16:
    return DeviceElem::F16;
  case DType::Bool:
  case DType::U8:
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::U16:
    return DeviceElem::I32;
  default:
    return std::nullopt;
  }
}

std::size_t deviceElemSize(DeviceElem elem) {
  return elem == DeviceElem::F16 ? 2 : 4;
}

std::string shaderDType(DType dtype) {
  auto e = deviceElem(dtype);
  if (!e)
    return "unsupported";
  switch (*e) {
  case DeviceElem::F32:
    return "float";
  case DeviceElem::F16:
    return "half";
  case DeviceElem::I32:
    return "int";
  }
  return "unsupported";
}

std::string unsupportedDTypeReason(const DeviceInfo &device, DType dtype) {
  if (!deviceElem(dtype))
    return "dtype " + std::string(name(dtype)) + " has no Vulkan representation";
  if (dtype == DType::F16 && !device.storageBuffer16BitAccess)
    return "the device lacks storageBuffer16BitAccess for f16 tensors";
  // The f16 kernels hold float16_t values outside storage (vectors of four),
  // which SPIR-V allows only with the Float16 capability.
  if (dtype == DType::F16 && !device.shaderFloat16)
    return "the device lacks shaderFloat16, which the f16 kernels need";
  return {};
}

Expected<DeviceTensor> allocateTensor(Context &ctx, DType dtype, std::vector<int64_t> sizes) {
  std::string why = unsupportedDTypeReason(ctx, dtype);
  if (!why.empty())
    return Diagnostic::error("vulkan: " + why);
  for (int64_t s : sizes)
    if (s < 0)
      return Diagnostic::error("vulkan: negative size in " + sizesStr(sizes));
  int64_t n = product(sizes);
  GRAFT_CHECK_OK(checkInt32("allocate", n));
  DeviceTensor t;
  t.dtype = dtype;
  t.sizes = std::move(sizes);
  GRAFT_TRY(t.buffer,
            ctx.allocate(static_cast<std::size_t>(n) * deviceElemSize(*deviceElem(dtype))));
  return t;
}

Expected<DeviceTensor> uploadTensor(Context &ctx, const Tensor &tensor) {
  if (!tensor.defined())
    return Diagnostic::error("vulkan: cannot upload an undefined tensor");
  GRAFT_TRY(DeviceTensor t, allocateTensor(ctx, tensor.dtype(), tensor.sizes()));
  Tensor c = tensor.contiguous();
  int64_t n = c.numel();
  DeviceElem e = *deviceElem(tensor.dtype());
  if (e != DeviceElem::I32) {
    GRAFT_CHECK_OK(ctx.upload(*t.buffer, c.rawData(), c.nbytes()));
    return t;
  }
  std::vector<int32_t> words(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = c.getInt(i);
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      return Diagnostic::error("vulkan: value " + std::to_string(v) + " of a " +
                               std::string(name(tensor.dtype())) +
                               " tensor does not fit the device's int32 representation");
    words[static_cast<std::size_t>(i)] = static_cast<int32_t>(v);
  }
  GRAFT_CHECK_OK(ctx.upload(*t.buffer, words.data(), words.size() * 4));
  return t;
}

Expected<Tensor> downloadTensor(Context &ctx, const DeviceTensor &tensor) {
  if (!tensor.defined())
    return Diagnostic::internal("vulkan: download of an undefined device tensor");
  Tensor out = Tensor::empty(tensor.dtype, tensor.sizes);
  int64_t n = tensor.numel();
  DeviceElem e = *deviceElem(tensor.dtype);
  if (e != DeviceElem::I32) {
    GRAFT_CHECK_OK(ctx.download(*tensor.buffer, out.mutableRawData(), out.nbytes()));
    return out;
  }
  std::vector<int32_t> words(static_cast<std::size_t>(n));
  GRAFT_CHECK_OK(ctx.download(*tensor.buffer, words.data(), words.size() * 4));
  for (int64_t i = 0; i < n; ++i)
    out.setInt(i, words[static_cast<std::size_t>(i)]);
  return out;
}
} // namespace graft::vk
