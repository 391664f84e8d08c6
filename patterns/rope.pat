// ExecuTorch's RoPE -> et_vk.apply_rotary_emb (pytorch/executorch
// backends/vulkan/patterns/rope.py, RotaryEmbeddingPattern / export_llama_rope;
// the op: backends/vulkan/custom_ops_lib.py,
// `apply_rotary_emb(Tensor xq, Tensor xk, Tensor freqs_cos, Tensor freqs_sin)
// -> (Tensor, Tensor)`). The graph is what torch.export records for
// extension/llm/modeling/text_decoder/rope.py `apply_rotary_emb` (formerly
// examples/models/llama/rope.py):
//
//   xq_r, xq_i = xq.float().reshape(xq.shape[:-1] + (-1, 2)).unbind(-1)
//   xk_r, xk_i = xk.float().reshape(xk.shape[:-1] + (-1, 2)).unbind(-1)
//   freqs_cos = reshape_for_broadcast(freqs_cos, xq_r)      // one view, used by both
//   freqs_sin = reshape_for_broadcast(freqs_sin, xq_r)
//   xq_out_r = xq_r * freqs_cos - xq_i * freqs_sin
//   xq_out_i = xq_r * freqs_sin + xq_i * freqs_cos
//   (xk likewise)
//   xq_out = torch.stack([xq_out_r, xq_out_i], dim=-1).flatten(3)
//   return xq_out.type_as(xq), xk_out.type_as(xk)
//
// Before (f32, Llama shapes; the xk chain is the same on %xk with 2 heads):
//   %qv  : f32[1, s0, 4, 16, 2] = aten.view.default(%xq, [1, s0, 4, 16, 2])
//   %qr  : f32[1, s0, 4, 16]    = aten.select.int(%qv, -1, 0)
//   %qi  : f32[1, s0, 4, 16]    = aten.select.int(%qv, -1, 1)
//   %c   : f32[1, s0, 1, 16]    = aten.view.default(%freqs_cos, [1, s0, 1, 16])
//   %s   : f32[1, s0, 1, 16]    = aten.view.default(%freqs_sin, [1, s0, 1, 16])
//   %qor = aten.sub.Tensor(aten.mul.Tensor(%qr, %c), aten.mul.Tensor(%qi, %s))
//   %qoi = aten.add.Tensor(aten.mul.Tensor(%qr, %s), aten.mul.Tensor(%qi, %c))
//   %qst : f32[1, s0, 4, 16, 2] = aten.cat.default([unsqueeze(%qor, -1), unsqueeze(%qoi, -1)], -1)
//   %q_out : f32[1, s0, 4, 32]  = aten.view.default(%qst, [1, s0, 4, 32])
//   %k_out : f32[1, s0, 2, 32]  = (the same on %xk, reading the same %c and %s)
// After:
//   %rope  = et_vk.apply_rotary_emb.default(%xq, %xk, %freqs_cos, %freqs_sin)
//   %q_out = result 0 of %rope, %k_out = result 1
//
// The xq and xk chains never join: they only share the two frequency views
// (or, in et_apply_rotary_emb_per_chain_views, only the tables themselves),
// so the rules have two roots (`root`, docs/dsl.md "Several roots"). The
// matcher finds %k_out first, then %q_out from the shared %c. torch.stack is
// recorded as unsqueeze + cat and unbind as the two selects (ATen's unbind
// kernel); the edge dialect's *_copy spellings are accepted as well.
// ExecuTorch's to_edge instead decomposes unbind into slice_copy + squeeze_copy
// (the form rope.py's SubgraphMatcher sees); graft does not match that form.
//
// Conditions, from upstream's identify_rotary_emb_io_nodes: xq and xk are 4-D
// with the same batch, sequence and head dim, freqs are [S, D/2] viewed as
// [1, S, 1, D/2] (reshape_for_broadcast of 2-D freqs), xq has at least as many
// heads as xk (grouped-query attention), D % 8 == 0 (the Vulkan shader works
// on 4-wide pairs of pairs), everything f32. In an f16/bf16 model (ExecuTorch's
// `-d fp16`: m.to(dtype) casts the tables too) `.float()` and `type_as` are
// recorded:
//   %xqf   : f32[1, s0, 4, 32] = aten._to_copy(%xq : f16[1, s0, 4, 32], dtype=f32)
//   ...    (the chain above on %xqf; the products read the f16 table views,
//           promoted to f32)
//   %q_out : f16[1, s0, 4, 32] = aten._to_copy(%qflat, dtype=f16)
// et_apply_rotary_emb_cast matches that form; the fused op casts the same way
// (its reference in custom_ops_lib.py is this very apply_rotary_emb).
//
// Numerics: the fused op computes exactly these products, differences and
// sums, each rounded to f32 (no FMA), then interleaves them (a copy) and
// rounds once to x's dtype: bit-exact (tolerance 0). docs/numerics.md,
// `apply_rotary_emb`.
//
// Verification ranges: xq and xk are the wq / wk projections before RoPE,
// O(1..10) with outlier channels in the tens in Llama checkpoints, so the
// examples draw them from [-64, 64) (in f16 that exercises products and sums
// rounded on a coarse grid); the tables are cos / sin and keep [-1, 1).

/// ExecuTorch's Llama RoPE on xq and xk (two roots sharing the frequency
/// views) -> et_vk.apply_rotary_emb. Bit-exact.
rule et_apply_rotary_emb benefit 40 tags(rope) backend vulkan {
  match {
    %qv         = (aten.view | aten.view_copy)($xq : f32[$B, $S, $HQ, $D], [$B, $S, $HQ, $D2, 2])
    %qr         = (aten.select.int | aten.select_copy.int)(%qv, -1, 0)
    %qi         = (aten.select.int | aten.select_copy.int)(%qv, -1, 1)
    %kv         = (aten.view | aten.view_copy)($xk : f32[$B, $S, $HK, $D], [$B, $S, $HK, $D2, 2])
    %kr         = (aten.select.int | aten.select_copy.int)(%kv, -1, 0)
    %ki         = (aten.select.int | aten.select_copy.int)(%kv, -1, 1)
    %c          = (aten.view | aten.view_copy)($cos : f32[$S, $D2], [1, $S, 1, $D2])
    %s          = (aten.view | aten.view_copy)($sin : f32[$S, $D2], [1, $S, 1, $D2])
    %qrc        = aten.mul.Tensor(%qr, %c)
    %qis        = aten.mul.Tensor(%qi, %s)
    %qor        = aten.sub.Tensor(%qrc, %qis)
    %qrs        = aten.mul.Tensor(%qr, %s)
    %qic        = aten.mul.Tensor(%qi, %c)
    %qoi        = aten.add.Tensor(%qrs, %qic)
    %krc        = aten.mul.Tensor(%kr, %c)
    %kis        = aten.mul.Tensor(%ki, %s)
    %kor        = aten.sub.Tensor(%krc, %kis)
    %krs        = aten.mul.Tensor(%kr, %s)
    %kic        = aten.mul.Tensor(%ki, %c)
    %koi        = aten.add.Tensor(%krs, %kic)
    %qur        = (aten.unsqueeze | aten.unsqueeze_copy)(%qor, -1)
    %qui        = (aten.unsqueeze | aten.unsqueeze_copy)(%qoi, -1)
    %qst        = aten.cat([%qur, %qui], -1)
    root %q_out = (aten.view | aten.view_copy)(%qst, [$B, $S, $HQ, $D])
    %kur        = (aten.unsqueeze | aten.unsqueeze_copy)(%kor, -1)
    %kui        = (aten.unsqueeze | aten.unsqueeze_copy)(%koi, -1)
    %kst        = aten.cat([%kur, %kui], -1)
    root %k_out = (aten.view | aten.view_copy)(%kst, [$B, $S, $HK, $D])
  }
  where {
    $D2 == $D / 2
    $D % 8 == 0
    $HQ >= $HK
  }
  rewrite {
    %q_out, %k_out = et_vk.apply_rotary_emb($xq, $xk, $cos, $sin)
  }
  example {
    B = [1, 2]
    S = [1, 5]
    HQ = 4
    HK = [2, 4]
    D = [16, 32]
    xq = uniform(-64, 64)
    xk = uniform(-64, 64)
  }
}

/// ExecuTorch's Llama RoPE in an f16/bf16 model: x.float() before the split, the tables
/// in the model dtype (or f32), type_as(x) after the flatten -> et_vk.apply_rotary_emb,
/// which casts the same way. Bit-exact.
rule et_apply_rotary_emb_cast benefit 40 tags(rope) backend vulkan {
  match {
    %xqf        = (aten._to_copy | dim_order_ops._to_dim_order_copy)($xq : $dt[$B, $S, $HQ, $D],
                                                                     dtype = f32)
    %qv         = (aten.view | aten.view_copy)(%xqf, [$B, $S, $HQ, $D2, 2])
    %qr         = (aten.select.int | aten.select_copy.int)(%qv, -1, 0)
    %qi         = (aten.select.int | aten.select_copy.int)(%qv, -1, 1)
    %xkf        = (aten._to_copy | dim_order_ops._to_dim_order_copy)($xk : $dt[$B, $S, $HK, $D],
                                                                     dtype = f32)
    %kv         = (aten.view | aten.view_copy)(%xkf, [$B, $S, $HK, $D2, 2])
    %kr         = (aten.select.int | aten.select_copy.int)(%kv, -1, 0)
    %ki         = (aten.select.int | aten.select_copy.int)(%kv, -1, 1)
    %c          = (aten.view | aten.view_copy)($cos : $ft[$S, $D2], [1, $S, 1, $D2])
    %s          = (aten.view | aten.view_copy)($sin : $ft[$S, $D2], [1, $S, 1, $D2])
    %qrc        = aten.mul.Tensor(%qr, %c)
    %qis        = aten.mul.Tensor(%qi, %s)
    %qor        = aten.sub.Tensor(%qrc, %qis)
    %qrs        = aten.mul.Tensor(%qr, %s)
    %qic        = aten.mul.Tensor(%qi, %c)
    %qoi        = aten.add.Tensor(%qrs, %qic)
    %krc        = aten.mul.Tensor(%kr, %c)
    %kis        = aten.mul.Tensor(%ki, %s)
    %kor        = aten.sub.Tensor(%krc, %kis)
    %krs        = aten.mul.Tensor(%kr, %s)
    %kic        = aten.mul.Tensor(%ki, %c)
    %koi        = aten.add.Tensor(%krs, %kic)
    %qur        = (aten.unsqueeze | aten.unsqueeze_copy)(%qor, -1)
    %qui        = (aten.unsqueeze | aten.unsqueeze_copy)(%qoi, -1)
    %qst        = aten.cat([%qur, %qui], -1)
    %qfl        = (aten.view | aten.view_copy)(%qst, [$B, $S, $HQ, $D])
    root %q_out = (aten._to_copy | dim_order_ops._to_dim_order_copy)(%qfl, dtype = $dt)
    %kur        = (aten.unsqueeze | aten.unsqueeze_copy)(%kor, -1)
    %kui        = (aten.unsqueeze | aten.unsqueeze_copy)(%koi, -1)
    %kst        = aten.cat([%kur, %kui], -1)
    %kfl        = (aten.view | aten.view_copy)(%kst, [$B, $S, $HK, $D])
    root %k_out = (aten._to_copy | dim_order_ops._to_dim_order_copy)(%kfl, dtype = $dt)
  }
  where {
    $dt in [f16, bf16]
    $ft in [f32, $dt]
    $D2 == $D / 2
    $D % 8 == 0
    $HQ >= $HK
  }
  rewrite {
    %q_out, %k_out = et_vk.apply_rotary_emb($xq, $xk, $cos, $sin)
  }
  example {
    B = [1, 2]
    S = [1, 5]
    HQ = 4
    HK = [2, 4]
    D = [16, 32]
    dt = [f16, bf16]
    ft = [f32, f16, bf16]
    xq = uniform(-64, 64)
    xk = uniform(-64, 64)
  }
}

/// The same rotation where each chain views the frequency tables itself
/// (reshape_for_broadcast per tensor: graft's earlier synthesized Llama,
/// tests/golden/pt2/llama_dynamic_pos_torch2_10.pt2); the roots share the
/// tables $cos and $sin -> et_vk.apply_rotary_emb. Bit-exact.
rule et_apply_rotary_emb_per_chain_views benefit 40 tags(rope) backend vulkan {
  match {
    %qv         = (aten.view | aten.view_copy)($xq : f32[$B, $S, $HQ, $D], [$B, $S, $HQ, $D2, 2])
    %qr         = (aten.select.int | aten.select_copy.int)(%qv, -1, 0)
    %qi         = (aten.select.int | aten.select_copy.int)(%qv, -1, 1)
    %kv         = (aten.view | aten.view_copy)($xk : f32[$B, $S, $HK, $D], [$B, $S, $HK, $D2, 2])
    %kr         = (aten.select.int | aten.select_copy.int)(%kv, -1, 0)
    %ki         = (aten.select.int | aten.select_copy.int)(%kv, -1, 1)
    %c          = (aten.view | aten.view_copy)($cos : f32[$S, $D2], [1, $S, 1, $D2])
    %s          = (aten.view | aten.view_copy)($sin : f32[$S, $D2], [1, $S, 1, $D2])
    %kc         = (aten.view | aten.view_copy)($cos, [1, $S, 1, $D2])
    %ks         = (aten.view | aten.view_copy)($sin, [1, $S, 1, $D2])
    %qrc        = aten.mul.Tensor(%qr, %c)
    %qis        = aten.mul.Tensor(%qi, %s)
    %qor        = aten.sub.Tensor(%qrc, %qis)
    %qrs        = aten.mul.Tensor(%qr, %s)
    %qic        = aten.mul.Tensor(%qi, %c)
    %qoi        = aten.add.Tensor(%qrs, %qic)
    %krc        = aten.mul.Tensor(%kr, %kc)
    %kis        = aten.mul.Tensor(%ki, %ks)
    %kor        = aten.sub.Tensor(%krc, %kis)
    %krs        = aten.mul.Tensor(%kr, %ks)
    %kic        = aten.mul.Tensor(%ki, %kc)
    %koi        = aten.add.Tensor(%krs, %kic)
    %qur        = (aten.unsqueeze | aten.unsqueeze_copy)(%qor, -1)
    %qui        = (aten.unsqueeze | aten.unsqueeze_copy)(%qoi, -1)
    %qst        = aten.cat([%qur, %qui], -1)
    root %q_out = (aten.view | aten.view_copy)(%qst, [$B, $S, $HQ, $D])
    %kur        = (aten.unsqueeze | aten.unsqueeze_copy)(%kor, -1)
    %kui        = (aten.unsqueeze | aten.unsqueeze_copy)(%koi, -1)
    %kst        = aten.cat([%kur, %kui], -1)
    root %k_out = (aten.view | aten.view_copy)(%kst, [$B, $S, $HK, $D])
  }
  where {
    $D2 == $D / 2
    $D % 8 == 0
    $HQ >= $HK
  }
  rewrite {
    %q_out, %k_out = et_vk.apply_rotary_emb($xq, $xk, $cos, $sin)
  }
  example {
    B = [1, 2]
    S = [1, 5]
    HQ = 4
    HK = [2, 4]
    D = [16, 32]
    xq = uniform(-64, 64)
    xk = uniform(-64, 64)
  }
}
