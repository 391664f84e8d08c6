// Int4 group-wise weight-only linears ("4w") -> et_vk.linear_q4gsw (docs/rules.md, "Linear 4w").
//
// Before (torchao IntxUnpackedToInt8Tensor weight):
//   %w : f32[N, K] = torchao.dequantize_affine(%qw : i8[N, K], [1, G], %s : f32[N, K/G],
//                                              none, i8, -8, 7, output_dtype=f32)
//   %y : f32[..., N] = aten.linear(%x : f32[..., K], %w, %bias?)
// (mm / addmm with a transposed weight, the decomposed spellings of the same linear, are
// turned back into aten.linear first by linear_recompose_legalize.pat.)
// After:
//   %y : f32[..., N] = et_vk.linear_q4gsw(%x, %packed : u8[N, K8/2], %scales : f32[K/G, N4], G,
//                                         %bias4?)
//
// Repacking (backends/vulkan/patterns/quantized_linear.py + weight_packing_utils.py,
// executorch cff6f4dd): the weight is zero-padded along K to a multiple of 8 (padding
// decodes to 0) and packed two nibbles per byte, EVEN k in the LOW nibble, +8 offset
// (pack_4bit_weight_tensor); the scales are transposed to [G, N] and N is zero-padded to a
// multiple of 4 (align_width_and_update_state_dict); a constant bias is padded to a
// multiple of 4 as well. Every new constant goes through the FQN registry: a tied
// embedding's packed weight is reused, and the transposed scales are a *separate* constant
// (the embedding keeps reading scales [V, G]).
//
// Conditions: input_dtype i8 (a 4-bit weight stored in int8), any int8 quant range,
// block_size [1, G], K % G == 0, K % 4 == 0 (upstream's in_channels % 4 check), zero point
// absent or all zero (the kernel has none), weight values in [-8, 7], weight and scales are
// state-dict constants, and the dequantized weight has no other user. The declared quant
// range does not enter dequantize_affine's result ((q - zp) * s, no clamp: torchao
// quant_primitives.py _dequantize_affine_no_dtype_check), so the data decides, as upstream's
// router does (utils.is_in_4bit_range on the weight, quantized_linear.py): torchao
// IntxWeightOnlyConfig / Int8DynamicActivationIntxWeightConfig with weight_dtype int1..int4
// write ranges (-1, 0), (-2, 1), (-4, 3), (-8, 7) (_DTYPE_TO_QVALUE_BOUNDS,
// intx_unpacked_to_int8_tensor.py dequantize) and all fuse here.
//
// linear_q4gsw returns the activation's dtype; the scales are widened to it when the
// checkpoint stored them narrower (bf16 scales in an f32 graph, after dtype_legalize.pat).
//
// Verification ranges: x is a Llama projection's input (normalized hidden states O(1..10),
// the FFN's w2 input up to hundreds): [-128, 128), in f16 / bf16 too; the scales are
// torchao's per-group int4 scales of Llama weights (max |w| / 8 over a group): [0.0005,
// 0.05). The rules are bit-exact over them (the op's reference dequantizes and runs the
// same linear).

/// torchao 4w linear without bias.
rule torchao_linear_q4gsw benefit 20 tags(linear, int4, weight_only) backend vulkan {
  match {
    %w = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G], param $s : $sdt[$N, $NG], $zp,
                                   i8, $wqmin, $wqmax, output_dtype = $odt)
    %y = aten.linear($x : $odt[..., $K], %w, none)
  }
  where {
    $K % $G == 0
    $K % 4 == 0
    $NG == $K / $G
    $sdt == $odt or bits($sdt) < bits($odt)
    $zp is none or all_zero($zp)
    $wqmin >= -128 and $wqmax <= 127
    values_in($qw, -8, 7)
  }
  rewrite {
    $wp     = pad_to_multiple($qw, dim = 1, multiple = 8)
    $packed = pack_int4($wp, nibbles = low_first)
    $sc     = cast($s, dtype = $odt)
    $st     = transpose($sc, 0, 1)
    $scales = pad_to_multiple($st, dim = 1, multiple = 4)
    %y      = et_vk.linear_q4gsw($x, $packed, $scales, $G)
  }
  example {
    N = [4, 8, 12]
    K = [32, 64, 96]
    G = [16, 32]
    odt = [f32, bf16, f16]
    sdt = [f32, bf16, f16]
    wqmin = [-8, -2]
    wqmax = [7, 1]
    x = uniform(-128, 128)
    s = uniform(0.0005, 0.05)
  }
}

/// torchao 4w linear with a constant bias (padded to a multiple of 4, as upstream does).
rule torchao_linear_q4gsw_bias benefit 20 tags(linear, int4, weight_only) backend vulkan {
  match {
    %w = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G], param $s : $sdt[$N, $NG], $zp,
                                   i8, $wqmin, $wqmax, output_dtype = $odt)
    %y = aten.linear($x : $odt[..., $K], %w, param $b : $odt[$N])
  }
  where {
    $K % $G == 0
    $K % 4 == 0
    $NG == $K / $G
    $sdt == $odt or bits($sdt) < bits($odt)
    $zp is none or all_zero($zp)
    $wqmin >= -128 and $wqmax <= 127
    values_in($qw, -8, 7)
  }
  rewrite {
    $wp     = pad_to_multiple($qw, dim = 1, multiple = 8)
    $packed = pack_int4($wp, nibbles = low_first)
    $sc     = cast($s, dtype = $odt)
    $st     = transpose($sc, 0, 1)
    $scales = pad_to_multiple($st, dim = 1, multiple = 4)
    $bias   = pad_to_multiple($b, dim = 0, multiple = 4)
    %y      = et_vk.linear_q4gsw($x, $packed, $scales, $G, $bias)
  }
  example {
    N = [4, 8, 12]
    K = [32, 64, 96]
    G = [16, 32]
    odt = [f32, bf16, f16]
    sdt = [f32, bf16, f16]
    wqmin = [-8, -2]
    wqmax = [7, 1]
    x = uniform(-128, 128)
    s = uniform(0.0005, 0.05)
  }
}
