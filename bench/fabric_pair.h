// A connected client/server endpoint pair driven from one thread, for
// benchmarks. Both ends live in this process; each wait polls both
// event_fds, so a benchmark measures the provider's own work plus the
// system calls it makes, the same way for every provider.
#ifndef RPCRDMA_BENCH_FABRIC_PAIR_H_
#define RPCRDMA_BENCH_FABRIC_PAIR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugin/fabric/fabric.h"

namespace rpcrdma::bench {

struct RegisteredBuffer {
  std::vector<uint8_t> bytes;
  std::unique_ptr<fabric::Registration> registration;
  fabric::LocalBuffer Slice(size_t offset, size_t length) const {
    return fabric::LocalBuffer{registration.get(), offset, length};
  }
};

class FabricPair {
 public:
  // Listens on `listen_address` with `server_fabric`, connects from
  // `client_fabric` and waits for both sides to be established.
  static absl::StatusOr<std::unique_ptr<FabricPair>> Connect(
      std::unique_ptr<fabric::Fabric> client_fabric,
      std::unique_ptr<fabric::Fabric> server_fabric,
      const std::string& listen_address,
      const fabric::EndpointOptions& options = {});

  ~FabricPair();

  fabric::Endpoint& client() { return *client_; }
  fabric::Endpoint& server() { return *server_; }

  absl::StatusOr<RegisteredBuffer> Register(fabric::Endpoint& endpoint,
                                            size_t size);

  // Polls both endpoints until `endpoint` reports the completion of
  // `wr_id`; fails on an error status or after 10 s.
  absl::Status WaitCompletion(fabric::Endpoint& endpoint, uint64_t wr_id);

 private:
  FabricPair() = default;
  absl::Status PollOnce(int timeout_ms);

  std::unique_ptr<fabric::Fabric> client_fabric_;
  std::unique_ptr<fabric::Fabric> server_fabric_;
  std::unique_ptr<fabric::Listener> listener_;
  std::unique_ptr<fabric::Endpoint> client_;
  std::unique_ptr<fabric::Endpoint> server_;
  // Completions seen while waiting for something else, per endpoint.
  std::vector<fabric::Completion> client_seen_;
  std::vector<fabric::Completion> server_seen_;
};

}  // namespace rpcrdma::bench

#endif  // RPCRDMA_BENCH_FABRIC_PAIR_H_
