// The soft fabric's own tests' fixture (soft_fabric_test.cc,
// soft_fabric_processes_test.cc): addresses, factories and options, and a
// fixture that shares the conformance suite's helpers but builds its own
// fabrics.
#ifndef RPCRDMA_TESTS_FABRIC_SOFT_FABRIC_FIXTURE_H_
#define RPCRDMA_TESTS_FABRIC_SOFT_FABRIC_FIXTURE_H_

#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugin/fabric/soft/soft_fabric.h"
#include "tests/fabric/fabric_conformance.h"
#include "tests/testing/process_tag.h"

namespace rpcrdma::test {

inline std::string UniqueName() {
  static std::atomic<int> counter{0};
  return absl::StrCat("rpcrdma-fabric-", ProcessTag(), "-", counter++);
}

inline std::string UnixAddress() {
  std::string dir = ::testing::TempDir();
  if (dir.empty() || dir.back() != '/') dir += '/';
  std::string path = absl::StrCat(dir, UniqueName(), ".sock");
  // A socket path must fit sun_path (108 octets with its NUL); fall back
  // to a path relative to the working directory.
  if (path.size() > 100) path = absl::StrCat(UniqueName(), ".sock");
  return absl::StrCat("unix:", path);
}

inline FabricFactory SoftFactory(std::string name,
                                 std::function<std::string()> address,
                                 fabric::SoftFabricOptions options = {}) {
  FabricFactory f;
  f.name = std::move(name);
  f.make_client = [options] { return MakeSoftFabric(options); };
  f.make_server = [options] { return MakeSoftFabric(options); };
  f.listen_address = std::move(address);
  return f;
}

inline fabric::SoftFabricOptions CrossMemory(bool on) {
  fabric::SoftFabricOptions options;
  options.cross_memory_attach = on;
  return options;
}

// Cross-memory attach for transfers of every length.
inline fabric::SoftFabricOptions CrossMemoryForAll() {
  fabric::SoftFabricOptions options;
  options.cross_memory_min_length = 0;
  return options;
}

// Soft-specific tests share the conformance fixture's helpers but build
// their own fabrics.
class SoftFabricTest : public FabricConformanceTest {
 protected:
  void SetUp() override {}
  void Start(fabric::SoftFabricOptions client_options,
             fabric::SoftFabricOptions server_options = {},
             std::string address = "tcp:127.0.0.1:0") {
    client_fabric_ = MakeSoftFabric(client_options);
    server_fabric_ = MakeSoftFabric(server_options);
    absl::StatusOr<std::unique_ptr<fabric::Listener>> l =
        server_fabric_->Listen(address);
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = *std::move(l);
  }
  // Forks an EchoServer and drives it; both sides offer cross-memory
  // attach when `cross_memory`.
  void RunPeersInSeparateProcesses(bool cross_memory);

 public:
  // The fixture's helpers for free functions.
  Memory RegisterFor(Side& side, size_t size, uint32_t seed) {
    return Register(side, size, seed);
  }
  fabric::RemoteRegion BindFor(Side& side, const fabric::LocalBuffer& buffer,
                               uint32_t access, uint64_t wr_id) {
    return Bind(side, buffer, access, wr_id);
  }
  fabric::WorkStatus WaitCompletionFor(Side& side, uint64_t wr_id,
                                       std::vector<Side*> others) {
    return WaitCompletion(side, wr_id, std::move(others));
  }
};

inline std::vector<uint8_t> Seq(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + 1);
  return v;
}

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_FABRIC_SOFT_FABRIC_FIXTURE_H_
