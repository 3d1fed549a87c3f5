// The writing end of a client-streaming or bidirectional stream on the
// client (protobuf/README.md, "Streams", SEND): each message is a SEND
// call naming its seq, its large `bytes` fields read chunks sent from the
// message's own memory. At most `window` SEND calls are unanswered at
// once and Write blocks beyond: the server answers a SEND only once its
// reader has room, so a slow reader slows the writer, and the client
// holds at most `window` messages.
#ifndef RPCRDMA_PROTOBUF_RUNTIME_CLIENT_STREAM_SENDER_H_
#define RPCRDMA_PROTOBUF_RUNTIME_CLIENT_STREAM_SENDER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/message.h"
#include "protobuf/runtime/client_stream.h"

namespace rpcrdma::protobuf::runtime {

class ClientStreamSender
    : public std::enable_shared_from_this<ClientStreamSender> {
 public:
  explicit ClientStreamSender(ClientStreamParams params);

  // False once stopped, failed (a SEND answered with an error, or not at
  // all), half-closed, or at the context's deadline.
  bool Write(std::unique_ptr<google::protobuf::Message> message);
  // Sends HALF_CLOSE with the count written, not waiting for its answer
  // (a writer waiting for its SEND calls to be answered could wait for a
  // server blocked writing to a reader that is not reading). False when
  // the stream failed or was stopped; true again when called twice.
  bool WritesDone();
  // The stream ended or was cancelled: a blocked Write returns false.
  void Stop();

 private:
  void Answered(absl::StatusOr<Reply> reply);
  CallRequest ControlCall(uint32_t procedure) const;

  const ClientStreamParams params_;
  absl::Mutex mu_;
  size_t unanswered_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t written_ ABSL_GUARDED_BY(mu_) = 0;
  bool half_closed_ ABSL_GUARDED_BY(mu_) = false;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace rpcrdma::protobuf::runtime

#endif  // RPCRDMA_PROTOBUF_RUNTIME_CLIENT_STREAM_SENDER_H_
