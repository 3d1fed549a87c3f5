// What the api layer does against a peer that would exhaust, wedge or
// crash an endpoint: the reject a Server sends beyond its
// connection limit and how a client reads it, the idle and abandoned-call
// rules, and the one-line reports of such events.
#ifndef RPCRDMA_PLUGIN_API_LIMITS_H_
#define RPCRDMA_PLUGIN_API_LIMITS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "plugin/engine/engine.h"

namespace rpcrdma::api_internal {

using Clock = std::chrono::steady_clock;

// Logs (warning) an event that ends or refuses a connection.
void ReportConnectionEvent(absl::string_view what);

// The private data of a Server's reject: this side's RFC 8797 private data
// (when it sends any; RFC 8797 §4 defines no reject payload, so a peer
// that searches for the magic finds what this side would have offered)
// followed by "rpcrdma: " and `reason` in ASCII, within the fabric's
// reject limit (fabric.h kMaxRejectPrivateData).
std::vector<uint8_t> RejectPrivateData(absl::Span<const uint8_t> rfc8797,
                                       absl::string_view reason);
// The reason a reject's private data names, when it carries one.
std::optional<std::string> RejectReason(absl::Span<const uint8_t> data);

// The abandoned-call rule of timeouts.abandoned_call_ms (channel.h): calls
// that were cancelled or passed their deadline after they were sent keep
// their credit until a reply comes. Returns the reason to close the
// connection, or nothing while it may go on.
class AbandonedCallWatch {
 public:
  explicit AbandonedCallWatch(std::chrono::milliseconds bound)
      : bound_(bound) {}
  // `engine` after a round of work at `now`.
  std::optional<std::string> Check(const engine::Engine& engine,
                                   Clock::time_point now);
  // When Check() must run again at the latest (nothing while no call is
  // abandoned).
  std::optional<Clock::time_point> next_check() const;
  void Reset() { since_.reset(); }

 private:
  std::chrono::milliseconds bound_;
  std::optional<Clock::time_point> since_;  // abandoned calls held since
};

// The idle rule of timeouts.idle_ms for one connection: idle while it is
// not busy (the owner says) and its activity() count does not change.
class IdleWatch {
 public:
  explicit IdleWatch(std::chrono::milliseconds bound, Clock::time_point now)
      : bound_(bound), since_(now) {}
  // True when the connection has been idle for the bound.
  bool Expired(uint64_t activity, bool busy, Clock::time_point now);
  std::optional<Clock::time_point> deadline() const;

 private:
  std::chrono::milliseconds bound_;  // zero: never
  Clock::time_point since_;
  uint64_t activity_ = 0;
  bool busy_ = false;
};

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_LIMITS_H_
