// The client's messages of one client-streaming or bidirectional stream at
// the server (protobuf/README.md, "Streams", SEND): each arrives as a SEND
// call naming its seq, and the handler's Read takes them in seq order
// whatever order the calls arrive in. A SEND is answered once its message
// fits in the reader's buffer (ServiceSetOptions::stream_buffer messages
// beyond the last one read); until then its reply is held, and the
// client, whose window of SEND calls is bounded, stops writing. So the
// stream holds at most buffer + kMaxStreamWindow messages, however the
// client behaves.
#ifndef RPCRDMA_PROTOBUF_RUNTIME_STREAM_INBOX_H_
#define RPCRDMA_PROTOBUF_RUNTIME_STREAM_INBOX_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "rpcrdma/protobuf/stream.h"
#include "rpcrdma/responder.h"

namespace rpcrdma::protobuf::runtime {

class StreamInbox final : public ServerStreamReader {
 public:
  StreamInbox(uint64_t stream_id,
              const google::protobuf::MethodDescriptor& method, size_t buffer);
  ~StreamInbox() override;

  // A message of the method's request type, for a SEND to parse into.
  std::unique_ptr<google::protobuf::Message> NewMessage() const;

  // SEND of message `seq`: answered OK at once when the reader's buffer
  // has room for it, later when the reader has taken enough; refused (an
  // error status, the message dropped, the stream going on) when `seq`
  // was sent already, is at or beyond the half-close's count, or is
  // kMaxStreamWindow or more beyond the buffer; answered with the end's
  // status once the stream is closed.
  void Send(uint32_t xid, uint64_t seq,
            std::unique_ptr<google::protobuf::Message> message,
            Responder responder);
  // HALF_CLOSE: the client sent `count` messages; Read is false after
  // them. Refused when a message at or beyond `count` arrived already,
  // `count` is below what was read, or the stream was half-closed before.
  void HalfClose(uint32_t xid, uint64_t count, Responder responder);

  // The handler's: the next message in seq order, blocking until it
  // arrives; false once every message before the half-close was read, or
  // the stream was closed.
  bool Read(google::protobuf::Message& message) override;
  // The handler returned, or the stream was aborted (CANCEL, deadline,
  // connection lost): Read is false from now on, the messages held are
  // dropped, and every SEND held or still to come is answered with
  // `status` (with FAILED_PRECONDITION when it is OK: the message will
  // never be read). The first call's status stays.
  void Close(const absl::Status& status);

  // Messages received and not read (their SEND answered or not).
  size_t held() const;
  size_t peak_held() const;
  // SEND calls whose reply is held back.
  size_t waiting_sends() const;

 private:
  struct Waiting {
    uint32_t xid;
    Responder responder;
  };
  // Buffer's room: a SEND of a message before this is answered.
  uint64_t AdmittedLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return read_ + buffer_limit_;
  }
  absl::Status RefusalLocked(uint64_t seq) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const uint64_t stream_id_;
  const google::protobuf::MethodDescriptor& method_;
  const google::protobuf::Message* const prototype_;
  const size_t buffer_limit_;

  mutable absl::Mutex mu_;
  std::map<uint64_t, std::unique_ptr<google::protobuf::Message>> arrived_
      ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Waiting> unanswered_ ABSL_GUARDED_BY(mu_);
  uint64_t read_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<uint64_t> count_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> closed_ ABSL_GUARDED_BY(mu_);
  size_t peak_held_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rpcrdma::protobuf::runtime

#endif  // RPCRDMA_PROTOBUF_RUNTIME_STREAM_INBOX_H_
