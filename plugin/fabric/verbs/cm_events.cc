#include "plugin/fabric/verbs/cm_events.h"

#include "absl/strings/str_cat.h"

namespace rpcrdma::fabric::verbs {

WorkStatus MapWcStatus(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS:
      return WorkStatus::kSuccess;
    case IBV_WC_WR_FLUSH_ERR:
      return WorkStatus::kFlushed;
    case IBV_WC_LOC_LEN_ERR:
      return WorkStatus::kLocalLengthError;
    case IBV_WC_LOC_PROT_ERR:
      return WorkStatus::kLocalProtectionError;
    case IBV_WC_REM_ACCESS_ERR:
      return WorkStatus::kRemoteAccessError;
    case IBV_WC_REM_INV_REQ_ERR:
      return WorkStatus::kRemoteInvalidRequest;
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return WorkStatus::kReceiverNotReady;
    default:
      return WorkStatus::kTransportError;
  }
}

std::optional<WorkType> MapWcOpcode(ibv_wc_opcode opcode) {
  switch (opcode) {
    case IBV_WC_RECV:
      return WorkType::kReceive;
    case IBV_WC_SEND:
      return WorkType::kSend;
    case IBV_WC_RDMA_READ:
      return WorkType::kRdmaRead;
    case IBV_WC_RDMA_WRITE:
      return WorkType::kRdmaWrite;
    case IBV_WC_BIND_MW:
      return WorkType::kBindWindow;
    case IBV_WC_LOCAL_INV:
      return WorkType::kLocalInvalidate;
    default:
      return std::nullopt;
  }
}

CmAction ClassifyCmEvent(rdma_cm_event_type type, int status) {
  switch (type) {
    case RDMA_CM_EVENT_ESTABLISHED:
      return CmAction::kEstablished;
    case RDMA_CM_EVENT_REJECTED:
      return status == kConsumerRejectReason ? CmAction::kRejected
                                             : CmAction::kUnreachable;
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
      return CmAction::kUnreachable;
    case RDMA_CM_EVENT_DISCONNECTED:
      return CmAction::kDisconnected;
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      return CmAction::kDeviceRemoved;
    case RDMA_CM_EVENT_ADDR_CHANGE:
      return CmAction::kAddressChanged;
    case RDMA_CM_EVENT_ADDR_RESOLVED:
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
    case RDMA_CM_EVENT_CONNECT_REQUEST:
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
    case RDMA_CM_EVENT_MULTICAST_JOIN:
    case RDMA_CM_EVENT_MULTICAST_ERROR:
    case RDMA_CM_EVENT_TIMEWAIT_EXIT:
      return CmAction::kIgnore;
  }
  return CmAction::kIgnore;
}

std::vector<uint8_t> CmPrivateData(const rdma_cm_event& event) {
  const auto* data = static_cast<const uint8_t*>(event.param.conn.private_data);
  if (data == nullptr) return {};
  return std::vector<uint8_t>(data, data + event.param.conn.private_data_len);
}

std::string CmEventDetail(const rdma_cm_event& event) {
  return absl::StrCat(rdma_event_str(event.event), " (status ", event.status,
                      ")");
}

}  // namespace rpcrdma::fabric::verbs
