// Streaming methods (protobuf/README.md, "Streams"), as gRPC's synchronous
// API names them:
//
//   server-streaming:
//     client:  std::unique_ptr<ClientReader<Resp>> reader =
//                  stub.Method(&context, request);
//              Resp message;
//              while (reader->Read(&message)) { ... }
//              Status status = reader->Finish();
//     server:  Status Method(ServerContext* context, const Req* request,
//                            ServerWriter<Resp>* writer) override;
//   client-streaming:
//     client:  std::unique_ptr<ClientWriter<Req>> writer =
//                  stub.Method(&context, &response);
//              writer->Write(message); ...
//              writer->WritesDone();
//              Status status = writer->Finish();  // then `response`
//     server:  Status Method(ServerContext* context,
//                            ServerReader<Req>* reader,
//                            Resp* response) override;
//   bidirectional:
//     client:  std::unique_ptr<ClientReaderWriter<Req, Resp>> stream =
//                  stub.Method(&context);
//              Write, WritesDone, Read until false, Finish
//     server:  Status Method(ServerContext* context,
//                            ServerReaderWriter<Resp, Req>* stream) override;
//
// The client pulls each of the server's messages with a call of its own,
// keeping a bounded window of them outstanding
// (ChannelOptions::stream_window); the server holds at most
// ServiceSetOptions::stream_buffer messages a client has not asked for
// yet, and Write blocks beyond that. Each of the client's messages is a
// call of its own too, answered once the server's reader has room for it
// (stream_buffer messages not read); the client keeps at most the window
// of them unanswered, and its Write blocks beyond that. A slow reader
// slows the writer either way, and memory stays bounded on both sides.
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

// The reading end of a client-streaming or bidirectional stream, as the
// runtime gives it to a handler.
class ServerStreamReader {
 public:
  virtual ~ServerStreamReader() = default;
  // The client's next message (of the method's request type) into
  // `message`, in the order the client wrote them; blocks until it comes.
  // False once the client half-closed and every message was read, or the
  // stream ended without the handler (ServerContext::IsCancelled() is then
  // true).
  virtual bool Read(google::protobuf::Message& message) = 0;
};

// What a client-streaming handler reads the client's messages from.
template <typename Req>
class ServerReader {
 public:
  explicit ServerReader(ServerStreamReader* stream) : stream_(stream) {}
  bool Read(Req* message) { return stream_->Read(*message); }

 private:
  ServerStreamReader* stream_;
};

// A bidirectional handler's two ends: Read as ServerReader's, Write as
// ServerWriter's. Reading and writing may be on two threads.
template <typename Resp, typename Req>
class ServerReaderWriter {
 public:
  ServerReaderWriter(ServerStreamReader* reader, ServerStreamWriter* writer)
      : reader_(reader), writer_(writer) {}
  bool Read(Req* message) { return reader_->Read(*message); }
  bool Write(const Resp& message) {
    return writer_->Write(std::make_unique<Resp>(message));
  }
  bool Write(Resp&& message) {
    return writer_->Write(std::make_unique<Resp>(std::move(message)));
  }

 private:
  ServerStreamReader* reader_;
  ServerStreamWriter* writer_;
};

// One stream on the client, untyped (ClientReader, ClientWriter and
// ClientReaderWriter are the typed faces). Read and Finish are for one
// thread at a time, and so are Write and WritesDone (the two pairs may be
// on two threads); the context's TryCancel may come from any thread.
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

  // A client-streaming or bidirectional stream's: sends `message` (of the
  // method's request type; its large `bytes` fields go as read chunks,
  // from the message's own memory), blocking while the window of messages
  // the server has not taken yet is full. False once the stream failed or
  // ended, or after WritesDone (Finish says why); always false for a
  // server-streaming stream.
  bool Write(std::unique_ptr<google::protobuf::Message> message);
  // Tells the server that no more messages come (its Read is false after
  // the last). False when the stream failed or ended.
  bool WritesDone();
  // A client-streaming stream's end: WritesDone if not done yet, then the
  // server's single message into `response` and the status.
  Status FinishWithResponse(google::protobuf::Message& response);

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

template <typename Req>
class ClientWriter {
 public:
  // `response` is filled by Finish when the status is OK.
  ClientWriter(std::unique_ptr<ClientStream> stream,
               google::protobuf::Message* response)
      : stream_(std::move(stream)), response_(response) {}
  // Copies `message`; the rvalue form moves it.
  bool Write(const Req& message) {
    return stream_->Write(std::make_unique<Req>(message));
  }
  bool Write(Req&& message) {
    return stream_->Write(std::make_unique<Req>(std::move(message)));
  }
  bool WritesDone() { return stream_->WritesDone(); }
  // Waits for the response (WritesDone first if not done yet).
  Status Finish() { return stream_->FinishWithResponse(*response_); }

 private:
  std::unique_ptr<ClientStream> stream_;
  google::protobuf::Message* response_;
};

template <typename Req, typename Resp>
class ClientReaderWriter {
 public:
  explicit ClientReaderWriter(std::unique_ptr<ClientStream> stream)
      : stream_(std::move(stream)) {}
  bool Write(const Req& message) {
    return stream_->Write(std::make_unique<Req>(message));
  }
  bool Write(Req&& message) {
    return stream_->Write(std::make_unique<Req>(std::move(message)));
  }
  bool WritesDone() { return stream_->WritesDone(); }
  bool Read(Resp* message) { return stream_->Read(*message); }
  // WritesDone if not done yet; then as ClientReader's.
  Status Finish() {
    (void)stream_->WritesDone();
    return stream_->Finish();
  }

 private:
  std::unique_ptr<ClientStream> stream_;
};

}  // namespace rpcrdma::protobuf

#endif  // RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_STREAM_H_
