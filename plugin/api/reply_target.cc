#include "plugin/api/reply_target.h"

#include <utility>

#include "plugin/wire/rpc_reply.h"

namespace rpcrdma {

Responder::Responder(std::shared_ptr<api_internal::ReplyTarget> target,
                     uint64_t generation, uint64_t call, uint32_t xid,
                     int64_t delivered_ns)
    : target_(std::move(target)),
      generation_(generation),
      call_(call),
      delivered_ns_(delivered_ns),
      xid_(xid) {}

// Moving leaves `other` without a target: only one of the two answers.
Responder::Responder(Responder&& other) noexcept = default;

Responder& Responder::operator=(Responder&& other) noexcept {
  if (this != &other) {
    AnswerDropped();  // the call this one held is let go of
    target_ = std::move(other.target_);
    other.target_ = nullptr;
    generation_ = other.generation_;
    call_ = other.call_;
    delivered_ns_ = other.delivered_ns_;
    xid_ = other.xid_;
  }
  return *this;
}

Responder::~Responder() { AnswerDropped(); }

void Responder::AnswerDropped() noexcept {
  if (target_ == nullptr) return;  // replied, or moved from
  std::shared_ptr<api_internal::ReplyTarget> target = std::move(target_);
  target_ = nullptr;
  target->SendDroppedReply(generation_, engine::CallId(call_), xid_,
                           HandlerReply(wire::EncodeSystemErrReply(xid_)),
                           api_internal::Clock::time_point(
                               api_internal::Clock::duration(delivered_ns_)));
}

absl::Status Responder::Send(HandlerReply reply) {
  if (target_ == nullptr) {
    // Released on the way out, as types.h promises for a refused reply.
    api_internal::ReleasingReply refused(std::move(reply));
    return absl::FailedPreconditionError("responder: already replied");
  }
  std::shared_ptr<api_internal::ReplyTarget> target = std::move(target_);
  target_ = nullptr;
  return target->SendReply(generation_, engine::CallId(call_), std::move(reply),
                           api_internal::Clock::time_point(
                               api_internal::Clock::duration(delivered_ns_)));
}

namespace api_internal {

absl::Status RepliesInFlight::Send(Connection& conn, engine::CallId call,
                                   HandlerReply reply,
                                   Clock::time_point delivered_at,
                                   std::optional<ReleasingReply>& refused) {
  engine::OutgoingReply outgoing;
  outgoing.xdr = std::move(reply.xdr);  // the items stay with the entry
  outgoing.results.reserve(reply.results.size());
  for (const ReplyItem& r : reply.results) {
    outgoing.results.push_back(engine::DdpResult{r.position(), r.bytes()});
  }
  auto [it, inserted] = replies_.try_emplace(
      call, Entry{ReleasingReply(std::move(reply)), delivered_at});
  if (!inserted) {
    return absl::InternalError("a second reply to one call");  // impossible
  }
  absl::Status st = conn.Reply(call, std::move(outgoing));
  if (!st.ok()) {
    refused = std::move(it->second.reply);
    replies_.erase(it);
  }
  if (st.code() == absl::StatusCode::kUnavailable) return absl::OkStatus();
  return st;
}

std::optional<ReleasingReply> RepliesInFlight::Sent(Connection& conn,
                                                    engine::CallId call) {
  auto it = replies_.find(call);
  if (it == replies_.end()) return std::nullopt;
  conn.RecordReplyTime(Clock::now() - it->second.delivered_at);
  ReleasingReply reply = std::move(it->second.reply);
  replies_.erase(it);
  return reply;
}

std::vector<ReleasingReply> RepliesInFlight::TakeAll() {
  std::vector<ReleasingReply> all;
  all.reserve(replies_.size());
  for (auto& [call, entry] : replies_) all.push_back(std::move(entry.reply));
  replies_.clear();
  return all;
}

}  // namespace api_internal
}  // namespace rpcrdma
