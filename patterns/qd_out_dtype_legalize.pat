// quantized_decomposed dequantizes with an explicit `out_dtype=torch.float32` spelled the
// default way (docs/rules.md, "quantized_decomposed out_dtype"). A legalize family: it runs
// before the fusion rules.
//
// torch/ao/quantization/fx/_decomposed.py treats `out_dtype=None` as float32
// (`if out_dtype is None: out_dtype = torch.float32` in dequantize_per_tensor(.tensor) and
// dequantize_per_channel), so the two spellings are one computation. PT2E's convert passes
// out_dtype only for a non-f32 result, and the fusion rules (pt2e_qdq.pat) match that
// spelling; ExecuTorch writes the other one: the output layer of a pre-quantized Llama
// checkpoint (examples/models/llama/source_transformation/pre_quantization.py,
// transform_output_linear_for_pre_quantization -> quantize.py Int8DynActInt8WeightLinear,
// linear_forward_8da8w: `dequantize_per_channel(weight_int8, scales, zeros, 0, -128, 127,
// torch.int8, out_dtype=precision)`, executorch cff6f4dd) passes `out_dtype=torch.float32`
// in an f32 export. Before / after:
//   %w : f32[N, K] = quantized_decomposed.dequantize_per_channel(%q, %s, %zp, 0, -128, 127, i8,
//                                                                out_dtype=f32)
//   %w : f32[N, K] = quantized_decomposed.dequantize_per_channel(%q, %s, %zp, 0, -128, 127, i8)
// Bit-exact (the same op with the same meaning).

phase legalize

/// dequantize_per_channel(..., out_dtype=f32) -> the same without out_dtype.
rule qd_dequantize_per_channel_out_dtype_f32 benefit 10 tags(quant, legalize) {
  match {
    %y = quantized_decomposed.dequantize_per_channel($q : $qdt[$N, $K], $s : $sdt[$N],
                                                     $zp : $zdt[$N], 0, $qmin, $qmax, $qdt,
                                                     out_dtype = f32)
  }
  rewrite {
    %y = quantized_decomposed.dequantize_per_channel($q, $s, $zp, 0, $qmin, $qmax, $qdt)
  }
  example {
    N = [4, 12]
    K = [8, 64]
    qdt = i8
    sdt = [f32, f64]
    zdt = [i64, f32]
    qmin = [-128, -127]
    qmax = 127
  }
}

/// The same without zero points (symmetric weights).
rule qd_dequantize_per_channel_no_zp_out_dtype_f32 benefit 10 tags(quant, legalize) {
  match {
    %y = quantized_decomposed.dequantize_per_channel($q : $qdt[$N, $K], $s : $sdt[$N], none, 0,
                                                     $qmin, $qmax, $qdt, out_dtype = f32)
  }
  rewrite {
    %y = quantized_decomposed.dequantize_per_channel($q, $s, none, 0, $qmin, $qmax, $qdt)
  }
  example { N = [4, 12], K = [8, 64], qdt = i8, sdt = [f32, f64], qmin = [-128, -127], qmax = 127 }
}

/// dequantize_per_tensor(..., out_dtype=f32) -> the same without out_dtype.
rule qd_dequantize_per_tensor_out_dtype_f32 benefit 10 tags(quant, legalize) {
  match {
    %y = quantized_decomposed.dequantize_per_tensor($q : $qdt[...], $s, $zp, $qmin, $qmax, $qdt,
                                                    out_dtype = f32)
  }
  rewrite {
    %y = quantized_decomposed.dequantize_per_tensor($q, $s, $zp, $qmin, $qmax, $qdt)
  }
  example { qdt = [i8, u8], s = [1, 3], zp = [0, 5], qmin = [-128, 0], qmax = 127 }
}

/// dequantize_per_tensor.tensor(..., out_dtype=f32) -> the same without out_dtype.
rule qd_dequantize_per_tensor_tensor_out_dtype_f32 benefit 10 tags(quant, legalize) {
  match {
    %y = quantized_decomposed.dequantize_per_tensor.tensor($q : $qdt[...], $s : f32[], $zp, $qmin,
                                                           $qmax, $qdt, out_dtype = f32)
  }
  rewrite {
    %y = quantized_decomposed.dequantize_per_tensor.tensor($q, $s, $zp, $qmin, $qmax, $qdt)
  }
  example { qdt = [i8, u8], qmin = [-128, 0], qmax = 127 }
}
