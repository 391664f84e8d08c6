// float64 activation scales made float32 (docs/rules.md, "float64 activation scales"). A
// legalize family (`phase legalize` below): it runs before the fusion rules.
//
// torchao's per-token activation quantization used to ask choose_qparams_affine for float64
// scales and int64 zero points, with the quant ranges left None (pytorch/ao's test expectation
// for the 8da4w export: `choose_qparams_affine.default(input_1, 'ASYMMETRIC', [1, 512],
// torch.int8, None, None, None, torch.float64, torch.int64)`), and such exports are still
// around. A Vulkan device has no float64 (the partitioner refuses it), and ET-VK's 8da4w kernel
// takes float32 scales. Three steps:
//
// 1. choose_qparams_affine computes in float32 and widens (exact):
//   %s : f64[1, S], %zp : i64[1, S] = torchao.choose_qparams_affine(%x : f32[1, S, K],
//                                       "ASYMMETRIC", [1, 1, K], i8, none, none, none, f64, i64)
//   ->
//   %s32 : f32[1, S], %zp = torchao.choose_qparams_affine(%x, ..., none, f32, i64)
//   %s   : f64[1, S]      = aten._to_copy(%s32, dtype = f64)
//   torchao computes min/max, the scale, its eps clamp and the zero point in the input's
//   dtype and converts only at the end (quant_primitives.py `_choose_qparams_affine`:
//   `return scale.to(dtype=scale_dtype), zero_point.to(dtype=zero_point_dtype)`), so the f64
//   scale of an input of at most 32 bits is an f32 value widened exactly.
//
// 2. dequantize_affine reads the f32 scale (exact):
//   dequantize_affine(%q, bs, %s, %zp, i8, ...) -> dequantize_affine(%q, bs, %s32, %zp, i8, ...)
//   (q - zp) is an integer of at most 9 bits, so (q - zp) * s is exact in f64 and rounds to
//   the same f32 as the f32 product rounded once.
//
// 3. quantize_affine reads the f32 scale (NOT exact at ties; tolerance one quantization step):
//   quantize_affine(%x, bs, %s, %zp, i8, ...) -> quantize_affine(%x, bs, %s32, %zp, i8, ...)
//   torch promotes x * (1 / s) to f64 with an f64 scale; with the f32 scale it is rounded
//   to f32 twice (1 / s, then the product). The two agree unless x / s lies within an f32
//   rounding of a half-integer, where round-half-to-even can pick the neighbouring integer:
//   a quantized value then differs by exactly one step (its dequantized value by one scale).
//   This is what ET-VK's kernel computes (float32 on the device); the 8da4w fusion then fuses
//   the f32 chain as usual.
//
// PT2E dynamic per-tensor activations (ExecuTorch's VulkanQuantizer / XNNPACKQuantizer with
// is_dynamic=True; torchao quantization/pt2e/convert.py writes choose_qparams.tensor ->
// quantize_per_tensor.tensor -> dequantize_per_tensor.tensor). Both steps are exact:
//
// 4. choose_qparams.tensor of an f32 input computes in float32 and widens at the end
//   (pytorch torch/ao/quantization/fx/_decomposed.py choose_qparams_tensor ->
//   torch/ao/quantization/utils.py determine_qparams: min(min, 0), max(max, 0),
//   (max - min) / float(qmax - qmin), torch.max against the f32 eps tensor,
//   qmin - round(min / scale) clamped, then `scale.to(torch.double)`; Inductor's
//   decomposition of the op in torch/_inductor/decompositions.py spells the same steps).
//   torchao's _choose_qparams_affine ASYMMETRIC over one block covering the tensor does the
//   same f32 arithmetic (clamp(min=eps) for the max with eps), so with scale_dtype f32 it
//   gives the f32 scale that choose_qparams.tensor widens. torchao checks the quant range
//   against the target dtype and the PT2E op does not, hence the where clauses. f16/bf16
//   inputs are left alone (torchao would divide in their dtype; the PT2E op's scale is f32).
//   The block is -1 in every dim, not the sizes: Llama's prefill exports the sequence length
//   as a symbol, and a symbolic size cannot be written into a rule's constant list (the
//   SymInt[] would need an aten.sym_size node per rewrite). torchao's _get_reduction_params
//   reduces every entry that is neither 1 nor a split of its dim (`block_size[i] != 1`), so
//   -1 is the whole dim whatever its size at run time, and over every dim the whole tensor:
//   the scale is 0-d (keepdim=False), viewed as [1]. The same rules serve static and symbolic
//   sizes; on the device it is choose_qparams_affine's one-group case, one workgroup reducing
//   the runtime-sized tensor and one invocation doing the scalar steps (quant_affine.glsl).
//
// 5. quantize_per_tensor.tensor / dequantize_per_tensor.tensor read `scale.item()`, a Python
//   float: an f32 scale widened to f64 is the same number as the f32 scale, so reading the
//   f32 scale changes nothing (unlike quantize_affine above, which computes with the tensor).
//
// Verification ranges: activations are what these chains quantize per token or per tensor, a
// Llama linear's input (+-10..+-100): [-128, 128); scales are such an activation's
// (max - min) / 255 ~ 1: [0.5, 1.5), so x / s also saturates past +-128; quantized inputs
// span the int8 range, [-128, 128). The tie bound of rule 3 (one step) does not depend on
// the magnitudes.

phase legalize

/// choose_qparams_affine of a rank-2 activation with f64 scales -> f32 scales widened to f64.
rule choose_qparams_affine_f64_scale benefit 40 tags(quant, legalize) {
  match {
    %s, %zp = torchao.choose_qparams_affine($x : $xdt[$M, $K], "ASYMMETRIC", [1, $K], $tdt, $qmin,
                                            $qmax, none, f64, $zdt, $keep)
  }
  where {
    is_float($xdt) and bits($xdt) <= 32
  }
  rewrite {
    %s32, %zp = torchao.choose_qparams_affine($x, "ASYMMETRIC", [1, $K], $tdt, $qmin, $qmax, none,
                                              f32, $zdt, $keep)
    %s        = aten._to_copy(%s32, dtype = f64)
  }
  example {
    M = [1, 3]
    K = [8, 32]
    xdt = [f32, bf16]
    tdt = i8
    qmin = -128
    qmax = 127
    zdt = [i64, i32]
    x = uniform(-128, 128)
  }
}

/// The same for a rank-3 activation [B, S, K] (block [1, 1, K]).
rule choose_qparams_affine_f64_scale_3d benefit 40 tags(quant, legalize) {
  match {
    %s, %zp = torchao.choose_qparams_affine($x : $xdt[$B, $M, $K], "ASYMMETRIC", [1, 1, $K], $tdt,
                                            $qmin, $qmax, none, f64, $zdt, $keep)
  }
  where {
    is_float($xdt) and bits($xdt) <= 32
  }
  rewrite {
    %s32, %zp = torchao.choose_qparams_affine($x, "ASYMMETRIC", [1, 1, $K], $tdt, $qmin, $qmax,
                                              none, f32, $zdt, $keep)
    %s        = aten._to_copy(%s32, dtype = f64)
  }
  example {
    B = [1, 2]
    M = [1, 3]
    K = [8, 32]
    xdt = [f32, bf16]
    tdt = i8
    qmin = -128
    qmax = 127
    zdt = [i64, i32]
    x = uniform(-128, 128)
  }
}

/// dequantize_affine whose scale is an f32 scale widened to f64 -> the f32 scale (exact).
rule dequantize_affine_f64_scale benefit 40 tags(quant, legalize) {
  match {
    shared %sd = aten._to_copy($s : f32[$M], dtype = f64)
    %dq        = torchao.dequantize_affine($q : $qdt[$M, $K], [1, $K], %sd, $zp, $qdt, $qmin, $qmax,
                                           output_dtype = $odt)
  }
  rewrite {
    %dq = torchao.dequantize_affine($q, [1, $K], $s, $zp, $qdt, $qmin, $qmax, output_dtype = $odt)
  }
  example {
    M = [1, 3]
    K = [8, 32]
    qdt = i8
    qmin = -128
    qmax = 127
    odt = [f32, bf16]
    q = uniform(-128, 128)
    s = uniform(0.5, 1.5)
  }
}

/// The same for a rank-3 input [B, S, K] (block [1, 1, K]).
rule dequantize_affine_f64_scale_3d benefit 40 tags(quant, legalize) {
  match {
    shared %sd = aten._to_copy($s : f32[$B, $M], dtype = f64)
    %dq        = torchao.dequantize_affine($q : $qdt[$B, $M, $K], [1, 1, $K], %sd, $zp, $qdt, $qmin,
                                           $qmax, output_dtype = $odt)
  }
  rewrite {
    %dq = torchao.dequantize_affine($q, [1, 1, $K], $s, $zp, $qdt, $qmin, $qmax,
                                    output_dtype = $odt)
  }
  example {
    B = [1, 2]
    M = [1, 3]
    K = [8, 32]
    qdt = i8
    qmin = -128
    qmax = 127
    odt = f32
    q = uniform(-128, 128)
    s = uniform(0.5, 1.5)
  }
}

/// quantize_affine whose scale is an f32 scale widened to f64 -> the f32 scale (a tie may
/// round to the neighbouring integer: tolerance one step).
rule quantize_affine_f64_scale benefit 40 tags(quant, legalize, ties) {
  match {
    shared %sd = aten._to_copy($s : f32[$M], dtype = f64)
    %q         = torchao.quantize_affine($x : $xdt[$M, $K], [1, $K], %sd, $zp, $qdt, $qmin, $qmax)
  }
  where {
    is_float($xdt) and bits($xdt) <= 32
  }
  rewrite {
    %q = torchao.quantize_affine($x, [1, $K], $s, $zp, $qdt, $qmin, $qmax)
  }
  example {
    M = [1, 3]
    K = [8, 32]
    xdt = [f32, bf16]
    qdt = i8
    qmin = -128
    qmax = 127
    x = uniform(-128, 128)
    s = uniform(0.5, 1.5)
  }
  tolerance(atol = 1)
}

/// The same for a rank-3 input [B, S, K] (block [1, 1, K]).
rule quantize_affine_f64_scale_3d benefit 40 tags(quant, legalize, ties) {
  match {
    shared %sd = aten._to_copy($s : f32[$B, $M], dtype = f64)
    %q         = torchao.quantize_affine($x : $xdt[$B, $M, $K], [1, 1, $K], %sd, $zp, $qdt, $qmin,
                                         $qmax)
  }
  where {
    is_float($xdt) and bits($xdt) <= 32
  }
  rewrite {
    %q = torchao.quantize_affine($x, [1, 1, $K], $s, $zp, $qdt, $qmin, $qmax)
  }
  example {
    B = [1, 2]
    M = [1, 3]
    K = [8, 32]
    xdt = f32
    qdt = i8
    qmin = -128
    qmax = 127
    x = uniform(-128, 128)
    s = uniform(0.5, 1.5)
  }
  tolerance(atol = 1)
}

/// choose_qparams.tensor of an f32 activation [M, K] -> torchao choose_qparams_affine.
rule pt2e_choose_qparams_tensor benefit 40 tags(quant, legalize) {
  match {
    %s, %zp = quantized_decomposed.choose_qparams.tensor($x : f32[$M, $K], $qmin, $qmax, $eps, $dt)
  }
  where {
    $qmin <= 0 and $qmax >= 0 and $qmin < $qmax
    // torchao checks the range against the target dtype; choose_qparams.tensor does not.
    ($dt == i8 and $qmin >= -128 and $qmax <= 127) or ($dt == u8 and $qmin >= 0 and $qmax <= 255)
  }
  rewrite {
    %s32, %zp32 = torchao.choose_qparams_affine($x, "ASYMMETRIC", [-1, -1], $dt, $qmin, $qmax, $eps,
                                                f32, i64)
    %s1         = aten.view(%s32, [1])
    %s          = aten._to_copy(%s1, dtype = f64)
    %zp         = aten.view(%zp32, [1])
  }
  example {
    M = [1, 4]
    K = [8, 32]
    qmin = [-128, 0]
    qmax = [127, 255]
    dt = [i8, u8]
    x = uniform(-128, 128)
  }
}

/// choose_qparams.tensor of an f32 activation [B, S, K] -> torchao choose_qparams_affine.
rule pt2e_choose_qparams_tensor_3d benefit 40 tags(quant, legalize) {
  match {
    %s, %zp = quantized_decomposed.choose_qparams.tensor($x : f32[$B, $S, $K], $qmin, $qmax, $eps,
                                                         $dt)
  }
  where {
    $qmin <= 0 and $qmax >= 0 and $qmin < $qmax
    // torchao checks the range against the target dtype; choose_qparams.tensor does not.
    ($dt == i8 and $qmin >= -128 and $qmax <= 127) or ($dt == u8 and $qmin >= 0 and $qmax <= 255)
  }
  rewrite {
    %s32, %zp32 = torchao.choose_qparams_affine($x, "ASYMMETRIC", [-1, -1, -1], $dt, $qmin, $qmax,
                                                $eps, f32, i64)
    %s1         = aten.view(%s32, [1])
    %s          = aten._to_copy(%s1, dtype = f64)
    %zp         = aten.view(%zp32, [1])
  }
  example {
    B = 1
    S = [1, 4]
    K = [8, 32]
    qmin = [-128, 0]
    qmax = [127, 255]
    dt = [i8, u8]
    x = uniform(-128, 128)
  }
}

/// quantize_per_tensor.tensor reads scale.item(): an f32 scale widened to f64 -> the f32 scale.
rule pt2e_quantize_per_tensor_f64_scale benefit 40 tags(quant, legalize) {
  match {
    shared %sd = aten._to_copy($s : f32[1], dtype = f64)
    %q         = quantized_decomposed.quantize_per_tensor.tensor($x : $xdt[...], %sd, $zp : i64[1],
                                                                 $qmin, $qmax, $dt)
  }
  rewrite {
    %q = quantized_decomposed.quantize_per_tensor.tensor($x, $s, $zp, $qmin, $qmax, $dt)
  }
  example {
    xdt = [f32, f16]
    qmin = [-128, -3]
    qmax = [127, 5]
    dt = i8
    x = uniform(-128, 128)
    s = uniform(0.5, 1.5)
  }
}

/// dequantize_per_tensor.tensor reads scale.item(): the same.
rule pt2e_dequantize_per_tensor_f64_scale benefit 40 tags(quant, legalize) {
  match {
    shared %sd = aten._to_copy($s : f32[1], dtype = f64)
    %dq        = quantized_decomposed.dequantize_per_tensor.tensor($q : $dt[...], %sd, $zp : i64[1],
                                                                   $qmin, $qmax, $dt)
  }
  rewrite {
    %dq = quantized_decomposed.dequantize_per_tensor.tensor($q, $s, $zp, $qmin, $qmax, $dt)
  }
  example {
    qmin = [-128, -3]
    qmax = [127, 5]
    dt = i8
    q = uniform(-128, 128)
    s = uniform(0.5, 1.5)
  }
}
