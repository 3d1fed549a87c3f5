// rpcrdma::thrift::TRdmaSocket: a Thrift client transport that carries each
// Thrift message as an RPC call over RPC-over-RDMA (RFC 8166), in place of
// TSocket:
//
//   auto socket = std::make_shared<TSocket>(host, port);
// becomes
//   auto socket = std::make_shared<rpcrdma::thrift::TRdmaSocket>(
//       "rdma://host:port");
//
// and generated clients, protocols (TBinaryProtocol, TCompactProtocol,
// TJSONProtocol, THeaderProtocol, TMultiplexedProtocol) and wrapping
// transports (TBufferedTransport, TFramedTransport) stay as they are. The
// URI is any the plugin accepts (rdma://, soft+tcp://, soft+unix://; see
// <rpcrdma/channel.h>). bridge/README.md is the wire mapping.
//
// Threads: like TSocket, one thread writes a message at a time and one
// thread reads a message at a time, as Thrift's synchronous and concurrent
// clients (TConcurrentClientSyncInfo) do; a writer and a reader may work
// at once, and many calls may be in flight.
//
// Bulk data: a write() of at least bulk_threshold octets (with
// TBinaryProtocol and TCompactProtocol the content of a binary or string
// field, in the caller's own memory) travels as a read chunk straight from
// that memory: flush() then returns once the server has answered, since
// the server reads that memory until it does. Large reply binaries land
// in write chunks of memory this transport registers, from which Thrift's
// readBinary copies them into the result string (the one copy its API
// forces). Other calls return from flush() once sent, and the reads that
// follow wait for their replies, in the order the calls were made.
//
// Errors are TTransportException: END_OF_FILE naming the cause when the
// connection is lost (the socket is then closed: isOpen() is false until
// open() connects again, as with TSocket), TIMED_OUT after
// setRecvTimeout(), CORRUPTED_DATA for a message over the TConfiguration
// MaxMessageSize (on either side: the call is not processed), NOT_OPEN
// when not open.
#ifndef RPCRDMA_BRIDGE_INCLUDE_RPCRDMA_THRIFT_RDMA_SOCKET_H_
#define RPCRDMA_BRIDGE_INCLUDE_RPCRDMA_THRIFT_RDMA_SOCKET_H_

#include <thrift/TConfiguration.h>
#include <thrift/TProcessor.h>
#include <thrift/protocol/TProtocol.h>
#include <thrift/transport/TVirtualTransport.h>

#include <cstdint>
#include <memory>
#include <string>

#include "rpcrdma/config.pb.h"
#include "rpcrdma/runtime.h"
#include "rpcrdma/types.h"

namespace rpcrdma::thrift {

namespace internal {
class SocketState;
}  // namespace internal

struct TRdmaSocketOptions {
  // A write() of at least this many octets is a DDP-eligible item (a read
  // chunk unless the whole call fits inline). 0: the connection's inline
  // send threshold (4096 by default).
  uint32_t bulk_threshold = 0;
  // Whether such writes lend their memory until flush() returns (true),
  // or are copied. Every transport and protocol of Thrift 0.17 leaves the
  // memory it writes untouched until flush() returns; a wrapping transport
  // of your own that reuses a buffer of bulk_threshold octets or more
  // between write() and flush() needs false.
  bool borrow_writes = true;
  // Serves calls the server makes back on this connection (RFC 8167
  // backward calls, see rdma_server.h "Callbacks"): the processor of the
  // callback service, and the protocol the server's callback clients use
  // (TBinaryProtocolFactory when null). Calls run on callback_threads
  // threads of this socket.
  std::shared_ptr<apache::thrift::TProcessor> callback_processor;
  std::shared_ptr<apache::thrift::protocol::TProtocolFactory> callback_protocol;
  uint32_t callback_threads = 1;
  // The runtime whose loops drive the connection; Runtime::Default() when
  // null.
  std::shared_ptr<Runtime> runtime;
};

class TRdmaSocket
    : public apache::thrift::transport::TVirtualTransport<TRdmaSocket> {
 public:
  // The bridge's defaults for what `transport` leaves unset: no request
  // deadline and no idle disconnect (a TSocket has neither).
  explicit TRdmaSocket(
      std::string uri,
      std::shared_ptr<apache::thrift::TConfiguration> config = nullptr);
  TRdmaSocket(std::string uri, const config::TransportConfig& transport,
              TRdmaSocketOptions options = {},
              std::shared_ptr<apache::thrift::TConfiguration> config = nullptr);
  ~TRdmaSocket() override;

  // Connects (blocking); TTransportException NOT_OPEN naming the cause.
  void open() override;
  bool isOpen() const override;
  // Whether a read would find data or wait for an outstanding reply.
  bool peek() override;
  void close() override;

  uint32_t read(uint8_t* buffer, uint32_t length);
  void write(const uint8_t* buffer, uint32_t length);
  void flush() override;
  const uint8_t* borrow(uint8_t* buffer, uint32_t* length);
  void consume(uint32_t length);
  uint32_t readEnd() override;
  uint32_t writeEnd() override;
  const std::string getOrigin() const override;

  // A deadline for each call, as TSocket's receive timeout; 0 for none.
  void setRecvTimeout(int milliseconds);
  const std::string& uri() const;
  // The connection's counters and what it settled (<rpcrdma/types.h>);
  // zero when not open.
  Counters counters() const;
  ConnectionInfo connectionInfo() const;

 private:
  std::unique_ptr<internal::SocketState> state_;
  uint64_t messages_read_ = 0;
};

}  // namespace rpcrdma::thrift

#endif  // RPCRDMA_BRIDGE_INCLUDE_RPCRDMA_THRIFT_RDMA_SOCKET_H_
