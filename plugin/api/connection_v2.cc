// Connection's operations of version two
// (draft-cel-nfsv4-rpcrdma-version-two-04; engine.h), carried out at once.
#include <utility>

#include "plugin/api/connection.h"

namespace rpcrdma::api_internal {

absl::StatusOr<uint32_t> Connection::RequestProperties(wire::PropSet want) {
  absl::StatusOr<uint32_t> xid =
      engine_.RequestProperties(std::move(want), operation_actions_);
  Run(operation_actions_);
  return xid;
}

absl::StatusOr<uint32_t> Connection::UpdateProperties(wire::PropSet now) {
  absl::StatusOr<uint32_t> xid =
      engine_.UpdateProperties(std::move(now), operation_actions_);
  Run(operation_actions_);
  return xid;
}

absl::StatusOr<uint32_t> Connection::StartOptional(
    uint32_t type, std::vector<uint8_t> info, std::vector<uint8_t> payload) {
  absl::StatusOr<uint32_t> xid = engine_.StartOptional(
      type, std::move(info), std::move(payload), operation_actions_);
  Run(operation_actions_);
  return xid;
}

absl::Status Connection::AnswerOptional(
    uint32_t xid, absl::StatusOr<engine::DeliverOptional> answer) {
  absl::Status s =
      engine_.AnswerOptional(xid, std::move(answer), operation_actions_);
  Run(operation_actions_);
  return s;
}

absl::Status Connection::DecideProperties(
    uint32_t xid, std::vector<engine::PropertyDecision> decisions) {
  absl::Status s =
      engine_.DecideProperties(xid, std::move(decisions), operation_actions_);
  Run(operation_actions_);
  return s;
}

}  // namespace rpcrdma::api_internal
