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
absl::StatusOr<Answer> ServerConnection::AwaitVersionTwo(
    Operation start, std::chrono::milliseconds timeout) {
  return driver_.AwaitVersionTwo<Answer>(
      std::move(start), timeout,
      absl::StrCat("server: no answer from the client on connection ", id_));
}

absl::StatusOr<std::shared_ptr<ServerConnection>> ServerCore::Find(
    uint64_t connection) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = conns_.find(connection);
  if (it == conns_.end()) {
    return absl::NotFoundError(
        absl::StrCat("server: no connection ", connection));
  }
  return it->second;
}

// UpdateProperties, RequestPeerProperties and SendOptional over the
// AwaitVersionTwo above.
template class VersionTwoOperations<ServerConnection>;

}  // namespace api_internal

absl::Status Server::UpdateReceiveSize(uint64_t connection, uint32_t octets,
                                       std::chrono::milliseconds timeout) {
  return UpdateProperties(
      connection,
      {TransportProperty{wire::kPropIdRbsiz,
                         wire::MakeRbsizProperty(octets).data}},
      timeout);
}

absl::Status Server::UpdateProperties(uint64_t connection,
                                      std::vector<TransportProperty> properties,
                                      std::chrono::milliseconds timeout) {
  auto conn = core_->Find(connection);
  if (!conn.ok()) return conn.status();
  return (*conn)->UpdateProperties(std::move(properties), timeout);
}

absl::StatusOr<PropertyAnswer> Server::RequestPeerProperties(
    uint64_t connection, std::vector<TransportProperty> properties,
    std::chrono::milliseconds timeout) {
  auto conn = core_->Find(connection);
  if (!conn.ok()) return conn.status();
  return (*conn)->RequestPeerProperties(std::move(properties), timeout);
}

absl::StatusOr<OptionalMessage> Server::SendOptional(
    uint64_t connection, OptionalMessage message,
    std::chrono::milliseconds timeout) {
  auto conn = core_->Find(connection);
  if (!conn.ok()) return conn.status();
  return (*conn)->SendOptional(std::move(message), timeout);
}

}  // namespace rpcrdma
