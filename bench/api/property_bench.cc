// Version two's property operations on the soft fabric (bench/api,
// draft-cel-nfsv4-rpcrdma-version-two-04 §5.3).
#include "bench/api/property_bench.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/server.h"
#include "tools/perf_program/perf_program.h"

namespace rpcrdma::bench {
namespace {

std::string PropertyUri() {
  static std::atomic<int> n{0};
  return absl::StrCat("soft+unix://@rpcrdma-property-bench-", getpid(), "-",
                      n++);
}

}  // namespace

// The cost of a property change (draft-04 §5.3): a round trip of
// RDMA2_REQPROP and RDMA2_RESPROP, the receive buffer size alternating
// between two sizes the Server grants; compare with Version/rpcrdma_v2/0.
void PropertyChangeRpcrdma(benchmark::State& state) {
  config::TransportConfig config;
  config.set_version_policy(config::TransportConfig::V2);
  config.mutable_inline_threshold()->set_receive_grantable(16384);
  // A side asks for no more than it sends inline (properties.cc).
  config.mutable_inline_threshold()->set_send(16384);
  auto server = Server::Create(PropertyUri(), config, perf::ServeCall);
  if (!server.ok()) std::abort();
  auto channel = Channel::Create((*server)->uri(), config);
  if (!channel.ok()) std::abort();
  uint32_t size = 8192;
  for (auto _ : state) {
    if (!(*channel)->RequestPeerReceiveSize(size).ok()) {
      state.SkipWithError("request declined");
    }
    size = size == 8192 ? 16384 : 8192;
  }
}

// The cost of an update (draft-04 §5.3.4): the Channel states its receive
// buffer size again (RDMA2_UPDPROP) and waits for the answer to the empty
// RDMA2_REQPROP that follows it, which shows the Server took it.
void PropertyUpdateRpcrdma(benchmark::State& state) {
  config::TransportConfig config;
  config.set_version_policy(config::TransportConfig::V2);
  config.mutable_inline_threshold()->set_receive_grantable(16384);
  auto server = Server::Create(PropertyUri(), config, perf::ServeCall);
  if (!server.ok()) std::abort();
  auto channel = Channel::Create((*server)->uri(), config);
  if (!channel.ok()) std::abort();
  for (auto _ : state) {
    if (!(*channel)->UpdateReceiveSize(16384).ok()) {
      state.SkipWithError("update failed");
    }
  }
}

}  // namespace rpcrdma::bench
