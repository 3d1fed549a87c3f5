#include "rpcrdma/protobuf/channel.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "protobuf/runtime/bulk_fields.h"
#include "protobuf/runtime/client_stream.h"
#include "protobuf/runtime/proto_options.h"
#include "protobuf/runtime/reply_chunks.h"
#include "protobuf/runtime/reply_status.h"
#include "protobuf/runtime/wire_codec.h"
#include "rpcrdma/protobuf/program.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::protobuf {

using google::protobuf::Message;
using google::protobuf::MethodDescriptor;
using runtime::BulkItem;
using runtime::BulkValue;

namespace {

absl::Status CheckMetadata(const Metadata& metadata) {
  if (metadata.size() > kMaxMetadataEntries) {
    return absl::InvalidArgumentError(
        absl::StrCat(metadata.size(), " metadata pairs; at most ",
                     kMaxMetadataEntries, " travel with a call"));
  }
  for (const auto& [key, value] : metadata) {
    if (key.size() > kMaxMetadataKey || value.size() > kMaxMetadataValue) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metadata \"", key.substr(0, 64), "\": keys are at most ",
          kMaxMetadataKey, " octets and values ", kMaxMetadataValue));
    }
  }
  return absl::OkStatus();
}

}  // namespace

// One call in flight: the request's bulk values (sent from here), and
// what the completion needs to fill the response and give them back.
class Channel::UnaryCall {
 public:
  // Reads what an OK reply carries after the trailing metadata: the
  // response's payload, or a stream's id.
  using ResultReader = std::function<Status(XdrReader&)>;

  UnaryCall(ClientContext& context, const Message& request,
            const MethodDescriptor& method, ResultReader read_result)
      : context_(context),
        // The request is the caller's, lent for the call: its bulk fields
        // are moved out and back (channel.h), never changed otherwise.
        request_(const_cast<Message&>(request)),
        method_(method),
        read_result_(std::move(read_result)) {}
  ~UnaryCall() { GiveBackBulk(); }

  // A unary call's: the reply's payload goes into `response`, its first
  // bulk values through the write chunks the call offers.
  absl::Status ExpectResponse(Message& response) {
    read_result_ = [this, &response](XdrReader& in) {
      if (Status s = runtime::ReadPayload(in, response, &reply_chunks_);
          !s.ok()) {
        return s;
      }
      return reply_chunks_.CheckUnusedChunks();
    };
    return reply_chunks_.Prepare(method_, context_, response);
  }

  absl::StatusOr<CallRequest> Build(uint32_t xid, uint32_t program,
                                    const MethodDescriptor& method,
                                    size_t threshold, uint32_t max_reply) {
    if (absl::Status s = CheckMetadata(context_.metadata()); !s.ok()) return s;
    CallRequest call;
    call.xdr = runtime::AdapterCallHeader(
        xid, program, static_cast<uint32_t>(method.index()) + 1);
    XdrWriter w(&call.xdr);
    uint32_t timeout_ms = 0;
    if (context_.deadline().has_value()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(
          *context_.deadline() - ClientContext::Clock::now());
      // A deadline already past still goes out as 1 ms: 0 means none.
      timeout_ms = static_cast<uint32_t>(
          std::clamp<int64_t>(left.count(), 1, UINT32_MAX));
      call.deadline = *context_.deadline();
    }
    (void)w.WriteUint32("timeout_ms", timeout_ms);
    runtime::AppendMetadata(context_.metadata(), w);
    bulk_ = runtime::ExtractBulkFields(request_, threshold);
    std::vector<BulkItem> items;
    if (absl::Status s =
            runtime::AppendPayload(request_, bulk_, call.xdr, items);
        !s.ok()) {
      return s;
    }
    for (const BulkItem& item : items) {
      call.arguments.push_back({item.position, item.octets});
    }
    call.results = reply_chunks_.results();
    call.max_reply_size = max_reply;
    call.wait_for_ready = context_.wait_for_ready();
    return call;
  }

  // After the transport is done with the octets.
  void GiveBackBulk() {
    runtime::BulkFieldRestorer restorer(request_);
    for (BulkValue& b : bulk_) {
      // The paths came from this message a moment ago: they fit.
      (void)restorer.Restore(b);
    }
    bulk_.clear();
  }

  // The call's outcome: the transport's error, the handler's status, or
  // INTERNAL for a reply that breaks this binding; the result reader has
  // read what came with it when it is OK.
  Status Finish(absl::StatusOr<Reply> reply) {
    GiveBackBulk();
    if (!reply.ok()) return reply.status();
    reply_chunks_.set_result_lengths(std::move(reply->result_lengths));
    absl::StatusOr<DecodedReply> decoded = DecodeReplyHeader(reply->xdr.span());
    if (!decoded.ok()) {
      return absl::InternalError(
          absl::StrCat("the server's reply is not an RFC 5531 reply: ",
                       decoded.status().message()));
    }
    if (Status s = runtime::FromRpcReply(decoded->header); !s.ok()) return s;
    XdrReader in(reply->xdr.span().subspan(decoded->body_offset));
    Status handler_status;
    if (Status s = DecodeBody(in, handler_status); !s.ok()) {
      return absl::InternalError(absl::StrCat("the server's reply to ",
                                              method_.full_name(),
                                              " is malformed: ", s.message()));
    }
    if (!handler_status.ok()) return handler_status;
    return reply_chunks_.DeliverReceives();
  }

  ClientContext& context() { return context_; }
  absl::Mutex mu;
  bool completed ABSL_GUARDED_BY(mu) = false;
  std::function<void(Status)> done;

 private:
  // A malformed body is this function's error; the handler's own status
  // goes to `handler_status`.
  Status DecodeBody(XdrReader& in, Status& handler_status) {
    Metadata& trailing = CallBinding::trailing_metadata(context_);
    if (Status s = runtime::ReadStatus(in, handler_status, trailing); !s.ok()) {
      return s;
    }
    if (!handler_status.ok()) return absl::OkStatus();
    return read_result_(in);
  }

  ClientContext& context_;
  Message& request_;
  const MethodDescriptor& method_;
  ResultReader read_result_;
  std::vector<BulkValue> bulk_;
  runtime::ReplyChunkOffer reply_chunks_;
};

absl::StatusOr<std::shared_ptr<Channel>> Channel::Create(
    absl::string_view uri, ChannelOptions options) {
  absl::StatusOr<std::unique_ptr<::rpcrdma::Channel>> transport =
      ::rpcrdma::Channel::Create(uri, options.transport);
  if (!transport.ok()) return transport.status();
  return std::shared_ptr<Channel>(
      new Channel(*std::move(transport), std::move(options)));
}

Channel::Channel(std::unique_ptr<::rpcrdma::Channel> transport,
                 ChannelOptions options)
    : transport_(std::move(transport)),
      options_(std::move(options)),
      // Random first XID, as RPC clients do (RFC 5531 §9 leaves it to the
      // client), so that a restarted client does not meet its old XIDs.
      next_xid_(std::random_device()()) {}

Channel::~Channel() = default;

uint32_t Channel::MaxReplySize(const MethodDescriptor& method,
                               const ClientContext& context) const {
  if (context.max_reply_size() != 0) return context.max_reply_size();
  auto it = options_.max_reply_size_by_method.find(method.full_name());
  if (it != options_.max_reply_size_by_method.end()) return it->second;
  // The .proto's (rpcrdma.protobuf.reply_chunks).max_size: below the
  // configuration, which may know the deployment better.
  if (const uint32_t declared = runtime::ReplyChunksOf(method).max_size();
      declared != 0) {
    return declared;
  }
  return options_.max_reply_size;
}

Status Channel::CallUnary(uint32_t program, const MethodDescriptor& method,
                          ClientContext& context, const Message& request,
                          Message& response) {
  if (CallBinding::Cancelled(context)) {
    return absl::CancelledError("the call was cancelled before it started");
  }
  UnaryCall call(context, request, method, nullptr);
  if (Status s = call.ExpectResponse(response); !s.ok()) return s;
  absl::StatusOr<CallRequest> built =
      call.Build(next_xid_.fetch_add(1), program, method,
                 options_.bulk_threshold, MaxReplySize(method, context));
  if (!built.ok()) return built.status();
  const CallId id = transport_->StartCall(*std::move(built));
  CallBinding::Bind(context, *transport_, id);
  absl::StatusOr<Reply> reply = transport_->Await(id);
  CallBinding::Unbind(context);
  return call.Finish(std::move(reply));
}

void Channel::CallUnaryAsync(uint32_t program, const MethodDescriptor& method,
                             ClientContext& context, const Message& request,
                             Message& response,
                             std::function<void(Status)> done) {
  if (CallBinding::Cancelled(context)) {
    done(absl::CancelledError("the call was cancelled before it started"));
    return;
  }
  auto call = std::make_shared<UnaryCall>(context, request, method, nullptr);
  if (Status s = call->ExpectResponse(response); !s.ok()) {
    done(std::move(s));
    return;
  }
  absl::StatusOr<CallRequest> built =
      call->Build(next_xid_.fetch_add(1), program, method,
                  options_.bulk_threshold, MaxReplySize(method, context));
  if (!built.ok()) {
    call->GiveBackBulk();
    done(built.status());
    return;
  }
  call->done = std::move(done);
  const CallId id =
      transport_->Call(*std::move(built), [call](absl::StatusOr<Reply> reply) {
        {
          absl::MutexLock lock(&call->mu);
          call->completed = true;
        }
        CallBinding::Unbind(call->context());
        Status s = call->Finish(std::move(reply));
        std::function<void(Status)> user_done = std::move(call->done);
        user_done(std::move(s));
      });
  // Bound only while the call is pending: once `done` may have run, the
  // context may be gone.
  absl::MutexLock lock(&call->mu);
  if (!call->completed) CallBinding::Bind(context, *transport_, id);
}

std::unique_ptr<ClientStream> Channel::OpenServerStream(
    uint32_t program, const MethodDescriptor& method, ClientContext& context,
    const Message& request) {
  return OpenStream(program, method, context, request, /*ask_at_open=*/true);
}

std::unique_ptr<ClientStream> Channel::OpenClientStream(
    uint32_t program, const MethodDescriptor& method, ClientContext& context) {
  // The open carries an empty request: the client's messages follow in
  // SEND calls of their own.
  std::unique_ptr<Message> empty(
      google::protobuf::MessageFactory::generated_factory()
          ->GetPrototype(method.input_type())
          ->New());
  // A client-streaming call's one response is asked for at Finish; a
  // bidirectional stream's messages are asked for now, as a server
  // stream's.
  return OpenStream(program, method, context, *empty,
                    /*ask_at_open=*/method.server_streaming());
}

std::unique_ptr<ClientStream> Channel::OpenStream(
    uint32_t program, const MethodDescriptor& method, ClientContext& context,
    const Message& request, bool ask_at_open) {
  if (CallBinding::Cancelled(context)) {
    return runtime::FailedClientStream(
        absl::CancelledError("the stream was cancelled before it opened"));
  }
  uint64_t stream_id = 0;
  UnaryCall call(context, request, method, [&stream_id](XdrReader& in) {
    return runtime::ReadStreamId(in, stream_id);
  });
  const uint32_t max_reply = MaxReplySize(method, context);
  absl::StatusOr<CallRequest> built =
      call.Build(next_xid_.fetch_add(1), program, method,
                 options_.bulk_threshold, max_reply);
  if (!built.ok()) return runtime::FailedClientStream(built.status());
  const CallId id = transport_->StartCall(*std::move(built));
  CallBinding::Bind(context, *transport_, id);
  absl::StatusOr<Reply> reply = transport_->Await(id);
  CallBinding::Unbind(context);
  if (Status s = call.Finish(std::move(reply)); !s.ok()) {
    return runtime::FailedClientStream(std::move(s));
  }
  uint32_t window =
      std::clamp<uint32_t>(options_.stream_window, 1, kMaxStreamWindow);
  // A client-streaming call reads one message and the end: two NEXT calls
  // ask for both, and its SEND calls keep the whole window.
  return runtime::OpenedClientStream(
      shared_from_this(),
      {.transport = transport_.get(),
       .next_xid = &next_xid_,
       .program = program,
       .method = &method,
       .context = &context,
       .stream_id = stream_id,
       .max_reply_size = max_reply,
       .window = window,
       .read_window = method.server_streaming() ? window : std::min(window, 2u),
       .bulk_threshold = options_.bulk_threshold},
      ask_at_open);
}

}  // namespace rpcrdma::protobuf
