// The responder half of the bridge: one call of the bridge program, read by
// a Thrift processor and answered with the reply it writes. Behind the
// server's connection transports, TRdmaServer and a client's callback
// service.
//
// The reply's bulk items lend the processor's memory (ReplyItem::View) and
// go into the write chunks the call offered (RFC 8166 §3.4.7); flush()
// returns once the transport is done with that memory (on_released). A
// reply the offered chunks cannot carry is kept and answered DEFERRED with
// the sizes it needs; the client fetches it (THRIFT_FETCH) offering them,
// and flush() returns once that reply has gone.
#ifndef RPCRDMA_BRIDGE_RESPONDER_CORE_H_
#define RPCRDMA_BRIDGE_RESPONDER_CORE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "bridge/message_buffers.h"
#include "rpcrdma/responder.h"

namespace rpcrdma::thrift::internal {

// Replies kept for THRIFT_FETCH on one connection (or one client's
// callback service). A kept reply is a copy: the processor's memory goes
// back at once, and no worker waits for a fetch that may never come.
// Bounded per connection in number, octets and age (older ones are dropped
// whenever the connection keeps or fetches a reply; all go with the
// connection, which the transport's idle disconnect ends).
class ReplyStash {
 public:
  struct Bounds {
    size_t max_replies = 64;
    // Beyond a first reply of any size (a reply has no bound of its own).
    uint64_t max_octets = uint64_t{64} << 20;
    std::chrono::milliseconds max_age{60000};
  };
  ReplyStash() : ReplyStash(Bounds{}) {}
  explicit ReplyStash(Bounds bounds) : bounds_(bounds) {}

  // Keeps a copy of `message`; its ticket, or 0 when the stash is closed
  // or the bounds leave no room (the call is then refused).
  uint32_t Keep(const wire::OutgoingMessage& message);
  // THRIFT_FETCH: answers `call` with the kept reply (on a loop thread).
  void Fetch(const IncomingCall& call, Responder responder, size_t args_offset);
  // The connection is gone: kept replies are dropped, later fetches fail.
  void Close();
  size_t kept() const;

 private:
  struct Kept;
  void Expire(std::chrono::steady_clock::time_point now);

  const Bounds bounds_;
  mutable std::mutex mu_;
  std::map<uint32_t, std::shared_ptr<Kept>> kept_;
  uint64_t octets_ = 0;
  uint32_t next_ticket_ = 1;
  bool closed_ = false;
};

// The reply carrying `message` to `xid`, if the chunks the call offered
// (`write_chunks`, `max_reply`) can carry it; its items view the message's
// memory, which `owned` keeps.
std::optional<HandlerReply> MessageReply(
    uint32_t xid, const wire::OutgoingMessage& message,
    std::shared_ptr<void> owned, absl::Span<const uint64_t> write_chunks,
    uint64_t max_reply);
// Sends `reply` and, when it lends memory (`wait`), returns once the
// transport released it.
void SendReply(Responder& responder, HandlerReply reply, bool wait);
// A reply with a thrift_status and nothing else (NO_REPLY), or REFUSED
// with its reason.
HandlerReply StatusReply(uint32_t xid, wire::Status status,
                         absl::string_view reason = {});

struct ResponderLimits {
  WriterLimits writer;
  uint64_t max_message_size = 100u << 20;
};

class ResponderCore {
 public:
  ResponderCore(std::shared_ptr<ReplyStash> stash, ResponderLimits limits)
      : stash_(std::move(stash)), limits_(limits) {
    writer_.set_limits(limits.writer);
  }
  ~ResponderCore();
  ResponderCore(const ResponderCore&) = delete;
  ResponderCore& operator=(const ResponderCore&) = delete;

  // Takes a THRIFT_CALL or THRIFT_ONEWAY call (the latter already answered:
  // no responder). A call that does not decode, or exceeds
  // max_message_size, is answered (GARBAGE_ARGS, REFUSED) and false
  // returned.
  // A oneway with a responder (answered once processed) gets NO_REPLY from
  // Finish() whatever the processor writes.
  bool Begin(IncomingCall call, std::optional<Responder> responder,
             size_t args_offset, bool oneway = false);
  // The call's message, for the processor.
  MessageReader& reader() { return reader_; }
  // TTransport write()/flush() of the reply. Throw TTransportException.
  void Write(const uint8_t* data, uint32_t length);
  void Flush();
  // The processor is done with the call: one it did not answer gets
  // NO_REPLY (RFC 8166 §3.3.1: its credit comes back with a reply).
  void Finish();
  bool answered() const { return !responder_.has_value(); }
  uint64_t call_size() const { return reader_.size(); }

 private:
  std::shared_ptr<ReplyStash> stash_;
  ResponderLimits limits_;
  MessageReader reader_;
  MessageWriter writer_;
  std::optional<Responder> responder_;
  uint32_t xid_ = 0;
  std::vector<uint64_t> write_chunks_;  // capacities the call offered
  uint32_t max_reply_ = 0;
  bool oneway_ = false;
};

}  // namespace rpcrdma::thrift::internal

#endif  // RPCRDMA_BRIDGE_RESPONDER_CORE_H_
