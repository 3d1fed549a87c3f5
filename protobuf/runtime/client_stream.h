// A stream's reading end on the client (protobuf/README.md, "Streams"):
// it keeps `window` NEXT calls outstanding, each asking for the message of
// its sequence number, and hands the replies to Read in that order
// whatever order they complete in. It holds at most `window` replies, so a
// reader that does not read stops asking and the server's writer stops at
// its buffer. A client-streaming or bidirectional stream's writing end is
// its ClientStreamSender (client_stream_sender.h), which the end stops.
#ifndef RPCRDMA_PROTOBUF_RUNTIME_CLIENT_STREAM_H_
#define RPCRDMA_PROTOBUF_RUNTIME_CLIENT_STREAM_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/protobuf/client_context.h"
#include "rpcrdma/protobuf/stream.h"

namespace rpcrdma::protobuf {

namespace runtime {

class ClientStreamSender;

struct ClientStreamParams {
  ::rpcrdma::Channel* transport = nullptr;
  std::atomic<uint32_t>* next_xid = nullptr;
  uint32_t program = 0;
  const google::protobuf::MethodDescriptor* method = nullptr;
  ClientContext* context = nullptr;
  uint64_t stream_id = 0;
  uint32_t max_reply_size = 0;
  uint32_t window = 1;        // SEND calls unanswered at most
  uint32_t read_window = 1;   // NEXT calls outstanding at most
  size_t bulk_threshold = 0;  // of the client's messages' `bytes` fields
};

// A stream that never opened: it reads nothing, Finish gives `status`.
std::unique_ptr<ClientStream> FailedClientStream(absl::Status status);
// A stream the server opened; `keep_alive` is its Channel. A method whose
// client streams gets a writing end. `ask_at_open`: the NEXT calls go out
// now, so that the server's first messages are on their way before the
// first Read (a client-streaming stream asks for its response at Finish).
std::unique_ptr<ClientStream> OpenedClientStream(
    std::shared_ptr<const void> keep_alive, ClientStreamParams params,
    bool ask_at_open = true);

}  // namespace runtime

class ClientStream::State : public std::enable_shared_from_this<State> {
 public:
  explicit State(absl::Status failed);
  // `sender`: the writing end, null when only the server streams.
  State(runtime::ClientStreamParams params,
        std::shared_ptr<runtime::ClientStreamSender> sender);

  bool Read(google::protobuf::Message& message);
  Status Finish();
  bool Write(std::unique_ptr<google::protobuf::Message> message);
  bool WritesDone();
  // The context's TryCancel: reads fail, the server is told.
  void Cancel();
  // The ClientStream goes: a stream not at its end is cancelled.
  void Abandon();
  // Fills the window with NEXT calls: at open, so that the first messages
  // are on their way before the first Read, and after each message read.
  // No lock held (a call refused at once completes on this thread).
  void Ask();

 private:
  void Arrived(uint64_t seq, absl::StatusOr<Reply> reply);
  // True for a message (in `message`); false for the end, whose status it
  // records.
  bool Take(absl::StatusOr<Reply> reply, google::protobuf::Message& message);
  // The end. `by_server`: the server ended it (nothing to tell it).
  void End(absl::Status status, bool by_server);
  void SendCancel();
  CallRequest NextCall(uint64_t seq);

  // Stops the writing end: the stream ended or was cancelled.
  void StopSending();

  const runtime::ClientStreamParams params_;
  const std::shared_ptr<runtime::ClientStreamSender> sender_;
  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, absl::StatusOr<Reply>> arrived_
      ABSL_GUARDED_BY(mu_);
  uint64_t next_read_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_ask_ ABSL_GUARDED_BY(mu_) = 0;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool cancel_sent_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Status> end_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rpcrdma::protobuf

#endif  // RPCRDMA_PROTOBUF_RUNTIME_CLIENT_STREAM_H_
