// The active side's connection handshake (soft_wire.h: CONNECT, then the
// listener's ACCEPT or REJECT): how long the answer may take, and what the
// connect reports when the peer is not a soft-fabric listener at all (an
// old Thrift TSocket server or an HTTP server still on the port), so that
// the caller learns it at once and in words instead of waiting out its
// connect timeout.
#include <algorithm>
#include <chrono>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "plugin/fabric/soft/soft_endpoint.h"

namespace rpcrdma::fabric::soft {
namespace {

// What the caller checks when the peer does not speak the handshake.
constexpr absl::string_view kCheckThePeer =
    "is it an rpcrdma server? (a Thrift or other non-rpcrdma server "
    "listening there does this; check the address and port, or the socket "
    "path)";

// Octets of a foreign peer's input shown, escaped: enough to recognise
// "HTTP/1.1 400 Bad Request" or a Thrift frame, short enough for a status.
constexpr size_t kShownOctets = 32;

std::string FirstOctets(absl::Span<const uint8_t> input) {
  const size_t n = std::min(input.size(), kShownOctets);
  return absl::StrCat("\"",
                      absl::CHexEscape(absl::string_view(
                          reinterpret_cast<const char*>(input.data()), n)),
                      "\"", input.size() > n ? "..." : "");
}

}  // namespace

void SoftEndpoint::ArmAnswerDeadline() {
  if (!active_ || fabric_.handshake_answer_timeout_ms == 0) return;
  answer_due_ = std::chrono::steady_clock::now() +
                std::chrono::milliseconds(fabric_.handshake_answer_timeout_ms);
}

bool SoftEndpoint::AnswerOverdue() {
  if (state_ != State::kConnecting || !answer_due_ ||
      std::chrono::steady_clock::now() < *answer_due_) {
    return false;
  }
  const absl::Span<const uint8_t> input = stream_.input();
  Close(ConnectionEventType::kUnreachable,
        absl::StrCat(
            "no rpcrdma handshake answer came within ",
            fabric_.handshake_answer_timeout_ms, " ms of the connection",
            input.empty() ? std::string(" (the peer sent nothing)")
                          : absl::StrCat(" (the peer sent ", input.size(),
                                         " octets that are not one: ",
                                         FirstOctets(input), ")"),
            ": ", kCheckThePeer,
            "; an rpcrdma server whose event loop is blocked, or that is out "
            "of descriptors, is silent too"),
        /*orderly=*/false);
  return true;
}

void SoftEndpoint::NotAHandshake(absl::Span<const uint8_t> input) {
  const std::string shown = FirstOctets(input);
  Close(ConnectionEventType::kUnreachable,
        absl::StrCat("the peer sent bytes that are not the rpcrdma handshake "
                     "(its first octets: ",
                     shown, "): ", kCheckThePeer),
        /*orderly=*/false);
}

void SoftEndpoint::ClosedDuringHandshake() {
  Close(ConnectionEventType::kUnreachable,
        absl::StrCat("the peer closed the connection during the rpcrdma "
                     "handshake: ",
                     kCheckThePeer),
        /*orderly=*/false);
}

}  // namespace rpcrdma::fabric::soft
