// Per-token activation quantization with float zero points made integer (docs/rules.md,
// "Float activation zero points"). A legalize family: it runs before the fusion rules.
//
// torchao's per_token_dynamic_quant (pytorch/ao 36027d82 torchao/quantization/utils.py)
// defaults to zero_point_dtype=torch.float32, and linear_forward_8da4w
// (torchao/quantization/linear_quant_modules.py, Int8DynActInt4WeightLinear) passes it
// explicitly: ExecuTorch's pre-quantized Llama checkpoints load into those modules
// (examples/models/llama/source_transformation/pre_quantization.py,
// transform_linear_for_pre_quantization; the output layer's Int8DynActInt8WeightLinear calls
// the same function, executorch cff6f4dd). Exported:
//   %s, %zp : f32 = torchao.choose_qparams_affine(%x, "ASYMMETRIC", bs, i8, -128, 127, eps,
//                                                 f32, f32)
//   %q   = torchao.quantize_affine(%x, bs, %s, %zp, i8, -128, 127)
//   %xdq = torchao.dequantize_affine(%q, bs, %s, %zp, i8, -128, 127, output_dtype=odt)
// The Vulkan quantize kernels and ET-VK's dq8ca linears take integer zero points, so the
// chain stayed on the CPU and the linears unfused. After: the same chain with
// zero_point_dtype=i8, which the 8da4w/8da8w rules fuse.
//
// Bit-exact (quant_primitives.py): _choose_qparams_affine computes the ASYMMETRIC zero point
// as quant_min - round(min / scale), clamped to [-128, 127], and converts it to
// zero_point_dtype at the end, so the f32 zero point is an integer in [-128, 127] that i8
// holds exactly; _quantize_affine_no_dtype_cast adds it to round(x * (1 / s)) in f32 either
// way (an i8 tensor promotes to f32, exactly); _dequantize_affine_no_dtype_check converts it
// with .to(int32) either way. The zero point must feed only this chain (the rule replaces it).

phase legalize

/// choose_qparams_affine(zero_point_dtype=f32) -> quantize -> dequantize on [M, K], per
/// token: the same chain with int8 zero points.
rule torchao_act_float_zero_point benefit 40 tags(quant, legalize) {
  match {
    %s, %zp = torchao.choose_qparams_affine($x : $xdt[$M, $K], "ASYMMETRIC", [1, $K], i8, -128, 127,
                                            $eps, $sdt, f32)
    %q      = torchao.quantize_affine($x, [1, $K], %s, %zp, i8, -128, 127)
    %xdq    = torchao.dequantize_affine(%q, [1, $K], %s, %zp, i8, -128, 127, output_dtype = $odt)
  }
  rewrite {
    %s2, %zpi = torchao.choose_qparams_affine($x, "ASYMMETRIC", [1, $K], i8, -128, 127, $eps, $sdt,
                                              i8)
    %q2       = torchao.quantize_affine($x, [1, $K], %s2, %zpi, i8, -128, 127)
    %xdq      = torchao.dequantize_affine(%q2, [1, $K], %s2, %zpi, i8, -128, 127,
                                          output_dtype = $odt)
  }
  example {
    M = [1, 3]
    K = [8, 64]
    xdt = [f32, bf16]
    sdt = f32
    odt = [f32, bf16]
    eps = [0, 1]
    x = uniform(-128, 128)
  }
}

/// The same on [B, S, K] (a Llama's projections).
rule torchao_act_float_zero_point_3d benefit 40 tags(quant, legalize) {
  match {
    %s, %zp = torchao.choose_qparams_affine($x : $xdt[$B, $S, $K], "ASYMMETRIC", [1, 1, $K], i8,
                                            -128, 127, $eps, $sdt, f32)
    %q      = torchao.quantize_affine($x, [1, 1, $K], %s, %zp, i8, -128, 127)
    %xdq    = torchao.dequantize_affine(%q, [1, 1, $K], %s, %zp, i8, -128, 127, output_dtype = $odt)
  }
  rewrite {
    %s2, %zpi = torchao.choose_qparams_affine($x, "ASYMMETRIC", [1, 1, $K], i8, -128, 127, $eps,
                                              $sdt, i8)
    %q2       = torchao.quantize_affine($x, [1, 1, $K], %s2, %zpi, i8, -128, 127)
    %xdq      = torchao.dequantize_affine(%q2, [1, 1, $K], %s2, %zpi, i8, -128, 127,
                                          output_dtype = $odt)
  }
  example {
    B = [1, 2]
    S = [1, 3]
    K = [8, 64]
    xdt = [f32, bf16]
    sdt = f32
    odt = [f32, bf16]
    eps = [0, 1]
    x = uniform(-128, 128)
  }
}
