#include "bridge/responder_core.h"

#include <thrift/TOutput.h>
#include <thrift/transport/TTransportException.h>

#include <algorithm>
#include <future>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rpcrdma::thrift::internal {
namespace {

using apache::thrift::transport::TTransportException;

// RFC 5531 reply header (24 octets) and thrift_status.
constexpr size_t kReplyPrefix = 28;

std::vector<uint8_t> ResultPrefix(uint32_t xid, wire::Status status) {
  std::vector<uint8_t> xdr = wire::ReplyHeader(xid);
  wire::XdrWriter(xdr).Uint32(static_cast<uint32_t>(status));
  return xdr;
}

}  // namespace

// ---- ReplyStash
// --------------------------------------------------------------

uint32_t ReplyStash::Add(Kept* kept) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) {
    kept->done = true;
    return 0;
  }
  const uint32_t ticket = next_ticket_++;
  if (next_ticket_ == 0) next_ticket_ = 1;
  kept_[ticket] = kept;
  return ticket;
}

void ReplyStash::Remove(uint32_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  kept_.erase(ticket);
}

void ReplyStash::Wait(Kept& kept) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return kept.done || (closed_ && !kept.taken); });
}

void ReplyStash::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

void ReplyStash::Fetch(const IncomingCall& call, Responder responder,
                       size_t args_offset) {
  absl::StatusOr<wire::FetchArgs> args = wire::DecodeFetchArgs(
      absl::MakeConstSpan(call.message).subspan(args_offset));
  if (!args.ok()) {
    (void)responder.Send(
        ServerReply(wire::ReplyHeader(call.xid, wire::kGarbageArgs)));
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  auto it = kept_.find(args->ticket);
  if (it == kept_.end() || it->second->done) {
    lock.unlock();
    (void)responder.Send(StatusReply(
        call.xid, wire::Status::kRefused,
        absl::StrCat("no deferred reply has ticket ", args->ticket)));
    return;
  }
  Kept* kept = it->second;
  kept_.erase(it);
  kept->taken = true;
  if (args->discard) {
    kept->done = true;
    cv_.notify_all();
    lock.unlock();
    (void)responder.Send(StatusReply(call.xid, wire::Status::kNoReply));
    return;
  }
  // The flush that kept the reply waits until `done`: its memory lives.
  std::optional<ServerReply> reply =
      MessageReply(call.xid, *kept->message, kept->owned,
                   call.write_chunk_capacities, args->max_reply);
  lock.unlock();
  auto release = [this, kept] {
    std::lock_guard<std::mutex> released(mu_);
    kept->done = true;
    cv_.notify_all();
  };
  if (!reply.has_value()) {
    release();
    (void)responder.Send(
        StatusReply(call.xid, wire::Status::kRefused,
                    "the fetch offered less than the deferred reply needs"));
    return;
  }
  reply->on_released = std::move(release);
  (void)responder.Send(*std::move(reply));
}

// ---- Replies
// -----------------------------------------------------------------

std::optional<ServerReply> MessageReply(uint32_t xid,
                                        const wire::OutgoingMessage& message,
                                        std::shared_ptr<void> owned,
                                        absl::Span<const uint64_t> write_chunks,
                                        uint64_t max_reply) {
  const size_t chunked = std::min(write_chunks.size(), message.bulk.size());
  for (size_t i = 0; i < chunked; ++i) {
    if (message.bulk[i].data.size() > write_chunks[i]) return std::nullopt;
  }
  if (kReplyPrefix + wire::EncodedMessageSize(message, chunked) > max_reply) {
    return std::nullopt;
  }
  ServerReply reply(ResultPrefix(xid, wire::Status::kOk));
  std::vector<uint32_t> positions;
  wire::EncodeMessage(message, reply.xdr, positions);
  for (size_t i = 0; i < positions.size(); ++i) {
    reply.results.push_back(
        ReplyItem::View(positions[i], message.bulk[i].data));
  }
  // Owned runs live until the transport is done with them.
  reply.on_released = [owned = std::move(owned)] {};
  return reply;
}

ServerReply StatusReply(uint32_t xid, wire::Status status,
                        absl::string_view reason) {
  ServerReply reply(ResultPrefix(xid, status));
  if (status == wire::Status::kRefused) {
    wire::XdrWriter(reply.xdr).String(reason.substr(0, 4096));
  }
  return reply;
}

void SendReply(Responder& responder, ServerReply reply, bool wait) {
  if (!wait) {
    (void)responder.Send(std::move(reply));
    return;
  }
  auto released = std::make_shared<std::promise<void>>();
  std::future<void> done = released->get_future();
  reply.on_released = [released, keep = std::move(reply.on_released)] {
    if (keep) keep();
    released->set_value();
  };
  (void)responder.Send(std::move(reply));
  done.wait();
}

// ---- ResponderCore
// -------------------------------------------------------------

ResponderCore::~ResponderCore() {
  if (responder_.has_value()) Finish();
}

bool ResponderCore::Begin(IncomingCall call, std::optional<Responder> responder,
                          size_t args_offset) {
  writer_.Reset();
  responder_ = std::move(responder);
  xid_ = call.xid;
  write_chunks_ = call.write_chunk_capacities;
  auto message = std::make_shared<Buffer>(std::move(call.message));
  wire::XdrReader in(message->span().subspan(args_offset));
  absl::StatusOr<uint32_t> max_reply = in.Uint32("max_reply");
  absl::StatusOr<wire::IncomingMessage> decoded =
      max_reply.ok() ? wire::DecodeMessage(in, {}, limits_.max_message_size)
                     : max_reply.status();
  if (!decoded.ok()) {
    reader_.Clear();
    if (responder_.has_value()) {
      if (decoded.status().code() == absl::StatusCode::kResourceExhausted) {
        (void)responder_->Send(StatusReply(xid_, wire::Status::kRefused,
                                           decoded.status().message()));
      } else {
        (void)responder_->Send(
            ServerReply(wire::ReplyHeader(xid_, wire::kGarbageArgs)));
      }
      responder_.reset();
    }
    apache::thrift::GlobalOutput(
        absl::StrCat("rpcrdma thrift: call ", xid_,
                     " dropped: ", decoded.status().ToString())
            .c_str());
    return false;
  }
  max_reply_ = *max_reply;
  reader_.Reset(*std::move(decoded), std::move(message));
  return true;
}

void ResponderCore::Write(const uint8_t* data, uint32_t length) {
  if (absl::Status s = writer_.Write(data, length); !s.ok()) {
    throw TTransportException(TTransportException::CORRUPTED_DATA,
                              absl::StrCat("rpcrdma: ", s.message()));
  }
}

void ResponderCore::Flush() {
  if (writer_.empty()) return;
  if (!responder_.has_value()) {
    // A oneway call (answered on receipt) or a second reply: nobody waits.
    writer_.Reset();
    return;
  }
  Responder responder = *std::move(responder_);
  responder_.reset();
  const wire::OutgoingMessage message = writer_.View();
  const bool borrows = writer_.borrows();
  std::shared_ptr<void> owned = writer_.TakeOwned();
  std::optional<ServerReply> reply =
      MessageReply(xid_, message, owned, write_chunks_, max_reply_);
  if (reply.has_value()) {
    SendReply(responder, *std::move(reply), borrows);
    return;
  }
  // Too large for what the call offered: keep it until it is fetched.
  ReplyStash::Kept kept;
  kept.message = &message;
  kept.owned = owned;
  const uint32_t ticket = stash_->Add(&kept);
  if (ticket == 0) return;  // the connection is gone
  wire::Deferred deferred;
  deferred.ticket = ticket;
  deferred.reduced_size = static_cast<uint32_t>(std::min<uint64_t>(
      kReplyPrefix + wire::EncodedMessageSize(message, message.bulk.size()),
      ~uint32_t{0}));
  for (const wire::OutgoingMessage::Bulk& b : message.bulk) {
    deferred.bulk_sizes.push_back(static_cast<uint32_t>(b.data.size()));
  }
  ServerReply answer(ResultPrefix(xid_, wire::Status::kDeferred));
  wire::EncodeDeferred(deferred, answer.xdr);
  (void)responder.Send(std::move(answer));
  stash_->Wait(kept);
  stash_->Remove(ticket);
}

void ResponderCore::Finish() {
  writer_.Reset();
  if (!responder_.has_value()) return;
  (void)responder_->Send(StatusReply(xid_, wire::Status::kNoReply));
  responder_.reset();
}

}  // namespace rpcrdma::thrift::internal
