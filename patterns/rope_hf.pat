// HuggingFace RoPE -> et_vk.apply_rotary_emb_hf (pytorch/executorch
// backends/vulkan/patterns/rope_hf.py, HfRotaryEmbeddingPattern; the op:
// backends/vulkan/custom_ops_lib.py, `apply_rotary_emb_hf(Tensor xq,
// Tensor xk, Tensor freqs_cos, Tensor freqs_sin, SymInt start_pos) ->
// (Tensor, Tensor)`). The graph is what torch.export records for
// examples/models/llama/rope.py `hf_apply_rotary_emb` (ModelArgs
// use_hf_rope; the tables come from hf_precompute_freqs_cis, [max_seq, R]
// with R = head_dim * partial_rotary_factor, and Rope.get_freqs cuts them at
// the position with narrow):
//
//   cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)      // [S, 1, R], read by q and k
//   q_rot, q_pass = q[..., :R], q[..., R:]
//   q_embed = cat([(q_rot * cos) + (rotate_half(q_rot) * sin), q_pass], dim=-1)
//   rotate_half(x) = cat((-x[..., R/2:], x[..., :R/2]), dim=-1)
//   (k likewise)
//
// Before (f32, partial rotation R = 8 of head_dim 16, the tables cut at the
// position u0; the k chain is the same on %xk with 2 heads):
//   %fc   : f32[1, 8]        = aten.slice.Tensor(%freqs_cos : f32[M, 8], 0, %u0, %end)
//   %fs   : f32[1, 8]        = aten.slice.Tensor(%freqs_sin, 0, %u0, %end)
//   %c    : f32[1, 1, 8]     = aten.unsqueeze.default(%fc, 1)
//   %s    : f32[1, 1, 8]     = aten.unsqueeze.default(%fs, 1)
//   %qr   : f32[1, 1, 4, 8]  = aten.slice.Tensor(%xq, 3, 0, 8)
//   %qp   : f32[1, 1, 4, 8]  = aten.slice.Tensor(%xq, 3, 8, 9223372036854775807)
//   %qc   = aten.mul.Tensor(%qr, %c)
//   %qh   = aten.cat([aten.neg(aten.slice.Tensor(%qr, 3, 4, 9223372036854775807)),
//                     aten.slice.Tensor(%qr, 3, 0, 4)], -1)
//   %qe   = aten.add.Tensor(%qc, aten.mul.Tensor(%qh, %s))
//   %q_out : f32[1, 1, 4, 16] = aten.cat.default([%qe, %qp], -1)
// After:
//   %rope  = et_vk.apply_rotary_emb_hf.default(%xq, %xk, %freqs_cos, %freqs_sin, %u0)
//   %q_out = result 0 of %rope, %k_out = result 1
//
// With full rotation (R = head_dim) `q[..., :R]` is alias(q), not a slice
// (python_variable_indexing.cpp THPVariable_getitem skips a whole-dim slice),
// which the legalize rule remove_alias forwards; `q[..., R:]` is an empty
// [B, S, H, 0] slice concatenated at the end. Upstream exports the two forms
// as two pattern graphs, matched here by two rules. Upstream matches the
// edge dialect (slice_copy, unsqueeze_copy); the rules accept those
// spellings and torch.export's view ops.
//
// The start position: upstream takes it from a slice_copy of the tables
// (`start_pos = freqs_cos.args[2]`) and otherwise uses 0 with the tables as
// given. The `_at_pos` rules take it from the slice the same way, and
// require the slice to be exactly the op's `freqs[start_pos : start_pos +
// S]` (end == start + S, step 1; the narrow of Rope.get_freqs and the
// `[:seqlen]` prefix are both that). The table slices are `shared`: in a
// Llama every layer's RoPE reads the same two slices. The other rules take
// [S, R] tables as given and pass start_pos 0 (tables with other than S rows
// broadcast differently and do not match).
//
// Conditions: xq, xk [B, S, H, D] with the same B, S and D (the op's shape
// rule and ExecuTorch's Vulkan kernel), R % 8 == 0 (ExecuTorch's Vulkan
// kernel, backends/vulkan/runtime/graph/ops/impl/RotaryEmbedding.cpp),
// R < D for partial rotation, everything f32, or everything f16 (one
// rule for both: $dt, with the f16 tolerance below).
//
// Numerics: the fused op computes exactly these products and sums, each
// rounded to f32 (no FMA); -x * sin is -(x * sin) exactly, the copies are
// copies: bit-exact in f32 (no unguarded tolerance: 0). docs/numerics.md, `apply_rotary_emb_hf`.
//
// Verification ranges: q and k before RoPE, O(1..10) with outlier channels
// in the tens, drawn from [-64, 64); the tables are cos / sin, [-1, 1).

// f16. hf_apply_rotary_emb casts nothing, so in an f16 model (export_llama
// -d fp16: the module and its rotary buffers converted with .to(f16),
// --checkpoint-dtype bf16 included) torch.export records the same graph
// with every value f16: each product and the sum round to f16. The fused
// op is upstream's HfRotaryEmbeddingPattern.forward (custom_ops_lib.py
// apply_rotary_emb_hf_impl): x.float() * cos + rotate_half(x.float()) * sin
// in f32, type_as(x) at the end, one rounding to f16. (Upstream traces its
// pattern in f32, where .float() and type_as are no-ops, and its matcher
// compares targets, not dtypes, so it fuses this f16 graph the same way.)
// bf16 compute stays unfused: the device has no bf16 form.
//
// Bound. A product of two f16 values is exact in f32 (11 + 11 significant
// bits), so the fused op's sum is the exact x*c + r*s rounded to f32 (2^-24
// relative), then to f16 (2^-11 relative to the result). The decomposed
// graph rounds each product to f16 first: with |x|, |r| < 64 and |c|, |s| <
// 1 each product is below 64, where half an f16 ulp is 2^-6, so the two
// products move the sum by at most 2^-5, and its final rounding adds 2^-11
// of the result. Together |before - after| <= 2^-5 + 2^-10 * |before| (plus
// 2^-24 * 128 and 2^-11 * 2^-5 for the f32 sum and the rounding of the
// difference): atol 0.0313, rtol 0.00098. The absolute term is what a
// cancelling sum (x*c ~ -r*s) needs; it is 2^-5 for inputs below 64 and
// scales with the largest |x| (2^-11 per product of the largest magnitude).
// A wiring bug moves outputs by O(|x|): cos and sin swapped, or the wrong
// half negated, fail (RuleLibraryVerify.CatchesF16HfRopeWiredWrongly).
// Measured (verify-rules --instances 2000): see docs/rules.md.
//
// Verification ranges as for f32: q and k [-64, 64), the tables [-1, 1),
// drawn in f32 and rounded to f16.

/// HuggingFace RoPE with full rotation on xq and xk, the tables cut at the
/// position (two roots sharing the unsqueezed tables) ->
/// et_vk.apply_rotary_emb_hf(..., start). Bit-exact in f32, within the f16 bound in f16.
rule et_apply_rotary_emb_hf_at_pos benefit 45 tags(rope) backend vulkan {
  match {
    shared %fc  = (aten.slice.Tensor | aten.slice_copy.Tensor)($cos : $dt[$M, $D], 0, $pos, $end)
    shared %fs  = (aten.slice.Tensor | aten.slice_copy.Tensor)($sin : $dt[$M, $D], 0, $pos, $end)
    %c          = (aten.unsqueeze | aten.unsqueeze_copy)(%fc, 1)
    %s          = (aten.unsqueeze | aten.unsqueeze_copy)(%fs, 1)
    %qp         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xq : $dt[$B, $S, $HQ, $D], 3, $D,
                                                               9223372036854775807)
    %kp         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xk : $dt[$B, $S, $HK, $D], 3, $D,
                                                               9223372036854775807)
    %qc         = aten.mul.Tensor($xq, %c)
    %q1         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xq, 3, 0, $D2)
    %q2         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xq, 3, $D2, 9223372036854775807)
    %qn         = aten.neg(%q2)
    %qh         = aten.cat([%qn, %q1], -1)
    %qs         = aten.mul.Tensor(%qh, %s)
    %qe         = aten.add.Tensor(%qc, %qs)
    root %q_out = aten.cat([%qe, %qp], -1)
    %kc         = aten.mul.Tensor($xk, %c)
    %k1         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xk, 3, 0, $D2)
    %k2         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xk, 3, $D2, 9223372036854775807)
    %kn         = aten.neg(%k2)
    %kh         = aten.cat([%kn, %k1], -1)
    %ks         = aten.mul.Tensor(%kh, %s)
    %ke         = aten.add.Tensor(%kc, %ks)
    root %k_out = aten.cat([%ke, %kp], -1)
  }
  where {
    $dt in [f32, f16]
    $end == $pos + $S
    $D2 == $D / 2
    $D % 8 == 0
  }
  rewrite {
    %q_out, %k_out = et_vk.apply_rotary_emb_hf($xq, $xk, $cos, $sin, $pos)
  }
  example {
    B = 1
    S = [1, 3]
    HQ = 4
    HK = [2, 4]
    D = [8, 16]
    M = 6
    pos = [0, 2]
    dt = [f32, f16]
    xq = uniform(-64, 64)
    xk = uniform(-64, 64)
  }
  tolerance(atol = 0.0313, rtol = 0.00098) when $dt == f16
}

/// HuggingFace RoPE with partial rotation (the first R of head_dim D, the
/// rest passed through), the tables cut at the position ->
/// et_vk.apply_rotary_emb_hf(..., start). Bit-exact in f32, within the f16 bound in f16.
rule et_apply_rotary_emb_hf_partial_at_pos benefit 45 tags(rope) backend vulkan {
  match {
    shared %fc  = (aten.slice.Tensor | aten.slice_copy.Tensor)($cos : $dt[$M, $R], 0, $pos, $end)
    shared %fs  = (aten.slice.Tensor | aten.slice_copy.Tensor)($sin : $dt[$M, $R], 0, $pos, $end)
    %c          = (aten.unsqueeze | aten.unsqueeze_copy)(%fc, 1)
    %s          = (aten.unsqueeze | aten.unsqueeze_copy)(%fs, 1)
    %qr         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xq : $dt[$B, $S, $HQ, $D], 3, 0, $R)
    %qp         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xq, 3, $R, 9223372036854775807)
    %kr         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xk : $dt[$B, $S, $HK, $D], 3, 0, $R)
    %kp         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xk, 3, $R, 9223372036854775807)
    %qc         = aten.mul.Tensor(%qr, %c)
    %q1         = (aten.slice.Tensor | aten.slice_copy.Tensor)(%qr, 3, 0, $R2)
    %q2         = (aten.slice.Tensor | aten.slice_copy.Tensor)(%qr, 3, $R2, 9223372036854775807)
    %qn         = aten.neg(%q2)
    %qh         = aten.cat([%qn, %q1], -1)
    %qs         = aten.mul.Tensor(%qh, %s)
    %qe         = aten.add.Tensor(%qc, %qs)
    root %q_out = aten.cat([%qe, %qp], -1)
    %kc         = aten.mul.Tensor(%kr, %c)
    %k1         = (aten.slice.Tensor | aten.slice_copy.Tensor)(%kr, 3, 0, $R2)
    %k2         = (aten.slice.Tensor | aten.slice_copy.Tensor)(%kr, 3, $R2, 9223372036854775807)
    %kn         = aten.neg(%k2)
    %kh         = aten.cat([%kn, %k1], -1)
    %ks         = aten.mul.Tensor(%kh, %s)
    %ke         = aten.add.Tensor(%kc, %ks)
    root %k_out = aten.cat([%ke, %kp], -1)
  }
  where {
    $dt in [f32, f16]
    $end == $pos + $S
    $R2 == $R / 2
    $R % 8 == 0
    $R < $D
  }
  rewrite {
    %q_out, %k_out = et_vk.apply_rotary_emb_hf($xq, $xk, $cos, $sin, $pos)
  }
  example {
    B = 1
    S = [1, 3]
    HQ = 4
    HK = [2, 4]
    D = [12, 24]
    R = 8
    M = 6
    pos = [0, 2]
    dt = [f32, f16]
    xq = uniform(-64, 64)
    xk = uniform(-64, 64)
  }
  tolerance(atol = 0.0313, rtol = 0.00098) when $dt == f16
}

/// HuggingFace RoPE with full rotation, [S, D] tables as given ->
/// et_vk.apply_rotary_emb_hf(..., 0). Bit-exact in f32, within the f16 bound in f16.
rule et_apply_rotary_emb_hf benefit 40 tags(rope) backend vulkan {
  match {
    %c          = (aten.unsqueeze | aten.unsqueeze_copy)($cos : $dt[$S, $D], 1)
    %s          = (aten.unsqueeze | aten.unsqueeze_copy)($sin : $dt[$S, $D], 1)
    %qp         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xq : $dt[$B, $S, $HQ, $D], 3, $D,
                                                               9223372036854775807)
    %kp         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xk : $dt[$B, $S, $HK, $D], 3, $D,
                                                               9223372036854775807)
    %qc         = aten.mul.Tensor($xq, %c)
    %q1         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xq, 3, 0, $D2)
    %q2         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xq, 3, $D2, 9223372036854775807)
    %qn         = aten.neg(%q2)
    %qh         = aten.cat([%qn, %q1], -1)
    %qs         = aten.mul.Tensor(%qh, %s)
    %qe         = aten.add.Tensor(%qc, %qs)
    root %q_out = aten.cat([%qe, %qp], -1)
    %kc         = aten.mul.Tensor($xk, %c)
    %k1         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xk, 3, 0, $D2)
    %k2         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xk, 3, $D2, 9223372036854775807)
    %kn         = aten.neg(%k2)
    %kh         = aten.cat([%kn, %k1], -1)
    %ks         = aten.mul.Tensor(%kh, %s)
    %ke         = aten.add.Tensor(%kc, %ks)
    root %k_out = aten.cat([%ke, %kp], -1)
  }
  where {
    $dt in [f32, f16]
    $D2 == $D / 2
    $D % 8 == 0
  }
  rewrite {
    %q_out, %k_out = et_vk.apply_rotary_emb_hf($xq, $xk, $cos, $sin, 0)
  }
  example {
    B = [1, 2]
    S = [1, 3]
    HQ = 4
    HK = [2, 4]
    D = [8, 16]
    dt = [f32, f16]
    xq = uniform(-64, 64)
    xk = uniform(-64, 64)
  }
  tolerance(atol = 0.0313, rtol = 0.00098) when $dt == f16
}

/// HuggingFace RoPE with partial rotation, [S, R] tables as given ->
/// et_vk.apply_rotary_emb_hf(..., 0). Bit-exact in f32, within the f16 bound in f16.
rule et_apply_rotary_emb_hf_partial benefit 40 tags(rope) backend vulkan {
  match {
    %c          = (aten.unsqueeze | aten.unsqueeze_copy)($cos : $dt[$S, $R], 1)
    %s          = (aten.unsqueeze | aten.unsqueeze_copy)($sin : $dt[$S, $R], 1)
    %qr         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xq : $dt[$B, $S, $HQ, $D], 3, 0, $R)
    %qp         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xq, 3, $R, 9223372036854775807)
    %kr         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xk : $dt[$B, $S, $HK, $D], 3, 0, $R)
    %kp         = (aten.slice.Tensor | aten.slice_copy.Tensor)($xk, 3, $R, 9223372036854775807)
    %qc         = aten.mul.Tensor(%qr, %c)
    %q1         = (aten.slice.Tensor | aten.slice_copy.Tensor)(%qr, 3, 0, $R2)
    %q2         = (aten.slice.Tensor | aten.slice_copy.Tensor)(%qr, 3, $R2, 9223372036854775807)
    %qn         = aten.neg(%q2)
    %qh         = aten.cat([%qn, %q1], -1)
    %qs         = aten.mul.Tensor(%qh, %s)
    %qe         = aten.add.Tensor(%qc, %qs)
    root %q_out = aten.cat([%qe, %qp], -1)
    %kc         = aten.mul.Tensor(%kr, %c)
    %k1         = (aten.slice.Tensor | aten.slice_copy.Tensor)(%kr, 3, 0, $R2)
    %k2         = (aten.slice.Tensor | aten.slice_copy.Tensor)(%kr, 3, $R2, 9223372036854775807)
    %kn         = aten.neg(%k2)
    %kh         = aten.cat([%kn, %k1], -1)
    %ks         = aten.mul.Tensor(%kh, %s)
    %ke         = aten.add.Tensor(%kc, %ks)
    root %k_out = aten.cat([%ke, %kp], -1)
  }
  where {
    $dt in [f32, f16]
    $R2 == $R / 2
    $R % 8 == 0
    $R < $D
  }
  rewrite {
    %q_out, %k_out = et_vk.apply_rotary_emb_hf($xq, $xk, $cos, $sin, 0)
  }
  example {
    B = [1, 2]
    S = [1, 3]
    HQ = 4
    HK = [2, 4]
    D = [12, 24]
    R = 8
    dt = [f32, f16]
    xq = uniform(-64, 64)
    xk = uniform(-64, 64)
  }
  tolerance(atol = 0.0313, rtol = 0.00098) when $dt == f16
}
