//===- VulkanCommands.cpp - graft devices / run-vk ------------------------===//
//
//   graft devices [--json]                  list the Vulkan devices
//   graft run-vk FILE [--device N] [--check] execute a graph on a Vulkan device
//   graft partition FILE --target T [--json]  Vulkan partitions and CPU reasons
//
// run-vk runs every node on the device (kernels, host-side scalar steps); a
// node that cannot run there is an error unless --allow-cpu-fallback runs it
// through the reference interpreter. It prints the outputs, and with --check also runs the
// reference interpreter on the same inputs and reports the max abs/rel error.
//
//===----------------------------------------------------------------------===//
#include "Cli.h"

#include "graft/interp/Interpreter.h"
#include "graft/ir/Verifier.h"
#include "graft/serialize/Load.h"
#include "graft/support/HumanBytes.h"
#include "graft/vulkan/GraphExecutor.h"
#include "graft/vulkan/Partitioner.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <iostream>
#include <map>

namespace graft::cli {
namespace {

/// A memory type's property flags as words ("device-local host-visible ...").
std::string memoryFlags(const vk::DeviceInfo::MemoryType &m) {
  std::string out;
  auto add = [&](bool on, const char *word) {
    if (on)
      out += (out.empty() ? "" : " ") + std::string(word);
  };
  add(m.deviceLocal, "device-local");
  add(m.hostVisible, "host-visible");
  add(m.hostCoherent, "host-coherent");
  add(m.hostCached, "host-cached");
  return out.empty() ? "none" : out;
}

nlohmann::json deviceJson(const vk::DeviceInfo &d) {
  nlohmann::json j;
  j["index"] = d.index;
  j["name"] = d.name;
  j["type"] = d.type;
  j["api_version"] = d.apiVersion;
  j["driver"] = d.driver;
  j["vendor_id"] = d.vendorId;
  j["device_id"] = d.deviceId;
  j["max_storage_buffer_range"] = d.maxStorageBufferRange;
  j["max_compute_workgroup_count"] = {d.maxComputeWorkGroupCount[0], d.maxComputeWorkGroupCount[1],
                                      d.maxComputeWorkGroupCount[2]};
  j["max_compute_workgroup_invocations"] = d.maxComputeWorkGroupInvocations;
  j["max_compute_shared_memory_size"] = d.maxComputeSharedMemorySize;
  j["max_push_constants_size"] = d.maxPushConstantsSize;
  j["max_image_dimension_2d"] = d.maxImageDimension2D;
  j["max_image_dimension_3d"] = d.maxImageDimension3D;
  j["device_local_bytes"] = d.deviceLocalBytes;
  j["storage_buffer_16bit_access"] = d.storageBuffer16BitAccess;
  j["storage_buffer_8bit_access"] = d.storageBuffer8BitAccess;
  j["shader_float16"] = d.shaderFloat16;
  j["shader_int64"] = d.shaderInt64;
  j["subgroup_size"] = d.subgroupSize;
  j["subgroup_arithmetic"] = d.subgroupArithmetic;
  j["subgroup_clustered_add"] = d.subgroupClusteredAdd;
  j["max_loop_iterations"] = d.maxLoopIterations; // 0: no limit
  j["storage_texel_buffers"] = d.storageTexelBuffers;
  j["max_texel_buffer_elements"] = d.maxTexelBufferElements;
  j["memory_types"] = nlohmann::json::array();
  for (const vk::DeviceInfo::MemoryType &m : d.memoryTypes)
    j["memory_types"].push_back(
        {{"flags", memoryFlags(m)}, {"heap", m.heap}, {"heap_bytes", m.heapBytes}});
  return j;
}

nlohmann::json valueJson(const RuntimeValue &v, bool all) {
  nlohmann::json j;
  if (const Tensor *t = std::get_if<Tensor>(&v)) {
    j["dtype"] = std::string(name(t->dtype()));
    j["shape"] = t->sizes();
    int64_t n = all ? t->numel() : std::min<int64_t>(t->numel(), 16);
    nlohmann::json vals = nlohmann::json::array();
    for (int64_t i = 0; i < n; ++i) {
      double d = t->getDouble(i);
      vals.push_back(std::isfinite(d) ? nlohmann::json(d) : nlohmann::json(std::to_string(d)));
    }
    j["values"] = vals;
    j["truncated"] = n < t->numel();
  } else {
    j["value"] = str(v);
  }
  return j;
}

} // namespace

Command makeDevicesCommand() {
  Command c;
  c.name = "devices";
  c.usage = "graft devices [--json]";
  c.summary = "List the Vulkan devices (the index is what --device takes).";
  c.details = "Shows each physical device the Vulkan loader reports, with the limits the\n"
              "partitioner and the kernels care about. Without a driver the list is empty\n"
              "(install mesa-vulkan-drivers for lavapipe, or set VK_ICD_FILENAMES).";
  c.flags = {{"json", false, "print a JSON array"}};
  c.run = [](const Args &args) {
    if (!args.positional.empty()) {
      std::cerr << "graft devices: error: takes no positional arguments\n";
      return int(kUserError);
    }
    auto devices = vk::listDevices();
    if (!devices)
      return reportFailure(devices.diags());
    if (args.has("json")) {
      nlohmann::json j = nlohmann::json::array();
      for (const vk::DeviceInfo &d : *devices)
        j.push_back(deviceJson(d));
      std::cout << j.dump(2) << "\n";
      return int(kOk);
    }
    if (devices->empty()) {
      std::cout << "no Vulkan devices\n";
      return int(kOk);
    }
    for (const vk::DeviceInfo &d : *devices) {
      std::cout << d.index << ": " << d.name << " (" << d.type << ", Vulkan " << d.apiVersion
                << (d.driver.empty() ? "" : ", " + d.driver) << ")\n"
                << "   maxStorageBufferRange " << humanBytes(d.maxStorageBufferRange)
                << ", device-local memory " << humanBytes(d.deviceLocalBytes)
                << ", maxImageDimension2D/3D " << d.maxImageDimension2D << "/"
                << d.maxImageDimension3D << "\n"
                << "   16-bit storage " << (d.storageBuffer16BitAccess ? "yes" : "no")
                << ", 8-bit storage " << (d.storageBuffer8BitAccess ? "yes" : "no")
                << ", float16 arithmetic " << (d.shaderFloat16 ? "yes" : "no") << ", int64 "
                << (d.shaderInt64 ? "yes" : "no") << "\n"
                << "   subgroup size " << d.subgroupSize << ", subgroup add "
                << (d.subgroupArithmetic ? "yes" : "no") << ", clustered subgroup add "
                << (d.subgroupClusteredAdd ? "yes" : "no") << "\n"
                << "   rgba32ui storage texel buffers " << (d.storageTexelBuffers ? "yes" : "no")
                << ", maxTexelBufferElements " << d.maxTexelBufferElements << "\n";
      if (d.maxLoopIterations)
        std::cout << "   at most " << d.maxLoopIterations
                  << " loop iterations per invocation (longer loops end silently)\n";
      std::cout << "   memory types:";
      for (std::size_t i = 0; i < d.memoryTypes.size(); ++i)
        std::cout << (i ? ";" : "") << " " << i << " " << memoryFlags(d.memoryTypes[i]) << " (heap "
                  << d.memoryTypes[i].heap << ", " << humanBytes(d.memoryTypes[i].heapBytes) << ")";
      std::cout << "\n";
    }
    return int(kOk);
  };
  return c;
}

Command makeRunVkCommand() {
  Command c;
  c.name = "run-vk";
  c.usage = "graft run-vk FILE [--device N] [--check] [--seed N] [--sym NAME=INT]... [--json] "
            "[--allow-cpu-fallback] [--plan] [--all-values] [--repeat N]";
  c.summary = "Execute a graph on a Vulkan device (optionally checked against the interpreter).";
  c.details =
      "Every node runs as a Vulkan kernel or a host-side scalar step of the device program\n"
      "(sym_size, a scalar read from a small buffer, assertions). A node the device cannot\n"
      "run is an error naming it and why; --allow-cpu-fallback runs such nodes on the CPU\n"
      "through the reference interpreter instead. --plan lists where each node runs and\n"
      "why. User inputs are random\n"
      "(--seed, as for `graft run`); symbolic dims take --sym or their range minimum.\n"
      "--check also runs the reference interpreter on the same inputs and reports the max\n"
      "abs / rel error of the outputs; with --atol X the exit status is 1 when the max\n"
      "abs error exceeds X. --repeat N runs N times and reports the mean wall time.";
  c.flags = {{"device", true, "Vulkan device index (see `graft devices`)", "N"},
             {"check", false, "compare with the reference interpreter"},
             {"atol", true, "with --check: fail when the max abs error exceeds X", "X"},
             {"seed", true, "seed for random inputs (default 0)", "N"},
             {"sym", true, "value of a symbolic dim (repeatable)", "NAME=INT"},
             {"json", false, "print one JSON object"},
             {"allow-cpu-fallback", false,
              "run nodes the device cannot run on the CPU instead of failing"},
             {"plan", false, "print where each node runs"},
             {"all-values", false, "print every element, not the first 16"},
             {"repeat", true, "run N times, report the mean time", "N"},
             {"no-verify", false, "skip verifying the graph before running"}};
  c.run = [](const Args &args) {
    if (args.positional.size() != 1) {
      std::cerr << "graft run-vk: error: expected exactly one FILE\n";
      return int(kUserError);
    }
    auto flags = runFlags(args);
    if (!flags)
      return reportFailure(flags.diags());
    const uint64_t seed = flags->seed;
    const std::optional<double> atol = flags->atol;
    int repeat = 1;
    if (auto s = args.get("repeat")) {
      auto v = parseInt(*s);
      if (!v || *v < 1) {
        std::cerr << "graft run-vk: error: --repeat expects a positive integer\n";
        return int(kUserError);
      }
      repeat = static_cast<int>(*v);
    }

    SourceManager sources;
    auto loaded = loadGraph(args.positional[0], &sources);
    if (!loaded)
      return reportFailure(loaded.diags(), &sources);
    const Graph &g = *loaded->graph;
    if (!args.has("no-verify")) {
      auto diags = verify(g);
      if (!diags.empty())
        return reportFailure(diags, &sources);
    }
    auto inputs = makeRandomInputs(g, seed, flags->symbols);
    if (!inputs)
      return reportFailure(inputs.diags());

    vk::ContextOptions copts;
    copts.deviceIndex = flags->deviceIndex;
    auto ctx = vk::Context::create(copts);
    if (!ctx)
      return reportFailure(ctx.diags());
    vk::ExecutorOptions eopts;
    eopts.allowCpuFallback = args.has("allow-cpu-fallback");
    auto exec = vk::GraphExecutor::create(**ctx, g, eopts);
    if (!exec)
      return reportFailure(exec.diags(), &sources);

    Expected<std::vector<RuntimeValue>> outputs = std::vector<RuntimeValue>{};
    double totalMs = 0;
    for (int i = 0; i < repeat; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      outputs = (*exec)->run(*inputs);
      totalMs +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!outputs)
        return reportFailure(outputs.diags(), &sources);
    }
    const vk::ExecutorStats &stats = (*exec)->stats();

    std::optional<vk::Comparison> cmp;
    if (args.has("check")) {
      auto ref = Interpreter().run(g, *inputs);
      if (!ref)
        return reportFailure(ref.diags(), &sources);
      cmp = vk::compareValues(*outputs, *ref);
    }

    std::map<vk::Placement, int> counts;
    for (const vk::NodePlan &p : (*exec)->plan())
      ++counts[p.placement];
    bool all = args.has("all-values");
    bool failed = cmp && (!cmp->firstProblem.empty() || cmp->mismatchedNonFinite > 0 ||
                          (atol && cmp->maxAbsError > *atol));

    if (args.has("json")) {
      nlohmann::json j;
      j["graph"] = g.name();
      j["device"] = deviceJson((*ctx)->info());
      j["seed"] = seed;
      j["nodes"] = {{"device", counts[vk::Placement::Device]},
                    {"host", counts[vk::Placement::Host]},
                    {"cpu_fallback", counts[vk::Placement::CpuFallback]}};
      nlohmann::json plan = nlohmann::json::array();
      for (const vk::NodePlan &p : (*exec)->plan()) {
        nlohmann::json pj = {{"node", p.node->numOutputs() ? p.node->name() : std::string()},
                             {"target", p.node->target()},
                             {"placement", std::string(vk::name(p.placement))},
                             {"kernel", p.kernel}};
        if (!p.reason.empty())
          pj["reason"] = p.reason;
        plan.push_back(pj);
      }
      j["plan"] = plan;
      j["dispatches"] = stats.dispatches;
      j["mean_ms"] = totalMs / repeat;
      nlohmann::json outs = nlohmann::json::array();
      for (std::size_t i = 0; i < outputs->size(); ++i) {
        nlohmann::json oj = valueJson((*outputs)[i], all);
        oj["name"] = g.outputs()[i].value->name();
        outs.push_back(oj);
      }
      j["outputs"] = outs;
      if (cmp) {
        j["check"] = {{"max_abs_error", cmp->maxAbsError},
                      {"max_rel_error", cmp->maxRelError},
                      {"mismatched_non_finite", cmp->mismatchedNonFinite},
                      {"ok", !failed}};
        if (!cmp->firstProblem.empty())
          j["check"]["problem"] = cmp->firstProblem;
      }
      std::cout << j.dump(2) << "\n";
      return int(failed ? kUserError : kOk);
    }

    const vk::DeviceInfo &info = (*ctx)->info();
    std::cout << "graph @" << g.name() << " on " << info.name << " (device " << info.index
              << "): " << counts[vk::Placement::Device] << " device, "
              << counts[vk::Placement::Host] << " host, " << counts[vk::Placement::CpuFallback]
              << " cpu-fallback nodes; " << stats.dispatches << " dispatches, "
              << (totalMs / repeat) << " ms" << (repeat > 1 ? " (mean)" : "") << "\n";
    for (const vk::NodePlan &p : (*exec)->plan()) {
      if (!args.has("plan") && p.placement != vk::Placement::CpuFallback)
        continue;
      std::cout << "  " << vk::name(p.placement) << "  %"
                << (p.node->numOutputs() ? p.node->name() : std::string("-")) << " ("
                << p.node->target() << ")"
                << (p.reason.empty() ? " -> " + p.kernel : ": " + p.reason) << "\n";
    }
    for (std::size_t i = 0; i < outputs->size(); ++i)
      std::cout << "output %" << g.outputs()[i].value->name() << " = "
                << str((*outputs)[i], all ? INT64_MAX : 16) << "\n";
    if (cmp) {
      std::cout << "check vs reference interpreter: max abs error " << cmp->maxAbsError
                << ", max rel error " << cmp->maxRelError;
      if (cmp->mismatchedNonFinite)
        std::cout << ", " << cmp->mismatchedNonFinite << " mismatched non-finite values";
      if (!cmp->firstProblem.empty())
        std::cout << ", " << cmp->firstProblem;
      if (atol)
        std::cout << (failed ? " (exceeds --atol)" : " (within --atol)");
      std::cout << "\n";
    }
    return int(failed ? kUserError : kOk);
  };
  return c;
}

Command makePartitionCommand() {
  Command c;
  c.name = "partition";
  c.usage = "graft partition FILE --target T [--json] [--device N]";
  c.summary = "Show the Vulkan partitions of a graph and why other nodes stay on the CPU.";
  c.details =
      "T is a device profile (lavapipe, adreno, mali; see backends/vulkan/support/targets.yaml)\n"
      "or 'host' for the running Vulkan device (--device picks it). Op support is declared in\n"
      "backends/vulkan/support/ops.yaml. Partitions are maximal convex groups of supported\n"
      "nodes; assertion groups (sym_constrain_range_for_size / _assert_scalar with the scalar\n"
      "read and slice they constrain) are never split. Every CPU node gets a reason.";
  c.flags = {{"target", true, "device profile, or host", "T"},
             {"json", false, "print one JSON object"},
             {"device", true, "with --target host: the Vulkan device index", "N"}};
  c.run = [](const Args &args) {
    if (args.positional.size() != 1) {
      std::cerr << "graft partition: error: expected exactly one FILE\n";
      return int(kUserError);
    }
    auto target = args.get("target");
    if (!target) {
      std::cerr << "graft partition: error: --target is required (lavapipe, adreno, mali, host)\n";
      return int(kUserError);
    }
    auto deviceIndex = deviceFlag(args);
    if (!deviceIndex)
      return reportFailure(deviceIndex.diags());
    auto profile = vk::findTarget(*target, *deviceIndex);
    if (!profile)
      return reportFailure(profile.diags());
    SourceManager sources;
    auto loaded = loadGraph(args.positional[0], &sources);
    if (!loaded)
      return reportFailure(loaded.diags(), &sources);
    auto report = vk::partitionGraph(*loaded->graph, *profile);
    if (!report)
      return reportFailure(report.diags());
    if (args.has("json"))
      std::cout << vk::reportJson(*report) << "\n";
    else
      std::cout << vk::formatReport(*report);
    return int(kOk);
  };
  return c;
}

} // namespace graft::cli
