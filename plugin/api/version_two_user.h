// The user's side of version two (rpcrdma/version_two.h) for one owner of a
// connection, a ChannelCore or a ServerConnection: the waits of the
// blocking operations (UpdateReceiveSize, UpdateProperties,
// RequestPeerProperties, SendOptional, RequestPeerReceiveSize), and the
// user's handlers and decisions for what the peer sends, run outside the
// owner's lock. Used under the owner's lock, except where said.
#ifndef RPCRDMA_PLUGIN_API_VERSION_TWO_USER_H_
#define RPCRDMA_PLUGIN_API_VERSION_TWO_USER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugin/api/connection.h"
#include "plugin/engine/engine.h"
#include "rpcrdma/version_two.h"

namespace rpcrdma::api_internal {

// Where a handler's answer goes: the owner of the connection.
class VersionTwoTarget {
 public:
  virtual ~VersionTwoTarget() = default;
  // Runs `op` on the connection `generation` under the owner's lock and
  // carries out what follows; UNAVAILABLE when that connection is gone.
  virtual absl::Status OnConnection(
      uint64_t generation, absl::FunctionRef<absl::Status(Connection&)> op) = 0;
};

class VersionTwoUser {
 public:
  explicit VersionTwoUser(std::shared_ptr<const VersionTwoOptions> options =
                              std::make_shared<VersionTwoOptions>());

  // INVALID_ARGUMENT naming what is wrong (any thread).
  static absl::Status Validate(const VersionTwoOptions& options);
  // The engine's share of the options.
  void Configure(engine::Config& config) const;

  template <typename Answer>
  struct Wait {
    uint32_t xid = 0;
    std::future<Answer> answer;
  };
  // Operations on `conn`, with the wait for their answer.
  absl::StatusOr<Wait<engine::PropertiesAnswered>> Request(
      Connection& conn, std::vector<TransportProperty> want);
  absl::StatusOr<Wait<engine::PropertiesAnswered>> Update(
      Connection& conn, std::vector<TransportProperty> now);
  absl::StatusOr<Wait<engine::OptionalAnswered>> Optional(
      Connection& conn, OptionalMessage message);
  // The caller gave up waiting for `xid`; false when the answer came
  // meanwhile (it is in the future then).
  bool Forget(uint32_t xid);

  // Takes a version-two upcall (false for any other): answers go to their
  // waits; the user's handlers and decisions become `jobs`, to run outside
  // the lock, which answer through `target`.
  bool Collect(engine::Action& action, ConnectionId connection,
               uint64_t generation, std::weak_ptr<VersionTwoTarget> target,
               std::vector<std::function<void()>>& jobs);

  // What an answer means to the caller (any thread).
  static absl::Status UpdateResult(const engine::PropertiesAnswered& a);
  static absl::StatusOr<PropertyAnswer> RequestResult(
      const engine::PropertiesAnswered& a);
  static absl::StatusOr<OptionalMessage> OptionalResult(
      uint32_t type, engine::OptionalAnswered a);

  // A connection's properties as the user sees them.
  static std::vector<TransportProperty> FromPropSet(const wire::PropSet& set);

 private:
  std::shared_ptr<const VersionTwoOptions> options_;
  absl::flat_hash_map<uint32_t,
                      std::shared_ptr<std::promise<engine::PropertiesAnswered>>>
      property_waits_;
  absl::flat_hash_map<uint32_t,
                      std::shared_ptr<std::promise<engine::OptionalAnswered>>>
      optional_waits_;
};

// The blocking operations of rpcrdma/version_two.h that a Channel and a
// Server's connection share, for an Owner (ChannelCore, ServerConnection)
// that has a ConnectionDriver `driver_` and an `AwaitVersionTwo<Answer>(start,
// deadline)`, which starts the operation through the driver and waits for
// the peer's answer (ConnectionDriver::AwaitVersionTwo). The
// owner befriends this class; each owner's .cc, where its AwaitVersionTwo
// is defined, instantiates it explicitly.
template <typename Owner>
class VersionTwoOperations {
 public:
  absl::Status UpdateProperties(std::vector<TransportProperty> properties,
                                Deadline deadline);
  absl::StatusOr<PropertyAnswer> RequestPeerProperties(
      std::vector<TransportProperty> properties, Deadline deadline);
  absl::StatusOr<OptionalMessage> SendOptional(OptionalMessage message,
                                               Deadline deadline);

 private:
  Owner& owner() { return static_cast<Owner&>(*this); }
};

// Defined out of the class, so that the owners' `extern template` keeps
// every other file from instantiating them without AwaitVersionTwo.
template <typename Owner>
absl::Status VersionTwoOperations<Owner>::UpdateProperties(
    std::vector<TransportProperty> properties, Deadline deadline) {
  absl::StatusOr<engine::PropertiesAnswered> answer =
      owner().template AwaitVersionTwo<engine::PropertiesAnswered>(
          [&](Connection& c) {
            return owner().driver_.version_two().Update(c,
                                                        std::move(properties));
          },
          deadline);
  if (!answer.ok()) return answer.status();
  return VersionTwoUser::UpdateResult(*answer);
}

template <typename Owner>
absl::StatusOr<PropertyAnswer>
VersionTwoOperations<Owner>::RequestPeerProperties(
    std::vector<TransportProperty> properties, Deadline deadline) {
  absl::StatusOr<engine::PropertiesAnswered> answer =
      owner().template AwaitVersionTwo<engine::PropertiesAnswered>(
          [&](Connection& c) {
            return owner().driver_.version_two().Request(c,
                                                         std::move(properties));
          },
          deadline);
  if (!answer.ok()) return answer.status();
  return VersionTwoUser::RequestResult(*answer);
}

template <typename Owner>
absl::StatusOr<OptionalMessage> VersionTwoOperations<Owner>::SendOptional(
    OptionalMessage message, Deadline deadline) {
  const uint32_t type = message.type;
  absl::StatusOr<engine::OptionalAnswered> answer =
      owner().template AwaitVersionTwo<engine::OptionalAnswered>(
          [&](Connection& c) {
            return owner().driver_.version_two().Optional(c,
                                                          std::move(message));
          },
          deadline);
  if (!answer.ok()) return answer.status();
  return VersionTwoUser::OptionalResult(type, *std::move(answer));
}

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_VERSION_TWO_USER_H_
