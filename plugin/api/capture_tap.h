// An optional capture of what a Channel or Server puts on the wire
// (TransportConfig.capture_path): every RPC-over-RDMA message a connection
// sends, and every one it receives, written as RoCEv2 RC SEND frames
// (SEND_ONLY, or SEND_FIRST/MIDDLE/LAST at a 1024-octet path MTU; Send With
// Invalidate carries its R_Key in the IETH) to a pcap file that Wireshark
// and rpcrdma-dump read. RDMA Read and RDMA Write payloads are not
// captured. Each connection of the capture has its own QP numbers; the
// requester is 192.0.2.1 and the responder 192.0.2.2, whichever side wrote
// the file.
#ifndef RPCRDMA_PLUGIN_API_CAPTURE_TAP_H_
#define RPCRDMA_PLUGIN_API_CAPTURE_TAP_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "plugin/api/connection.h"
#include "plugin/capture/pcap_writer.h"
#include "rpcrdma/config.pb.h"

namespace rpcrdma::api_internal {

class CaptureTap {
 public:
  // The path MTU of the frames written (IBA Vol 1 §9.7.7; what RoCE uses on
  // a 1500-octet Ethernet MTU).
  static constexpr uint32_t kPmtu = 1024;

  // Creates (truncates) `path`.
  static absl::StatusOr<std::shared_ptr<CaptureTap>> Open(
      const std::string& path);

  // A new RC connection in the capture; returns its id.
  size_t AddConnection();
  // Records one message. `to_responder`: a requester -> responder message.
  // A failure to write stops the capture (the transport is not affected).
  void Record(size_t connection, bool to_responder,
              absl::Span<const uint8_t> message,
              std::optional<uint32_t> invalidate_rkey);
  uint64_t messages() const;

 private:
  explicit CaptureTap(std::unique_ptr<pcap::PcapWriter> writer);

  mutable std::mutex mu_;
  std::unique_ptr<pcap::PcapWriter> writer_;  // null once a write failed
  size_t connections_ = 0;  // id 0 is the writer's default connection
  uint64_t messages_ = 0;
};

// The payload a failure of OpenCaptureFor carries: why the file could not
// be opened, without the "config: capture_path: " the message starts with,
// so that Create can name RPCRDMA_CAPTURE instead when the path came from
// there (environment.h).
inline constexpr char kCaptureOpenFailure[] = "rpcrdma.capture_open_failure";

// The capture `config.capture_path` names; null when it is empty.
absl::StatusOr<std::shared_ptr<CaptureTap>> OpenCaptureFor(
    const config::TransportConfig& config);
// Adds a connection to `tap` (when not null) and sets hooks.capture to
// record into it, seen from `role`.
void AttachCapture(const std::shared_ptr<CaptureTap>& tap, Role role,
                   Connection::Hooks& hooks);

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_CAPTURE_TAP_H_
