// The transports a Thrift processor reads calls from and writes replies to
// on the server side: a connection's (TRdmaServerSocket::accept(), one call
// after the other) and a single call's (TRdmaServer, a client's callback
// service).
#ifndef RPCRDMA_BRIDGE_SERVER_TRANSPORTS_H_
#define RPCRDMA_BRIDGE_SERVER_TRANSPORTS_H_

#include <thrift/TConfiguration.h>
#include <thrift/transport/TVirtualTransport.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "bridge/listener.h"
#include "bridge/responder_core.h"

namespace rpcrdma::thrift::internal {

// ConsumedSizeNote: every transport of the bridge restarts Thrift's
// consumed-size accounting (TTransport::resetConsumedMessageSize) with each
// message: 0.17's TFramedTransport never restarts it when reading, which
// ends a connection after MaxMessageSize octets.
//
// KnownSizeNote: a server's transports know each call's exact size, and
// make it Thrift's known message size (capped at the MaxMessageSize), so
// that the protocols' checkReadBytesAvailable refuses a container header
// claiming more elements than the message holds before the generated code
// allocates for them: a 26-octet call must not make the server allocate
// 100 MB because the MaxMessageSize would allow a message that large.
// Twice the size, not the size: 0.17's TCompactProtocol::readBinary calls
// checkReadBytesAvailable(read + size) after consuming those octets, which
// fails for a string at the end of an exactly sized message.
inline long KnownMessageSize(uint64_t call_size, int max_message_size) {
  const uint64_t max =
      max_message_size > 0 ? static_cast<uint64_t>(max_message_size) : 0;
  return static_cast<long>(std::min(call_size * 2, max));
}

// GuardNote: Thrift's servers catch TException and nothing else around a
// call: under TThreadedServer anything else escapes TConnectedClient and
// ends the process. Every entry point of these transports therefore turns
// any other exception (std::bad_alloc of a reply or of a kept copy, a
// failing close callback, among others) into a TTransportException, which
// those servers answer by closing the transport; a connection's transport
// also ends its connection at once, as its state is then unknown.
//
// ClaimNote: TBinaryProtocol reads a string by borrowing its declared
// length and, when the borrow fails, allocates that length before reading
// it, with no size check of its own: a 30-octet call claiming a 1 GiB
// binary would make the server allocate (and zero) 1 GiB. A borrow longer
// than what remains of the message can never be satisfied, so it fails
// here, before that allocation, as Thrift's own size checks do
// (END_OF_FILE). Borrows of a few octets stay speculative (TCompactProtocol
// borrows a varint's 10 octets and reads them one by one when the borrow
// fails).
inline constexpr uint32_t kSpeculativeBorrow = 16;

class ConnectionTransport
    : public apache::thrift::transport::TVirtualTransport<ConnectionTransport> {
 public:
  // `closed` runs once, when the transport is closed or destroyed.
  ConnectionTransport(std::shared_ptr<ConnectionState> state,
                      ResponderLimits limits,
                      std::shared_ptr<apache::thrift::TConfiguration> config,
                      std::function<void()> closed = nullptr);
  ~ConnectionTransport() override;

  bool isOpen() const override;
  bool peek() override;
  void open() override {}
  // Closes the connection (a socket server closes its client's socket).
  void close() override;
  uint32_t read(uint8_t* buffer, uint32_t length);
  void write(const uint8_t* buffer, uint32_t length);
  void flush() override;
  const uint8_t* borrow(uint8_t* buffer, uint32_t* length);
  void consume(uint32_t length);
  uint32_t readEnd() override;
  const std::string getOrigin() const override { return state_->peer; }

  const std::shared_ptr<ConnectionState>& state() const { return state_; }
  // The longest wait for the next call (TRdmaServerSocket::setRecvTimeout);
  // 0 for none.
  void set_recv_timeout(std::chrono::milliseconds timeout) {
    recv_timeout_ = timeout;
  }

 private:
  // The next call, once the processor is done with the current one;
  // throws INTERRUPTED, END_OF_FILE or TIMED_OUT instead.
  void NextCall();
  void CloseUnguarded();
  // See GuardNote: runs `body`, ending the connection on an exception
  // other than Thrift's and throwing a TTransportException in its place.
  template <typename Body>
  auto Guarded(Body body) -> decltype(body());

  const std::shared_ptr<ConnectionState> state_;
  ResponderCore core_;
  std::shared_ptr<void> acknowledged_;  // the call's QueuedCall::acknowledged
  std::function<void()> on_closed_;
  std::chrono::milliseconds recv_timeout_{0};
  bool serving_ = false;  // a call has begun and not been finished
  bool closed_ = false;
};

class CallTransport
    : public apache::thrift::transport::TVirtualTransport<CallTransport> {
 public:
  // `state`: the connection the call came on (none for a client's
  // callback service).
  CallTransport(ResponderCore& core,
                std::shared_ptr<apache::thrift::TConfiguration> config,
                std::shared_ptr<ConnectionState> state = nullptr);

  bool isOpen() const override { return true; }
  bool peek() override;
  void open() override {}
  void close() override {}
  // 0 past the call's message.
  uint32_t read(uint8_t* buffer, uint32_t length);
  void write(const uint8_t* buffer, uint32_t length);
  void flush() override;
  const uint8_t* borrow(uint8_t* buffer, uint32_t* length);
  void consume(uint32_t length);

  const std::shared_ptr<ConnectionState>& state() const { return state_; }

 private:
  ResponderCore& core_;
  const std::shared_ptr<ConnectionState> state_;
};

}  // namespace rpcrdma::thrift::internal

#endif  // RPCRDMA_BRIDGE_SERVER_TRANSPORTS_H_
