#include "plugin/api/responder_queue.h"

#include <unistd.h>

namespace rpcrdma {

struct Responder::State {
  std::shared_ptr<api_internal::ReplyQueue> queue;
  uint64_t connection = 0;
  engine::CallId call = 0;
  bool replied = false;
  std::chrono::steady_clock::time_point delivered_at;
};

Responder::Responder(std::unique_ptr<State> state) : state_(std::move(state)) {}
Responder::Responder(Responder&&) noexcept = default;
Responder& Responder::operator=(Responder&&) noexcept = default;
Responder::~Responder() = default;

absl::Status Responder::Send(ServerReply reply) {
  if (state_ == nullptr || state_->replied) {
    return absl::FailedPreconditionError("responder: already replied");
  }
  state_->replied = true;
  return state_->queue->Push(api_internal::ReplyQueue::Item{
      state_->connection, state_->call,
      api_internal::HeldReply(std::move(reply)), state_->delivered_at});
}

namespace api_internal {

absl::Status ReplyQueue::Push(Item item) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) {
      return absl::FailedPreconditionError("responder: shut down");
    }
    items_.push_back(std::move(item));
  }
  uint64_t one = 1;
  ssize_t n = write(wake_fd_, &one, sizeof one);
  (void)n;
  return absl::OkStatus();
}

std::vector<ReplyQueue::Item> ReplyQueue::Take() {
  std::vector<Item> items;
  std::lock_guard<std::mutex> lock(mu_);
  items.swap(items_);
  return items;
}

void ReplyQueue::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
}

Responder ResponderAccess::Make(std::shared_ptr<ReplyQueue> queue,
                                uint64_t connection, engine::CallId call) {
  auto state = std::make_unique<Responder::State>();
  state->queue = std::move(queue);
  state->connection = connection;
  state->call = call;
  state->delivered_at = std::chrono::steady_clock::now();
  return Responder(std::move(state));
}

void ReplySender::Forget(uint64_t connection) {
  for (auto r = replies_.begin(); r != replies_.end();) {
    r = r->first.first == connection ? replies_.erase(r) : std::next(r);
  }
}

void ReplySender::Send(Connection& conn, ReplyQueue::Item item) {
  HeldReply stored = std::move(item.reply);
  engine::OutgoingReply reply;
  reply.xdr = std::move(stored->xdr);  // the items stay in `stored`
  for (const ReplyItem& r : stored->results) {
    reply.results.push_back(engine::DdpResult{
        r.position,
        r.view.empty() ? absl::Span<const uint8_t>(r.data) : r.view});
  }
  std::pair<uint64_t, engine::CallId> key{item.connection, item.call};
  replies_[key] = InFlight{std::move(stored), &conn, item.delivered_at};
  engine::Actions out;
  absl::Status st = conn.engine().Reply(item.call, std::move(reply), out);
  if (!st.ok()) replies_.erase(key);
  conn.RunReply(out);
}

}  // namespace api_internal
}  // namespace rpcrdma
