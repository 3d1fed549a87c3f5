#include "plugin/fabric/fabric.h"

namespace rpcrdma::fabric {

absl::string_view WorkTypeName(WorkType type) {
  switch (type) {
    case WorkType::kReceive:
      return "RECV";
    case WorkType::kSend:
      return "SEND";
    case WorkType::kSendWithInvalidate:
      return "SEND_WITH_INV";
    case WorkType::kRdmaRead:
      return "RDMA_READ";
    case WorkType::kRdmaWrite:
      return "RDMA_WRITE";
    case WorkType::kBindWindow:
      return "BIND_MW";
    case WorkType::kLocalInvalidate:
      return "LOCAL_INV";
  }
  return "UNKNOWN";
}

absl::string_view WorkStatusName(WorkStatus status) {
  switch (status) {
    case WorkStatus::kSuccess:
      return "SUCCESS";
    case WorkStatus::kFlushed:
      return "WR_FLUSH_ERR";
    case WorkStatus::kLocalLengthError:
      return "LOC_LEN_ERR";
    case WorkStatus::kLocalProtectionError:
      return "LOC_PROT_ERR";
    case WorkStatus::kRemoteAccessError:
      return "REM_ACCESS_ERR";
    case WorkStatus::kRemoteInvalidRequest:
      return "REM_INV_REQ_ERR";
    case WorkStatus::kReceiverNotReady:
      return "RNR_RETRY_EXC_ERR";
    case WorkStatus::kTransportError:
      return "TRANSPORT_ERROR";
  }
  return "UNKNOWN";
}

absl::string_view ConnectionEventTypeName(ConnectionEventType type) {
  switch (type) {
    case ConnectionEventType::kEstablished:
      return "ESTABLISHED";
    case ConnectionEventType::kRejected:
      return "REJECTED";
    case ConnectionEventType::kUnreachable:
      return "UNREACHABLE";
    case ConnectionEventType::kDisconnected:
      return "DISCONNECTED";
    case ConnectionEventType::kDeviceRemoved:
      return "DEVICE_REMOVAL";
  }
  return "UNKNOWN";
}

}  // namespace rpcrdma::fabric
