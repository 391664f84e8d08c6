// Int4 group-wise embeddings -> et_vk.embedding_q4gsw (docs/rules.md, "Embedding").
//
// Before (torchao IntxUnpackedToInt8Tensor, as exported):
//   %dq  : f32[V, D] = torchao.dequantize_affine(%w : i8[V, D], [1, G], %s : f32[V, D/G],
//                                                none, i8, -8, 7, output_dtype=f32)
//   %out : f32[*, D] = aten.embedding(%dq, %idx)
// Before (ExecuTorch llama quantizer, two nibbles per byte, EVEN column in the HIGH nibble):
//   %out : f32[*, D] = quantized_decomposed.embedding_4bit.dtype(%wp : u8[V, D/2], %s, none,
//                                                               -8, 7, %idx, dtype=f32)
// Before (the same with -E 2,G: four 2-bit values per byte, +2, first in the lowest bits):
//   %out : f32[*, D] = quantized_decomposed.embedding_2bit.dtype(%wp : u8[V, D/4], %s, none,
//                                                               -2, 1, %idx, dtype=f32)
// After (all three):
//   %out : f32[*, D] = et_vk.embedding_q4gsw(%packed : u8[V, D/2], %s : f32[V, D/G], G, %idx,
//                                            is_linear_weight=true)
//
// %packed is in the *linear convention* (pack_4bit_weight_tensor: EVEN column in the LOW
// nibble, +8 offset), the layout linear_q4gsw reads, so a tied lm_head packs to the same
// bytes under the same FQN (one constant; the FQN registry dedups it). The scales stay
// [V, G] (never transposed here: the lm_head gets its own transposed copy).
//
// Conditions (backends/vulkan/patterns/quantized_embedding.py, executorch cff6f4dd):
// weight values in [-8, 7] (the torchao rule: any int8 quant range, since dequantize_affine's
// result does not depend on it, so IntxWeightOnlyConfig int1..int4 embeddings fuse; upstream
// asks for exactly (-8, 7); embedding_4bit's range is asserted by the op), input_dtype i8, block_size [1, G], D % G == 0, D % 32 == 0
// (the shader writes 32 values per invocation), zero point absent or all zero (the kernel
// has no zero point), weight and scales are state-dict constants.

/// torchao int4 weight-only embedding (dequantize_affine -> embedding), pytorch/executorch#20381.
rule torchao_embedding_q4gsw benefit 20 tags(embedding, int4) backend vulkan {
  match {
    // `shared`: torch.export may emit one dequantize for a tied embedding and lm_head;
    // the embedding fuses first and the dequantize stays for the lm_head's rule.
    shared %dq = torchao.dequantize_affine(param $w : i8[$V, $D], [1, $G], param $s : $sdt[$V, $NG],
                                           $zp, i8, $wqmin, $wqmax, output_dtype = $odt)
    %out       = aten.embedding(%dq, $idx)
  }
  where {
    $D % $G == 0
    $D % 32 == 0
    $NG == $D / $G
    $sdt == $odt or bits($sdt) < bits($odt)
    $zp is none or all_zero($zp)
    $wqmin >= -128 and $wqmax <= 127
    values_in($w, -8, 7)
  }
  rewrite {
    // The fused op returns the scales' dtype: widen bf16 checkpoint scales to the
    // dequantized dtype (exact; identity, hence no new constant, when they agree).
    // Narrowing is not exact (torchao multiplies in the wider dtype, then rounds once),
    // hence the where clause above.
    $scales = cast($s, dtype = $odt)
    $packed = pack_int4($w, nibbles = low_first)
    %out    = et_vk.embedding_q4gsw($packed, $scales, $G, $idx, is_linear_weight = true)
  }
  example {
    V = [8, 40]
    D = [64, 128]
    G = [32, 64]
    odt = [f32, bf16, f16]
    sdt = [f32, bf16, f16]
    wqmin = [-8, -2]
    wqmax = [7, 1]
  }
}

/// quantized_decomposed.embedding_4bit.dtype (high nibble = even column) repacked to the
/// linear convention, so a tied embedding and lm_head share identical packed bytes.
rule qd_embedding_4bit_q4gsw benefit 20 tags(embedding, int4) backend vulkan {
  match {
    %out = quantized_decomposed.embedding_4bit.dtype(param $w : u8[$V, $DH],
                                                     param $s : $sdt[$V, $NG], $zp, -8, 7, $idx,
                                                     dtype = none | $sdt)
  }
  where {
    (2 * $DH) % $NG == 0
    (2 * $DH) % 32 == 0
    $zp is none or all_zero($zp)
  }
  rewrite {
    $G        = 2 * $DH / $NG
    $unpacked = unpack_int4($w, nibbles = high_first)
    $packed   = pack_int4($unpacked, nibbles = low_first)
    %out      = et_vk.embedding_q4gsw($packed, $s, $G, $idx, is_linear_weight = true)
  }
  example { V = [8, 40], DH = [16, 32, 64], NG = [1, 2, 4], sdt = [f32, bf16] }
}

/// embedding_4bit with per-row scales [V]: one group spanning the row (upstream's
/// group_size = embed_dim when the scales are 1-D).
rule qd_embedding_4bit_q4gsw_per_row benefit 20 tags(embedding, int4) backend vulkan {
  match {
    %out = quantized_decomposed.embedding_4bit.dtype(param $w : u8[$V, $DH], param $s : $sdt[$V],
                                                     $zp, -8, 7, $idx, dtype = none | $sdt)
  }
  where {
    (2 * $DH) % 32 == 0
    $zp is none or all_zero($zp)
  }
  rewrite {
    $unpacked = unpack_int4($w, nibbles = high_first)
    $packed   = pack_int4($unpacked, nibbles = low_first)
    %out      = et_vk.embedding_q4gsw($packed, $s, 2 * $DH, $idx, is_linear_weight = true)
  }
  example { V = [8, 40], DH = [16, 32, 64], sdt = [f32, bf16] }
}

/// quantized_decomposed.embedding_2bit.dtype (ExecuTorch's Llama export with -E 2,G: four
/// 2-bit values per byte, +2, first in the lowest bits) -> the int4 embedding: the values
/// [-2, 1] lie in the 4-bit range, so unpacking and repacking them in the linear convention
/// gives embedding_q4gsw the same integers (upstream ET-VK has no 2-bit embedding and leaves
/// this op to the CPU). The op asserts quant range (-2, 1); the group is 4 * DQ / NG
/// (_quant_patterns_and_replacements.py embedding_2bit).
rule qd_embedding_2bit_q4gsw benefit 20 tags(embedding, int2) backend vulkan {
  match {
    %out = quantized_decomposed.embedding_2bit.dtype(param $w : u8[$V, $DQ],
                                                     param $s : $sdt[$V, $NG], $zp, -2, 1, $idx,
                                                     dtype = none | $sdt)
  }
  where {
    (4 * $DQ) % $NG == 0
    (4 * $DQ) % 32 == 0
    $zp is none or all_zero($zp)
  }
  rewrite {
    $G        = 4 * $DQ / $NG
    $unpacked = unpack_int2($w)
    $packed   = pack_int4($unpacked, nibbles = low_first)
    %out      = et_vk.embedding_q4gsw($packed, $s, $G, $idx, is_linear_weight = true)
  }
  example { V = [8, 40], DQ = [8, 16, 32], NG = [1, 2, 4], sdt = [f32, bf16] }
}

/// embedding_2bit with per-row scales [V]: one group spanning the row.
rule qd_embedding_2bit_q4gsw_per_row benefit 20 tags(embedding, int2) backend vulkan {
  match {
    %out = quantized_decomposed.embedding_2bit.dtype(param $w : u8[$V, $DQ], param $s : $sdt[$V],
                                                     $zp, -2, 1, $idx, dtype = none | $sdt)
  }
  where {
    (4 * $DQ) % 32 == 0
    $zp is none or all_zero($zp)
  }
  rewrite {
    $unpacked = unpack_int2($w)
    $packed   = pack_int4($unpacked, nibbles = low_first)
    %out      = et_vk.embedding_q4gsw($packed, $s, 4 * $DQ, $idx, is_linear_weight = true)
  }
  example { V = [8, 40], DQ = [8, 16, 32], sdt = [f32, bf16] }
}

/// torchao int8 weight-only embedding (IntxWeightOnlyConfig(weight_dtype=torch.int8) on an
/// nn.Embedding, pytorch/ao 36027d82, unwrapped: dequantize_affine -> embedding) ->
/// quantized_decomposed.embedding_byte.dtype, the op ExecuTorch's own `-E 8,G` writes
/// (examples/models/llama/source_transformation/quantize.py QuantizedGroupEmbedding,
/// executorch cff6f4dd), which the Vulkan backend runs as it is (embedding_byte.glsl). ET-VK's
/// quantized_embedding.py matches 4-bit weights only, so upstream dequantizes the whole table
/// on every call. Bit-exact: both compute (w - 0) * s in the scales' (widened) dtype, rounded
/// once, and gather the rows. Per group ([1, G]; G > 1, which dequantize_per_channel_group
/// asserts in _decomposed.py) and per row ([1, D]); symmetric only (zero point absent or zero);
/// f32 or f16 output (the Vulkan kernel's scale dtypes); narrower scales widen exactly. A
/// weight in the 4-bit range is torchao_embedding_q4gsw's (benefit 20 > 15).
rule torchao_embedding_byte benefit 15 tags(embedding, int8) backend vulkan {
  match {
    shared %dq = torchao.dequantize_affine(param $w : i8[$V, $D], [1, $G], param $s : $sdt[$V, $NG],
                                           $zp, i8, $wqmin, $wqmax, output_dtype = $odt)
    %out       = aten.embedding(%dq, $idx)
  }
  where {
    $odt in [f32, f16]
    $D % $G == 0 and $G > 1
    $NG == $D / $G
    $sdt == $odt or bits($sdt) < bits($odt)
    $zp is none or all_zero($zp)
    $wqmin >= -128 and $wqmax <= 127
  }
  rewrite {
    $scales = cast($s, dtype = $odt)
    %out    = quantized_decomposed.embedding_byte.dtype($w, $scales, none, $wqmin, $wqmax, $idx,
                                                        dtype = $odt)
  }
  example {
    V = [8, 40]
    D = [32, 64]
    G = [16, 32]
    odt = [f32, f16]
    sdt = [f32, bf16, f16]
    wqmin = [-128, -127]
    wqmax = 127
  }
}
