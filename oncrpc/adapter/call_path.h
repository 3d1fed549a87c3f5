// What an RPC-over-RDMA CLIENT sends its calls through: a Channel (forward
// calls) or one connection of a Server (backward calls, RFC 8167). The
// CLIENT's ops (clnt_rdma.cc) are the same over both.
#ifndef RPCRDMA_ONCRPC_ADAPTER_CALL_PATH_H_
#define RPCRDMA_ONCRPC_ADAPTER_CALL_PATH_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "rpcrdma/address.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/types.h"

namespace rpcrdma::oncrpc {

class CallPath {
 public:
  virtual ~CallPath() = default;
  // Sends the call and waits for its reply, on the calling thread.
  virtual absl::StatusOr<Reply> Call(CallRequest request) = 0;
  // Sends the call; `done` runs once with its outcome, on the connection's
  // loop thread (or on this one when the call fails at once).
  virtual void CallAsync(CallRequest request,
                         std::function<void(absl::StatusOr<Reply>)> done) = 0;
  // Sends the call and discards its reply (libtirpc's message passing:
  // the request owns everything it sends).
  void Send(CallRequest request) {
    CallAsync(std::move(request), [](absl::StatusOr<Reply>) {});
  }
  // The largest reduced reply that comes back inline (a smaller
  // max_reply_size offers no reply chunk).
  virtual uint32_t max_inline_reply() const = 0;
  // The server's address, for CLGET_SERVER_ADDR / CLGET_SVC_ADDR.
  virtual std::optional<SocketAddress> server_address() const = 0;
  // The Channel of a forward path (null for backward calls).
  virtual Channel* channel() { return nullptr; }
};

}  // namespace rpcrdma::oncrpc

#endif  // RPCRDMA_ONCRPC_ADAPTER_CALL_PATH_H_
