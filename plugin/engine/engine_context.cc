#include "plugin/engine/engine_context.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "plugin/engine/engine_util.h"
#include "plugin/engine/version_two.h"
#include "plugin/wire/v2.h"

namespace rpcrdma::engine {
namespace {

Config Normalized(Config config) {
  config.credits = std::max<uint32_t>(config.credits, 1);
  config.max_segment_size = std::max<uint32_t>(config.max_segment_size, 1);
  return config;
}

}  // namespace

uint32_t ReceivesPostedFor(const Config& config) {
  // RFC 8167 §3.2: the client posts its backchannel credits beyond the
  // receives for forward replies; the server posts one more receive per
  // backward call it may have outstanding, for the backward replies.
  uint64_t receives = std::max<uint32_t>(config.credits, 1);
  if (config.requester) receives += config.backchannel_credits;
  if (!config.requester && config.responder) {
    receives += config.peer_backchannel_credits;
  }
  // Version two: messages without RPC and their answers (version_two.h).
  if ((config.requester && config.offered_version == 2) ||
      (!config.requester && config.serve_version_two)) {
    receives += 2 * kControlWindow;
  }
  return static_cast<uint32_t>(
      std::min<uint64_t>(receives, std::numeric_limits<uint32_t>::max()));
}

Roles Roles::For(const Config& config) {
  Roles r;
  r.backward_requester = !config.requester && config.responder &&
                         config.peer_backchannel_credits > 0;
  r.backward_responder = config.requester && config.backchannel_credits > 0;
  r.requester_on = config.requester || r.backward_requester;
  r.responder_on = config.responder || r.backward_responder;
  // RFC 8167 §3.1: forward and backward credits are accounted separately.
  r.requester_limit =
      r.backward_requester ? config.peer_backchannel_credits : config.credits;
  r.responder_grant =
      r.backward_responder ? config.backchannel_credits : config.credits;
  r.receives = ReceivesPostedFor(config);
  return r;
}

EngineContext::EngineContext(Config config_in, MemoryExposer* exposer_in)
    : config(Normalized(std::move(config_in))),
      roles(Roles::For(config)),
      exposer(exposer_in) {}

size_t EngineContext::HeaderSize(const wire::V1Header& header) const {
  const size_t v1 = wire::V1EncodedSize(header);
  // rdma_direction and rdma_inv_handle (draft-04 §6.2.2).
  const bool carries_lists = header.proc() == wire::V1Proc::kMsg ||
                             header.proc() == wire::V1Proc::kNoMsg;
  return version == wire::kRpcRdmaVersion2 && carries_lists ? v1 + 8 : v1;
}

std::vector<uint8_t> EngineContext::TakeSendBuffer() {
  if (spare_send_buffers.empty()) return {};
  std::vector<uint8_t> bytes = std::move(spare_send_buffers.back());
  spare_send_buffers.pop_back();
  bytes.clear();
  return bytes;
}

void EngineContext::RecycleSendBuffer(std::vector<uint8_t> bytes) {
  // As many as Sends can be in flight at once is enough to never allocate;
  // beyond that they go.
  if (spare_send_buffers.size() < roles.receives + 8) {
    spare_send_buffers.push_back(std::move(bytes));
  }
}

Send EngineContext::MakeSend(OpId op, const wire::V1Header& header,
                             absl::Span<const uint8_t> payload,
                             std::optional<uint32_t> invalidate,
                             uint32_t inv_handle, absl::string_view why) {
  std::vector<uint8_t> bytes = TakeSendBuffer();
  const bool is_call = CarriesCall(header, payload);
  if (version == wire::kRpcRdmaVersion2) {
    // Version two carries the same chunk lists with the direction made
    // explicit (draft-04 §6.2.2) and the handle the responder may
    // invalidate named (§6.2.3).
    const wire::V2Header v2 = ToV2Header(header, is_call, inv_handle);
    const size_t header_size = wire::V2EncodedSize(v2);
    bytes.resize(header_size + payload.size());
    (void)wire::EncodeV2(v2, absl::MakeSpan(bytes).first(header_size));
    CopyBytes(bytes.data() + header_size, payload.data(), payload.size());
  } else {
    const size_t header_size = wire::V1EncodedSize(header);
    bytes.resize(header_size + payload.size());
    (void)wire::EncodeV1(header, absl::MakeSpan(bytes).first(header_size));
    CopyBytes(bytes.data() + header_size, payload.data(), payload.size());
  }
  if (observer) {
    Observe({.sent = true,
             .xid = header.xid,
             .header = &header,
             .is_call = is_call,
             .why = why});
  }
  return Send{op, std::move(bytes), invalidate};
}

void EngineContext::SendV2(const wire::V2Header& header, Actions& out,
                           absl::string_view why) {
  if (header.proc() == wire::V2Proc::kError) {
    Observe({.sent = true,
             .xid = header.xid,
             .v2_error = true,
             .v2_code = std::get<wire::V2Error>(header.body).code,
             .why = why});
  }
  std::vector<uint8_t> bytes = TakeSendBuffer();
  bytes.resize(wire::V2EncodedSize(header));
  (void)wire::EncodeV2(header, absl::MakeSpan(bytes));
  out.push_back(Send{NextOp(), std::move(bytes), std::nullopt});
}

}  // namespace rpcrdma::engine
