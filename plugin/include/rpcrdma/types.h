// Types shared by rpcrdma::Channel (client) and rpcrdma::Server.
//
// Upper Layer Binding contract (RFC 8166 §6). An RPC program's adapter
// (its XDR encoder) and this transport agree on the following:
//
// - A call is given as its *reduced* XDR stream plus its DDP-eligible
//   items. The reduced stream is the complete RPC call message (RFC 5531,
//   starting with the XID and msg_type CALL) with the content octets and the
//   XDR roundup of every DDP-eligible opaque item removed; the item's length
//   word stays in the stream. Each item is a CallArgument: its XDR position
//   in the reduced stream (a multiple of four, non-decreasing along the list)
//   and a span of the caller's memory, sent without copying: inline (with
//   zero roundup) when the call fits the inline threshold, otherwise exposed
//   to the peer as a read chunk at that position (RFC 8166 §3.4.5), or the
//   whole call goes as a position-zero read chunk (RFC 8166 §3.5.3).
// - The caller names its DDP-eligible results, in XDR order, as spans of its
//   own memory; each becomes one write chunk (RFC 8166 §3.4.7) that the
//   responder writes directly into that memory. The caller also states the
//   largest reduced reply (the reply stream without the write-chunk
//   results) it accepts; when that may not fit the inline threshold a reply
//   chunk of that size is offered (RFC 8166 §3.5.4).
// - A completed call yields the reduced reply stream plus, per returned
//   write chunk, the number of octets the responder wrote into the caller's
//   result span (no roundup).
// - A server receives the complete call stream (read chunks reinserted at
//   their positions with XDR roundup). It answers with a reduced reply
//   stream plus ReplyItems at XDR positions: item i goes into write chunk i
//   when the call offered one (its capacity is given to the handler),
//   otherwise inline at its position.
// - Memory given to a call (arguments and results) must stay valid and must
//   not be touched by the caller until the call's completion is delivered;
//   the transport revokes every remote access to it before that.
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_TYPES_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_TYPES_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rpcrdma/buffer.h"
#include "rpcrdma/ids.h"
#include "rpcrdma/version_two.h"

namespace rpcrdma {

// A DDP-eligible call argument (zero copy).
struct CallArgument {
  uint32_t position = 0;  // XDR position in the reduced call stream
  absl::Span<const uint8_t> data;
};

// When an operation gives up: a point on the steady clock. A call's
// (CallRequest::deadline) and every method that waits for the peer
// (Channel's and Server's version-two methods) take one, so time is
// bounded one way throughout. DeadlineIn(d) is `d` from now.
using Deadline = std::chrono::steady_clock::time_point;
inline Deadline DeadlineIn(std::chrono::steady_clock::duration from_now) {
  return std::chrono::steady_clock::now() + from_now;
}

struct CallRequest {
  // The reduced RPC call stream (XID first, msg_type CALL).
  std::vector<uint8_t> xdr;
  std::vector<CallArgument> arguments;
  // Where the DDP-eligible results land, one write chunk each, in XDR order.
  std::vector<absl::Span<uint8_t>> results;
  // Largest reduced reply stream accepted. 0: whatever comes back inline
  // on the connection the call is sent on (ConnectionInfo::
  // max_inline_reply, about the receive threshold less the reply header);
  // set it for larger replies, which then travel in a reply chunk.
  uint32_t max_reply_size = 0;
  // When unset, the configured timeouts.request_deadline_ms applies (none
  // when that is zero).
  std::optional<Deadline> deadline;
  // What happens to the call when the connection is lost before its reply
  // arrives (see channel.h, "Reconnect"):
  // - false (at most once): it fails with UNAVAILABLE. The server may or
  //   may not have executed it.
  // - true (at least once): the Channel keeps it and, once it has
  //   reconnected, sends it again with the SAME XID (the stream is sent
  //   unchanged), until it completes, its deadline passes, it is cancelled
  //   or the Channel is destroyed. A non-idempotent procedure may then
  //   execute twice unless the server keeps a duplicate request cache keyed
  //   by XID (as ONC RPC servers do; that is why the XID is kept). Which
  //   semantics a procedure needs is the caller's decision. The call's
  //   memory stays the caller's, untouched, until its completion; it is not
  //   exposed to the peer while the call waits for the reconnect.
  bool retry_on_reconnect = false;
  // A call made while the Channel has no connection (it is reconnecting,
  // see channel.h "Reconnect"): false, it fails at once with UNAVAILABLE
  // saying when the next attempt is; true, it waits for the connection
  // until its deadline, Cancel() or the Channel's destruction, then is sent
  // (gRPC's wait-for-ready). Once sent, retry_on_reconnect decides what a
  // lost connection does to it.
  bool wait_for_ready = false;
};

struct Reply {
  Buffer xdr;  // the reduced reply stream
  // Octets written into each result span, in order (at most one per span).
  std::vector<uint32_t> result_lengths;
};

// A call started with Channel::Call(request) or Server::Call(connection,
// request): the std::future its outcome completes, which also names the
// call, so that it can be cancelled like any other.
//   rpcrdma::CallFuture call = channel->Call(std::move(request));
//   if (call.wait_for(budget) != std::future_status::ready)
//     channel->Cancel(call.id());         // the future then completes
//   absl::StatusOr<rpcrdma::Reply> reply = call.get();  // CANCELLED
// Code that keeps a plain std::future may move it into one (the id is then
// no longer at hand).
class CallFuture : public std::future<absl::StatusOr<Reply>> {
 public:
  CallFuture() = default;
  CallFuture(CallId id, std::future<absl::StatusOr<Reply>> reply)
      : std::future<absl::StatusOr<Reply>>(std::move(reply)), id_(id) {}

  // CallId() for a call refused at once (the future is then ready).
  CallId id() const { return id_; }

 private:
  CallId id_;
};

// A DDP-eligible reply item: the octets of one opaque result at an XDR
// position in the reduced reply stream, sent into the call's write chunk
// for it (RFC 8166 §3.4.7) or inline at that position. The octets are
// either the transport's (Owned: moved in, kept until the reply has been
// sent) or the handler's (Lent: sent without a copy, read by the transport
// until HandlerReply::on_released runs); an item is one or the other,
// never both.
class ReplyItem {
 public:
  static ReplyItem Owned(uint32_t position, std::vector<uint8_t> octets) {
    return ReplyItem(position, std::move(octets));
  }
  static ReplyItem Lent(uint32_t position, absl::Span<const uint8_t> octets) {
    ReplyItem item;
    item.position_ = position;
    item.octets_ = octets;
    return item;
  }
  // The same as Owned, so that `{position, octets}` makes an item.
  ReplyItem(uint32_t position, std::vector<uint8_t> octets)
      : position_(position), octets_(std::move(octets)) {}

  uint32_t position() const { return position_; }
  // The item's octets, owned or lent.
  absl::Span<const uint8_t> bytes() const {
    if (const auto* lent = std::get_if<absl::Span<const uint8_t>>(&octets_)) {
      return *lent;
    }
    return std::get<std::vector<uint8_t>>(octets_);
  }
  bool lent() const {
    return std::holds_alternative<absl::Span<const uint8_t>>(octets_);
  }

 private:
  ReplyItem() = default;
  uint32_t position_ = 0;
  std::variant<std::vector<uint8_t>, absl::Span<const uint8_t>> octets_;
};

// The reply a CallHandler sends with Responder::Send (responder.h): a
// Server's handler answering a forward call, or a Channel's backward
// handler answering a backward call (RFC 8167). Not to be confused with
// Reply, what a call made by this side yields.
struct HandlerReply {
  HandlerReply() = default;
  HandlerReply(std::vector<uint8_t> reply_xdr,
               std::vector<ReplyItem> reply_results = {},
               std::function<void()> released = nullptr)
      : xdr(std::move(reply_xdr)),
        results(std::move(reply_results)),
        on_released(std::move(released)) {}

  std::vector<uint8_t> xdr;  // the reduced RPC reply stream
  std::vector<ReplyItem> results;
  // When set, runs exactly once when the transport will read no more of
  // the memory the Lent items lend: after the reply's Send (and the RDMA
  // Writes before it) completed, or when the reply is dropped (its
  // connection lost, its Server or Channel gone, or Responder::Send
  // refusing it). It runs on a loop thread, or on the thread calling
  // Responder::Send when the reply is refused at once; it must not block.
  std::function<void()> on_released;
};

// The former name of HandlerReply.
using ServerReply [[deprecated("use rpcrdma::HandlerReply")]] = HandlerReply;

// Counters taken from the RPC-over-RDMA transport headers this side sends
// and receives. "Calls" are the forward calls a Channel sent or a Server
// received; "replies" the reverse; the chunk counters describe forward
// calls and replies. Backward calls (RFC 8167: a Server calling a Channel)
// are counted apart. A Server sums them over every connection, past and
// present; so does a Channel over each connection it has made (they do not
// reset on a reconnect; a call sent again after a reconnect counts again),
// except credits_granted, which is the current connection's.
struct Counters {
  uint64_t calls = 0;             // calls sent (Channel) or received (Server)
  uint64_t replies = 0;           // replies received (Channel) or sent (Server)
  uint64_t inline_calls = 0;      // RDMA_MSG calls without read chunks
  uint64_t read_chunk_calls = 0;  // RDMA_MSG calls with read chunks
  uint64_t read_chunks = 0;       // read chunks (distinct positions)
  uint64_t write_chunks = 0;      // write chunks offered by calls
  uint64_t reply_chunks = 0;      // reply chunks offered by calls
  uint64_t long_calls = 0;        // RDMA_NOMSG calls (position-zero chunk)
  uint64_t long_replies = 0;      // RDMA_NOMSG replies (via reply chunk)
  // Send With Invalidate received (Channel) or sent (Server), RFC 8797 §4.1.
  uint64_t remote_invalidations = 0;
  uint64_t errors_sent = 0;      // RDMA_ERROR messages sent
  uint64_t errors_received = 0;  // RDMA_ERROR messages received
  // rdma_credit of the latest reply received (Channel: on the current
  // connection, 0 while there is none or before its first reply) or sent
  // (Server).
  uint32_t credits_granted = 0;
  // Connections a Channel re-established after losing one (0 for a Server).
  uint64_t reconnects = 0;
  // Most calls this side had sent and not yet seen answered at one time
  // (requester role; a Server counts its backward calls): never above the
  // grant in force (RFC 8166 §3.3.1).
  uint32_t peak_calls_outstanding = 0;
  // Backward-direction calls sent (Server) or received (Channel), and
  // their replies received (Server) or sent (Channel).
  uint64_t backward_calls = 0;
  uint64_t backward_replies = 0;
  // Defences against a hostile or broken peer:
  // connections closed because the peer broke a rule that leaves no way on
  // (e.g. more calls than its credit grant, RFC 8166 §3.3.1);
  uint64_t protocol_closes = 0;
  // connections closed because abandoned calls (cancelled or past their
  // deadline after they were sent) held the credits
  // (timeouts.abandoned_call_ms);
  uint64_t abandoned_call_disconnects = 0;
  // connections closed for idleness (timeouts.idle_ms) or, on a Server,
  // for a connect request that never came (timeouts.handshake_ms);
  uint64_t idle_closes = 0;
  uint64_t handshake_timeouts = 0;
  // Server: connect requests rejected at limits.max_connections, and
  // accepts that failed for want of a descriptor or memory (EMFILE...).
  uint64_t connections_rejected = 0;
  uint64_t accept_errors = 0;

  // Sums every field except credits_granted and peak_calls_outstanding,
  // which become the larger.
  Counters& operator+=(const Counters& o);
  friend bool operator==(const Counters&, const Counters&) = default;
};

// Every field of Counters that only grows (all but the levels
// credits_granted and peak_calls_outstanding), with its name and a line
// saying what it counts, so that code visiting the counters (a sum, a
// difference, an export, a printout) lists them once:
//   for (const CounterField& f : kCounterFields) out[f.name] = c.*f.field;
struct CounterField {
  const char* name;  // as the member is named
  const char* help;
  uint64_t Counters::*field;
};
inline constexpr CounterField kCounterFields[] = {
    {"calls", "Forward calls sent (channel) or received (server)",
     &Counters::calls},
    {"replies", "Forward replies received (channel) or sent (server)",
     &Counters::replies},
    {"inline_calls", "RDMA_MSG calls without read chunks",
     &Counters::inline_calls},
    {"read_chunk_calls", "RDMA_MSG calls with read chunks",
     &Counters::read_chunk_calls},
    {"read_chunks", "Read chunks (distinct positions)", &Counters::read_chunks},
    {"write_chunks", "Write chunks offered by calls", &Counters::write_chunks},
    {"reply_chunks", "Reply chunks offered by calls", &Counters::reply_chunks},
    {"long_calls", "RDMA_NOMSG calls (position-zero read chunk)",
     &Counters::long_calls},
    {"long_replies", "RDMA_NOMSG replies (via reply chunk)",
     &Counters::long_replies},
    {"remote_invalidations", "Send With Invalidate received or sent",
     &Counters::remote_invalidations},
    {"errors_sent", "RDMA_ERROR messages sent", &Counters::errors_sent},
    {"errors_received", "RDMA_ERROR messages received",
     &Counters::errors_received},
    {"reconnects", "Connections a channel re-established",
     &Counters::reconnects},
    {"backward_calls", "Backward-direction calls (RFC 8167)",
     &Counters::backward_calls},
    {"backward_replies", "Backward-direction replies (RFC 8167)",
     &Counters::backward_replies},
    {"protocol_closes", "Connections closed for a broken protocol rule",
     &Counters::protocol_closes},
    {"abandoned_call_disconnects",
     "Connections closed because abandoned calls held the credits",
     &Counters::abandoned_call_disconnects},
    {"idle_closes", "Connections closed for idleness", &Counters::idle_closes},
    {"handshake_timeouts", "Connect requests that never came in time",
     &Counters::handshake_timeouts},
    {"connections_rejected", "Connect requests rejected at the limit",
     &Counters::connections_rejected},
    {"accept_errors", "Accepts that failed for want of a descriptor or memory",
     &Counters::accept_errors},
};

// What was settled when the current connection was set up.
struct ConnectionInfo {
  // The peer's RFC 8797 private data, when it sent a valid one (§4).
  bool peer_private_data = false;
  uint32_t peer_send_size = 0;            // its Send Size, octets
  uint32_t peer_receive_size = 0;         // its Receive Size, octets
  bool peer_remote_invalidation = false;  // its R bit (§4.1)
  // Inline thresholds in force (RFC 8797 §4.2; 1024 each without the
  // peer's private data, §5.1): the largest message this side sends in one
  // Send, and the largest it accepts.
  uint32_t send_threshold = 0;
  uint32_t receive_threshold = 0;
  // The largest reduced reply that comes back inline to a call without
  // write chunks: receive_threshold less the reply's transport header
  // (RFC 8166 §3.5.4). A call whose max_reply_size is at most this is
  // offered no reply chunk, and any inline reply fits it.
  uint32_t max_inline_reply = 0;
  // Both sides set R: replies may use Send With Invalidate.
  bool remote_invalidation = false;
  // The longest segment of a chunk this side exposes or moves (one RDMA
  // Read or Write, bounded by the device: Soft-RoCE's is 8 MiB). A chunk
  // of n octets takes ceil(n / max_segment_size) of the transport header's
  // segments (RFC 8166 §3.4), which limits.max_header_segments bounds per
  // call: an adapter sizing its chunks needs it.
  uint32_t max_segment_size = 0;
  // RPC-over-RDMA version offered first and the version in use
  // (draft-cel-nfsv4-rpcrdma-version-two-04 §7). When the peer answered
  // the offer with ERR_VERS, the range it reported (else both 0).
  uint32_t offered_version = 1;
  uint32_t version = 1;
  uint32_t peer_version_low = 0;
  uint32_t peer_version_high = 0;
  // Version two (rpcrdma/version_two.h): the receive buffer size the peer
  // last stated (RBSIZ, draft-04 §5.2.1; send_threshold is it, bounded by
  // this side's inline_threshold.send, while receive_threshold is this
  // side's), this side's experimental properties as in effect and the
  // peer's as it last stated them (§5.4.2).
  uint32_t peer_receive_buffer_size = 0;
  std::vector<TransportProperty> properties = {};
  std::vector<TransportProperty> peer_properties = {};

  friend bool operator==(const ConnectionInfo&,
                         const ConnectionInfo&) = default;
};

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_TYPES_H_
