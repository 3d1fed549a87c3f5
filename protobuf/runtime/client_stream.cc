#include "protobuf/runtime/client_stream.h"

#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "protobuf/runtime/client_stream_sender.h"
#include "protobuf/runtime/reply_status.h"
#include "protobuf/runtime/wire_codec.h"
#include "rpcrdma/protobuf/program.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::protobuf {

using google::protobuf::Message;

namespace {
constexpr auto kNextGrace = std::chrono::seconds(10);
}  // namespace

namespace runtime {

std::unique_ptr<ClientStream> FailedClientStream(absl::Status status) {
  return std::make_unique<ClientStream>(
      std::make_shared<ClientStream::State>(std::move(status)));
}

std::unique_ptr<ClientStream> OpenedClientStream(
    std::shared_ptr<const void> keep_alive, ClientStreamParams params,
    bool ask_at_open) {
  ClientContext* context = params.context;
  std::shared_ptr<ClientStreamSender> sender;
  if (params.method->client_streaming()) {
    sender = std::make_shared<ClientStreamSender>(params);
  }
  auto state = std::make_shared<ClientStream::State>(params, std::move(sender));
  // Unbound by ~ClientStream (Abandon) before the state may go.
  CallBinding::BindStream(*context, [state] { state->Cancel(); });
  if (ask_at_open) state->Ask();
  return std::make_unique<ClientStream>(std::move(state),
                                        std::move(keep_alive));
}

}  // namespace runtime

ClientStream::ClientStream(std::shared_ptr<State> state,
                           std::shared_ptr<const void> keep_alive)
    : keep_alive_(std::move(keep_alive)), state_(std::move(state)) {}

ClientStream::~ClientStream() { state_->Abandon(); }

bool ClientStream::Read(Message& message) { return state_->Read(message); }

Status ClientStream::Finish() { return state_->Finish(); }

bool ClientStream::Write(std::unique_ptr<Message> message) {
  return state_->Write(std::move(message));
}

bool ClientStream::WritesDone() { return state_->WritesDone(); }

Status ClientStream::FinishWithResponse(Message& response) {
  (void)WritesDone();
  // The server's one message, then the end; a failed stream has neither.
  const bool responded = Read(response);
  Status status = Finish();
  if (status.ok() && !responded) {
    return absl::InternalError(
        "the server ended the client-streaming call OK without its "
        "response");
  }
  return status;
}

ClientStream::State::State(absl::Status failed) : end_(std::move(failed)) {}

ClientStream::State::State(runtime::ClientStreamParams params,
                           std::shared_ptr<runtime::ClientStreamSender> sender)
    : params_(params), sender_(std::move(sender)) {}

bool ClientStream::State::Write(std::unique_ptr<Message> message) {
  if (sender_ == nullptr) return false;
  {
    absl::MutexLock lock(&mu_);
    if (end_.has_value() || cancelled_) return false;
  }
  return sender_->Write(std::move(message));
}

bool ClientStream::State::WritesDone() {
  if (sender_ == nullptr) return false;
  {
    absl::MutexLock lock(&mu_);
    if (end_.has_value() || cancelled_) return false;
  }
  return sender_->WritesDone();
}

void ClientStream::State::StopSending() {
  if (sender_ != nullptr) sender_->Stop();
}

bool ClientStream::State::Read(Message& message) {
  // At the deadline the stream is over, whatever has arrived: the server
  // ends it then too, and what it answers after (the stream no longer
  // open) must not stand for the deadline's end.
  const std::optional<ClientContext::Clock::time_point> deadline =
      params_.context == nullptr ? std::nullopt : params_.context->deadline();
  if (deadline.has_value() && ClientContext::Clock::now() >= *deadline) {
    End(absl::DeadlineExceededError(
            "the stream's deadline passed before its next message"),
        /*by_server=*/false);
    return false;
  }
  Ask();
  absl::StatusOr<Reply> reply;
  bool timed_out = false;
  {
    absl::MutexLock lock(&mu_);
    if (end_.has_value()) return false;
    auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return cancelled_ || arrived_.contains(next_read_);
    };
    if (!deadline.has_value()) {
      mu_.Await(absl::Condition(&ready));
    } else {
      timed_out = !mu_.AwaitWithTimeout(
          absl::Condition(&ready),
          absl::FromChrono(*deadline - ClientContext::Clock::now()));
    }
    if (cancelled_) {
      end_ = absl::CancelledError("the stream was cancelled (TryCancel)");
      return false;
    }
    if (!timed_out) {
      auto node = arrived_.extract(next_read_);
      reply = std::move(node.mapped());
    }
  }
  if (timed_out) {
    End(absl::DeadlineExceededError(
            "the stream's deadline passed before its next message"),
        /*by_server=*/false);
    return false;
  }
  if (!Take(std::move(reply), message)) return false;
  {
    absl::MutexLock lock(&mu_);
    ++next_read_;
  }
  // The slot this message held asks for the next one at once, so that the
  // window stays full while the caller works on this one.
  Ask();
  return true;
}

Status ClientStream::State::Finish() {
  std::unique_ptr<Message> dropped;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (end_.has_value()) return *end_;
    }
    if (dropped == nullptr) {
      dropped.reset(google::protobuf::MessageFactory::generated_factory()
                        ->GetPrototype(params_.method->output_type())
                        ->New());
    }
    (void)Read(*dropped);
  }
}

// The outstanding NEXT calls are not cancelled here (Channel::Cancel): a
// call ended at the client before its reply has its reply chunk revoked,
// and a reply the server then sends into that chunk, or with Send With
// Invalidate of it (remote invalidation, RFC 8797 §4.1), breaks the
// connection for every call on it. The server answers them at once instead,
// with the end, when it gets the CANCEL.
void ClientStream::State::Cancel() {
  {
    absl::MutexLock lock(&mu_);
    if (end_.has_value() || cancelled_) return;
    cancelled_ = true;
  }
  StopSending();
  SendCancel();
}

void ClientStream::State::Abandon() {
  if (params_.context == nullptr) return;  // never opened
  CallBinding::UnbindStream(*params_.context);
  Cancel();
}

void ClientStream::State::Ask() {
  std::vector<uint64_t> seqs;
  {
    absl::MutexLock lock(&mu_);
    if (end_.has_value() || cancelled_) return;
    while (next_ask_ < next_read_ + params_.read_window) {
      seqs.push_back(next_ask_++);
    }
  }
  for (uint64_t seq : seqs) {
    params_.transport->Call(NextCall(seq), [self = shared_from_this(),
                                            seq](absl::StatusOr<Reply> reply) {
      self->Arrived(seq, std::move(reply));
    });
  }
}

void ClientStream::State::Arrived(uint64_t seq, absl::StatusOr<Reply> reply) {
  absl::MutexLock lock(&mu_);
  // Replies beyond the end (the window reaching past it) are dropped.
  if (end_.has_value() || seq < next_read_) return;
  arrived_.insert_or_assign(seq, std::move(reply));
}

bool ClientStream::State::Take(absl::StatusOr<Reply> reply, Message& message) {
  if (!reply.ok()) {
    // The transport's: UNAVAILABLE when the connection was lost (a server
    // restart included), DEADLINE_EXCEEDED, CANCELLED.
    End(reply.status(), /*by_server=*/false);
    return false;
  }
  absl::StatusOr<DecodedReply> decoded = DecodeReplyHeader(reply->xdr.span());
  if (!decoded.ok()) {
    End(absl::InternalError(
            absl::StrCat("the server's reply to NEXT is not an RFC 5531 "
                         "reply: ",
                         decoded.status().message())),
        false);
    return false;
  }
  if (Status s = runtime::FromRpcReply(decoded->header); !s.ok()) {
    End(std::move(s), /*by_server=*/true);
    return false;
  }
  XdrReader in(reply->xdr.span().subspan(decoded->body_offset));
  uint32_t kind = 0;
  Status malformed = in.ReadUint32("kind", &kind);
  if (malformed.ok() &&
      kind == static_cast<uint32_t>(runtime::StreamItem::kMessage)) {
    malformed = runtime::ReadPayload(in, message);
    if (malformed.ok()) return true;
  } else if (malformed.ok() &&
             kind == static_cast<uint32_t>(runtime::StreamItem::kEnd)) {
    Status status;
    malformed = runtime::ReadStatus(
        in, status, CallBinding::trailing_metadata(*params_.context));
    if (malformed.ok()) {
      End(std::move(status), /*by_server=*/true);
      return false;
    }
  } else if (malformed.ok()) {
    malformed = absl::InvalidArgumentError(
        absl::StrCat("kind ", kind, " is neither a message nor the end"));
  }
  End(absl::InternalError(absl::StrCat("the server's NEXT reply of ",
                                       params_.method->full_name(),
                                       " is malformed: ", malformed.message())),
      /*by_server=*/false);
  return false;
}

void ClientStream::State::End(absl::Status status, bool by_server) {
  {
    absl::MutexLock lock(&mu_);
    if (end_.has_value()) return;
    // A lost connection took the stream with it; otherwise the server is
    // told, so that its state goes now and it answers the NEXT calls still
    // outstanding (not cancelled here, as Cancel says).
    if (by_server || status.code() == absl::StatusCode::kUnavailable) {
      cancel_sent_ = true;
    }
    end_ = std::move(status);
    arrived_.clear();
  }
  StopSending();
  SendCancel();
}

void ClientStream::State::SendCancel() {
  {
    absl::MutexLock lock(&mu_);
    if (cancel_sent_) return;
    cancel_sent_ = true;
  }
  CallRequest call;
  call.xdr = runtime::AdapterCallHeader(
      params_.next_xid->fetch_add(1), params_.program, kStreamCancelProcedure);
  XdrWriter w(&call.xdr);
  (void)w.WriteUint64("stream id", params_.stream_id);
  // Told, not awaited: the answer says nothing the client needs.
  call.deadline = DeadlineIn(std::chrono::seconds(10));
  params_.transport->Call(std::move(call), [](absl::StatusOr<Reply>) {});
}

CallRequest ClientStream::State::NextCall(uint64_t seq) {
  CallRequest call;
  call.xdr = runtime::AdapterCallHeader(params_.next_xid->fetch_add(1),
                                        params_.program, kStreamNextProcedure);
  runtime::AppendNextArgs({.stream_id = params_.stream_id, .seq = seq},
                          call.xdr);
  // Each message may be as large as a unary response of the method, bulk
  // fields included: the server writes it into this reply chunk.
  call.max_reply_size = params_.max_reply_size;
  // Read waits until the stream's deadline, and the server ends the stream
  // at it, answering this call. The transport's deadline is later, for a
  // server that answers nothing: ended by the transport first, the call's
  // reply chunk would be revoked under a reply on its way (as Cancel says).
  // A stream with no deadline has NEXT calls with none either: left unset,
  // the transport's default request deadline (timeouts.request_deadline_ms)
  // would end a call the server answers later, when its stream has a
  // message, and that reply would land in a revoked chunk.
  call.deadline = params_.context->deadline().has_value()
                      ? *params_.context->deadline() + kNextGrace
                      : Deadline::max();
  return call;
}

}  // namespace rpcrdma::protobuf
