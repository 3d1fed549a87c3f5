#include "plugin/api/capture_tap.h"

#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace rpcrdma::api_internal {
namespace {

// Connection i of the capture uses QPNs 0x11 + 2i (requester) and
// 0x12 + 2i (responder), and its own UDP source ports.
pcap::Endpoint SideFor(bool requester, size_t connection) {
  pcap::Endpoint e =
      requester ? pcap::DefaultRequester() : pcap::DefaultResponder();
  e.qpn = (e.qpn + 2 * static_cast<uint32_t>(connection)) & 0xffffff;
  e.udp_src_port = static_cast<uint16_t>(49152 + (connection % 16384) * 2 +
                                         (requester ? 0 : 1));
  return e;
}

}  // namespace

absl::StatusOr<std::shared_ptr<CaptureTap>> CaptureTap::Open(
    const std::string& path) {
  pcap::PcapWriterOptions options;
  options.pmtu = kPmtu;
  options.requester = SideFor(true, 0);
  options.responder = SideFor(false, 0);
  absl::StatusOr<std::unique_ptr<pcap::PcapWriter>> writer =
      pcap::PcapWriter::Open(path, options);
  if (!writer.ok()) return writer.status();
  return std::shared_ptr<CaptureTap>(new CaptureTap(std::move(*writer)));
}

CaptureTap::CaptureTap(std::unique_ptr<pcap::PcapWriter> writer)
    : writer_(std::move(writer)) {}

size_t CaptureTap::AddConnection() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t id = connections_++;
  if (writer_ != nullptr && id > 0) {
    writer_->AddConnection(SideFor(true, id), SideFor(false, id));
  }
  return id;
}

void CaptureTap::Record(size_t connection, bool to_responder,
                        absl::Span<const uint8_t> message,
                        std::optional<uint32_t> invalidate_rkey) {
  std::lock_guard<std::mutex> lock(mu_);
  if (writer_ == nullptr) return;
  pcap::SendOptions options;
  options.invalidate_rkey = invalidate_rkey;
  absl::Status st = writer_->Send(connection,
                                  to_responder ? pcap::Direction::kToResponder
                                               : pcap::Direction::kToRequester,
                                  message, options);
  if (st.ok()) {
    ++messages_;
  } else {
    writer_.reset();
  }
}

uint64_t CaptureTap::messages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return messages_;
}

absl::StatusOr<std::shared_ptr<CaptureTap>> OpenCaptureFor(
    const config::TransportConfig& config) {
  if (config.capture_path().empty()) return std::shared_ptr<CaptureTap>();
  absl::StatusOr<std::shared_ptr<CaptureTap>> tap =
      CaptureTap::Open(config.capture_path());
  if (!tap.ok()) {
    absl::Status failed = absl::InvalidArgumentError(
        absl::StrCat("config: capture_path: ", tap.status().message()));
    failed.SetPayload(kCaptureOpenFailure, absl::Cord(tap.status().message()));
    return failed;
  }
  return tap;
}

void AttachCapture(const std::shared_ptr<CaptureTap>& tap, Role role,
                   Connection::Hooks& hooks) {
  if (tap == nullptr) return;
  const size_t id = tap->AddConnection();
  const bool requester = role == Role::kRequester;
  hooks.capture = [tap, id, requester](bool sent,
                                       absl::Span<const uint8_t> message,
                                       std::optional<uint32_t> rkey) {
    // A requester sends toward the responder and receives from it.
    tap->Record(id, sent == requester, message, rkey);
  };
}

}  // namespace rpcrdma::api_internal
