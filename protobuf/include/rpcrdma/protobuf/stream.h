// Server-streaming methods (protobuf/README.md, "Streams"), as gRPC's
// synchronous API names them:
//
//   client:  std::unique_ptr<ClientReader<Resp>> reader =
//                stub.Method(&context, request);
//            Resp message;
//            while (reader->Read(&message)) { ... }
//            Status status = reader->Finish();
//   server:  Status Method(ServerContext* context, const Req* request,
//                          ServerWriter<Resp>* writer) override;
//
// The client pulls each message with a call of its own, keeping a bounded
// window of them outstanding (ChannelOptions::stream_window); the server
// holds at most ServiceSetOptions::stream_buffer messages a client has not
// asked for yet, and Write blocks beyond that: a slow reader slows the
// writer, and memory stays bounded on both sides.
#ifndef RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_STREAM_H_
#define RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_STREAM_H_

#include <memory>
#include <utility>

#include "google/protobuf/message.h"
#include "rpcrdma/protobuf/status.h"

namespace rpcrdma::protobuf {

// The writing end of one stream, as the runtime gives it to a handler.
class ServerStreamWriter {
 public:
  virtual ~ServerStreamWriter() = default;
  // Queues `message` (of the method's response type) for the client. Blocks
  // while the stream's buffer is full. False once the stream has ended
  // without the handler: the client cancelled, the deadline passed or the
  // connection was lost (ServerContext::IsCancelled() is then true); the
  // handler should return, and what it returns is not sent.
  virtual bool Write(std::unique_ptr<google::protobuf::Message> message) = 0;
};

// What a server-streaming handler writes its messages to. The stream ends
// when the handler returns: its status and the context's trailing metadata
// go to the client after the last message written.
template <typename Resp>
class ServerWriter {
 public:
  explicit ServerWriter(ServerStreamWriter* stream) : stream_(stream) {}
  // Copies `message`; the rvalue form moves it (its large `bytes` fields
  // are then sent from their own memory, as a unary response's are).
  bool Write(const Resp& message) {
    return stream_->Write(std::make_unique<Resp>(message));
  }
  bool Write(Resp&& message) {
    return stream_->Write(std::make_unique<Resp>(std::move(message)));
  }

 private:
  ServerStreamWriter* stream_;
};

// The reading end of one stream on the client, untyped (ClientReader is
// the typed face). Read and Finish are for one thread at a time; the
// context's TryCancel may come from any thread.
class ClientStream {
 public:
  class State;
  // `keep_alive`: what the stream reads through (its Channel), released
  // after the stream's state is told it is abandoned.
  explicit ClientStream(std::shared_ptr<State> state,
                        std::shared_ptr<const void> keep_alive = nullptr);
  ClientStream(const ClientStream&) = delete;
  ClientStream& operator=(const ClientStream&) = delete;
  // A stream not read to its end is cancelled (the server is told, so its
  // state goes at once).
  ~ClientStream();

  // The next message into `message`, blocking until it comes; false at the
  // end of the stream or when it failed (Finish says which).
  bool Read(google::protobuf::Message& message);
  // The stream's status, once every message has been read: the handler's,
  // or the transport's (UNAVAILABLE when the connection was lost,
  // DEADLINE_EXCEEDED, CANCELLED). Messages not read yet are read and
  // dropped first. The server's trailing metadata is then in the context.
  Status Finish();

 private:
  std::shared_ptr<const void> keep_alive_;  // outlives state_'s last use
  std::shared_ptr<State> state_;
};

template <typename Resp>
class ClientReader {
 public:
  explicit ClientReader(std::unique_ptr<ClientStream> stream)
      : stream_(std::move(stream)) {}
  bool Read(Resp* message) { return stream_->Read(*message); }
  Status Finish() { return stream_->Finish(); }

 private:
  std::unique_ptr<ClientStream> stream_;
};

}  // namespace rpcrdma::protobuf

#endif  // RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_STREAM_H_
