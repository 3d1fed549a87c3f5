#include "protobuf/runtime/server_call.h"

#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/message.h"
#include "protobuf/runtime/bulk_fields.h"
#include "protobuf/runtime/reply_chunks.h"
#include "protobuf/runtime/wire_codec.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::protobuf {

using google::protobuf::MessageFactory;

std::vector<uint8_t> AcceptedHeader(uint32_t xid, AcceptStat stat) {
  ReplyHeader header;
  header.xid = xid;
  header.reply_stat = ReplyStat::kAccepted;
  header.verifier = AuthNone();
  header.accept_stat = stat;
  if (stat == AcceptStat::kProgMismatch) {
    header.mismatch_low = header.mismatch_high = 1;
  }
  std::vector<uint8_t> out;
  (void)EncodeReplyHeader(header, out);  // AUTH_NONE cannot be too long
  return out;
}

// The status word, its message and the trailing metadata, each cut to
// what the wire carries (metadata.h's limits: pairs beyond them are not
// sent, as the client would refuse the whole reply).
void AppendStatus(const absl::Status& status, const Metadata& trailing,
                  std::vector<uint8_t>& out) {
  XdrWriter w(&out);
  (void)w.WriteUint32("status code", static_cast<uint32_t>(status.code()));
  (void)w.WriteString("status message",
                      status.message().substr(0, runtime::kMaxStatusMessage));
  Metadata kept;
  for (const auto& [key, value] : trailing) {
    if (kept.size() == kMaxMetadataEntries) break;
    if (key.size() > kMaxMetadataKey || value.size() > kMaxMetadataValue) {
      continue;
    }
    kept.emplace(key, value);
  }
  runtime::AppendMetadata(kept, w);
}

ServerCallState::ServerCallState(
    const google::protobuf::MethodDescriptor& method, uint32_t xid,
    Responder responder, size_t bulk_threshold)
    : method_(method),
      xid_(xid),
      responder_(std::move(responder)),
      bulk_threshold_(bulk_threshold) {
  MessageFactory* factory = MessageFactory::generated_factory();
  request_.reset(factory->GetPrototype(method.input_type())->New());
  response_.reset(factory->GetPrototype(method.output_type())->New());
}

void ServerCallState::SetCallInfo(ConnectionId connection, std::string peer,
                                  uint32_t timeout_ms, Metadata metadata) {
  context_.connection_ = connection;
  context_.peer_ = std::move(peer);
  if (timeout_ms != 0) {
    context_.deadline_ =
        ServerContext::Clock::now() + std::chrono::milliseconds(timeout_ms);
  }
  context_.client_metadata_ = std::move(metadata);
}

void ServerCallState::SetCancelFlag(
    std::shared_ptr<const std::atomic<bool>> cancelled) {
  context_.cancelled_ = std::move(cancelled);
}

void ServerCallState::AnswerStreamOpened(uint64_t stream_id) {
  std::vector<uint8_t> xdr = AcceptedHeader(xid_, AcceptStat::kSuccess);
  AppendStatus(absl::OkStatus(), {}, xdr);
  XdrWriter w(&xdr);
  (void)w.WriteUint64("stream id", stream_id);
  (void)responder_.Send(HandlerReply(std::move(xdr)));
}

void ServerCallState::Answer(absl::Status status) {
  std::vector<uint8_t> xdr = AcceptedHeader(xid_, AcceptStat::kSuccess);
  AppendStatus(status, context_.trailing_metadata(), xdr);
  if (!status.ok()) {
    (void)responder_.Send(HandlerReply(std::move(xdr)));
    return;
  }
  // The response's large fields leave it for the reply, which lends them
  // to the transport and keeps them until it has sent them.
  auto bulk = std::make_shared<std::vector<runtime::BulkValue>>(
      runtime::ExtractBulkFields(*response_, bulk_threshold_));
  // A value larger than its write chunk would make the transport answer
  // ERR_CHUNK, which tells the client nothing: a status says which.
  if (absl::Status s = runtime::CheckReplyFitsWriteChunks(
          *bulk, write_chunks_, *method_.output_type());
      !s.ok()) {
    std::vector<uint8_t> refused = AcceptedHeader(xid_, AcceptStat::kSuccess);
    AppendStatus(s, context_.trailing_metadata(), refused);
    (void)responder_.Send(HandlerReply(std::move(refused)));
    return;
  }
  std::vector<runtime::BulkItem> items;
  if (absl::Status s = runtime::AppendPayload(*response_, *bulk, xdr, items);
      !s.ok()) {
    std::vector<uint8_t> failed = AcceptedHeader(xid_, AcceptStat::kSuccess);
    AppendStatus(absl::InternalError(s.message()), {}, failed);
    (void)responder_.Send(HandlerReply(std::move(failed)));
    return;
  }
  std::vector<ReplyItem> results;
  results.reserve(items.size());
  for (const runtime::BulkItem& item : items) {
    results.push_back(ReplyItem::Lent(item.position, item.octets));
  }
  (void)responder_.Send(
      HandlerReply(std::move(xdr), std::move(results), [bulk] {}));
}

void SendRpcError(Responder& responder, uint32_t xid, AcceptStat stat) {
  (void)responder.Send(HandlerReply(AcceptedHeader(xid, stat)));
}

void SendStatusOnly(Responder& responder, uint32_t xid,
                    const absl::Status& status) {
  std::vector<uint8_t> xdr = AcceptedHeader(xid, AcceptStat::kSuccess);
  AppendStatus(status, {}, xdr);
  (void)responder.Send(HandlerReply(std::move(xdr)));
}

}  // namespace rpcrdma::protobuf
