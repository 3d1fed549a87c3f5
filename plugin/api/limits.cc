#include "plugin/api/limits.h"

#include "absl/strings/str_cat.h"
#include "plugin/fabric/fabric.h"
#include "plugin/log/logging.h"

namespace rpcrdma::api_internal {
namespace {
constexpr absl::string_view kReasonTag = "rpcrdma: ";
}  // namespace

void ReportConnectionEvent(absl::string_view what) {
  RPCRDMA_LOG(kWarning, 0, what);
}

std::vector<uint8_t> RejectPrivateData(absl::Span<const uint8_t> rfc8797,
                                       absl::string_view reason) {
  std::vector<uint8_t> out(rfc8797.begin(), rfc8797.end());
  std::string text = absl::StrCat(kReasonTag, reason);
  const size_t room = fabric::kMaxRejectPrivateData - out.size();
  if (text.size() > room) text.resize(room);
  out.insert(out.end(), text.begin(), text.end());
  return out;
}

std::optional<std::string> RejectReason(absl::Span<const uint8_t> data) {
  absl::string_view all(reinterpret_cast<const char*>(data.data()),
                        data.size());
  size_t at = all.find(kReasonTag);
  if (at == absl::string_view::npos) return std::nullopt;
  absl::string_view reason = all.substr(at + kReasonTag.size());
  // Providers pad private data: the reason ends at the first NUL.
  reason = reason.substr(0, reason.find('\0'));
  std::string printable;
  for (char c : reason) printable.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  return printable;
}

std::optional<std::string> AbandonedCallWatch::Check(
    const engine::Engine& engine, Clock::time_point now) {
  const uint32_t abandoned = engine.calls_abandoned();
  if (abandoned == 0 || !engine.connected()) {
    since_.reset();
    return std::nullopt;
  }
  if (!since_) since_ = now;
  // Every credit of the grant held by a call nobody awaits while another
  // call waits for one: nothing can go out again on this connection. (A
  // late reply may still free a credit before anyone needs it.)
  if (abandoned >= engine.credit_grant() && engine.calls_queued() > 0) {
    return absl::StrCat(abandoned,
                        " abandoned call(s) hold every credit of the grant (",
                        engine.credit_grant(), ") and calls wait for one");
  }
  if (now - *since_ >= bound_) {
    return absl::StrCat(abandoned, " abandoned call(s) unanswered for ",
                        bound_.count(), " ms");
  }
  return std::nullopt;
}

std::optional<Clock::time_point> AbandonedCallWatch::next_check() const {
  if (!since_) return std::nullopt;
  return *since_ + bound_;
}

bool IdleWatch::Expired(uint64_t activity, bool busy, Clock::time_point now) {
  if (activity != activity_ || busy || busy_) {
    activity_ = activity;
    busy_ = busy;
    since_ = now;
    return false;
  }
  return bound_.count() > 0 && now - since_ >= bound_;
}

std::optional<Clock::time_point> IdleWatch::deadline() const {
  if (bound_.count() == 0 || busy_) return std::nullopt;
  return since_ + bound_;
}

}  // namespace rpcrdma::api_internal
