// Replies on their way from a Responder (any thread) to the connection the
// call came on: shared by a Server's connections (forward calls) and a
// Channel (backward calls, RFC 8167).
#ifndef RPCRDMA_PLUGIN_API_REPLY_TARGET_H_
#define RPCRDMA_PLUGIN_API_REPLY_TARGET_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "plugin/api/connection.h"
#include "plugin/engine/engine.h"
#include "rpcrdma/responder.h"
#include "rpcrdma/types.h"

namespace rpcrdma::api_internal {

using Clock = std::chrono::steady_clock;

// What a Responder sends to.
class ReplyTarget {
 public:
  virtual ~ReplyTarget() = default;
  // Sends the reply to `call` of the connection `generation` (how the
  // target tells its connections apart). FAILED_PRECONDITION once the
  // target has shut down; OK (and the reply released) when that
  // connection is gone.
  virtual absl::Status SendReply(uint64_t generation, engine::CallId call,
                                 HandlerReply reply,
                                 Clock::time_point delivered_at) = 0;
  // A Responder was dropped unanswered (responder.h): sends `reply` (its
  // SYSTEM_ERR answer to `xid`) as SendReply does and logs a warning naming
  // the connection and `xid`. Sends and logs nothing once the target has
  // shut down or that connection is gone, so that a Server or a connection
  // going away with calls in its handlers' hands logs no line per call.
  // Never blocks beyond the target's lock, which the destroying thread
  // must not hold: the targets hand Responders over only after letting it
  // go (their Outcomes).
  virtual void SendDroppedReply(uint64_t generation, engine::CallId call,
                                uint32_t xid, HandlerReply reply,
                                Clock::time_point delivered_at) = 0;
};

class ResponderAccess {
 public:
  static Responder Make(std::shared_ptr<ReplyTarget> target,
                        uint64_t generation, engine::CallId call, uint32_t xid,
                        Clock::time_point delivered_at) {
    return Responder(std::move(target), generation, call.value(), xid,
                     delivered_at.time_since_epoch().count());
  }
};

// A reply the transport holds: its on_released (types.h) runs when it is
// destroyed, whether it was sent or dropped.
class ReleasingReply {
 public:
  ReleasingReply() = default;
  explicit ReleasingReply(HandlerReply reply) : reply_(std::move(reply)) {}
  ReleasingReply(ReleasingReply&& other) noexcept
      : reply_(std::move(other.reply_)) {
    other.reply_.on_released = nullptr;
  }
  ReleasingReply& operator=(ReleasingReply&& other) noexcept {
    if (this != &other) {
      Release();
      reply_ = std::move(other.reply_);
      other.reply_.on_released = nullptr;
    }
    return *this;
  }
  ~ReleasingReply() { Release(); }

  HandlerReply& get() { return reply_; }

 private:
  void Release() {
    if (reply_.on_released) {
      std::function<void()> released = std::move(reply_.on_released);
      reply_.on_released = nullptr;
      released();
    }
  }
  HandlerReply reply_;
};

// The replies of one connection from their hand-over to the engine until
// the engine reports them sent. Used under the owner's lock; what it
// releases is returned, to be destroyed after the lock is let go.
class RepliesInFlight {
 public:
  // Hands `reply` to the engine of `conn` and runs what follows. The reply
  // stays here (its items are read by RDMA Writes) until Sent(). A reply
  // the engine refuses goes to `refused`; the engine's status is returned
  // (INVALID_ARGUMENT for misplaced results; a connection lost meanwhile is
  // not an error of the caller's: OK).
  absl::Status Send(Connection& conn, engine::CallId call, HandlerReply reply,
                    Clock::time_point delivered_at,
                    std::optional<ReleasingReply>& refused);
  // The engine sent the reply (ReplySent): it is returned for release, and
  // the time since delivery recorded on `conn`.
  std::optional<ReleasingReply> Sent(Connection& conn, engine::CallId call);
  // The connection is gone: so are its replies, returned for release.
  std::vector<ReleasingReply> TakeAll();

 private:
  struct Entry {
    ReleasingReply reply;
    Clock::time_point delivered_at;
  };
  absl::flat_hash_map<engine::CallId, Entry> replies_;
};

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_REPLY_TARGET_H_
