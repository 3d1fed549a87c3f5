# Two commands for a new user on Debian 12:
#   make demo   install what is missing, build, run the main demo
#   make test   install what is missing, build, run every test
# plus what CI runs too:
#   make test-sanitize   the tests under AddressSanitizer + UBSan (clang)
#   make test-gcc        the tests built by GCC, then its packages checked
#                        as install-check does
#   make package         the Debian packages (librpcrdma1, librpcrdma-dev,
#                        rpcrdma-tools) in $(PKG_BUILD_DIR)
#   make install-check   the consumer example against the installed tree
#                        and the unpacked packages
#   make ci              exactly what CI runs (.ci/run), with each step's
#                        time and cache hit rates; it warms the caches
#                        (ccache, Bazel's disk cache, the VM's downloads)
#                        that CI's own run then finds
# Developers' builds treat warnings as errors (RPCRDMA_WERROR); a plain
# cmake build does not.

BUILD_DIR ?= build
ASAN_BUILD_DIR ?= build-asan
GCC_BUILD_DIR ?= build-gcc
PKG_BUILD_DIR ?= build-pkg
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
COMPILERS := -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
DEVELOPER := -DRPCRDMA_WERROR=ON
# Seconds a test without a TIMEOUT of its own may run before ctest stops it
# (ctest's default is 1,500): a test that hangs costs CI minutes, not its
# budget. The slowest such test, a 64 MiB Thrift echo in JSON under ASan,
# takes under 3 minutes; the VM tests and soak runs set their own.
TEST_TIMEOUT ?= 600
CTEST := ctest --timeout $(TEST_TIMEOUT)

.PHONY: all deps build demo test test-sanitize test-gcc test-bazel package bench-vm-nfs3d \
	install-check ci soak bench bench-hostile bench-protobuf bench-vm format clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  $(COMPILERS) $(DEVELOPER) $(CMAKE_FLAGS)

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	$(BUILD_DIR)/examples/rpcrdma_demo

test: build
	$(CTEST) --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

$(ASAN_BUILD_DIR)/build.ninja:
	cmake -S . -B $(ASAN_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  $(COMPILERS) $(DEVELOPER) -DRPCRDMA_SANITIZE=ON $(CMAKE_FLAGS)

# Under the sanitizers the VM runs are those where our code meets what the
# host tests cannot give it: the verbs fabric and the API over rxe, and the
# kernel's own RPC-over-RDMA server. The other VM tests (examples, tools,
# captures, the kernel's NFS clients) run the same code paths again at a
# qemu boot each: they are left to `make test`, as CI's time is bounded.
SANITIZE_VM_TESTS := ^(fabric\.verbs|api\.verbs|kernel\.interop|kernel\.wireshark)$$

test-sanitize: deps $(ASAN_BUILD_DIR)/build.ninja
	cmake --build $(ASAN_BUILD_DIR) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(CTEST) --test-dir $(ASAN_BUILD_DIR) --output-on-failure -j $(JOBS) -LE vm
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(CTEST) --test-dir $(ASAN_BUILD_DIR) --output-on-failure -j $(JOBS) \
	  -R '$(SANITIZE_VM_TESTS)'

# GCC (Debian's default compiler) builds everything warning-free and passes
# the tests. The VM tests (label vm) are left to the clang builds: they
# exercise the same code over Soft-RoCE, cost a qemu boot each on both
# cores, and GCC's verbs fabric is still compiled here. The build is the
# plain one a new user runs (cmake's default generator and build type,
# under /usr), with warnings as errors added. Its Debian packages are then
# checked as `make install-check` checks the optimised ones: the installed
# tree and the unpacked packages, each under the consumer example, so CI
# needs no third GCC build for them.
$(GCC_BUILD_DIR)/Makefile:
	cmake -S . -B $(GCC_BUILD_DIR) \
	  -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ $(DEVELOPER) \
	  -DCMAKE_INSTALL_PREFIX=/usr $(CMAKE_FLAGS)

test-gcc: deps $(GCC_BUILD_DIR)/Makefile
	cmake --build $(GCC_BUILD_DIR) -j $(JOBS)
	$(CTEST) --test-dir $(GCC_BUILD_DIR) --output-on-failure -j $(JOBS) -LE vm
	rm -f $(GCC_BUILD_DIR)/*.deb
	cd $(GCC_BUILD_DIR) && cpack
	bash scripts/check-install.sh $(GCC_BUILD_DIR)

# The library as a consumer gets it: only its runtime dependencies, the
# default compiler, an optimised build, installed under /usr.
$(PKG_BUILD_DIR)/build.ninja:
	cmake -S . -B $(PKG_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_INSTALL_PREFIX=/usr -DRPCRDMA_BUILD_TESTS=OFF $(DEVELOPER) \
	  $(CMAKE_FLAGS)

package: deps $(PKG_BUILD_DIR)/build.ninja
	cmake --build $(PKG_BUILD_DIR) -j $(JOBS)
	cd $(PKG_BUILD_DIR) && cpack
	@ls $(PKG_BUILD_DIR)/*.deb

install-check: package
	bash scripts/check-install.sh $(PKG_BUILD_DIR)

# The soak test for ten minutes: five per soft transport (SOAK_SEED=N
# repeats a run's load). ctest runs it for 30 s per transport.
soak: build
	$(BUILD_DIR)/tests/soak/soak_test --soak_seconds=300 $(if $(SOAK_SEED),--soak_seed=$(SOAK_SEED))

# Benchmarks (not tests): codecs and fabrics next to memcpy and loopback TCP;
# the ONC RPC adapter next to libtirpc's TCP through the same rpcgen stubs.
# BENCH_LOAD=N: the two-process benchmark with N more processes spinning
# on the processors (a busy machine); 0 leaves the machine as it is.
BENCH_LOAD ?= 0
bench: build
	$(BUILD_DIR)/bench/api/two_process_bench --load_processes=$(BENCH_LOAD)
	$(BUILD_DIR)/bench/wire_bench
	$(BUILD_DIR)/bench/engine_bench
	$(BUILD_DIR)/bench/fabric_bench
	$(BUILD_DIR)/bench/api/api_bench
	$(BUILD_DIR)/bench/oncrpc/oncrpc_bench

# The protobuf adapter against gRPC over TCP loopback: the same .proto and
# handlers, client and server in two processes, each figure's ratio to
# gRPC's of the same run (bench/protobuf). Only this benchmark is built;
# CMake leaves it out where grpc++ or grpc_cpp_plugin is missing.
bench-protobuf: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS) --target protobuf_grpc_bench
	$(BUILD_DIR)/bench/protobuf/protobuf_grpc_bench

# What hostile peers make the servers hold (docs/hostile-peers.md): each
# attack against a server in a process of its own, its resident size idle,
# at its peak and after, and a legitimate call's latency meanwhile.
bench-hostile: build
	$(BUILD_DIR)/bench/hostile/hostile_figures

# The same inside the Soft-RoCE VM, with the verbs fabric and perftest on
# the same rxe device.
bench-vm: build
	bash interop/vm/run-in-vm.sh \
	  --cache $$(cmake -L -N $(BUILD_DIR) | sed -n 's/^RPCRDMA_VM_CACHE:PATH=//p') \
	  --share $(CURDIR)/$(BUILD_DIR)/bench-vm --ro $(CURDIR) \
	  --ro $(CURDIR)/$(BUILD_DIR) --timeout 1200 -- \
	  bash $(CURDIR)/interop/vm/bench-guest.sh \
	  $(CURDIR)/$(BUILD_DIR)/bench/fabric_bench \
	  $(CURDIR)/$(BUILD_DIR)/tools/perf/rpcrdma-perf

# nfs3d beside the kernel's nfsd in the Soft-RoCE VM, the same client and
# device in one boot: 1 MiB-block write and read throughput and the
# client's round trip per metadata procedure (mountstats).
bench-vm-nfs3d: build
	bash interop/vm/run-in-vm.sh \
	  --cache $$(cmake -L -N $(BUILD_DIR) | sed -n 's/^RPCRDMA_VM_CACHE:PATH=//p') \
	  --share $(CURDIR)/$(BUILD_DIR)/bench-vm-nfs3d --ro $(CURDIR) \
	  --ro $(CURDIR)/$(BUILD_DIR) --memory 2048 --services nfsd3 \
	  --env RPCRDMA_NFS3D=$(CURDIR)/$(BUILD_DIR)/examples/nfs3d/nfs3d \
	  --timeout 1200 -- \
	  bash $(CURDIR)/interop/kernel/kernel-guest.sh \
	  $(CURDIR)/$(BUILD_DIR)/interop/kernel/nfs3d_kernel_test \
	  --gtest_filter='Nfs3dBesideNfsd.*'

# The Bazel build beside CMake (Debian's bazel-bootstrap, fully offline).
test-bazel:
	@bash scripts/install-deps.sh --with-bazel
	bazel test //...

# What CI runs, here: each step's wall time and cache hit rates.
ci:
	bash .ci/run

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR) $(GCC_BUILD_DIR) $(PKG_BUILD_DIR)
