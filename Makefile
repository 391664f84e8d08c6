# graft: the two entry points are `make demo` and `make test` (see README).
# Both install missing Debian packages, configure with CMake + Ninja and build.

BUILD_DIR  ?= build
ASAN_DIR   ?= build-asan
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc)
GRAFT      := $(BUILD_DIR)/tools/graft
DEMO_DIR   ?= $(BUILD_DIR)/demo
DEMO_MODEL := $(DEMO_DIR)/llama_8da4w_bf16.pt2
# The model: a 2-layer Llama, torchao 8da4w, tied embeddings, weights
# quantized in bf16 and computed in f32 (the graphs of upstream PR #18957),
# dynamic sequence length.
DEMO_SYNTH ?= --layers 2 --dim 128 --heads 4 --kv-heads 2 --vocab 256 --quant 8da4w \
              --checkpoint-dtype bf16 --tied-embeddings --dynamic-seq
# The fused graph computes the weights in f32 where the original rounds them
# to bf16 first (that is what legalization removes), hence the tolerance.
DEMO_ATOL  ?= 0.05
# Generation: ExecuTorch's KV-cache Llama (export_llama --use_sdpa_with_kv_cache:
# llama.update_cache + llama.custom_sdpa, caches as mutated buffers), torchao
# 4w with an f32 checkpoint, so the program's logits agree with the
# interpreter's to ~1e-6 and greedy decoding picks the same token at every
# step (a bf16 checkpoint's 0.02 or 8da4w's activation rounding can flip a
# near-tie). Untied embeddings: a random model with tied ones tends to echo
# one token.
DEMO_KV_MODEL := $(DEMO_DIR)/llama_kv_4w.pt2
DEMO_KV_SYNTH ?= --layers 2 --dim 128 --heads 4 --kv-heads 2 --vocab 256 --quant 4w \
                 --dynamic-seq --kv-cache custom --max-seq-len 64 --seed 2
DEMO_PROMPT   ?= [1,2,3,4,5,6,7,8]
DEMO_GENERATE ?= 32

.PHONY: all deps configure build demo test test-asan bench format check-format clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The main job, end to end: synthesize an exported Llama (.pt2), compile it
# (legalize, fuse with the shipped rules, partition, codegen) into a Vulkan
# program with a rule-coverage report, run it on the Vulkan device (lavapipe
# when there is no GPU) and check it against the reference interpreter on the
# original graph; then generate with a KV-cache Llama (prefill + greedy decode
# steps on the device, every step checked against the interpreter).
demo: build
	@mkdir -p $(DEMO_DIR)
	$(GRAFT) synth llama $(DEMO_SYNTH) -o $(DEMO_MODEL)
	$(GRAFT) compile $(DEMO_MODEL) -o $(DEMO_DIR)/llama_8da4w_bf16.vkprog \
	    --report $(DEMO_DIR)/coverage.html
	$(GRAFT) run $(DEMO_DIR)/llama_8da4w_bf16.vkprog --check --atol $(DEMO_ATOL) --sym s0=8 --seed 0
	$(GRAFT) synth llama $(DEMO_KV_SYNTH) -o $(DEMO_KV_MODEL)
	$(GRAFT) compile $(DEMO_KV_MODEL) -o $(DEMO_DIR)/llama_kv_4w.vkprog
	$(GRAFT) run $(DEMO_DIR)/llama_kv_4w.vkprog --generate $(DEMO_GENERATE) \
	    --inputs 'tokens=$(DEMO_PROMPT)' --check --atol 1e-4
	@echo
	@echo "demo: program      $(DEMO_DIR)/llama_8da4w_bf16.vkprog"
	@echo "demo: KV cache     $(DEMO_DIR)/llama_kv_4w.vkprog (graft run ... --generate N --inputs tokens=[...])"
	@echo "demo: coverage     $(DEMO_DIR)/coverage.html (open it in a browser)"
	@echo "demo: explain a rule: $(GRAFT) explain $(DEMO_MODEL) --rules patterns/ --rule torchao_embedding_q4gsw"

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# AddressSanitizer + UndefinedBehaviorSanitizer build of everything, then the tests.
test-asan: deps
	cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGRAFT_SANITIZE=ON -DGRAFT_BUILD_BENCH=OFF
	cmake --build $(ASAN_DIR) -j $(JOBS)
	# InstalledPackage is left out: it builds an uninstrumented consumer against the
	# installed (here: sanitizer-instrumented) static libraries, which cannot link.
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_DIR) --output-on-failure -j $(JOBS) -E '^InstalledPackage\.'

# Every benchmark (graft_bench + `graft compile` of an 8B-shaped model); rewrites
# docs/benchmarks.md's measured tables (bench/run_all.sh documents its knobs).
bench: build
	@scripts/install-deps.sh time python3
	BUILD_DIR=$(BUILD_DIR) bench/run_all.sh

format:
	@scripts/install-deps.sh clang-format
	git ls-files '*.cpp' '*.h' | xargs clang-format -i

check-format:
	@scripts/install-deps.sh clang-format
	git ls-files '*.cpp' '*.h' | xargs clang-format --dry-run --Werror

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR)

# The full differential check of the shipped rule library (docs/rules.md): every
# rule in patterns/*.pat on VERIFY_INSTANCES random instances (ctest runs a quick
# subset, tests/unit/RuleLibraryVerifyTest.cpp). Some rules skip instances of
# their example domain that fall outside their where clause, hence 1500 to test
# at least 1000 of each.
VERIFY_INSTANCES ?= 1500
.PHONY: verify-rules
verify-rules: build
	$(GRAFT) verify-rules $(sort $(wildcard patterns/*.pat)) --instances $(VERIFY_INSTANCES)
