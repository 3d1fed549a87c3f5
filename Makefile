# Two commands for a new user on Debian 12:
#   make demo   install what is missing, build, run the main demo
#   make test   install what is missing, build, run every test
# plus `make test-sanitize` (AddressSanitizer + UndefinedBehaviorSanitizer),
# which CI runs too.

BUILD_DIR ?= build
ASAN_BUILD_DIR ?= build-asan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
COMPILERS := -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++

.PHONY: all deps build demo test test-sanitize test-bazel bench bench-vm format clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  $(COMPILERS) $(CMAKE_FLAGS)

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	$(BUILD_DIR)/examples/rpcrdma_demo

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

$(ASAN_BUILD_DIR)/build.ninja:
	cmake -S . -B $(ASAN_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  $(COMPILERS) -DRPCRDMA_SANITIZE=ON \
	  -DRPCRDMA_VM_CACHE=$(CURDIR)/$(BUILD_DIR)/vm-cache $(CMAKE_FLAGS)

test-sanitize: deps $(ASAN_BUILD_DIR)/build.ninja
	cmake --build $(ASAN_BUILD_DIR) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD_DIR) --output-on-failure -j $(JOBS)

# Benchmarks (not tests): codecs and fabrics next to memcpy and loopback TCP.
bench: build
	$(BUILD_DIR)/bench/wire_bench
	$(BUILD_DIR)/bench/engine_bench
	$(BUILD_DIR)/bench/fabric_bench

# The same inside the Soft-RoCE VM, with the verbs fabric and perftest on
# the same rxe device.
bench-vm: build
	bash interop/vm/run-in-vm.sh --cache $(CURDIR)/$(BUILD_DIR)/vm-cache \
	  --share $(CURDIR)/$(BUILD_DIR)/bench-vm --ro $(CURDIR) \
	  --ro $(CURDIR)/$(BUILD_DIR) --timeout 1200 -- \
	  bash $(CURDIR)/interop/vm/bench-guest.sh \
	  $(CURDIR)/$(BUILD_DIR)/bench/fabric_bench

# The Bazel build beside CMake (Debian's bazel-bootstrap, fully offline).
test-bazel:
	@bash scripts/install-deps.sh --with-bazel
	bazel test //...

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR)
