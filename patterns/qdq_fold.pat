// Folding quantize/dequantize pairs (quantized_decomposed, per tensor).
//
// Two directions, with different numerics:
//
// 1. DQ -> Q (requantize to the same parameters) is the IDENTITY on the int
//    values, so it folds exactly (qdq_fold_dq_q, tolerance 0):
//      %f  : f32[M, K] = quantized_decomposed.dequantize_per_tensor.default(%q, 0.05, 3, -128, 127, i8)
//      %q2 : i8[M, K]  = quantized_decomposed.quantize_per_tensor.default(%f, 0.05, 3, -128, 127, i8)
//    becomes: every use of %q2 reads %q (%f stays if something else uses it).
//    Why exact: f = (q - zp) * s rounds once; q2 = clamp(round(f * (1/s)) + zp,
//    qmin, qmax). |q - zp| <= 255, so f * (1/s) is within 3 f32 roundings
//    (~255 * 2^-22 < 0.5) of the integer q - zp and rounds back to it; the
//    clamp is a no-op because [qmin, qmax] is the dtype's full range (required
//    below: with a narrower range an int value outside it would be clamped) and
//    q is a value of that dtype. The scale must keep f normal and 1/s finite
//    (1e-30 <= s <= 1e30) and the zero point must lie in [qmin, qmax].
//    Verification draws q over the whole int8 range [-128, 128), so that
//    |q - zp| reaches 131.
//
// 2. Q -> DQ (quantize then dequantize, "fake quantization") is NOT the
//    identity: dq(q(x)) = (clamp(round(x / s) + zp, qmin, qmax) - zp) * s
//    rounds x to the grid of s and saturates outside
//    [(qmin - zp) * s, (qmax - zp) * s]. Removing the pair (qdq_fold_q_dq)
//    changes the numbers: by at most s/2 per element for x inside that range,
//    and without bound outside it. It is what ExecuTorch's Vulkan backend does
//    (backends/vulkan/_passes/fold_qdq.py, FoldQDQPass, run after the fusion
//    passes: "Erase Q/DQ chain introduced by PT2E quantization workflow"): a
//    Q/DQ pair no fused op consumed is simulated quantization, and the float
//    delegate computes the unquantized value instead. graft keeps it, tagged
//    `lossy`, and stricter than upstream, which folds any q -> dq pair
//    regardless of parameters: here both nodes must carry the identical scale,
//    zero point, range and dtype (the same captures), so a requantization to
//    another scale never folds (tests/golden/rules/qdq_different_scales_no_fold).
//    Its tolerance, atol = 0.5, is s/2 for the verification instances (s = 1,
//    zero point 0, inputs in [-128, 127), the range's whole inside, as a PT2E
//    observer picks s for the activation it saw); it is a statement of the
//    bound, not a claim of exactness. Fusion rules rooted
//    further down (pt2e_qdq.pat) get the first chance at a Q/DQ pair, since the
//    driver visits users before producers.
//
//      %q  : i8[M, K]  = quantized_decomposed.quantize_per_tensor.default(%x, 0.05, 3, -128, 127, i8)
//      %dq : f32[M, K] = quantized_decomposed.dequantize_per_tensor.default(%q, 0.05, 3, -128, 127, i8)
//    becomes: every use of %dq reads %x.

/// dequantize_per_tensor -> quantize_per_tensor with identical parameters
/// over the dtype's full range -> the original int tensor (exact).
rule qdq_fold_dq_q benefit 5 tags(qdq, fold) {
  match {
    shared %f = quantized_decomposed.dequantize_per_tensor($q : $qdt[...], $s, $zp, $qmin, $qmax,
                                                           $qdt)
    %rq       = quantized_decomposed.quantize_per_tensor(%f, $s, $zp, $qmin, $qmax, $qdt)
  }
  where {
    ($qdt == i8 and $qmin == -128 and $qmax == 127) or ($qdt == u8 and $qmin == 0 and $qmax == 255)
    $zp >= $qmin and $zp <= $qmax
    $s >= 1e-30 and $s <= 1e30
  }
  rewrite {
    %rq = $q
  }
  example { s = [1, 3], zp = [0, 3], qmin = -128, qmax = 127, qdt = i8, q = uniform(-128, 128) }
}

/// quantize_per_tensor -> dequantize_per_tensor with identical parameters ->
/// the float input (LOSSY: removes the simulated quantization, as ExecuTorch's
/// FoldQDQPass does; error <= s/2 inside the range, see the header).
rule qdq_fold_q_dq benefit 1 tags(qdq, fold, lossy) {
  match {
    shared %q = quantized_decomposed.quantize_per_tensor($x : f32[...], $s, $zp, $qmin, $qmax, $qdt)
    %dq       = quantized_decomposed.dequantize_per_tensor(%q, $s, $zp, $qmin, $qmax, $qdt)
  }
  rewrite {
    %dq = $x
  }
  example { s = 1, zp = 0, qmin = -128, qmax = 127, qdt = i8, x = uniform(-128, 127) }
  tolerance(atol = 0.5)
}
