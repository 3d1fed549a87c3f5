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

struct ReplyStash::Kept {
  std::vector<uint8_t> octets;    // every run of the message, in order
  wire::OutgoingMessage message;  // its runs view `octets`
  std::chrono::steady_clock::time_point kept_at;
};

uint32_t ReplyStash::Keep(const wire::OutgoingMessage& message) {
  auto kept = std::make_shared<Kept>();
  size_t total = message.leading.size();
  for (const wire::OutgoingMessage::Bulk& b : message.bulk) {
    total += b.data.size() + b.following.size();
  }
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return 0;
    Expire(now);
    if (kept_.size() >= bounds_.max_replies ||
        (!kept_.empty() && octets_ + total > bounds_.max_octets)) {
      return 0;
    }
  }
  // Copied outside the lock: `octets` is reserved once, so the views into
  // it stay valid.
  kept->octets.reserve(total);
  auto append = [&](absl::Span<const uint8_t> run) {
    const size_t at = kept->octets.size();
    kept->octets.insert(kept->octets.end(), run.begin(), run.end());
    return absl::MakeConstSpan(kept->octets).subspan(at, run.size());
  };
  kept->message.info = message.info;
  kept->message.leading = append(message.leading);
  for (const wire::OutgoingMessage::Bulk& b : message.bulk) {
    wire::OutgoingMessage::Bulk copy;
    copy.data = append(b.data);
    copy.following = append(b.following);
    kept->message.bulk.push_back(copy);
  }
  kept->kept_at = now;
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return 0;
  if (kept_.size() >= bounds_.max_replies ||
      (!kept_.empty() && octets_ + total > bounds_.max_octets)) {
    return 0;
  }
  uint32_t ticket = next_ticket_++;
  if (next_ticket_ == 0) next_ticket_ = 1;
  while (kept_.count(ticket) != 0) {
    ticket = next_ticket_++;
    if (next_ticket_ == 0) next_ticket_ = 1;
  }
  octets_ += total;
  kept_[ticket] = std::move(kept);
  return ticket;
}

void ReplyStash::Expire(std::chrono::steady_clock::time_point now) {
  for (auto it = kept_.begin(); it != kept_.end();) {
    if (now - it->second->kept_at > bounds_.max_age) {
      octets_ -= it->second->octets.size();
      it = kept_.erase(it);
    } else {
      ++it;
    }
  }
}

void ReplyStash::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  kept_.clear();
  octets_ = 0;
}

size_t ReplyStash::kept() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kept_.size();
}

void ReplyStash::Fetch(const IncomingCall& call, Responder responder,
                       size_t args_offset) {
  absl::StatusOr<wire::FetchArgs> args = wire::DecodeFetchArgs(
      absl::MakeConstSpan(call.message).subspan(args_offset));
  if (!args.ok()) {
    (void)responder.Send(
        HandlerReply(wire::ReplyHeader(call.xid, wire::kGarbageArgs)));
    return;
  }
  std::shared_ptr<Kept> kept;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Expire(std::chrono::steady_clock::now());
    auto it = kept_.find(args->ticket);
    if (it != kept_.end()) {
      kept = std::move(it->second);
      octets_ -= kept->octets.size();
      kept_.erase(it);
    }
  }
  if (kept == nullptr) {
    (void)responder.Send(StatusReply(
        call.xid, wire::Status::kRefused,
        absl::StrCat("no deferred reply has ticket ", args->ticket)));
    return;
  }
  if (args->discard) {
    (void)responder.Send(StatusReply(call.xid, wire::Status::kNoReply));
    return;
  }
  const wire::OutgoingMessage& message = kept->message;
  std::optional<HandlerReply> reply =
      MessageReply(call.xid, message, std::move(kept),
                   call.write_chunk_capacities, args->max_reply);
  if (!reply.has_value()) {
    (void)responder.Send(
        StatusReply(call.xid, wire::Status::kRefused,
                    "the fetch offered less than the deferred reply needs"));
    return;
  }
  (void)responder.Send(*std::move(reply));
}

// ---- Replies
// -----------------------------------------------------------------

std::optional<HandlerReply> MessageReply(
    uint32_t xid, const wire::OutgoingMessage& message,
    std::shared_ptr<void> owned, absl::Span<const uint64_t> write_chunks,
    uint64_t max_reply) {
  const size_t chunked = std::min(write_chunks.size(), message.bulk.size());
  for (size_t i = 0; i < chunked; ++i) {
    if (message.bulk[i].data.size() > write_chunks[i]) return std::nullopt;
  }
  if (kReplyPrefix + wire::EncodedMessageSize(message, chunked) > max_reply) {
    return std::nullopt;
  }
  HandlerReply reply(ResultPrefix(xid, wire::Status::kOk));
  std::vector<uint32_t> positions;
  wire::EncodeMessage(message, reply.xdr, positions);
  for (size_t i = 0; i < positions.size(); ++i) {
    reply.results.push_back(
        ReplyItem::Lent(positions[i], message.bulk[i].data));
  }
  // Owned runs live until the transport is done with them.
  reply.on_released = [owned = std::move(owned)] {};
  return reply;
}

HandlerReply StatusReply(uint32_t xid, wire::Status status,
                         absl::string_view reason) {
  HandlerReply reply(ResultPrefix(xid, status));
  if (status == wire::Status::kRefused) {
    wire::XdrWriter(reply.xdr).String(reason.substr(0, 4096));
  }
  return reply;
}

void SendReply(Responder& responder, HandlerReply reply, bool wait) {
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
                          size_t args_offset, bool oneway) {
  writer_.Reset();
  oneway_ = oneway;
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
            HandlerReply(wire::ReplyHeader(xid_, wire::kGarbageArgs)));
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
  if (!responder_.has_value() || oneway_) {
    // A oneway call or a second reply: nobody waits for it.
    writer_.Reset();
    return;
  }
  Responder responder = *std::move(responder_);
  responder_.reset();
  const wire::OutgoingMessage message = writer_.View();
  const bool borrows = writer_.borrows();
  std::shared_ptr<void> owned = writer_.TakeOwned();
  std::optional<HandlerReply> reply =
      MessageReply(xid_, message, owned, write_chunks_, max_reply_);
  if (reply.has_value()) {
    SendReply(responder, *std::move(reply), borrows);
    return;
  }
  // Too large for what the call offered: a copy is kept for THRIFT_FETCH
  // (see ReplyStash), and flush() returns now.
  const uint32_t ticket = stash_->Keep(message);
  if (ticket == 0) {
    (void)responder.Send(StatusReply(
        xid_, wire::Status::kRefused,
        "the reply did not fit what the call offered, and the connection "
        "keeps as many deferred replies as it may"));
    return;
  }
  wire::Deferred deferred;
  deferred.ticket = ticket;
  deferred.reduced_size = static_cast<uint32_t>(std::min<uint64_t>(
      kReplyPrefix + wire::EncodedMessageSize(message, message.bulk.size()),
      ~uint32_t{0}));
  for (const wire::OutgoingMessage::Bulk& b : message.bulk) {
    deferred.bulk_sizes.push_back(static_cast<uint32_t>(b.data.size()));
  }
  HandlerReply answer(ResultPrefix(xid_, wire::Status::kDeferred));
  wire::EncodeDeferred(deferred, answer.xdr);
  (void)responder.Send(std::move(answer));
}

void ResponderCore::Finish() {
  writer_.Reset();
  if (!responder_.has_value()) return;
  (void)responder_->Send(StatusReply(xid_, wire::Status::kNoReply));
  responder_.reset();
}

}  // namespace rpcrdma::thrift::internal
