// rpcrdma::protobuf::ServerContext: what a handler knows of its call and
// what it sends back besides the response, as gRPC's ServerContext.
#ifndef RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_SERVER_CONTEXT_H_
#define RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_SERVER_CONTEXT_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "rpcrdma/ids.h"
#include "rpcrdma/protobuf/metadata.h"

namespace rpcrdma::protobuf {

class ServerContext {
 public:
  using Clock = std::chrono::steady_clock;

  // The connection the call came on (rpcrdma::Server::connection_info).
  ConnectionId connection() const { return connection_; }
  // The client's address as the Server's on_connection reports it, when
  // the ServiceSet was told (ServiceSet::OnConnection); otherwise empty.
  const std::string& peer() const { return peer_; }
  // The client's deadline, from the time left it sent (none if it set
  // none).
  std::optional<Clock::time_point> deadline() const { return deadline_; }
  // True once the client's deadline has passed: the client has given up.
  // For a stream also once the client cancelled it or its connection was
  // lost. A unary call's TryCancel is not seen here: RPC-over-RDMA has no
  // cancel message (RFC 8166), so a cancelled call runs on until its
  // deadline; a stream has one of its own (protobuf/README.md, "Streams").
  bool IsCancelled() const {
    if (cancelled_ != nullptr && cancelled_->load()) return true;
    return deadline_.has_value() && Clock::now() >= *deadline_;
  }
  const Metadata& client_metadata() const { return client_metadata_; }
  // Sent with the reply (ClientContext::trailing_metadata()).
  void AddTrailingMetadata(std::string key, std::string value) {
    trailing_metadata_.emplace(std::move(key), std::move(value));
  }
  const Metadata& trailing_metadata() const { return trailing_metadata_; }

 private:
  friend class ServerCallState;
  ConnectionId connection_;
  std::string peer_;
  std::optional<Clock::time_point> deadline_;
  Metadata client_metadata_;
  Metadata trailing_metadata_;
  std::shared_ptr<const std::atomic<bool>> cancelled_;  // streams only
};

}  // namespace rpcrdma::protobuf

#endif  // RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_SERVER_CONTEXT_H_
