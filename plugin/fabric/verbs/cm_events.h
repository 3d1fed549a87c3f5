// How rdma-cm events and work completions of libibverbs map onto the fabric
// model (fabric.h). Pure functions, so that the mapping can be tested
// without a device.
#ifndef RPCRDMA_PLUGIN_FABRIC_VERBS_CM_EVENTS_H_
#define RPCRDMA_PLUGIN_FABRIC_VERBS_CM_EVENTS_H_

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plugin/fabric/fabric.h"

namespace rpcrdma::fabric::verbs {

// The IB CM reject reason rdma_reject() produces ("consumer defined").
inline constexpr int kConsumerRejectReason = 28;

WorkStatus MapWcStatus(ibv_wc_status status);
// The WorkType of a successful completion's opcode; nullopt for opcodes the
// fabric never posts.
std::optional<WorkType> MapWcOpcode(ibv_wc_opcode opcode);

// What an rdma-cm event means for an endpoint.
enum class CmAction {
  kIgnore,  // resolution steps, TIMEWAIT_EXIT, multicast, ...
  kEstablished,
  kRejected,     // rejected by the peer's consumer, with its data
  kUnreachable,  // resolution, route, connect failed, or CM reject
  kDisconnected,
  kDeviceRemoved,
  kAddressChanged,  // the address moved to another device
};
CmAction ClassifyCmEvent(rdma_cm_event_type type, int status);

// A copy of the event's private data (padded by the CM; may be empty).
std::vector<uint8_t> CmPrivateData(const rdma_cm_event& event);
// "RDMA_CM_EVENT_REJECTED (status 28)".
std::string CmEventDetail(const rdma_cm_event& event);

}  // namespace rpcrdma::fabric::verbs

#endif  // RPCRDMA_PLUGIN_FABRIC_VERBS_CM_EVENTS_H_
