#include "bench/hostile/raw_calls.h"

#include <chrono>
#include <utility>

#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::bench::hostile {
using test::PutU32;

absl::StatusOr<std::unique_ptr<RawBridgeClient>> RawBridgeClient::Connect(
    const std::string& uri) {
  absl::StatusOr<std::unique_ptr<Channel>> channel =
      Channel::Create(uri, config::TransportConfig{});
  if (!channel.ok()) return channel.status();
  auto client = std::make_unique<RawBridgeClient>();
  client->channel_ = *std::move(channel);
  return client;
}

absl::StatusOr<Reply> RawBridgeClient::Call(absl::Span<const uint8_t> thrift,
                                            uint32_t max_reply, int seconds) {
  namespace wire = thrift::wire;
  std::vector<uint8_t> rpc =
      wire::CallHeader(next_xid_++, wire::Procedure::kCall);
  wire::XdrWriter(rpc).Uint32(max_reply);
  wire::OutgoingMessage message;
  message.leading = thrift;
  std::vector<uint32_t> positions;
  wire::EncodeMessage(message, rpc, positions);
  CallRequest request;
  request.xdr = std::move(rpc);
  request.max_reply_size = 64 * 1024;
  request.deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  return channel_->BlockingCall(std::move(request));
}

std::optional<thrift::wire::Status> RawBridgeClient::StatusOf(
    const absl::StatusOr<Reply>& reply) const {
  namespace wire = thrift::wire;
  if (!reply.ok()) return std::nullopt;
  absl::StatusOr<size_t> results =
      wire::DecodeReplyHeader(reply->xdr.span(), next_xid_ - 1);
  if (!results.ok()) return std::nullopt;
  wire::XdrReader in(reply->xdr.span().subspan(*results));
  absl::StatusOr<uint32_t> status = in.Uint32("status");
  if (!status.ok()) return std::nullopt;
  return static_cast<wire::Status>(*status);
}

std::vector<uint8_t> OncCall(uint32_t xid, uint32_t program, uint32_t version,
                             uint32_t procedure,
                             const std::vector<uint8_t>& arguments) {
  std::vector<uint8_t> call;
  // xid, CALL, RPC version 2, program, version, procedure, AUTH_NONE
  // credential and verifier.
  for (uint32_t word :
       {xid, 0u, 2u, program, version, procedure, 0u, 0u, 0u, 0u}) {
    PutU32(call, word);
  }
  call.insert(call.end(), arguments.begin(), arguments.end());
  return call;
}

std::vector<uint8_t> Opaque(uint32_t length, uint8_t fill) {
  std::vector<uint8_t> out;
  PutU32(out, length);
  out.insert(out.end(), length, fill);
  out.insert(out.end(), (4 - length % 4) % 4, 0);
  return out;
}

absl::StatusOr<uint32_t> CallForUint(Channel& channel,
                                     std::vector<uint8_t> call) {
  CallRequest request;
  request.xdr = std::move(call);
  request.max_reply_size = 1024;
  request.deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  absl::StatusOr<Reply> reply = channel.BlockingCall(std::move(request));
  if (!reply.ok()) return reply.status();
  absl::StatusOr<DecodedReply> decoded = DecodeReplyHeader(reply->xdr.span());
  if (!decoded.ok()) return decoded.status();
  if (absl::Status status = ReplyStatus(decoded->header); !status.ok()) {
    return status;
  }
  if (reply->xdr.size() < decoded->body_offset + 4) {
    return absl::DataLossError("the reply carries no u_int result");
  }
  return LoadBigEndian32(reply->xdr.data() + decoded->body_offset);
}

}  // namespace rpcrdma::bench::hostile
