#include "protobuf/runtime/client_stream_sender.h"

#include <chrono>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "protobuf/runtime/bulk_fields.h"
#include "protobuf/runtime/reply_status.h"
#include "protobuf/runtime/wire_codec.h"
#include "rpcrdma/protobuf/program.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::protobuf::runtime {

using google::protobuf::Message;

namespace {

// As NEXT's: the server ends the stream at its deadline and answers every
// SEND then; the transport's deadline is later, for a server that answers
// nothing (a SEND ended at the client has its read chunks revoked under
// the server's RDMA Reads of them).
constexpr auto kSendGrace = std::chrono::seconds(10);

// What a SEND call lends the transport until it is answered.
struct Sent {
  std::unique_ptr<Message> message;
  std::vector<BulkValue> bulk;
};

// The status a SEND or HALF_CLOSE was answered with.
absl::Status AnswerOf(const absl::StatusOr<Reply>& reply) {
  if (!reply.ok()) return reply.status();
  absl::StatusOr<DecodedReply> decoded = DecodeReplyHeader(reply->xdr.span());
  if (!decoded.ok()) return decoded.status();
  if (Status s = FromRpcReply(decoded->header); !s.ok()) return s;
  XdrReader in(reply->xdr.span().subspan(decoded->body_offset));
  absl::Status status;
  Metadata trailing;
  if (absl::Status s = ReadStatus(in, status, trailing); !s.ok()) return s;
  return status;
}

}  // namespace

ClientStreamSender::ClientStreamSender(ClientStreamParams params)
    : params_(params) {}

bool ClientStreamSender::Write(std::unique_ptr<Message> message) {
  uint64_t seq = 0;
  {
    absl::MutexLock lock(&mu_);
    auto room = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return failed_ || half_closed_ || unanswered_ < params_.window;
    };
    const std::optional<ClientContext::Clock::time_point> deadline =
        params_.context->deadline();
    if (!deadline.has_value()) {
      mu_.Await(absl::Condition(&room));
    } else if (!mu_.AwaitWithTimeout(
                   absl::Condition(&room),
                   absl::FromChrono(*deadline - ClientContext::Clock::now()))) {
      failed_ = true;  // Finish reads DEADLINE_EXCEEDED
    }
    // Room or not, nothing goes out after the deadline: the server ended
    // the stream at it.
    if (deadline.has_value() && ClientContext::Clock::now() >= *deadline) {
      failed_ = true;
    }
    if (failed_ || half_closed_) return false;
    ++unanswered_;
    seq = written_++;
  }
  auto sent = std::make_shared<Sent>();
  sent->message = std::move(message);
  sent->bulk = ExtractBulkFields(*sent->message, params_.bulk_threshold);
  CallRequest call = ControlCall(kStreamSendProcedure);
  AppendStreamNumberArgs({.stream_id = params_.stream_id, .number = seq},
                         call.xdr);
  std::vector<BulkItem> items;
  if (absl::Status s =
          AppendPayload(*sent->message, sent->bulk, call.xdr, items);
      !s.ok()) {
    // Too large for XDR: the seq is taken, so the stream cannot go on.
    absl::MutexLock lock(&mu_);
    failed_ = true;
    --unanswered_;
    return false;
  }
  for (const BulkItem& item : items) {
    call.arguments.push_back({item.position, item.octets});
  }
  params_.transport->Call(std::move(call), [self = shared_from_this(),
                                            sent](absl::StatusOr<Reply> reply) {
    self->Answered(std::move(reply));
  });
  return true;
}

bool ClientStreamSender::WritesDone() {
  uint64_t count = 0;
  {
    absl::MutexLock lock(&mu_);
    const std::optional<ClientContext::Clock::time_point> deadline =
        params_.context->deadline();
    if (deadline.has_value() && ClientContext::Clock::now() >= *deadline) {
      failed_ = true;  // the server ended the stream at it
    }
    if (failed_) return false;
    if (half_closed_) return true;
    half_closed_ = true;
    count = written_;
  }
  CallRequest call = ControlCall(kStreamHalfCloseProcedure);
  AppendStreamNumberArgs({.stream_id = params_.stream_id, .number = count},
                         call.xdr);
  // A refusal means the stream ended at the server: Finish reads why.
  params_.transport->Call(std::move(call), [](absl::StatusOr<Reply>) {});
  return true;
}

void ClientStreamSender::Stop() {
  absl::MutexLock lock(&mu_);
  failed_ = true;
}

void ClientStreamSender::Answered(absl::StatusOr<Reply> reply) {
  const absl::Status status = AnswerOf(reply);
  absl::MutexLock lock(&mu_);
  --unanswered_;
  // The message was not taken: the stream ended at the server (its
  // handler returned, it was cancelled, its deadline passed) or the
  // connection went. Finish reads the stream's status.
  if (!status.ok()) failed_ = true;
}

CallRequest ClientStreamSender::ControlCall(uint32_t procedure) const {
  CallRequest call;
  call.xdr = AdapterCallHeader(params_.next_xid->fetch_add(1), params_.program,
                               procedure);
  // No stream deadline, no call deadline: the transport's default one
  // (timeouts.request_deadline_ms) would end a SEND the server holds while
  // its reader is behind, revoking chunks the server may still use.
  call.deadline = params_.context->deadline().has_value()
                      ? *params_.context->deadline() + kSendGrace
                      : Deadline::max();
  return call;
}

}  // namespace rpcrdma::protobuf::runtime
