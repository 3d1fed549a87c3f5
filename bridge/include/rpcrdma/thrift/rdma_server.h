// rpcrdma::thrift::TRdmaServer: a Thrift TServer on a TRdmaServerSocket that
// processes the calls of each connection at once, on a pool of threads
// (TSimpleServer, TThreadedServer and TThreadPoolServer process one call
// at a time per connection):
//
//   auto socket = std::make_shared<rpcrdma::thrift::TRdmaServerSocket>(
//       "rdma://0.0.0.0:9090");
//   rpcrdma::thrift::TRdmaServer server(
//       std::make_shared<StoreProcessorFactory>(handler_factory), socket,
//       std::make_shared<TBinaryProtocolFactory>(), /*workers=*/8);
//   server.serve();  // until server.stop()
//
// The processor factory is asked once per connection (TConnectionInfo's
// transport is the connection's, see TRdmaConnection::of); the processor
// must be safe to call from several threads, as with TThreadPoolServer
// sharing one processor. Transport factories wrap each call's transport.
// The event handler sees preServe() and processContext() (with the call's
// transport) only.
//
// Callbacks (RFC 8167): a handler calls a service the client serves on the
// same connection (TRdmaSocketOptions::callback_processor):
//
//   void StoreHandler::watch(const std::string& key) {
//     // The connection of the call this thread serves.
//     auto connection = rpcrdma::thrift::TRdmaConnection::current();
//     watchers_[key].push_back(connection);
//   }
//   void StoreHandler::put(const std::string& key, const std::string& v) {
//     ...
//     for (auto& connection : watchers_[key]) {
//       WatcherClient client(std::make_shared<TBinaryProtocol>(
//           connection->callbackTransport()));
//       client.changed(key);  // a backward call, answered by the client
//     }
//   }
//
// during the call or any time after it, from any thread, while the
// connection lasts (TTransportException NOT_OPEN after).
#ifndef RPCRDMA_BRIDGE_INCLUDE_RPCRDMA_THRIFT_RDMA_SERVER_H_
#define RPCRDMA_BRIDGE_INCLUDE_RPCRDMA_THRIFT_RDMA_SERVER_H_

#include <thrift/TConfiguration.h>
#include <thrift/TProcessor.h>
#include <thrift/protocol/TProtocol.h>
#include <thrift/server/TServer.h>
#include <thrift/transport/TTransport.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "rpcrdma/ids.h"
#include "rpcrdma/thrift/rdma_server_socket.h"

namespace rpcrdma::thrift {

namespace internal {
class ConnectionState;
class PoolServer;
}  // namespace internal

class TRdmaServer : public apache::thrift::server::TServer {
 public:
  // `workers`: threads processing calls, 0 for one per core.
  TRdmaServer(
      const std::shared_ptr<apache::thrift::TProcessorFactory>& processors,
      const std::shared_ptr<TRdmaServerSocket>& socket,
      const std::shared_ptr<apache::thrift::protocol::TProtocolFactory>&
          protocols,
      uint32_t workers = 0);
  TRdmaServer(const std::shared_ptr<apache::thrift::TProcessor>& processor,
              const std::shared_ptr<TRdmaServerSocket>& socket,
              const std::shared_ptr<apache::thrift::protocol::TProtocolFactory>&
                  protocols,
              uint32_t workers = 0);
  ~TRdmaServer() override;

  // Listens and serves until stop(); calls being processed then finish
  // and are answered before it returns.
  void serve() override;
  void stop() override;

 private:
  std::shared_ptr<TRdmaServerSocket> socket_;
  uint32_t workers_;
  std::mutex mu_;
  std::shared_ptr<internal::PoolServer> pool_;
  bool stopped_ = false;
};

// A connection of a TRdmaServerSocket, for calls back to its client.
class TRdmaConnection {
 public:
  // The connection of the call the calling thread serves (inside a
  // processor run by a TRdmaServerSocket's transports or a TRdmaServer);
  // null elsewhere.
  static std::shared_ptr<TRdmaConnection> current();
  // The connection behind a transport a TRdmaServerSocket accepted (or a
  // TBufferedTransport / TFramedTransport around it): TConnectionInfo's
  // transport, TServerEventHandler::processContext's. Null otherwise.
  static std::shared_ptr<TRdmaConnection> of(
      const std::shared_ptr<apache::thrift::transport::TTransport>& transport);

  explicit TRdmaConnection(std::shared_ptr<internal::ConnectionState> state);

  // The connection within the server (rpcrdma/ids.h).
  ConnectionId id() const;
  // The client's address, as a URI of the server's scheme.
  const std::string& peer() const;
  bool isOpen() const;
  // A transport whose messages are backward calls (RFC 8167) to the
  // client's callback service on this connection: give it to a generated
  // client (one transport per client object). Its calls behave as
  // TRdmaSocket's, bulk data included.
  std::shared_ptr<apache::thrift::transport::TTransport> callbackTransport(
      std::shared_ptr<apache::thrift::TConfiguration> config = nullptr);

 private:
  std::shared_ptr<internal::ConnectionState> state_;
};

}  // namespace rpcrdma::thrift

#endif  // RPCRDMA_BRIDGE_INCLUDE_RPCRDMA_THRIFT_RDMA_SERVER_H_
