#!/usr/bin/env python3
"""Regenerate the measured blocks of docs/benchmarks.md from bench/run_all.sh's results.

usage: gen_benchmarks.py RESULTS_DIR docs/benchmarks.md

Only text between `<!-- graft-bench:NAME -->` and `<!-- /graft-bench:NAME -->` is
rewritten; everything else (hand-written observations, other sections) is kept as it
is. A block missing from the document is appended at its end under its own heading.
A block whose benchmarks were not run (filtered out) keeps its previous content.
"""
import json
import os
import re
import sys


def load(results, name, default=None):
    path = os.path.join(results, name)
    if not os.path.exists(path):
        return default
    with open(path) as f:
        return f.read()


def kv(text):
    out = {}
    for line in (text or "").splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def fmt_secs(s):
    if s >= 10:
        return "%.1f s" % s
    if s >= 1:
        return "%.2f s" % s
    if s >= 1e-3:
        return ("%.1f ms" if s >= 0.01 else "%.2f ms") % (s * 1e3)
    return "%.1f µs" % (s * 1e6)


UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


class Bench:
    def __init__(self, doc):
        self.by_name = {}
        for b in doc.get("benchmarks", []):
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            # "BM_OpenPt2Int4/32/iterations:5" -> "BM_OpenPt2Int4/32"
            name = "/".join(p for p in b.get("run_name", b["name"]).split("/")
                            if not re.match(r"(iterations|min_time|repeats|threads):|"
                                            r"(real|process|manual)_time$", p))
            self.by_name[name] = b

    def get(self, name):
        return self.by_name.get(name)

    def ran(self, prefix):
        return any(n.split("/")[0] == prefix for n in self.by_name)

    def real(self, b):
        return b["real_time"] * UNIT[b["time_unit"]]

    def cpu(self, b):
        return b["cpu_time"] * UNIT[b["time_unit"]]


def err(b):
    return b is None or b.get("error_occurred")


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def gib(x):
    return "%.2f GiB" % (x / 2**30)


def machine_block(m):
    mem = int(m.get("mem_kib", "0")) / 2**20
    gpus = m.get("gpus", "none")
    lines = [
        "Last `make bench` run: **%s**, graft %s." % (m.get("date", "?"), m.get("git", "?")),
        "",
        "- CPU: %s, %s cores%s%s; RAM %.1f GiB; %s (kernel %s)"
        % (m.get("cpu", "?"), m.get("cores", "?"),
           ", L3 " + m["l3"] if m.get("l3") else "",
           ", %s guest" % m["hypervisor"] if m.get("hypervisor") else "",
           mem, m.get("os", "?"), m.get("kernel", "?")),
        "- Compiler: %s, CMake build type %s" % (m.get("compiler", "?"), m.get("build_type", "?")),
        "- Vulkan: %s" % (m.get("vulkan") or "no device"),
        "- GPUs: %s" % ("none (no NVIDIA or other discrete GPU on this machine: every Vulkan "
                        "number below is lavapipe/llvmpipe, Mesa's CPU implementation)"
                        if gpus == "none" else gpus),
        "- Load average (1/5/15 min) before the run: %s; after: %s. Other work sharing the "
        "cores makes wall times noisy; tables give CPU time where it is meaningful."
        % (m.get("load_before", "?"), m.get("load_after", "?")),
    ]
    return "\n".join(lines)


def foundation_block(B):
    rows = []
    spec = [
        ("BM_ParseTextIR/32", "`BM_ParseTextIR`", "32 layers"),
        ("BM_ParseTextIR/512", "`BM_ParseTextIR`", "512 layers"),
        ("BM_PrintTextIR/32", "`BM_PrintTextIR`", "32 layers"),
        ("BM_PrintTextIR/512", "`BM_PrintTextIR`", "512 layers"),
        ("BM_Verify/32", "`BM_Verify` (incl. shape inference of every node)", "32 layers"),
        ("BM_Verify/512", "`BM_Verify`", "512 layers"),
        ("BM_InterpretLlama", "`BM_InterpretLlama` (2 layers, dim 64, seq 8, reference numerics)",
         "78 nodes"),
        ("BM_DequantizeAffine/256", "`BM_DequantizeAffine` (int4 group 32, f32 out, interpreter)",
         "256×256"),
        ("BM_DequantizeAffine/1024", "`BM_DequantizeAffine`", "1024×1024"),
    ]
    for key, label, size in spec:
        b = B.get(key)
        if err(b):
            continue
        thr = []
        if "nodes" in b and key.startswith("BM_Parse"):
            size += " (%s nodes)" % format(int(b["nodes"]), ",")
        if "nodes/s" in b:
            thr.append("%.0f k nodes/s" % (b["nodes/s"] / 1e3))
        if "bytes_per_second" in b:
            thr.append("%.1f MB/s" % (b["bytes_per_second"] / 1e6))
        if "items_per_second" in b:
            thr.append("%.1f M elem/s" % (b["items_per_second"] / 1e6))
        rows.append((label, size, fmt_secs(B.cpu(b)), fmt_secs(B.real(b)), ", ".join(thr)))
    return table(("benchmark", "size", "CPU time", "wall time", "throughput (CPU)"), rows)


def pt2_block(B):
    rows = []
    for key, label in (("BM_OpenPt2Int4/1", "1 layer"), ("BM_OpenPt2Int4/32", "32 layers (8B shape)")):
        b = B.get(key)
        if err(b):
            rows.append((label, "failed: %s" % (b or {}).get("error_message", "not run"), "", "", "", "", "", ""))
            continue
        rows.append((label, format(int(b["nodes"]), ","), "%.2f G" % b["params_G"],
                     "%.2f GB" % b["weights_GB"], fmt_secs(B.cpu(b)), fmt_secs(B.real(b)),
                     "%.1f MB" % b.get("heap_MB", float("nan")),
                     "%.1f MB (file-backed %.1f MB)" % (b["rss_growth_MB"], b.get("file_rss_growth_MB", float("nan")))))
    out = table(("archive", "nodes", "params", "weights in archive", "open: CPU", "open: wall",
                 "heap held", "RSS growth"), rows)
    open8 = B.get("BM_OpenPt2Int4/32")
    if not err(open8):
        t = B.cpu(open8)
        grows = open8["rss_growth_MB"] > 0.01 * open8["weights_GB"] * 1e3
        out += ("\n\nTarget < 1 s to open the 8B-shaped archive: **%s** (%s CPU, %s wall on the loaded "
                "machine). Resident memory does not grow with the weights: **%s** (%.1f MB heap and "
                "%.1f MB resident growth for %.2f GB of mapped weights; the 1-layer archive's heap is "
                "smaller only by the graph's nodes)."
                % ("met" if t < 1 else "not met", fmt_secs(t), fmt_secs(B.real(open8)),
                   "not met" if grows else "met", open8.get("heap_MB", float("nan")),
                   open8["rss_growth_MB"], open8["weights_GB"]))
    b = B.get("BM_TouchOneWeight")
    if not err(b):
        out += ("\n\n`BM_TouchOneWeight` (open the 8B archive, then read every byte of "
                "`layers.31.feed_forward.w2`'s int8 qdata, %.1f MB): %s CPU; the resident set grew "
                "by %.1f MB, %.3f× the weight's bytes: **only its pages were read**."
                % (b["weight_MB"], fmt_secs(B.cpu(b)), b["rss_growth_MB"],
                   b["rss_growth_MB"] / b["weight_MB"] if b["weight_MB"] else 0))
    return out


def memcpy_bw(B):
    best = None
    for key in ("BM_HostMemcpy/16", "BM_HostMemcpy/64"):
        b = B.get(key)
        if not err(b):
            best = max(best or 0, b["GB/s"])
    return best


def cpu_gbs(b):
    """GB/s per CPU second of every thread (the "cpu ms" counter, CPU devices only)."""
    if err(b) or not b.get("cpu ms") or "MiB" not in b:
        return None
    return b["MiB"] * 1048576 * 1e-9 / (b["cpu ms"] * 1e-3)


def vulkan_block(B, m):
    mc = memcpy_bw(B)
    stream_cpu = cpu_gbs(B.get("BM_VkStream/0") or {})
    rows = []
    for key in ("BM_HostMemcpy/16", "BM_HostMemcpy/64"):
        b = B.get(key)
        if not err(b):
            rows.append(("`memcpy` (host, one thread; read + write bytes)", key.split("/")[1] + " MiB",
                         fmt_secs(B.cpu(b)), "", "%.2f" % b["GB/s"], "", "", "", "100 %" if b["GB/s"] == mc else
                         "%.0f %%" % (100 * b["GB/s"] / mc)))
    for name, b in B.by_name.items():
        if not name.startswith("BM_Vk"):
            continue
        parts = name.split("/")
        kernel = parts[0][len("BM_Vk"):]
        # Arguments are "name:value" (ArgNames) or bare; exact:1 marks the bit-exact kernel.
        args = [a for a in parts[1:] if a != "manual_time"]
        exact = any(a == "exact:1" for a in args)
        size = "×".join(a.split(":")[-1] for a in args if not a.startswith("exact:"))
        if size == "0" and "floats" in b:  # BM_VkStream's device-chosen size
            size = "%d" % b["floats"]
        label = "`%s`%s" % (kernel, " (exact)" if exact else "")
        if kernel == "StreamVariant":  # one candidate copy, by index; none past the device's list
            if err(b):
                continue
            label, size = "`Stream` candidate `%s`" % b.get("label", ""), "%d" % b.get("floats", 0)
        if err(b):
            rows.append((label, size, "failed: " + b.get("error_message", ""), "", "", "", "", "", ""))
            continue
        gf = "%.3g" % b["GFLOP/s"] if "GFLOP/s" in b else ""
        stream = "%.0f %%" % b["% stream"] if "% stream" in b else ""
        cg = cpu_gbs(b)
        stream_c = "%.0f %%" % (100 * cg / stream_cpu) if cg and stream_cpu else ""
        cpu = fmt_secs(b["cpu ms"] * 1e-3) if b.get("cpu ms") else ""
        pct = "%.2g %%" % (100 * b["GB/s"] / mc) if mc else ""
        rows.append((label, size, fmt_secs(B.real(b)), cpu, "%.3g" % b["GB/s"], gf, stream, stream_c, pct))
    return table(("kernel", "size", "time", "CPU time", "GB/s", "GFLOP/s", "of stream", "of stream (CPU)",
                  "of memcpy"), rows)


def pack_block(B):
    mc = memcpy_bw(B)
    rows = []
    for key, label in (("BM_PackInt4Transform/4096/4096", "`pack_int4` transform (registry, computeTransform)"),
                       ("BM_PackInt4Transform/14336/4096", "`pack_int4` transform"),
                       ("BM_PackInt4/4096/4096", "`rewrite::packInt4`")):
        b = B.get(key)
        if err(b):
            continue
        r, c = key.split("/")[1:3]
        rows.append((label, "%s×%s int8 → u8 (%.0f MiB moved)" % (r, c, b["MiB_moved"]),
                     fmt_secs(B.cpu(b)), "%.2f" % b["GB/s"], "%.0f %%" % (100 * b["GB/s"] / mc) if mc else ""))
    out = table(("benchmark", "size", "CPU time", "GB/s (CPU)", "of memcpy"), rows)
    b = B.get("BM_PackInt4Transform/4096/4096")
    if not err(b) and mc:
        pct = 100 * b["GB/s"] / mc
        out += ("\n\nMemcpy in the same run: %.2f GB/s (best of `BM_HostMemcpy/16`, `/64`). Target ≥ 50 %% "
                "of memcpy for 4096×4096: **%s** (%.0f %%)." % (mc, "met" if pct >= 50 else "not met", pct))
    return out


def compile_block(results):
    cj = load(results, "compile.json")
    tm = load(results, "compile.time")
    rc = kv(load(results, "compile_rc.txt")).get("rc", "?")
    synth_t = load(results, "synth.time")
    if tm is None:
        return None
    def tv(text, key):
        m = re.search(re.escape(key) + r": (.*)", text or "")
        return m.group(1).strip() if m else ""
    def wall(text):
        w = tv(text, "Elapsed (wall clock) time (h:mm:ss or m:ss)")
        secs = 0.0
        for part in w.split(":"):
            secs = secs * 60 + float(part or 0)
        return secs
    lines = []
    if synth_t:
        size = int((load(results, "synth_bytes.txt") or "0").strip() or 0)
        lines.append("`graft synth llama` (32 layers, dim 4096, 32 heads / 8 KV heads, FFN 14336, vocab "
                     "128256, int4 group 32, 4w): %s wall, %.1f s CPU, peak RSS %s, %.2f GB written."
                     % (fmt_secs(wall(synth_t)), float(tv(synth_t, "User time (seconds)") or 0) +
                        float(tv(synth_t, "System time (seconds)") or 0),
                        gib(int(tv(synth_t, "Maximum resident set size (kbytes)") or 0) * 1024), size / 1e9))
        lines.append("")
    peak = int(tv(tm, "Maximum resident set size (kbytes)") or 0) * 1024
    rss = kv(load(results, "compile_rss.txt"))
    anon = int(rss.get("peak_anon_kib", "0")) * 1024
    filep = int(rss.get("peak_file_kib", "0")) * 1024
    cpu = float(tv(tm, "User time (seconds)") or 0) + float(tv(tm, "System time (seconds)") or 0)
    try:
        s = json.loads(cj) if cj and rc == "0" else None
    except ValueError:
        s = None
    if s is None:
        err_text = (load(results, "compile.err") or "").strip().splitlines()
        lines.append("`graft compile` did not finish (exit %s%s) after %s; peak RSS %s. %s" % (
            rc, ", timed out" if rc == "124" else "", fmt_secs(wall(tm)), gib(peak),
            ("Last error line: `%s`" % err_text[-1]) if err_text else ""))
        return "\n".join(lines)
    ratio = s["constant_bytes_out"] / s["constant_bytes_min"] if s["constant_bytes_min"] else 0
    rows = [
        ("total time (wall)", fmt_secs(wall(tm)), ""),
        ("CPU time (user + sys)", fmt_secs(cpu), ""),
        ("peak RSS (ru_maxrss: heap + touched pages of the mapped .pt2)", gib(peak),
         "< 2 GiB: **%s**" % ("met" if peak < 2 * 2**30 else
                              "not met (%.2f× the target, +%s)" % (peak / 2**31, gib(peak - 2**31)))),
    ] + ([
        ("peak anonymous RSS (sampled every 0.5 s: graft's own heap)", gib(anon),
         "< 2 GiB: **%s**" % ("met" if anon < 2 * 2**30 else "not met")),
        ("peak file-backed RSS (sampled: mapped weights, page cache)", gib(filep), ""),
    ] if anon else []) + [
        ("constants out / theoretical minimum", "%s / %s bytes = %.4f×" % (
            format(s["constant_bytes_out"], ","), format(s["constant_bytes_min"], ","), ratio),
         "≤ 1.01×: **%s**" % ("met" if ratio <= 1.01 else "not met")),
        ("constants in", "%s bytes" % format(s["constant_bytes_in"], ","), ""),
        ("program file", "%s bytes" % format(s["program_bytes"], ","), ""),
        ("nodes in → out", "%s → %s" % (format(s["nodes_in"], ","), format(s["nodes_out"], ",")), ""),
        ("rewrites", str(s["rewrites"]), ""),
        ("partitions; GPU / CPU nodes", "%d; %d / %d" % (s["partitions"], s["gpu_nodes"], s["cpu_nodes"]), ""),
    ]
    lines.append(table(("`graft compile` (8B-shaped 4w .pt2 → .vkprog, lavapipe)", "measured", "target"), rows))
    lines.append("")
    lines.append("Phases (graft's own clock): " + ", ".join(
        "%s %s" % (k, fmt_secs(v)) for k, v in s["phase_seconds"].items()) + ".")
    return "\n".join(lines)


def rewrite_block(B):
    rows = []
    for name, b in B.by_name.items():
        if not name.startswith(("BM_CompileRules", "BM_FuseLlama", "BM_ExplainLlama")):
            continue
        if err(b):
            rows.append(("`%s`" % name, "failed", "", "", "", "", "", "", ""))
            continue
        def c(k, f="%.0f"):
            return (f % b[k]) if k in b else ""
        nodes = format(int(b["nodes"]), ",") if "nodes" in b else ""
        ns = "%.2f k" % (b["ns/node"] / 1e3) if "ns/node" in b else ""
        kernel = ("%.1f ms" % b["sys_ms"]) if "sys_ms" in b else ""
        if "faults" in b:
            kernel += " (%s faults)" % format(int(round(b["faults"])), ",")
        rows.append(("`%s`" % name, nodes, c("rewrites"), fmt_secs(B.cpu(b)), fmt_secs(B.real(b)), ns,
                     kernel, c("alloc_B/rewrite"),
                     c("graph_B/node") + (" / " + c("fuse_B/node") if "fuse_B/node" in b else "")))
    return table(("benchmark", "nodes", "rewrites", "CPU time", "wall time", "ns/node (wall)",
                  "kernel time while fusing", "B allocated / rewrite", "graph / fuse B/node"), rows)


HEADINGS = {
    "machine": "## Machine of the last run",
    "foundation": None,
    "pt2": "## .pt2: opening an 8B-shaped int4 archive",
    "vulkan": "## Vulkan kernels",
    "pack": "## int4 repack (constant transform)",
    "compile": "## `graft compile` of an 8B-shaped int4 model",
    "rewrite": "## Rewrite engine: numbers of the last run",
}


def replace_block(doc, name, body):
    begin, end = "<!-- graft-bench:%s -->" % name, "<!-- /graft-bench:%s -->" % name
    block = "%s\n%s\n%s" % (begin, body.rstrip(), end)
    i, j = doc.find(begin), doc.find(end)
    if i >= 0 and j > i:
        return doc[:i] + block + doc[j + len(end):]
    heading = HEADINGS.get(name) or "## " + name
    return doc.rstrip() + "\n\n" + heading + "\n\n" + block + "\n"


def main():
    results, doc_path = sys.argv[1], sys.argv[2]
    m = kv(load(results, "machine.txt"))
    B = Bench(json.loads(load(results, "bench.json", "{}") or "{}"))
    with open(doc_path) as f:
        doc = f.read()
    blocks = {"machine": machine_block(m)}
    if B.ran("BM_ParseTextIR") or B.ran("BM_Verify"):
        blocks["foundation"] = foundation_block(B)
    if B.ran("BM_OpenPt2Int4"):
        blocks["pt2"] = pt2_block(B)
    if any(n.startswith("BM_Vk") for n in B.by_name):
        blocks["vulkan"] = vulkan_block(B, m)
    if B.ran("BM_PackInt4Transform"):
        blocks["pack"] = pack_block(B)
    c = compile_block(results)
    if c:
        blocks["compile"] = c
    if B.ran("BM_FuseLlama"):
        blocks["rewrite"] = rewrite_block(B)
    for name, body in blocks.items():
        doc = replace_block(doc, name, body)
    tmp = doc_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(doc)
    os.replace(tmp, doc_path)


if __name__ == "__main__":
    main()
