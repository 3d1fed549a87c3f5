// rpcrdma::thrift::TRdmaServerSocket: a Thrift server transport that serves
// RPC-over-RDMA (RFC 8166) clients (TRdmaSocket), in place of
// TServerSocket:
//
//   auto transport = std::make_shared<TServerSocket>(port);
// becomes
//   auto transport = std::make_shared<rpcrdma::thrift::TRdmaServerSocket>(
//       "rdma://0.0.0.0:port");
//
// under TSimpleServer, TThreadedServer and TThreadPoolServer, with the same
// processors, protocol factories and transport factories. Each accepted
// connection is a transport that reads the calls of that connection one
// after the other and answers each with the reply the processor writes;
// stop() (interruptChildren(), then interrupt()) ends the serve() loop and
// every connection's loop as with sockets: a call being processed still
// gets its reply. Those servers process one call at a time per connection;
// TRdmaServer (rdma_server.h) processes a connection's calls at once.
//
// A call over the TConfiguration MaxMessageSize is refused with the reason
// (the client's TTransportException names it) and not processed. A reply
// too large for what the client offered is kept until the client fetches
// it (bridge/README.md); the processor's flush() returns once it is sent.
// Closing an accepted transport (as TConnectedClient does after a
// processing error) closes its connection.
#ifndef RPCRDMA_BRIDGE_INCLUDE_RPCRDMA_THRIFT_RDMA_SERVER_SOCKET_H_
#define RPCRDMA_BRIDGE_INCLUDE_RPCRDMA_THRIFT_RDMA_SERVER_SOCKET_H_

#include <thrift/TConfiguration.h>
#include <thrift/transport/TServerTransport.h>

#include <cstdint>
#include <memory>
#include <string>

#include "rpcrdma/config.pb.h"
#include "rpcrdma/runtime.h"
#include "rpcrdma/types.h"

namespace rpcrdma::thrift {

class TRdmaServer;

namespace internal {
class ServerSocketState;
}  // namespace internal

struct TRdmaServerSocketOptions {
  // A reply write() of at least this many octets is a DDP-eligible item
  // (into the client's write chunk); 0 for 4096.
  uint32_t bulk_threshold = 0;
  // The runtime whose loops drive the connections; Runtime::Default() when
  // null.
  std::shared_ptr<Runtime> runtime;
};

class TRdmaServerSocket : public apache::thrift::transport::TServerTransport {
 public:
  // The bridge's defaults for what `transport` leaves unset: the
  // transport's idle disconnect and handshake limit (timeouts.idle_ms,
  // timeouts.handshake_ms), no backward-call deadline, and calls as large as
  // the TConfiguration MaxMessageSize (limits.max_call_size; at most 256 MiB).
  explicit TRdmaServerSocket(
      std::string uri,
      std::shared_ptr<apache::thrift::TConfiguration> config = nullptr);
  TRdmaServerSocket(
      std::string uri, const config::TransportConfig& transport,
      TRdmaServerSocketOptions options = {},
      std::shared_ptr<apache::thrift::TConfiguration> config = nullptr);
  ~TRdmaServerSocket() override;

  // Starts listening; TTransportException NOT_OPEN naming the cause.
  void listen() override;
  bool isOpen() const override;
  // Wakes the thread in accept(), which throws INTERRUPTED.
  void interrupt() override;
  // Every accepted transport (and any accepted later) throws INTERRUPTED
  // when it next waits for a call.
  void interruptChildren() override;
  // Stops listening and closes every connection.
  void close() override;

  // As TServerSocket's: accept() waits at most `milliseconds` and throws
  // TIMED_OUT (on which Thrift's servers accept again); 0 for no limit.
  void setAcceptTimeout(int milliseconds);
  // As TServerSocket's: a transport accepted from now on waits at most
  // `milliseconds` for its next call and throws TIMED_OUT, which ends the
  // connection under Thrift's servers (TConnectedClient); 0 for no limit.
  // Connections are also ended by the transport's idle disconnect
  // (timeouts.idle_ms), also under TRdmaServer.
  void setRecvTimeout(int milliseconds);

  // The URI clients connect to (a port of 0 resolved) once listening.
  std::string uri() const;
  // Summed over every connection, past and present.
  Counters counters() const;
  size_t connections() const;

 protected:
  std::shared_ptr<apache::thrift::transport::TTransport> acceptImpl() override;

 private:
  friend class TRdmaServer;
  std::shared_ptr<internal::ServerSocketState> state_;
};

}  // namespace rpcrdma::thrift

#endif  // RPCRDMA_BRIDGE_INCLUDE_RPCRDMA_THRIFT_RDMA_SERVER_SOCKET_H_
