// Replies too large for what their call offered, kept so that the client
// can fetch them without the procedure running again (RFC 8166 §4.5.2:
// the responder answers such a call with RDMA_ERROR ERR_CHUNK, which tells
// the requester nothing of the size it needed).
//
// The requester then sends the call again with the same XID and a reply
// chunk large enough (RFC 8166 §3.5.4; clnt_rdma.h), and the SVCXPRT
// answers it with the kept reply: a non-idempotent procedure runs once.
// A call matches a kept reply when it has the identity the duplicate
// request cache gives it (reply_cache.h: XID, program, version, procedure,
// its arguments' length and checksum) and comes on the same connection; a
// connection that closes takes its kept replies with it (a client that
// reconnects resends through the duplicate request cache, if enabled).
//
// Bounds: at most `max_entries` replies holding at most `max_bytes` octets
// between them, each for at most `max_age`; keeping one beyond them lets
// the oldest go first, and a reply alone over `max_bytes` is not kept (its
// client's second try then runs the procedure again). Taking a reply
// forgets it. Each entry adds its bookkeeping (under 200 octets).
#ifndef RPCRDMA_ONCRPC_ADAPTER_KEPT_REPLIES_H_
#define RPCRDMA_ONCRPC_ADAPTER_KEPT_REPLIES_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>

#include "oncrpc/adapter/reply_cache.h"

namespace rpcrdma::oncrpc {

class KeptReplies {
 public:
  using Clock = std::chrono::steady_clock;
  struct Bounds {
    // Four of the largest replies the default transport configuration
    // carries (limits.max_call_size, 16 MiB and a page), for four clients
    // fetching at once.
    size_t max_entries = 64;
    size_t max_bytes = size_t{64} << 20;
    // A client fetches at once; this covers a slow one.
    Clock::duration max_age = std::chrono::seconds(30);
  };

  KeptReplies() : KeptReplies(Bounds{}) {}
  explicit KeptReplies(Bounds bounds) : bounds_(bounds) {}

  // Keeps `reply` for a second try of `call`. False when it is too large
  // to keep at all.
  bool Keep(const CallIdentity& call, std::shared_ptr<const CachedReply> reply,
            Clock::time_point now = Clock::now());
  // The reply kept for `call`, now forgotten; null when none is.
  std::shared_ptr<const CachedReply> Take(const CallIdentity& call,
                                          Clock::time_point now = Clock::now());
  // Forgets the replies kept for `connection`'s calls.
  void Closed(uint64_t connection);

  // Without taking the lock: a hint that lets the dispatcher skip
  // identifying a call when nothing is kept.
  bool maybe_empty() const { return count_.load() == 0; }
  size_t entries() const;
  size_t bytes() const;

 private:
  struct Entry {
    CallIdentity call;
    std::shared_ptr<const CachedReply> reply;
    size_t bytes = 0;
    Clock::time_point kept_at;
  };
  void Erase(std::list<Entry>::iterator entry);
  void Expire(Clock::time_point now);

  const Bounds bounds_;
  mutable std::mutex mu_;
  std::list<Entry> oldest_first_;
  size_t bytes_ = 0;
  std::atomic<size_t> count_{0};
};

}  // namespace rpcrdma::oncrpc

#endif  // RPCRDMA_ONCRPC_ADAPTER_KEPT_REPLIES_H_
