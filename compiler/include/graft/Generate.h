//===- Generate.h - Greedy token generation with a KV-cache model -*- C++ -*-===//
//
// Drives a KV-cache language model the way ExecuTorch's llama runner does:
// a prefill call with the prompt at position 0, then one decode call per new
// token, each feeding the token chosen last (greedy: the argmax of the last
// position's logits) at the next position through `input_pos`. The model
// keeps its KV cache as mutable buffers (BUFFER_MUTATION outputs of the
// graph signature; `graft synth llama --kv-cache custom|plain`), which a
// DecodeSession carries from one call to the next.
//
//   auto program = readProgram("llama.vkprog");
//   auto iface = decodeInterface(*program->graph);
//   auto session = vulkanSession(**ctx, *program, "llama.vkprog");
//   auto gen = Generator::create(*iface, std::move(*session));
//   GenerateOptions opts;
//   opts.decodeSteps = 32;
//   auto result = generate(*gen, {1, 2, 3}, opts);           // result->tokens: 33 ids
//
// With GenerateOptions::reference (a Generator over interpreterSession() of
// the original graph) every step is checked: the logits within `atol` and
// the same token, else GenerateResult::checkFailure names the step.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/interp/Interpreter.h"
#include "graft/ir/Graph.h"
#include "graft/serialize/ProgramFile.h"
#include "graft/support/Expected.h"
#include "graft/vulkan/Context.h"
#include "graft/vulkan/GraphExecutor.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace graft {

/// How a KV-cache model is called, read from its graph (decodeInterface()).
struct DecodeInterface {
  std::size_t numUserInputs = 0;
  std::size_t tokensInput = 0;   ///< index among the user inputs: integer [1, S]
  std::size_t positionInput = 0; ///< index among the user inputs: `input_pos`, integer [1]
  std::string tokensName;        ///< the tokens input's name ("tokens")
  DType tokensDType = DType::I64;
  DType positionDType = DType::I64;
  /// The symbol of S when the sequence length is symbolic (a prefill is one
  /// call); unset when S is 1 (a prefill is one call per prompt token).
  std::optional<std::string> seqSymbol;
  /// The most tokens one call takes (S's upper bound), unset when unbounded.
  std::optional<int64_t> maxTokensPerCall;
  /// Positions the KV cache holds (max_seq_len): one more than the largest
  /// position the graph's range constraints allow for a one-token call;
  /// unset when the graph bounds no position.
  std::optional<int64_t> maxSeqLen;
  std::size_t logitsOutput = 0;    ///< index among the user outputs: the last one
  int64_t vocab = 0;               ///< the logits' last dim
  std::vector<std::string> caches; ///< FQNs of the buffers the graph mutates
};

/// The decode interface of `graph`, or an error saying why it cannot be
/// driven token by token: no `input_pos` input, no mutated buffer (no KV
/// cache), no single integer token input of shape [1, S] with S symbolic or
/// 1, no floating-point logits output with a static vocabulary dim.
Expected<DecodeInterface> decodeInterface(const Graph &graph);

/// One model carrying its KV cache from call to call.
class DecodeSession {
public:
  virtual ~DecodeSession();
  /// One forward call: user inputs in the graph's order; returns the user
  /// outputs in the graph's order (the buffer mutations stay in the
  /// session). The mutated buffers continue from the previous call.
  virtual Expected<std::vector<RuntimeValue>> run(const std::vector<RuntimeValue> &userInputs) = 0;
  /// Forgets the cache: the next call starts from the graph's buffers.
  virtual void reset() = 0;
};

/// The reference interpreter on `graph` (which must outlive the session),
/// the cache in an interp MutableState.
std::unique_ptr<DecodeSession> interpreterSession(const Graph &graph);

/// A compiled program on `ctx`'s device, as `graft run` runs it: the plan it
/// was compiled with, pipelines from its stored SPIR-V (`origin` names the
/// program in errors). The caches stay on the device between calls, updated
/// in place (vk::ExecutorOptions::MutableBuffers::OnDevice). `ctx` and
/// `program` must outlive the session.
Expected<std::unique_ptr<DecodeSession>> vulkanSession(vk::Context &ctx, const Program &program,
                                                       const std::string &origin,
                                                       bool allowCpuFallback = false);

/// One call's result (a prefill of a static one-token model is several calls:
/// the step is its last).
struct GenerationStep {
  bool prefill = false;
  int64_t position = 0; ///< of the first token the step fed
  int64_t fed = 0;      ///< tokens fed
  int64_t calls = 0;    ///< model calls the step made
  int64_t token = 0;    ///< the argmax of the last position's logits (first on ties)
  Tensor logits;        ///< the last call's logits output
  double seconds = 0;   ///< wall time of the step's calls
};

/// A session and the interface it is called through. The position advances
/// with every token fed; prefill() resets the session.
class Generator {
public:
  static Expected<Generator> create(DecodeInterface iface, std::unique_ptr<DecodeSession> session);

  const DecodeInterface &interface() const { return iface_; }
  /// Positions fed since the last prefill.
  int64_t position() const { return position_; }

  /// Resets the cache and feeds `prompt` from position 0: one call when the
  /// sequence length is symbolic, else one call per token. Errors: an empty
  /// prompt, token ids outside [0, vocab), a prompt longer than a call takes
  /// or than max_seq_len.
  Expected<GenerationStep> prefill(const std::vector<int64_t> &prompt);
  /// Feeds `token` at the next position (an error past max_seq_len).
  Expected<GenerationStep> decode(int64_t token);

private:
  Generator(DecodeInterface iface, std::unique_ptr<DecodeSession> session)
      : iface_(std::move(iface)), session_(std::move(session)) {}
  Expected<GenerationStep> call(const std::vector<int64_t> &tokens);
  DecodeInterface iface_;
  std::unique_ptr<DecodeSession> session_;
  int64_t position_ = 0;
};

struct GenerateOptions {
  int64_t decodeSteps = 0; ///< after the prefill; every step picks one token
  /// Untimed rounds before the run, each a prefill and (with decode steps)
  /// one decode step: the first calls upload and prepack the constants and
  /// create the pipelines of both shapes. Not checked against the reference.
  int64_t warmup = 0;
  /// Checked against: fed the same tokens, step by step. Its time is not
  /// counted in the steps' seconds.
  Generator *reference = nullptr;
  /// With a reference: a step whose logits differ by more than this fails
  /// (unset: only the chosen tokens and non-finite values must agree).
  std::optional<double> atol;
  /// Called after every step (and its check), e.g. to print progress.
  std::function<void(const GenerationStep &)> onStep;
};

/// A step's comparison with the reference.
struct StepCheck {
  int64_t referenceToken = 0;
  double maxAbsError = 0;
  int64_t mismatchedNonFinite = 0;
};

struct GenerateResult {
  std::vector<int64_t> prompt;
  /// The chosen tokens: the prefill's, then one per decode step.
  std::vector<int64_t> tokens;
  std::vector<GenerationStep> steps;
  std::vector<StepCheck> checks; ///< per step, with a reference
  double maxAbsError = 0;        ///< over the checked steps
  /// The first step that disagrees with the reference (generation stops
  /// there), e.g. "step 3 (decode at position 7): the program chose token
  /// 12, the reference 40 (logits max abs error 0.31)"; empty when all agree.
  std::string checkFailure;

  double prefillSeconds() const;
  double decodeSeconds() const;
  int64_t decodeTokens() const; ///< decode steps run
  double prefillTokensPerSecond() const;
  double decodeTokensPerSecond() const;
};

/// Why `prompt` followed by `decodeSteps` decode steps cannot run on a model
/// of interface `di`: no prompt, a token outside the vocabulary, a prompt
/// longer than one call takes or than max_seq_len, more positions than the
/// cache holds (generate() checks this before its first call).
Status checkGeneration(const DecodeInterface &di, const std::vector<int64_t> &prompt,
                       int64_t decodeSteps);

/// Prefill with `prompt`, then options.decodeSteps greedy decode steps, each
/// feeding the token chosen before it; with options.reference, checked step
/// by step. Errors (bad prompt, a failing call) name the step.
Expected<GenerateResult> generate(Generator &generator, const std::vector<int64_t> &prompt,
                                  const GenerateOptions &options);

} // namespace graft
