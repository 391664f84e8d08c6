// llama.custom_sdpa + its two llama.update_cache -> llama.sdpa_with_kv_cache
// (pytorch/executorch backends/vulkan/patterns/sdpa.py, CausalSDPAMatch /
// replace_custom_sdpa_with_causal_sdpa; op schemas from
// extension/llm/custom_ops/op_sdpa_aot.cpp, engine/ops/llama.yaml).
//
// The graph is what torch.export records for export_llama
// --use_sdpa_with_kv_cache (examples/models/llama/source_transformation/
// custom_kv_cache.py CustomKVCache.update and sdpa.py SDPACustom.forward;
// `graft synth llama --kv-cache custom` writes it):
//
//   k_val = k_val.transpose(1, 2); v_val = v_val.transpose(1, 2)
//   start_pos = input_pos[0].item()
//   _ = torch.ops.llama.update_cache(k_val, self.k_cache, start_pos)  (and v)
//   k, v = self.k_cache.transpose(1, 2), self.v_cache.transpose(1, 2)
//   q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
//   output = torch.ops.llama.custom_sdpa(q, k, v, input_pos[0].item(), None, 0, True)
//
// Before (f32; 4 query heads, 2 kv heads, a 32-position cache):
//   %sel  : i64[]  = aten.select.int(%input_pos : i64[1], 0, 0)
//   %pos  : symint = aten._local_scalar_dense(%sel)           (also read by asserts)
//   %uk   : f32[1] = llama.update_cache.default(%k : f32[1, s, 2, 16], %k_cache : f32[1, 32, 2, 16], %pos)
//   %uv   : f32[1] = llama.update_cache.default(%v, %v_cache, %pos)
//   %kt2  : f32[1, 32, 2, 16] = aten.transpose.int(aten.transpose.int(%k_cache, 1, 2), 1, 2)
//   %vt2  : f32[1, 32, 2, 16] = (the same on %v_cache)
//   %pos2 : symint = aten._local_scalar_dense(aten.select.int(%input_pos, 0, 0))
//   %out  : f32[1, s, 4, 16] = llama.custom_sdpa.default(%q, %kt2, %vt2, %pos2, none, 0.0, true)
// After:
//   %out = llama.sdpa_with_kv_cache.default(%q, %k, %v, %k_cache, %v_cache, %pos, s, none, 0.0, true)
//
// The update_cache nodes do not feed custom_sdpa through a value: they
// mutate the cache buffers in place, and custom_sdpa reads the caches after
// them (through the transposes). So the match has three roots: the two
// update_cache nodes (`root _`: their [1] dummy results must be unused, as
// upstream's replacement erases them) and custom_sdpa. The fused op writes
// the same cache positions in place before attending (its reference
// kernel: update_cache twice, then custom_sdpa), and names the cache
// buffers themselves as its (a!)/(b!) arguments, so the interpreter rebinds
// them and the graph's BUFFER_MUTATION outputs see the update. The cache
// update moves from the update_cache nodes to the fused node; the engine
// refuses the rewrite when a node outside the match reads a cache in
// between (it would see the old contents).
//
// Differences from upstream: upstream finds the update_cache nodes among
// the users of custom_sdpa's key argument, i.e. after the transpose pairs
// are gone; these rules match torch.export's transpose pairs. Upstream
// takes start_pos from the first update_cache of the whole graph and does
// not check custom_sdpa's; these
// rules require both positions to be `input_pos[0].item()` of one input
// (each `.item()` is its own node) and the two update_cache nodes to read
// the same position node. Upstream passes seq_len = 1 (the Vulkan op reads
// the sequence length from the query); graft's kernel checks seq_len
// against the query, so the rewrite passes the query's length $S. Only the
// export's causal form is matched (no mask, dropout 0, is_causal, default
// scale); upstream forwards whatever custom_sdpa had.
//
// Numerics: the fused kernel is the same copies and the same attention
// (bit-exact, tolerance 0).
//
// f16 (export_llama -d fp16, --checkpoint-dtype bf16 included): the caches
// are the model's dtype (CustomKVCache registers them with it, and the
// module's .to(f16) converts them), update_cache writes f16, and
// SDPACustom.forward casts around the op, which only takes f32:
//
//   q, k, v = q.to(dtype=torch.float), k.to(...), v.to(...)   (after the transposes)
//   output = torch.ops.llama.custom_sdpa(q, k, v, input_pos[0].item(), None, 0, True)
//   return output.view(bsz, seqlen, self.dim).to(dtype=input_dtype)
//
// Before (f16):
//   %qf  : f32[1, s, 4, 16] = aten._to_copy.default(%q : f16[1, s, 4, 16], dtype=f32)
//   %kf  = aten._to_copy.default(%kt2, dtype=f32); %vf likewise
//   %o   : f32[1, s, 4, 16] = llama.custom_sdpa.default(%qf, %kf, %vf, %pos2, none, 0.0, true)
//   %ov  : f32[1, s, 64]    = aten.view.default(%o, [1, s, 64])
//   %out : f16[1, s, 64]    = aten._to_copy.default(%ov, dtype=f16)
// After:
//   %out = aten.view.default(llama.sdpa_with_kv_cache.default(%q, %k, %v, ...), [1, s, 64])
//
// The `_f16` rules match the casts and the view, so the fused op takes the
// f16 operands and caches as they are. (Upstream's CausalSDPAMatch looks for
// update_cache among the users of custom_sdpa's key argument, which in f16
// is the cast, not the cache, so it finds none there.) The fused op on f16
// operands upcasts them to f32 (exact), attends in f32 as custom_sdpa does
// and rounds the result to f16 once (sdpaMath, the ATen math SDPA's
// upcast; the Vulkan sdpa_kv kernel likewise): exactly the casts, the f32
// op, the view and the cast back (bit-exact, tolerance 0). The view's shape
// must be [B, S, H * D], the output's own layout flattened.
//
// Verification ranges: q, k and the key cache are post-RoPE projections,
// O(1..10) with outlier channels in the tens: [-64, 64), so the scores
// q.k / sqrt(D) reach thousands and the softmax saturates (one key takes all
// the weight), as attention scores before softmax do; v and the value cache,
// [-16, 16).

/// ExecuTorch's custom KV cache attention (two update_cache + custom_sdpa,
/// positions read with aten select + item) -> llama.sdpa_with_kv_cache.
/// Bit-exact.
rule et_sdpa_with_kv_cache benefit 40 tags(sdpa) backend vulkan {
  match {
    shared %sel = (aten.select.int | aten.select_copy.int)($input_pos : i64[$P], 0, 0)
    shared %pos = aten._local_scalar_dense(%sel)
    root _      = llama.update_cache($k : f32[$B, $S, $HK, $D], $kc : f32[$B, $M, $HK, $D], %pos)
    root _      = llama.update_cache($v : f32[$B, $S, $HK, $D], $vc : f32[$B, $M, $HK, $D], %pos)
    %kt         = (aten.transpose.int | aten.transpose_copy.int)($kc, 1, 2)
    %kt2        = (aten.transpose.int | aten.transpose_copy.int)(%kt, 1, 2)
    %vt         = (aten.transpose.int | aten.transpose_copy.int)($vc, 1, 2)
    %vt2        = (aten.transpose.int | aten.transpose_copy.int)(%vt, 1, 2)
    %sel2       = (aten.select.int | aten.select_copy.int)($input_pos, 0, 0)
    %pos2       = aten._local_scalar_dense(%sel2)
    root %out   = llama.custom_sdpa($q : f32[$B, $S, $H, $D], %kt2, %vt2, %pos2, none, 0.0, true)
  }
  where {
    $H % $HK == 0
  }
  rewrite {
    %len = aten.sym_size.int($q, 1)
    %out = llama.sdpa_with_kv_cache($q, $k, $v, $kc, $vc, %pos, %len, none, 0.0, true)
  }
  example {
    P = 1
    B = 1
    S = [1, 3]
    H = 4
    HK = [2, 4]
    D = 16
    M = [20, 32]
    q = uniform(-64, 64)
    k = uniform(-64, 64)
    kc = uniform(-64, 64)
    v = uniform(-16, 16)
    vc = uniform(-16, 16)
  }
}

/// The same attention after select_as_symint (select_as_symint.pat) has
/// rewritten the position reads -> llama.sdpa_with_kv_cache. Bit-exact.
rule et_sdpa_with_kv_cache_select_as_symint benefit 40 tags(sdpa) backend vulkan {
  match {
    shared %pos = et_vk.select_as_symint($input_pos : i64[$P], 0, 0)
    root _      = llama.update_cache($k : f32[$B, $S, $HK, $D], $kc : f32[$B, $M, $HK, $D], %pos)
    root _      = llama.update_cache($v : f32[$B, $S, $HK, $D], $vc : f32[$B, $M, $HK, $D], %pos)
    %kt         = (aten.transpose.int | aten.transpose_copy.int)($kc, 1, 2)
    %kt2        = (aten.transpose.int | aten.transpose_copy.int)(%kt, 1, 2)
    %vt         = (aten.transpose.int | aten.transpose_copy.int)($vc, 1, 2)
    %vt2        = (aten.transpose.int | aten.transpose_copy.int)(%vt, 1, 2)
    %pos2       = et_vk.select_as_symint($input_pos, 0, 0)
    root %out   = llama.custom_sdpa($q : f32[$B, $S, $H, $D], %kt2, %vt2, %pos2, none, 0.0, true)
  }
  where {
    $H % $HK == 0
  }
  rewrite {
    %len = aten.sym_size.int($q, 1)
    %out = llama.sdpa_with_kv_cache($q, $k, $v, $kc, $vc, %pos, %len, none, 0.0, true)
  }
  example {
    P = 1
    B = 1
    S = [1, 3]
    H = 4
    HK = [2, 4]
    D = 16
    M = [20, 32]
    q = uniform(-64, 64)
    k = uniform(-64, 64)
    kc = uniform(-64, 64)
    v = uniform(-16, 16)
    vc = uniform(-16, 16)
  }
}

/// ExecuTorch's custom KV cache attention in f16 (SDPACustom's casts to f32
/// around custom_sdpa and the cast back after its view) ->
/// llama.sdpa_with_kv_cache on the f16 operands, viewed. Bit-exact.
rule et_sdpa_with_kv_cache_f16 benefit 40 tags(sdpa) backend vulkan {
  match {
    shared %sel = (aten.select.int | aten.select_copy.int)($input_pos : i64[$P], 0, 0)
    shared %pos = aten._local_scalar_dense(%sel)
    root _      = llama.update_cache($k : f16[$B, $S, $HK, $D], $kc : f16[$B, $M, $HK, $D], %pos)
    root _      = llama.update_cache($v : f16[$B, $S, $HK, $D], $vc : f16[$B, $M, $HK, $D], %pos)
    %kt         = (aten.transpose.int | aten.transpose_copy.int)($kc, 1, 2)
    %kt2        = (aten.transpose.int | aten.transpose_copy.int)(%kt, 1, 2)
    %vt         = (aten.transpose.int | aten.transpose_copy.int)($vc, 1, 2)
    %vt2        = (aten.transpose.int | aten.transpose_copy.int)(%vt, 1, 2)
    %qf         = aten._to_copy($q : f16[$B, $S, $H, $D], dtype = f32)
    %kf         = aten._to_copy(%kt2, dtype = f32)
    %vf         = aten._to_copy(%vt2, dtype = f32)
    %sel2       = (aten.select.int | aten.select_copy.int)($input_pos, 0, 0)
    %pos2       = aten._local_scalar_dense(%sel2)
    %o          = llama.custom_sdpa(%qf, %kf, %vf, %pos2, none, 0.0, true)
    %ov         = (aten.view | aten.view_copy)(%o, [$B, $S, $HD])
    root %out   = aten._to_copy(%ov, dtype = f16)
  }
  where {
    $H % $HK == 0
    $HD == $H * $D
  }
  rewrite {
    %len = aten.sym_size.int($q, 1)
    %a   = llama.sdpa_with_kv_cache($q, $k, $v, $kc, $vc, %pos, %len, none, 0.0, true)
    %out = aten.view(%a, [$B, $S, $HD])
  }
  example {
    P = 1
    B = 1
    S = [1, 3]
    H = 4
    HK = [2, 4]
    D = 16
    M = [20, 32]
    q = uniform(-64, 64)
    k = uniform(-64, 64)
    kc = uniform(-64, 64)
    v = uniform(-16, 16)
    vc = uniform(-16, 16)
  }
}

/// The f16 attention after select_as_symint (select_as_symint.pat) has
/// rewritten the position reads -> llama.sdpa_with_kv_cache, viewed.
/// Bit-exact.
rule et_sdpa_with_kv_cache_f16_select_as_symint benefit 40 tags(sdpa) backend vulkan {
  match {
    shared %pos = et_vk.select_as_symint($input_pos : i64[$P], 0, 0)
    root _      = llama.update_cache($k : f16[$B, $S, $HK, $D], $kc : f16[$B, $M, $HK, $D], %pos)
    root _      = llama.update_cache($v : f16[$B, $S, $HK, $D], $vc : f16[$B, $M, $HK, $D], %pos)
    %kt         = (aten.transpose.int | aten.transpose_copy.int)($kc, 1, 2)
    %kt2        = (aten.transpose.int | aten.transpose_copy.int)(%kt, 1, 2)
    %vt         = (aten.transpose.int | aten.transpose_copy.int)($vc, 1, 2)
    %vt2        = (aten.transpose.int | aten.transpose_copy.int)(%vt, 1, 2)
    %qf         = aten._to_copy($q : f16[$B, $S, $H, $D], dtype = f32)
    %kf         = aten._to_copy(%kt2, dtype = f32)
    %vf         = aten._to_copy(%vt2, dtype = f32)
    %pos2       = et_vk.select_as_symint($input_pos, 0, 0)
    %o          = llama.custom_sdpa(%qf, %kf, %vf, %pos2, none, 0.0, true)
    %ov         = (aten.view | aten.view_copy)(%o, [$B, $S, $HD])
    root %out   = aten._to_copy(%ov, dtype = f16)
  }
  where {
    $H % $HK == 0
    $HD == $H * $D
  }
  rewrite {
    %len = aten.sym_size.int($q, 1)
    %a   = llama.sdpa_with_kv_cache($q, $k, $v, $kc, $vc, %pos, %len, none, 0.0, true)
    %out = aten.view(%a, [$B, $S, $HD])
  }
  example {
    P = 1
    B = 1
    S = [1, 3]
    H = 4
    HK = [2, 4]
    D = 16
    M = [20, 32]
    q = uniform(-64, 64)
    k = uniform(-64, 64)
    kc = uniform(-64, 64)
    v = uniform(-16, 16)
    vc = uniform(-16, 16)
  }
}
