// rpcrdma::protobuf::ClientContext: per-call settings and results of one
// call on the client side, as gRPC's ClientContext: deadline, metadata to
// send, wait-for-ready, cancellation, and the server's trailing metadata.
// One context serves one call; it must outlive the call.
#ifndef RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_CLIENT_CONTEXT_H_
#define RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_CLIENT_CONTEXT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "rpcrdma/ids.h"
#include "rpcrdma/protobuf/metadata.h"

namespace rpcrdma {
class Channel;
}  // namespace rpcrdma

namespace rpcrdma::protobuf {

class ClientContext {
 public:
  using Clock = std::chrono::steady_clock;

  ClientContext() = default;
  ClientContext(const ClientContext&) = delete;
  ClientContext& operator=(const ClientContext&) = delete;

  // The call fails with DEADLINE_EXCEEDED when no reply came by then; the
  // server sees the time left (ServerContext::deadline()).
  void set_deadline(Clock::time_point deadline) { deadline_ = deadline; }
  // The same, relative to now.
  void set_timeout(Clock::duration timeout) {
    deadline_ = Clock::now() + timeout;
  }
  std::optional<Clock::time_point> deadline() const { return deadline_; }

  // Sent with the call (ServerContext::client_metadata()).
  void AddMetadata(std::string key, std::string value) {
    metadata_.emplace(std::move(key), std::move(value));
  }
  const Metadata& metadata() const { return metadata_; }

  // gRPC's wait-for-ready: while the channel is reconnecting the call waits
  // for the connection (until its deadline) instead of failing at once
  // with UNAVAILABLE (CallRequest::wait_for_ready).
  void set_wait_for_ready(bool wait) { wait_for_ready_ = wait; }
  bool wait_for_ready() const { return wait_for_ready_; }

  // The largest reply this call accepts, in octets, overriding the
  // channel's (ChannelOptions::max_reply_size_by_method, then
  // ChannelOptions::max_reply_size). 0: the channel's.
  void set_max_reply_size(uint32_t octets) { max_reply_size_ = octets; }
  uint32_t max_reply_size() const { return max_reply_size_; }

  // Reply write chunks (protobuf/README.md, "Replies"): one per entry, of
  // that many octets, for the reply's bulk values in path order, as the
  // method's (rpcrdma.protobuf.reply_chunks).bulk_sizes, which this
  // overrides. Unary calls only.
  void set_reply_bulk_sizes(std::vector<uint32_t> octets) {
    reply_bulk_sizes_ = std::move(octets);
  }
  const std::vector<uint32_t>& reply_bulk_sizes() const {
    return reply_bulk_sizes_;
  }

  // Zero-copy receive: the response's `bytes` field `field_number` (a
  // singular field of the top message) lands in `memory`, which the call
  // offers as a write chunk the server writes straight into (RFC 8166
  // §3.4.7); the response's field is left empty and bulk_received() says
  // how many octets came. A value larger than `memory` fails the call with
  // RESOURCE_EXHAUSTED, with nothing written. Given, the receives are the
  // call's write chunks (in field-number order) in place of
  // reply_bulk_sizes. `memory` must not be empty, and must stay valid and
  // untouched until the call completes. Unary calls only; at most one per
  // field. (protobuf/README.md, "Receiving into the caller's memory".)
  void ReceiveBulkInto(int field_number, absl::Span<uint8_t> memory) {
    bulk_receives_.push_back({field_number, memory, std::nullopt});
  }
  // Once the call completed OK: the octets written at the start of the
  // memory given for `field_number`; nullopt when none was given or the
  // call failed.
  std::optional<size_t> bulk_received(int field_number) const {
    for (const BulkReceive& r : bulk_receives_) {
      if (r.field_number == field_number) return r.received;
    }
    return std::nullopt;
  }

  // Ends the call with CANCELLED if it has not completed (Channel::Cancel);
  // before the call starts, the call fails at once. Any thread. For a
  // unary call the server is not told: RPC-over-RDMA has no cancel message
  // (RFC 8166). A stream's server is told (its CANCEL procedure,
  // protobuf/README.md, "Streams"), and the stream's reads fail.
  void TryCancel();

  // The server's trailing metadata, once the call has completed.
  const Metadata& trailing_metadata() const { return trailing_metadata_; }

 private:
  friend class CallBinding;
  struct BulkReceive {
    int field_number;
    absl::Span<uint8_t> memory;
    std::optional<size_t> received;
  };
  std::vector<uint32_t> reply_bulk_sizes_;
  std::vector<BulkReceive> bulk_receives_;
  std::optional<Clock::time_point> deadline_;
  Metadata metadata_;
  Metadata trailing_metadata_;
  bool wait_for_ready_ = false;
  uint32_t max_reply_size_ = 0;

  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  ::rpcrdma::Channel* channel_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::optional<CallId> call_ ABSL_GUARDED_BY(mu_);
  // An open stream's: run by TryCancel (under mu_; it must not call back).
  std::function<void()> cancel_stream_ ABSL_GUARDED_BY(mu_);
};

// The runtime's access to a context's call state (not for applications).
class CallBinding {
 public:
  // True when TryCancel came first: the call must not start.
  static bool Cancelled(ClientContext& context);
  // Records the started call, so that TryCancel can reach it; cancels it
  // at once when TryCancel came meanwhile.
  static void Bind(ClientContext& context, ::rpcrdma::Channel& channel,
                   CallId call);
  static void Unbind(ClientContext& context);
  // An open stream: TryCancel runs `cancel` (at once when TryCancel came
  // already). Unbound before the stream goes.
  static void BindStream(ClientContext& context, std::function<void()> cancel);
  static void UnbindStream(ClientContext& context);
  static Metadata& trailing_metadata(ClientContext& context) {
    return context.trailing_metadata_;
  }
  static std::vector<ClientContext::BulkReceive>& bulk_receives(
      ClientContext& context) {
    return context.bulk_receives_;
  }
};

}  // namespace rpcrdma::protobuf

#endif  // RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_CLIENT_CONTEXT_H_
