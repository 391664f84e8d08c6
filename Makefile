# graft: the two entry points are `make demo` and `make test` (see README).
# Both install missing Debian packages, configure with CMake + Ninja and build.

BUILD_DIR  ?= build
ASAN_DIR   ?= build-asan
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc)
GRAFT      := $(BUILD_DIR)/tools/graft
DEMO_GRAPH ?= examples/llama_block_8da4w.gir
DEMO_ARGS  ?= --sym s0=8

.PHONY: all deps configure build demo test test-asan bench format check-format clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The main job on the bundled example: verify the graph, then execute it with
# the reference interpreter and print its outputs.
demo: build
	$(GRAFT) verify $(DEMO_GRAPH)
	$(GRAFT) run $(DEMO_GRAPH) --seed 0 $(DEMO_ARGS)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# AddressSanitizer + UndefinedBehaviorSanitizer build of everything, then the tests.
test-asan: deps
	cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGRAFT_SANITIZE=ON -DGRAFT_BUILD_BENCH=OFF
	cmake --build $(ASAN_DIR) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_DIR) --output-on-failure -j $(JOBS)

bench: build
	$(BUILD_DIR)/bench/graft_bench --benchmark_format=console

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
