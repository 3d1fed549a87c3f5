// Helpers for test binaries that run inside the Soft-RoCE VM (label `vm`):
// the device's address, the device in use, and a check that every kernel
// RDMA object the tests created is gone at the end.
#ifndef RPCRDMA_TESTS_TESTING_RDMA_VM_H_
#define RPCRDMA_TESTS_TESTING_RDMA_VM_H_

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "plugin/fabric/verbs/verbs_fabric.h"

namespace rpcrdma::test {

// The address of the VM's RDMA device (RPCRDMA_TEST_ADDR, set by the
// harness). rdma-cm cannot resolve a route to 127.0.0.1 over Soft-RoCE, so
// servers and clients both use this one.
inline std::string RdmaTestHost() {
  const char* addr = std::getenv("RPCRDMA_TEST_ADDR");
  return addr != nullptr && *addr != '\0' ? addr : "192.0.2.1";
}

// Connects once through the verbs fabric, prints the device and its
// capabilities (so the log shows what the tests ran on) and returns its
// name, or "" when there is none.
inline std::string ProbeVerbsDevice() {
  std::unique_ptr<fabric::Fabric> fab = fabric::MakeVerbsFabric();
  auto listener = fab->Listen(absl::StrCat(RdmaTestHost(), ":0"));
  if (!listener.ok()) {
    std::printf("verbs device: none (%s)\n",
                std::string(listener.status().message()).c_str());
    return "";
  }
  auto ep = fab->Connect((*listener)->address(), {}, {});
  if (!ep.ok()) {
    std::printf("verbs device: none (%s)\n",
                std::string(ep.status().message()).c_str());
    return "";
  }
  const fabric::Capabilities& caps = (*ep)->capabilities();
  std::printf(
      "verbs device: %s (max_send_sge %u, max_inline_data %u, "
      "max_message_size %u, remote_invalidation %s)\n",
      caps.device_name.c_str(), caps.max_send_sge, caps.max_inline_data,
      caps.max_message_size, caps.remote_invalidation ? "yes" : "no");
  return caps.device_name;
}

// Counts of kernel RDMA objects (all devices) from `rdma resource show`
// (iproute2): "0: rxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 ctx 0 srq 0".
inline std::optional<std::map<std::string, long>> RdmaObjectCounts() {
  FILE* pipe = popen("rdma resource show 2>/dev/null", "r");
  if (pipe == nullptr) return std::nullopt;
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), pipe) != nullptr) text += buf;
  if (pclose(pipe) != 0 || text.empty()) return std::nullopt;
  std::map<std::string, long> counts;
  const std::vector<std::string> words =
      absl::StrSplit(text, absl::ByAnyChar(" \n"), absl::SkipEmpty());
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    long n = 0;
    if (absl::SimpleAtoi(words[i + 1], &n)) counts[words[i]] += n;
  }
  return counts;
}

// Every protection domain, completion queue, queue pair, memory region and
// rdma-cm id the tests created is gone at the end, on every path they took.
class RdmaLeakCheck : public ::testing::Environment {
 public:
  void SetUp() override { before_ = RdmaObjectCounts(); }
  void TearDown() override {
    if (!before_.has_value()) {
      std::printf("leak check: no `rdma resource show` here\n");
      return;
    }
    const std::optional<std::map<std::string, long>> after = RdmaObjectCounts();
    ASSERT_TRUE(after.has_value());
    auto count = [](const std::map<std::string, long>& m, const char* kind) {
      auto it = m.find(kind);
      return it == m.end() ? 0L : it->second;
    };
    for (const char* kind : {"pd", "cq", "qp", "cm_id", "mr"}) {
      EXPECT_EQ(count(*after, kind), count(*before_, kind))
          << kind << " objects left behind";
    }
    std::printf(
        "leak check: pd/cq/qp/cm_id/mr counts back to %ld/%ld/%ld/%ld/%ld\n",
        count(*after, "pd"), count(*after, "cq"), count(*after, "qp"),
        count(*after, "cm_id"), count(*after, "mr"));
  }

 private:
  std::optional<std::map<std::string, long>> before_;
};

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_TESTING_RDMA_VM_H_
