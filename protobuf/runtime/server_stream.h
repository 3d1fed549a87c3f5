// One open server stream (protobuf/README.md, "Streams"): the messages its
// handler wrote that no NEXT call has taken yet, the NEXT calls waiting for
// a message, and how it ended. Message `seq` answers the NEXT call asking
// for `seq`, whatever order the calls arrive in; the end (the handler's
// status and trailing metadata) answers the NEXT calls asking for the
// message after the last one, and beyond.
#ifndef RPCRDMA_PROTOBUF_RUNTIME_SERVER_STREAM_H_
#define RPCRDMA_PROTOBUF_RUNTIME_SERVER_STREAM_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "protobuf/runtime/stream_inbox.h"
#include "rpcrdma/protobuf/metadata.h"
#include "rpcrdma/protobuf/program.h"
#include "rpcrdma/protobuf/stream.h"
#include "rpcrdma/responder.h"

namespace rpcrdma::protobuf::runtime {

class ServerStream final : public ServerStreamWriter {
 public:
  // `buffer`: the messages held that no NEXT has asked for; Write blocks
  // beyond. `on_done` runs once, on no lock of this stream, when the
  // stream needs no more state: its end and every message before it were
  // sent (or it was aborted), and its handler has returned.
  // `deadline`: the open call's; a Write or an end after it is the
  // deadline's end, DEADLINE_EXCEEDED, whoever comes first to it (the
  // handler or StreamTable's watcher).
  ServerStream(uint64_t id, const google::protobuf::MethodDescriptor& method,
               size_t buffer, size_t bulk_threshold,
               std::optional<std::chrono::steady_clock::time_point> deadline,
               std::function<void()> on_done);
  ~ServerStream() override;

  uint64_t id() const { return id_; }
  const google::protobuf::MethodDescriptor& method() const { return method_; }
  // The client's messages of a client-streaming or bidirectional method;
  // null for a server-streaming one.
  StreamInbox* inbox() { return inbox_.get(); }
  std::shared_ptr<const std::atomic<bool>> cancelled() const {
    return cancelled_;
  }

  // The handler's side.
  bool Write(std::unique_ptr<google::protobuf::Message> message) override;
  // The handler returned: the end of the stream, after what it wrote.
  void Finish(absl::Status status, Metadata trailing);

  // A NEXT call asking for message `seq`. Answered at once when that
  // message (or the end) is there, else kept until the handler writes it.
  void Next(uint32_t xid, uint64_t seq, Responder responder);
  // Ends the stream without its handler (CANCEL, the deadline, the
  // connection lost, the server stopping): Write fails from now on,
  // messages held are dropped, every NEXT is answered with `status`, and
  // so is every SEND held or still to come.
  void Abort(absl::Status status);

  size_t buffered() const;
  size_t peak_buffered() const;

 private:
  struct Waiting {
    uint32_t xid;
    Responder responder;
  };
  struct Outgoing {
    Waiting to;
    std::unique_ptr<google::protobuf::Message> message;  // null: the end
    absl::Status end;                                    // when it is
    Metadata trailing;
  };
  // Pairs waiting calls with held messages (or the end) in order.
  std::deque<Outgoing> TakeReadyLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends, then runs on_done if that was the last thing the stream needed.
  void Send(std::deque<Outgoing> out);
  void SendMessage(Waiting& to, google::protobuf::Message& message);
  static void SendEnd(Waiting& to, const absl::Status& status,
                      const Metadata& trailing);
  void MaybeDone() ABSL_LOCKS_EXCLUDED(mu_);
  // Aborts with DEADLINE_EXCEEDED when the deadline has passed.
  void AbortIfExpired();

  const uint64_t id_;
  const google::protobuf::MethodDescriptor& method_;
  const size_t buffer_limit_;
  const size_t bulk_threshold_;
  const std::optional<std::chrono::steady_clock::time_point> deadline_;
  std::function<void()> on_done_;
  const std::unique_ptr<StreamInbox> inbox_;
  const std::shared_ptr<std::atomic<bool>> cancelled_ =
      std::make_shared<std::atomic<bool>>(false);

  mutable absl::Mutex mu_;
  // Messages sent..sent+held.size()-1, written and not yet asked for.
  std::deque<std::unique_ptr<google::protobuf::Message>> held_
      ABSL_GUARDED_BY(mu_);
  uint64_t sent_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, Waiting> waiting_ ABSL_GUARDED_BY(mu_);
  // Set when the handler returned (its status) or the stream was aborted.
  std::optional<absl::Status> end_ ABSL_GUARDED_BY(mu_);
  Metadata trailing_ ABSL_GUARDED_BY(mu_);
  bool aborted_ ABSL_GUARDED_BY(mu_) = false;
  bool end_sent_ ABSL_GUARDED_BY(mu_) = false;
  bool handler_done_ ABSL_GUARDED_BY(mu_) = false;
  bool done_reported_ ABSL_GUARDED_BY(mu_) = false;
  size_t peak_held_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rpcrdma::protobuf::runtime

#endif  // RPCRDMA_PROTOBUF_RUNTIME_SERVER_STREAM_H_
