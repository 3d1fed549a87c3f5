// Replies on their way from a Responder (any thread) to the loop thread
// that owns the connection: shared by the Server (forward calls) and the
// Channel (backward calls, RFC 8167).
#ifndef RPCRDMA_PLUGIN_API_RESPONDER_QUEUE_H_
#define RPCRDMA_PLUGIN_API_RESPONDER_QUEUE_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "plugin/api/connection.h"
#include "plugin/engine/engine.h"
#include "rpcrdma/responder.h"

namespace rpcrdma::api_internal {

// A reply on its way: its on_released (types.h) runs when it is destroyed,
// whether it was sent or dropped.
class HeldReply {
 public:
  HeldReply() = default;
  explicit HeldReply(ServerReply reply)
      : reply_(std::make_unique<ServerReply>(std::move(reply))) {}
  HeldReply(HeldReply&&) noexcept = default;
  HeldReply& operator=(HeldReply&& other) noexcept {
    Release();
    reply_ = std::move(other.reply_);
    return *this;
  }
  ~HeldReply() { Release(); }

  ServerReply& operator*() { return *reply_; }
  ServerReply* operator->() { return reply_.get(); }

 private:
  void Release() {
    if (reply_ != nullptr && reply_->on_released) {
      std::function<void()> released = std::move(reply_->on_released);
      reply_->on_released = nullptr;
      released();
    }
    reply_.reset();
  }
  std::unique_ptr<ServerReply> reply_;
};

class ReplyQueue {
 public:
  struct Item {
    uint64_t connection = 0;
    engine::CallId call = 0;
    HeldReply reply;
    // When the call was delivered to the handler (ConnectionMetrics).
    std::chrono::steady_clock::time_point delivered_at;
  };

  // Wakes the loop through `wake_fd` (an eventfd) after each Push.
  explicit ReplyQueue(int wake_fd) : wake_fd_(wake_fd) {}

  // FAILED_PRECONDITION once closed.
  absl::Status Push(Item item);
  std::vector<Item> Take();
  // Replies pushed afterwards are refused (the owner is going away).
  void Close();

 private:
  std::mutex mu_;
  bool closed_ = false;
  const int wake_fd_;
  std::vector<Item> items_;
};

class ResponderAccess {
 public:
  static Responder Make(std::shared_ptr<ReplyQueue> queue, uint64_t connection,
                        engine::CallId call);
};

// Loop-thread side: hands queued replies to their connection's engine and
// keeps each reply's memory until the engine reports it sent.
class ReplySender {
 public:
  // `find` maps a connection id to its live Connection (or nullptr).
  template <typename Find>
  void SendQueued(ReplyQueue& queue, Find find) {
    for (ReplyQueue::Item& item : queue.Take()) {
      Connection* conn = find(item.connection);
      if (conn == nullptr || conn->disconnected()) continue;
      Send(*conn, std::move(item));
    }
  }
  // The engine sent the reply: its memory may go, and the time since the
  // call was delivered is recorded on the connection.
  void Sent(uint64_t connection, engine::CallId call) {
    auto it = replies_.find({connection, call});
    if (it == replies_.end()) return;
    it->second.connection->RecordReplyTime(std::chrono::steady_clock::now() -
                                           it->second.delivered_at);
    replies_.erase(it);
  }
  // The connection is gone: so are its replies.
  void Forget(uint64_t connection);
  void Clear() { replies_.clear(); }

 private:
  void Send(Connection& conn, ReplyQueue::Item item);

  struct InFlight {
    HeldReply reply;
    Connection* connection = nullptr;  // alive until Forget()
    std::chrono::steady_clock::time_point delivered_at;
  };
  std::map<std::pair<uint64_t, engine::CallId>, InFlight> replies_;
};

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_RESPONDER_QUEUE_H_
