// A Server's operations of version two on one of its connections
// (rpcrdma/version_two.h, draft-cel-nfsv4-rpcrdma-version-two-04), as
// channel_v2.cc does them for a Channel.
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/api/server_core.h"
#include "plugin/wire/v2.h"
#include "rpcrdma/server.h"

namespace rpcrdma {
namespace api_internal {

template <typename Answer, typename Operation>
absl::StatusOr<Answer> ServerConnection::AwaitVersionTwo(Operation start,
                                                         Deadline deadline) {
  return driver_.AwaitVersionTwo<Answer>(
      std::move(start), deadline,
      absl::StrCat("server: no answer from the client on connection ", id_));
}

absl::StatusOr<std::shared_ptr<ServerConnection>> ServerCore::Find(
    ConnectionId connection) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = conns_.find(connection.value());
  if (it == conns_.end()) {
    return absl::NotFoundError(
        absl::StrCat("server: no connection ", connection.value()));
  }
  return it->second;
}

// UpdateProperties, RequestPeerProperties and SendOptional over the
// AwaitVersionTwo above.
template class VersionTwoOperations<ServerConnection>;

}  // namespace api_internal

absl::Status Server::UpdateReceiveSize(ConnectionId connection, uint32_t octets,
                                       Deadline deadline) {
  return UpdateProperties(
      connection,
      {TransportProperty{wire::kPropIdRbsiz,
                         wire::MakeRbsizProperty(octets).data}},
      deadline);
}

absl::Status Server::UpdateProperties(ConnectionId connection,
                                      std::vector<TransportProperty> properties,
                                      Deadline deadline) {
  auto conn = core_->Find(connection);
  if (!conn.ok()) return conn.status();
  return (*conn)->UpdateProperties(std::move(properties), deadline);
}

absl::StatusOr<PropertyAnswer> Server::RequestPeerProperties(
    ConnectionId connection, std::vector<TransportProperty> properties,
    Deadline deadline) {
  auto conn = core_->Find(connection);
  if (!conn.ok()) return conn.status();
  return (*conn)->RequestPeerProperties(std::move(properties), deadline);
}

absl::StatusOr<OptionalMessage> Server::SendOptional(ConnectionId connection,
                                                     OptionalMessage message,
                                                     Deadline deadline) {
  auto conn = core_->Find(connection);
  if (!conn.ok()) return conn.status();
  return (*conn)->SendOptional(std::move(message), deadline);
}

}  // namespace rpcrdma
