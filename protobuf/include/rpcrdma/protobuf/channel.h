// rpcrdma::protobuf::Channel: a connection to a server of protobuf
// services over RPC-over-RDMA, what generated stubs call through
// (protobuf/README.md describes the wire). Safe to use from any thread;
// share it between stubs with the shared_ptr Create returns.
#ifndef RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_CHANNEL_H_
#define RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_CHANNEL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/protobuf/client_context.h"
#include "rpcrdma/protobuf/status.h"
#include "rpcrdma/protobuf/stream.h"

namespace rpcrdma::protobuf {

// A `bytes` field of at least this many octets travels as its own
// DDP-eligible item (a read chunk when the call does not fit inline).
inline constexpr size_t kDefaultBulkThreshold = 4096;
// The largest reply a call accepts unless configured otherwise; a larger
// reply fails with INVALID_ARGUMENT (the server's RDMA_ERROR ERR_CHUNK).
inline constexpr uint32_t kDefaultMaxReplySize = 4 << 20;
// NEXT calls a stream's reader keeps outstanding (protobuf/README.md,
// "Streams"); at most kMaxStreamWindow (program.h).
inline constexpr uint32_t kDefaultStreamWindow = 4;

struct ChannelOptions {
  config::TransportConfig transport;
  // `bytes` fields of at least this many octets (and at least one) go as
  // chunks; smaller ones stay in the serialized message.
  size_t bulk_threshold = kDefaultBulkThreshold;
  // The reply chunk offered per call, by method full name
  // ("pkg.Service.Method"), then for every other method; a
  // ClientContext's max_reply_size overrides both.
  uint32_t max_reply_size = kDefaultMaxReplySize;
  absl::flat_hash_map<std::string, uint32_t> max_reply_size_by_method;
  // A stream's reader keeps this many NEXT calls outstanding (1 to
  // kMaxStreamWindow), each asking for one message: it holds at most this
  // many messages it has not read, and each offers a reply chunk of the
  // method's max_reply_size. A stream's writer keeps at most this many
  // SEND calls unanswered, each holding the message it sends.
  uint32_t stream_window = kDefaultStreamWindow;
};

class Channel : public std::enable_shared_from_this<Channel> {
 public:
  // Connects to `uri` (any URI rpcrdma::Channel::Create accepts:
  // soft+unix://, soft+tcp://, rdma://).
  static absl::StatusOr<std::shared_ptr<Channel>> Create(
      absl::string_view uri, ChannelOptions options = {});

  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  ~Channel();

  // One unary call of `method` of `program`, blocking until it completes.
  // Large `bytes` fields of `request` are moved out while the call is in
  // flight (sent from their own memory without a copy) and moved back
  // before this returns: no other thread may touch `request` meanwhile.
  Status CallUnary(uint32_t program,
                   const google::protobuf::MethodDescriptor& method,
                   ClientContext& context,
                   const google::protobuf::Message& request,
                   google::protobuf::Message& response);
  // The same without blocking: `done` runs once, on a loop thread (or on
  // this thread when the call is refused at once), after `request` got its
  // fields back and `response` is filled; it must not block. `context`,
  // `request` and `response` must stay valid and untouched until then.
  void CallUnaryAsync(uint32_t program,
                      const google::protobuf::MethodDescriptor& method,
                      ClientContext& context,
                      const google::protobuf::Message& request,
                      google::protobuf::Message& response,
                      std::function<void(Status)> done);

  // Opens a stream of the server-streaming `method`, blocking until the
  // server answered the open (protobuf/README.md, "Streams"). Never null: a
  // stream that could not be opened reads nothing and finishes with why.
  // `request` is lent as CallUnary's is; `context` must outlive the stream.
  // The stream keeps this Channel alive.
  std::unique_ptr<ClientStream> OpenServerStream(
      uint32_t program, const google::protobuf::MethodDescriptor& method,
      ClientContext& context, const google::protobuf::Message& request);

  // Opens a stream of the client-streaming or bidirectional `method`,
  // blocking until the server answered the open; the messages follow with
  // ClientStream::Write. Never null, as OpenServerStream's.
  std::unique_ptr<ClientStream> OpenClientStream(
      uint32_t program, const google::protobuf::MethodDescriptor& method,
      ClientContext& context);

  // The transport underneath: counters, metrics, connection_info.
  ::rpcrdma::Channel& transport() { return *transport_; }
  const ChannelOptions& options() const { return options_; }

 private:
  class UnaryCall;
  Channel(std::unique_ptr<::rpcrdma::Channel> transport,
          ChannelOptions options);
  std::unique_ptr<ClientStream> OpenStream(
      uint32_t program, const google::protobuf::MethodDescriptor& method,
      ClientContext& context, const google::protobuf::Message& request,
      bool ask_at_open);
  uint32_t MaxReplySize(const google::protobuf::MethodDescriptor& method,
                        const ClientContext& context) const;

  std::unique_ptr<::rpcrdma::Channel> transport_;
  ChannelOptions options_;
  std::atomic<uint32_t> next_xid_;
};

}  // namespace rpcrdma::protobuf

#endif  // RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_CHANNEL_H_
