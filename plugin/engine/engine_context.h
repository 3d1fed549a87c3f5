// What the engine's roles (requester.h, responder.h, control.h) share: the
// configuration, the roles and credits it fixes (RFC 8167 §3), the
// connection's negotiated state, the id sources and the composition of
// outgoing Sends. Engine owns one and hands it to each role by reference;
// roles never reach into one another.
#ifndef RPCRDMA_PLUGIN_ENGINE_ENGINE_CONTEXT_H_
#define RPCRDMA_PLUGIN_ENGINE_ENGINE_CONTEXT_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "plugin/engine/engine_types.h"
#include "plugin/wire/private_data.h"
#include "plugin/wire/v1.h"
#include "plugin/wire/v2.h"

namespace rpcrdma::engine {

// Roles and credits, fixed by the configuration (RFC 8167 §3).
struct Roles {
  // A server (responder role only) with a peer backchannel limit issues
  // backward calls through the requester role.
  bool backward_requester = false;
  // A client with backchannel credits serves backward calls.
  bool backward_responder = false;
  bool requester_on = false;
  bool responder_on = false;
  uint32_t requester_limit = 1;  // highest grant the requester role uses
  uint32_t responder_grant = 1;  // credits every reply/error grants
  uint32_t receives = 1;         // receives kept posted

  static Roles For(const Config& config);
};

// The receives `config` keeps posted (Engine::ReceivesFor).
uint32_t ReceivesPostedFor(const Config& config);

struct EngineContext {
  // `config` is normalized here (at least one credit, segments of at
  // least one octet) so every role reads the same values.
  EngineContext(Config config, MemoryExposer* exposer);

  Config config;
  Roles roles;
  MemoryExposer* exposer;
  MessageObserver observer;

  // The connection, as negotiated (RFC 8797 §4.2, draft-04 §7).
  bool connected = false;
  wire::InlineThresholds thresholds;
  uint32_t version = 1;
  // Version negotiation: true while the probe awaits its answer; then
  // `negotiation` says why calls cannot go out when it failed.
  bool negotiating = false;
  absl::Status negotiation;

  // Octets of each posted receive (draft-04 §5.2.1: at least what is
  // advertised).
  uint32_t ReceiveCapacity() const {
    return std::max(config.local.receive_size, config.max_receive_size_granted);
  }

  CallId NextCallId() { return CallId(next_call++); }
  OpId NextOp() { return next_op++; }

  void Observe(const MessageSeen& seen) const {
    if (observer) observer(seen);
  }
  // Octets of `header` as it goes on the wire in the version in use.
  size_t HeaderSize(const wire::V1Header& header) const;

  // An empty vector for a Send's bytes, with the capacity of a recycled
  // one when there is one.
  std::vector<uint8_t> TakeSendBuffer();
  // The driver is done with a Send's bytes: reused for a later message.
  void RecycleSendBuffer(std::vector<uint8_t> bytes);
  // A Send of `header` followed by `payload`, in a recycled buffer.
  // `inv_handle`: in version two, the handle the responder may invalidate
  // (rdma_inv_handle, draft-04 §6.2.3); 0 for none.
  // `why`: for an RDMA_ERROR, the words the log gives (MessageSeen::why).
  Send MakeSend(OpId op, const wire::V1Header& header,
                absl::Span<const uint8_t> payload,
                std::optional<uint32_t> invalidate = std::nullopt,
                uint32_t inv_handle = 0, absl::string_view why = {});
  // Queues a Send of the version-two `header` (draft-04 §6), in a recycled
  // buffer. `why`: for an RDMA2_ERROR, the words the log gives.
  void SendV2(const wire::V2Header& header, Actions& out,
              absl::string_view why = {});

 private:
  uint64_t next_call = 1;
  OpId next_op = 1;
  // Send buffers handed back by the driver, reused for the next messages.
  std::vector<std::vector<uint8_t>> spare_send_buffers;
};

}  // namespace rpcrdma::engine

#endif  // RPCRDMA_PLUGIN_ENGINE_ENGINE_CONTEXT_H_
