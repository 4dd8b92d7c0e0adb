# Drives CMake. `make` builds everything under build/ (the CLI is build/mla); `make test` builds
# and runs every test; `make demo` runs the DeepSeek-V3.2 attention step.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all test demo asan test-asan test-gpu bench sass clean golden

all: $(BUILD)/Makefile
	@cmake --build $(BUILD) -j $(JOBS)

$(BUILD)/Makefile: CMakeLists.txt
	@bash scripts/setup.sh
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

test: all
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: all
	@$(BUILD)/mla demo

# ASan + UBSan build of the same tests (CPU backend; CUDA off so the sanitizers see all code)
asan:
	@cmake -S . -B build-asan -DMLA_SANITIZE=ON -DMLA_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build build-asan -j $(JOBS)

test-asan: asan
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

# On the GPU machine: GPU tests, sanitizers and benchmarks in one call (see scripts/gpu.sh)
test-gpu: all
	@bash scripts/gpu.sh test

bench: all
	@$(BUILD)/mla bench --all

sass: all
	@cuobjdump --dump-sass $(BUILD)/libmla.a | grep -cE 'HGMMA|QGMMA' || true

clean:
	rm -rf $(BUILD) build-asan
