// RMSNorm -> et_vk.rms_norm (ExecuTorch backends/vulkan/patterns/rms_norm.py,
// RmsNormMatch, anchored at the final weight multiply).
//
// Before (Llama's RMSNorm as torch.export emits it, f32 model):
//   %sq  : f32[1, s0, 64] = aten.mul.Tensor(%h, %h)            // or aten.pow.Tensor_Scalar(%h, 2)
//   %ms  : f32[1, s0, 1]  = aten.mean.dim(%sq, [-1], true)
//   %mse : f32[1, s0, 1]  = aten.add.Scalar(%ms, 1e-05)        // or aten.add.Tensor(%ms, 1e-05)
//   %rs  : f32[1, s0, 1]  = aten.rsqrt.default(%mse)
//   %hn  : f32[1, s0, 64] = aten.mul.Tensor(%h, %rs)
//   %x   : f32[1, s0, 64] = aten.mul.Tensor(%hn, %norm_w)
// After:
//   %x   : f32[1, s0, 64] = et_vk.rms_norm.default(%h, %norm_w, 1e-05)
//
// Conditions (all stated in the patterns, none left to chance):
//  * the mean runs over the LAST dim only, with keepdim: `[-1]` or `[rank - 1]`.
//    A mean over any other dim is a different normalization and must not fuse;
//  * the square, the normalizing multiply and the mean all read the same x
//    (mul(x, x), or pow(x, 2) with the literal exponent 2);
//  * eps is added as a number: aten.add.Scalar, or aten.add.Tensor with a
//    Python number in its `other` slot (what torch.export records for
//    `x + 1e-05`); `$eps : scalar float` rejects a tensor there;
//  * the weight is 1-D [D] over the normalized dim (the fused op broadcasts the
//    weight over the last dim only).
//
// Numerics. The fused op computes x.float().pow(2).mean(-1, keepdim) + eps,
// rsqrt, x.float() * that, * weight.float(), then .to(x.dtype). In an all-f32
// graph each step rounds exactly where the decomposed graph rounds, so
// rms_norm_f32 is bit-exact (tolerance 0). Llama's bf16/f16 models upcast x
// (_to_copy to f32), normalize in f32, cast the normalized value back
// (`.type_as(x)`) and multiply by the weight in the low precision; the fused op
// multiplies by the weight in f32 and rounds once. That removes one rounding,
// so rms_norm_cast differs by at most ~1 ulp of the low-precision dtype
// (rtol 2^-7, see its tolerance).
//
// Verification ranges: x is the residual stream a Llama RMSNorm reads
// (examples/models/llama/llama_transformer.py, attention_norm / ffn_norm /
// the final norm), tens to hundreds with outlier features in the thousands
// ("massive activations"), so the examples draw x from [-1000, 1000): large
// enough that eps (0 or 1) is negligible against the mean square, and, for
// f16, values near the top of f16's precision grid (ulp 0.5 at 1000). The
// weight is RMSNorm's learned scale (initialized to ones, O(1) after
// training): [-2, 2).

/// RMSNorm in f32 (no casts) -> et_vk.rms_norm. Bit-exact.
rule rms_norm_f32 benefit 20 tags(norm) backend vulkan {
  match {
    %sq  = aten.mul.Tensor($x : f32[..., $D], $x) | aten.pow.Tensor_Scalar($x : f32[..., $D], 2)
    %ms  = aten.mean.dim(%sq, [$d], true)
    %mse = aten.add.Scalar(%ms, $eps) | aten.add.Tensor(%ms, $eps : scalar float)
    %rs  = aten.rsqrt(%mse)
    %n   = aten.mul.Tensor($x, %rs)
    %out = aten.mul.Tensor(%n, $w : f32[$D])
  }
  where {
    $d == -1 or $d == rank($x) - 1
  }
  rewrite {
    %out = et_vk.rms_norm($x, $w, $eps)
  }
  example { D = [8, 64], d = -1, eps = [0, 1], x = uniform(-1000, 1000), w = uniform(-2, 2) }
}

/// RMSNorm of a bf16/f16 activation computed in f32 (Llama's
/// `self._norm(x.float()).type_as(x) * self.weight`) -> et_vk.rms_norm.
/// One rounding fewer than the decomposed graph (see the header).
rule rms_norm_cast benefit 20 tags(norm) backend vulkan {
  match {
    %xf  = aten._to_copy($x : $dt[..., $D], dtype = f32)
    %sq  = aten.mul.Tensor(%xf, %xf) | aten.pow.Tensor_Scalar(%xf, 2)
    %ms  = aten.mean.dim(%sq, [$d], true)
    %mse = aten.add.Scalar(%ms, $eps) | aten.add.Tensor(%ms, $eps : scalar float)
    %rs  = aten.rsqrt(%mse)
    %n   = aten.mul.Tensor(%xf, %rs)
    %nc  = aten._to_copy(%n, dtype = $dt)
    %out = aten.mul.Tensor(%nc, $w : $dt[$D])
  }
  where {
    $dt in [bf16, f16]
    $d == -1 or $d == rank($x) - 1
  }
  rewrite {
    %out = et_vk.rms_norm($x, $w, $eps)
  }
  example {
    D = [8, 64]
    d = -1
    eps = [0, 1]
    dt = [bf16, f16]
    x = uniform(-1000, 1000)
    w = uniform(-2, 2)
  }
  tolerance(atol = 1e-6, rtol = 0.0078125)
}
