// What the adapter's end-to-end tests share: testprog.x served by rpcgen's
// dispatcher on an RPC-over-RDMA SVCXPRT, and a CLIENT of it, over the
// soft fabric's Unix-domain and TCP transports (the test's parameter).
#ifndef RPCRDMA_TESTS_ONCRPC_ADAPTER_FIXTURE_H_
#define RPCRDMA_TESTS_ONCRPC_ADAPTER_FIXTURE_H_

#include <rpc/rpc.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rpcrdma/oncrpc/clnt_rdma.h"
#include "rpcrdma/oncrpc/svc_rdma.h"
#include "tests/oncrpc/testprog_server.h"
#include "tests/testing/process_tag.h"

namespace rpcrdma::test {

// A listening URI of the scheme, unique in this process.
inline std::string ListenUri(const std::string& scheme) {
  static std::atomic<int> next{0};
  if (scheme == "soft+tcp") return "soft+tcp://127.0.0.1:0";
  return absl::StrCat("soft+unix://@rpcrdma-oncrpc-test-", ProcessTag(), "-",
                      next++);
}

// testprog's Upper Layer Binding: READ's data and ECHO's result in a
// write chunk of up to 16 MiB, the rest by the defaults.
inline oncrpc::DdpPolicy TestPolicy() {
  oncrpc::DdpPolicy policy;
  policy.procedures[TESTPROC_READ].write_chunk_octets = 16u << 20;
  policy.procedures[TESTPROC_ECHO].write_chunk_octets = 16u << 20;
  return policy;
}

inline oncrpc::AdapterConfig TestConfig() {
  oncrpc::AdapterConfig config;
  config.policies[{TESTPROG, TESTVERS}] = TestPolicy();
  return config;
}

class AdapterTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { StartServer(TestConfig(), /*threads=*/4); }
  void TearDown() override {
    if (client_ != nullptr) clnt_destroy(client_);
    StopServer();
  }

  // Serves testprog on `threads` threads of svc_rdma_run_threads (0:
  // nothing dispatches).
  void StartServer(const oncrpc::AdapterConfig& config, u_int threads) {
    absl::StatusOr<SVCXPRT*> xprt =
        CreateServerTransport(ListenUri(GetParam()), config);
    ASSERT_TRUE(xprt.ok()) << xprt.status();
    xprt_ = *xprt;
    ASSERT_TRUE(svc_reg(xprt_, TESTPROG, TESTVERS, testprog_1, nullptr));
    if (threads != 0) {
      ASSERT_TRUE(svc_rdma_run_threads(xprt_, threads));
    }
  }
  void StopServer() {
    if (xprt_ == nullptr) return;
    svc_unreg(TESTPROG, TESTVERS);
    svc_destroy(xprt_);
    xprt_ = nullptr;
  }
  CLIENT* Connect(const oncrpc::AdapterConfig& config = TestConfig(),
                  rpcvers_t version = TESTVERS, rpcprog_t program = TESTPROG) {
    absl::StatusOr<CLIENT*> client =
        CreateClient(svc_rdma_uri(xprt_), program, version, config);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *client : nullptr;
  }
  CLIENT* client() {
    if (client_ == nullptr) client_ = Connect();
    return client_;
  }
  Counters server_counters() { return oncrpc::ServerOf(xprt_)->counters(); }

  SVCXPRT* xprt_ = nullptr;
  CLIENT* client_ = nullptr;
};

inline std::string SchemeName(
    const ::testing::TestParamInfo<std::string>& info) {
  return info.param == "soft+tcp" ? "SoftTcp" : "SoftUnix";
}

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_ONCRPC_ADAPTER_FIXTURE_H_
