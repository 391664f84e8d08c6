//===- Generate.cpp - Greedy token generation with a KV-cache model -------===//
//
// See graft/Generate.h.
//
//===----------------------------------------------------------------------===//
#include "graft/Generate.h"

#include "graft/vulkan/Partitioner.h"
#include "graft/vulkan/ProgramShaders.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <set>

namespace graft {
namespace {

Diagnostic notDecodable(const std::string &why) {
  return Diagnostic::error("cannot generate with this program: " + why);
}

/// The largest value the range constraints allow for a scalar computed from
/// `input_pos` (its `.item()`: the start position), over every such scalar;
/// unset when none is bounded.
std::optional<int64_t> largestPosition(const Graph &graph, const Value *inputPos) {
  std::optional<int64_t> best;
  std::set<const Value *> seen{inputPos};
  std::deque<const Value *> work{inputPos};
  while (!work.empty()) {
    const Value *v = work.front();
    work.pop_front();
    if (!v->isTensor())
      if (const SymbolRange *r = graph.symbols().find(std::string(v->name())); r && r->max)
        // Every constraint must hold: the smallest bound is the one that binds.
        best = best ? std::min(*best, *r->max) : *r->max;
    // Follow the reads of input_pos only (select, view, item: tensors of at
    // most one element, then the scalar): the position's own scalar is what
    // the constraints bound; values computed further on (start + seq_len,
    // the model's activations) carry other bounds.
    if (!v->isTensor())
      continue;
    for (const Node *user : v->users())
      for (const Value *out : user->outputs()) {
        bool scalarRead = true;
        if (out->isTensor())
          for (const Dim &d : out->proto().shape)
            scalarRead = scalarRead && d.value() && *d.value() <= 1;
        if (scalarRead && seen.insert(out).second)
          work.push_back(out);
      }
  }
  return best;
}

} // namespace

Expected<DecodeInterface> decodeInterface(const Graph &graph) {
  DecodeInterface di;
  std::vector<const GraphInput *> users;
  for (const GraphInput &in : graph.inputs())
    if (in.kind == InputKind::UserInput)
      users.push_back(&in);
  di.numUserInputs = users.size();

  std::optional<std::size_t> pos;
  for (std::size_t i = 0; i < users.size(); ++i)
    if (users[i]->value->name() == "input_pos")
      pos = i;
  if (!pos)
    return notDecodable("it has no `input_pos` input; generation feeds the position of each "
                        "step to a KV-cache model as ExecuTorch's export_llama writes it "
                        "(`graft synth llama --kv-cache custom|plain`)");
  const Value *posValue = users[*pos]->value;
  if (!posValue->isTensor() || !isIntegral(posValue->proto().dtype) ||
      posValue->proto().shape.size() != 1 || posValue->proto().shape[0].value() != 1)
    return notDecodable("its `input_pos` is " +
                        (posValue->isTensor() ? posValue->proto().str() : std::string("a scalar")) +
                        ", not an integer tensor of shape [1] (the start position)");
  di.positionInput = *pos;
  di.positionDType = posValue->proto().dtype;

  for (const GraphOutput &o : graph.outputs())
    if (o.kind == OutputKind::BufferMutation)
      di.caches.push_back(o.target);
  if (di.caches.empty())
    return notDecodable("it keeps no KV cache: its graph mutates no buffer (no BUFFER_MUTATION "
                        "output), so a decode step could not see the tokens before it "
                        "(export with a KV cache: `graft synth llama --kv-cache custom|plain`)");

  std::optional<std::size_t> tokens;
  for (std::size_t i = 0; i < users.size(); ++i) {
    if (i == *pos)
      continue;
    const Value *v = users[i]->value;
    if (tokens || !v->isTensor() || !isIntegral(v->proto().dtype))
      return notDecodable("user input %" + std::string(v->name()) +
                          " is neither the token ids nor `input_pos`; generation feeds a model "
                          "whose only inputs are the two");
    tokens = i;
  }
  if (!tokens)
    return notDecodable("it has no token input (an integer tensor [1, S] besides `input_pos`)");
  const Value *tokValue = users[*tokens]->value;
  const TensorProto &tp = tokValue->proto();
  di.tokensInput = *tokens;
  di.tokensName = std::string(tokValue->name());
  di.tokensDType = tp.dtype;
  if (tp.shape.size() != 2 || tp.shape[0].value() != 1)
    return notDecodable("its token input %" + di.tokensName + " is " + tp.str() +
                        ", not [1, S] (one sequence)");
  const Dim &seq = tp.shape[1];
  if (seq.isSymbol()) {
    di.seqSymbol = seq.terms()[0].first;
    di.maxTokensPerCall = graph.symbols().upperBound(seq);
    if (std::optional<int64_t> lo = graph.symbols().lowerBound(seq); lo && *lo > 1)
      return notDecodable("its sequence length " + seq.str() + " is at least " +
                          std::to_string(*lo) + ": a decode step feeds one token");
  } else if (seq.value() == 1) {
    di.maxTokensPerCall = 1;
  } else {
    return notDecodable("its token input %" + di.tokensName + " is " + tp.str() +
                        ": a static sequence length other than 1 cannot take a prompt and "
                        "then one token per step (export with a dynamic sequence length)");
  }

  const Value *lv = nullptr;
  std::size_t userOutputs = 0;
  for (const GraphOutput &o : graph.outputs())
    if (o.kind == OutputKind::UserOutput) {
      lv = o.value;
      ++userOutputs;
    }
  if (!lv)
    return notDecodable("it has no user output (the logits)");
  if (!lv->isTensor() || !isFloatingPoint(lv->proto().dtype) || lv->proto().shape.empty() ||
      !lv->proto().shape.back().value() || *lv->proto().shape.back().value() < 1)
    return notDecodable("its last output %" + std::string(lv->name()) + " is " +
                        (lv->isTensor() ? lv->proto().str() : std::string("a scalar")) +
                        ", not floating-point logits with a static vocabulary dim");
  di.logitsOutput = userOutputs - 1;
  di.vocab = *lv->proto().shape.back().value();

  if (std::optional<int64_t> last = largestPosition(graph, posValue))
    di.maxSeqLen = *last + 1;
  return di;
}

//===----------------------------------------------------------------------===//
// Sessions
//===----------------------------------------------------------------------===//

DecodeSession::~DecodeSession() = default;

namespace {

class InterpreterSession final : public DecodeSession {
public:
  explicit InterpreterSession(const Graph &graph) : graph_(graph) {}
  Expected<std::vector<RuntimeValue>> run(const std::vector<RuntimeValue> &userInputs) override {
    GRAFT_TRY(std::vector<RuntimeValue> all, interp_.run(graph_, userInputs, state_));
    // The buffer mutations went into state_: only the user outputs leave.
    std::vector<RuntimeValue> out;
    for (std::size_t i = 0; i < all.size(); ++i)
      if (graph_.outputs().at(i).kind == OutputKind::UserOutput)
        out.push_back(std::move(all[i]));
    return out;
  }
  void reset() override { state_.buffers.clear(); }

private:
  const Graph &graph_;
  Interpreter interp_;
  MutableState state_;
};

class VulkanSession final : public DecodeSession {
public:
  explicit VulkanSession(std::unique_ptr<vk::GraphExecutor> exec) : exec_(std::move(exec)) {}
  Expected<std::vector<RuntimeValue>> run(const std::vector<RuntimeValue> &userInputs) override {
    return exec_->run(userInputs);
  }
  void reset() override { exec_->resetMutableBuffers(); }

private:
  std::unique_ptr<vk::GraphExecutor> exec_;
};

} // namespace

std::unique_ptr<DecodeSession> interpreterSession(const Graph &graph) {
  return std::make_unique<InterpreterSession>(graph);
}

Expected<std::unique_ptr<DecodeSession>> vulkanSession(vk::Context &ctx, const Program &program,
                                                       const std::string &origin,
                                                       bool allowCpuFallback) {
  if (!program.graph)
    return Diagnostic::internal("vulkanSession: the program has no graph");
  vk::ExecutorOptions eopts;
  GRAFT_TRY(eopts.plan, vk::compiledPlan(program));
  eopts.allowCpuFallback = allowCpuFallback;
  // The caches stay on the device between calls, updated in place.
  eopts.mutableBuffers = vk::ExecutorOptions::MutableBuffers::OnDevice;
  GRAFT_CHECK_OK(vk::usePrecompiledShaders(ctx, program, origin));
  GRAFT_TRY(auto exec, vk::GraphExecutor::create(ctx, *program.graph, eopts));
  return std::unique_ptr<DecodeSession>(std::make_unique<VulkanSession>(std::move(exec)));
}

//===----------------------------------------------------------------------===//
// Generator
//===----------------------------------------------------------------------===//

Expected<Generator> Generator::create(DecodeInterface iface,
                                      std::unique_ptr<DecodeSession> session) {
  if (!session)
    return Diagnostic::internal("Generator::create: no session");
  if (iface.numUserInputs < 2 || iface.tokensInput >= iface.numUserInputs ||
      iface.positionInput >= iface.numUserInputs || iface.vocab < 1)
    return Diagnostic::internal("Generator::create: an interface not made by decodeInterface()");
  return Generator(std::move(iface), std::move(session));
}

namespace {

/// The argmax of the last `vocab` values (the last position's logits), the
/// first on ties as torch.argmax; an error on a NaN, which has no order.
Expected<int64_t> argmaxLast(const Tensor &logits, int64_t vocab) {
  int64_t n = logits.numel();
  if (n < vocab)
    return Diagnostic::error("the logits have " + std::to_string(n) + " values, fewer than the " +
                             std::to_string(vocab) + " of one position");
  int64_t best = -1;
  double bestValue = 0;
  for (int64_t i = n - vocab; i < n; ++i) {
    double v = logits.getDouble(i);
    if (std::isnan(v))
      return Diagnostic::error("the logits of token " + std::to_string(i - (n - vocab)) +
                               " are NaN");
    if (best < 0 || v > bestValue) {
      best = i - (n - vocab);
      bestValue = v;
    }
  }
  return best;
}

} // namespace

Expected<GenerationStep> Generator::call(const std::vector<int64_t> &tokens) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (iface_.maxSeqLen && position_ + n > *iface_.maxSeqLen)
    return Diagnostic::error("positions " + std::to_string(position_) + ".." +
                             std::to_string(position_ + n - 1) + " are past the KV cache (" +
                             std::to_string(*iface_.maxSeqLen) + " positions, max_seq_len)");
  std::vector<RuntimeValue> inputs(iface_.numUserInputs);
  inputs[iface_.tokensInput] = Tensor::fromInts(iface_.tokensDType, {1, n}, tokens);
  inputs[iface_.positionInput] = Tensor::fromInts(iface_.positionDType, {1}, {position_});
  GenerationStep step;
  step.position = position_;
  step.fed = n;
  step.calls = 1;
  auto t0 = std::chrono::steady_clock::now();
  GRAFT_TRY(std::vector<RuntimeValue> outs, session_->run(inputs));
  step.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  position_ += n;
  const Tensor *logits =
      outs.size() > iface_.logitsOutput ? std::get_if<Tensor>(&outs[iface_.logitsOutput]) : nullptr;
  if (!logits)
    return Diagnostic::internal("the model returned no logits tensor");
  GRAFT_TRY(step.token, argmaxLast(*logits, iface_.vocab));
  step.logits = *logits;
  return step;
}

Expected<GenerationStep> Generator::prefill(const std::vector<int64_t> &prompt) {
  const int64_t n = static_cast<int64_t>(prompt.size());
  GRAFT_CHECK_OK(checkGeneration(iface_, prompt, 0));
  session_->reset();
  position_ = 0;
  if (iface_.seqSymbol) {
    GRAFT_TRY(GenerationStep step, call(prompt));
    step.prefill = true;
    return step;
  }
  // A static one-token model takes the prompt one call per token; the step
  // is the last call, its time all of them.
  GenerationStep step;
  double seconds = 0;
  for (int64_t tok : prompt) {
    GRAFT_TRY(step, call({tok}));
    seconds += step.seconds;
  }
  step.prefill = true;
  step.position = 0;
  step.fed = n;
  step.calls = n;
  step.seconds = seconds;
  return step;
}

Expected<GenerationStep> Generator::decode(int64_t token) {
  if (token < 0 || token >= iface_.vocab)
    return Diagnostic::error("token " + std::to_string(token) + " is outside the vocabulary [0, " +
                             std::to_string(iface_.vocab) + ")");
  return call({token});
}

//===----------------------------------------------------------------------===//
// generate
//===----------------------------------------------------------------------===//

double GenerateResult::prefillSeconds() const {
  return !steps.empty() && steps[0].prefill ? steps[0].seconds : 0.0;
}
double GenerateResult::decodeSeconds() const {
  double s = 0;
  for (const GenerationStep &st : steps)
    if (!st.prefill)
      s += st.seconds;
  return s;
}
int64_t GenerateResult::decodeTokens() const {
  return static_cast<int64_t>(std::count_if(steps.begin(), steps.end(),
                                            [](const GenerationStep &s) { return !s.prefill; }));
}
double GenerateResult::prefillTokensPerSecond() const {
  double s = prefillSeconds();
  return s > 0 ? double(steps[0].fed) / s : 0.0;
}
double GenerateResult::decodeTokensPerSecond() const {
  double s = decodeSeconds();
  return s > 0 ? double(decodeTokens()) / s : 0.0;
}

namespace {

std::string stepLabel(std::size_t index, const GenerationStep &s) {
  return "step " + std::to_string(index) + " (" + (s.prefill ? "prefill" : "decode") +
         " at position " + std::to_string(s.position) + ")";
}

Diagnostic atStep(std::size_t index, bool prefill, int64_t position, Diagnostic d) {
  GenerationStep s;
  s.prefill = prefill;
  s.position = position;
  d.message = stepLabel(index, s) + ": " + d.message;
  return d;
}

} // namespace

Status checkGeneration(const DecodeInterface &di, const std::vector<int64_t> &prompt,
                       int64_t decodeSteps) {
  const int64_t n = static_cast<int64_t>(prompt.size());
  if (decodeSteps < 0)
    return Diagnostic::error("the number of decode steps is negative (" +
                             std::to_string(decodeSteps) + ")");
  if (prompt.empty())
    return Diagnostic::error("the prompt is empty: a prefill needs at least one token");
  for (std::size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= di.vocab)
      return Diagnostic::error("prompt token " + std::to_string(i) + " is " +
                               std::to_string(prompt[i]) + ", outside the vocabulary [0, " +
                               std::to_string(di.vocab) + ")");
  if (di.maxSeqLen && n > *di.maxSeqLen)
    return Diagnostic::error("the prompt has " + std::to_string(n) +
                             " tokens, more than the KV cache holds (max_seq_len " +
                             std::to_string(*di.maxSeqLen) + ")");
  if (di.seqSymbol && di.maxTokensPerCall && n > *di.maxTokensPerCall)
    return Diagnostic::error("the prompt has " + std::to_string(n) +
                             " tokens, more than one call takes (" + *di.seqSymbol +
                             " <= " + std::to_string(*di.maxTokensPerCall) + ")");
  // The last decode step feeds position n + decodeSteps - 1.
  if (di.maxSeqLen && n + decodeSteps > *di.maxSeqLen)
    return Diagnostic::error("a " + std::to_string(n) + "-token prompt and " +
                             std::to_string(decodeSteps) + " decode steps need " +
                             std::to_string(n + decodeSteps) + " positions; the KV cache holds " +
                             std::to_string(*di.maxSeqLen) + " (max_seq_len)");
  return {};
}

Expected<GenerateResult> generate(Generator &generator, const std::vector<int64_t> &prompt,
                                  const GenerateOptions &options) {
  const DecodeInterface &di = generator.interface();
  // Checked up front, so a long run does not fail at its end.
  GRAFT_CHECK_OK(checkGeneration(di, prompt, options.decodeSteps));
  if (options.reference && options.reference->interface().vocab != di.vocab)
    return Diagnostic::error("the reference has a vocabulary of " +
                             std::to_string(options.reference->interface().vocab) +
                             ", the program " + std::to_string(di.vocab));

  // The timed run's prefill starts from a fresh cache, so warm-up rounds
  // leave nothing behind but uploaded constants and pipelines.
  for (int64_t i = 0; i < options.warmup; ++i) {
    GRAFT_TRY(GenerationStep first, generator.prefill(prompt));
    if (options.decodeSteps > 0)
      GRAFT_CHECK_OK(generator.decode(first.token));
  }

  GenerateResult result;
  result.prompt = prompt;
  for (int64_t i = 0; i <= options.decodeSteps; ++i) {
    const std::size_t index = static_cast<std::size_t>(i);
    const bool prefill = i == 0;
    const int64_t position = prefill ? 0 : generator.position(); // a prefill starts over
    auto step = prefill ? generator.prefill(prompt) : generator.decode(result.tokens.back());
    if (!step)
      return atStep(index, prefill, position, step.diags().front());
    if (options.reference) {
      Generator &ref = *options.reference;
      auto want = prefill ? ref.prefill(prompt) : ref.decode(result.tokens.back());
      if (!want) {
        Diagnostic d = want.diags().front();
        d.message = "the reference interpreter: " + d.message;
        return atStep(index, prefill, position, std::move(d));
      }
      vk::Comparison cmp = vk::compareValues({step->logits}, {want->logits});
      StepCheck check;
      check.referenceToken = want->token;
      check.maxAbsError = cmp.maxAbsError;
      check.mismatchedNonFinite = cmp.mismatchedNonFinite;
      result.maxAbsError = std::max(result.maxAbsError, cmp.maxAbsError);
      result.checks.push_back(check);
      std::string why;
      if (!cmp.firstProblem.empty())
        why = "the logits do not match the reference's: " + cmp.firstProblem;
      else if (cmp.mismatchedNonFinite > 0)
        why = std::to_string(cmp.mismatchedNonFinite) +
              " logits are non-finite in one run and not the other";
      else if (step->token != want->token)
        why = "the program chose token " + std::to_string(step->token) + ", the reference " +
              std::to_string(want->token) + " (logits max abs error " +
              std::to_string(cmp.maxAbsError) + ")";
      else if (options.atol && cmp.maxAbsError > *options.atol)
        why = "the logits differ from the reference's by " + std::to_string(cmp.maxAbsError) +
              ", more than --atol " + std::to_string(*options.atol) + " (both chose token " +
              std::to_string(step->token) + ")";
      if (!why.empty()) {
        result.checkFailure = stepLabel(index, *step) + ": " + why;
        result.tokens.push_back(step->token);
        result.steps.push_back(std::move(*step));
        if (options.onStep)
          options.onStep(result.steps.back());
        return result;
      }
    }
    result.tokens.push_back(step->token);
    result.steps.push_back(std::move(*step));
    if (options.onStep)
      options.onStep(result.steps.back());
  }
  return result;
}

} // namespace graft
