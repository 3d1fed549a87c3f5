// What a TRdmaServerSocket holds, shared with TRdmaServer.
#ifndef RPCRDMA_BRIDGE_SERVER_SOCKET_STATE_H_
#define RPCRDMA_BRIDGE_SERVER_SOCKET_STATE_H_

#include <thrift/TConfiguration.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "bridge/listener.h"
#include "bridge/responder_core.h"
#include "rpcrdma/thrift/rdma_server_socket.h"

namespace rpcrdma::thrift::internal {

class ServerSocketState
    : public std::enable_shared_from_this<ServerSocketState> {
 public:
  ServerSocketState(std::string uri, config::TransportConfig transport,
                    TRdmaServerSocketOptions options,
                    std::shared_ptr<apache::thrift::TConfiguration> config);

  // Starts the listener; without `hooks`, accepted connections queue for
  // Accept() and their calls for their transports.
  void Listen(std::optional<Listener::Hooks> hooks = std::nullopt);
  // The next accepted connection's transport; throws INTERRUPTED after
  // Interrupt(), NOT_OPEN when not listening.
  std::shared_ptr<apache::thrift::transport::TTransport> Accept();
  void Interrupt();
  // Stops listening, as TServerSocket::close() closes the listening socket
  // only: connections whose transports were accepted go on until those
  // are closed (TThreadedServer lets its client threads finish after
  // serve()'s accept loop ended); the Server goes with the last of them.
  void Close();
  bool listening() const;
  std::shared_ptr<Listener> listener() const;
  Counters counters() const;

  const std::string requested_uri;
  const config::TransportConfig transport;
  const TRdmaServerSocketOptions options;
  const std::shared_ptr<apache::thrift::TConfiguration> config;
  const ResponderLimits limits;
  // TRdmaServerSocket::setAcceptTimeout and setRecvTimeout; 0 for none.
  std::atomic<int> accept_timeout_ms{0};
  std::atomic<int> recv_timeout_ms{0};

 private:
  // An accepted transport was closed (or destroyed).
  void TransportClosed();
  void StopListener(std::unique_lock<std::mutex>& lock);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<Listener> listener_;
  std::deque<std::shared_ptr<ConnectionState>> accepted_;
  bool interrupted_ = false;
  bool closing_ = false;
  int live_transports_ = 0;
  Counters final_counters_;
};

}  // namespace rpcrdma::thrift::internal

#endif  // RPCRDMA_BRIDGE_SERVER_SOCKET_STATE_H_
