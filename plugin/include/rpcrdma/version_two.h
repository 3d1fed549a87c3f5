// What a user carries over RPC-over-RDMA version two
// (draft-cel-nfsv4-rpcrdma-version-two-04, experimental; docs/version-two.md):
// experimental transport properties (§5.4.2) and optional messages of the
// user's own types (§4.1). Given in ChannelOptions::version_two and
// ServerOptions::version_two; used with Channel and Server methods
// (UpdateReceiveSize, UpdateProperties, RequestPeerProperties,
// SendOptional) on a connection in version two.
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_VERSION_TWO_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_VERSION_TWO_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "rpcrdma/ids.h"

namespace rpcrdma {

// A transport property (rpcrdma2_propval, §5.1.1): its id and the XDR
// encoding of its value (empty: the property's default).
struct TransportProperty {
  uint32_t id = 0;
  std::vector<uint8_t> value = {};
  friend bool operator==(const TransportProperty&,
                         const TransportProperty&) = default;
};

// §5.4.2: property ids 4,294,967,040 to 4,294,967,295 are for experimental
// use; only those are carried for a user.
inline constexpr uint32_t kFirstExperimentalPropertyId = 4294967040u;

// An optional message (rpcrdma2_optional, §4.1): its type (rdma_opttype),
// rdma_optinfo, and whatever follows the transport header in the same Send
// (§6.2.1). It travels inline: header and payload within the peer's
// receive buffer size.
struct OptionalMessage {
  uint32_t type = 0;
  std::vector<uint8_t> info = {};
  std::vector<uint8_t> payload = {};
};

// Serves the optional messages of one type: returns the answer, sent as an
// RDMA2_OPTIONAL of the same type with rdma_optdir REPLY and the message's
// XID (§6.2.2; its `type` is ignored), or an error, which the peer gets as
// RDMA2_ERR_SYSTEM (§6.2.4). Runs on the connection's loop thread: it must
// not block. `connection`: the connection the message came on
// (rpcrdma/ids.h): one of the Server's, or on a Channel its current
// connection (a Channel has one at a time: nothing to tell apart, but the
// id says which connect of the Channel it was, as its log records do).
using OptionalHandler = std::function<absl::StatusOr<OptionalMessage>(
    ConnectionId connection, const OptionalMessage& message)>;

// Decides the peer's request (RDMA2_REQPROP, §5.3.2) to change one of this
// side's experimental properties: returns the value in effect afterwards
// (the value asked for: done; another: sent back in rdma_other, a partial
// grant, §5.3.3), or nullopt to reject the change. Runs on the loop
// thread. `connection` as for OptionalHandler.
using PropertyDecider = std::function<std::optional<std::vector<uint8_t>>(
    ConnectionId connection, const TransportProperty& wanted)>;

struct VersionTwoOptions {
  // Experimental properties (ids from kFirstExperimentalPropertyId, each
  // once) stated in this side's RDMA2_CONNPROP at connect (§5.3.1), which
  // must fit the 1024 octets every peer receives first; only these can
  // change later (UpdateProperties, or the peer's request).
  std::vector<TransportProperty> properties = {};
  // Handlers by optional type. Types 1 to 4 are the property operations
  // of §5.3 (Table 2) and cannot be used. An optional message of any other
  // type is answered RDMA2_ERR_INVALID_OPTION (§4.1).
  std::map<uint32_t, OptionalHandler> optional_handlers = {};
  // Without it, every request to change an experimental property is
  // rejected.
  PropertyDecider property_decider = nullptr;
};

// The peer's answer to RequestPeerProperties (RDMA2_RESPROP, §5.3.3):
// `done[i]` is whether the i-th change was made as asked (an answer that
// marks it both done and rejected, neither, or gives another value counts
// as not done); `other` holds the values the peer reported instead, for
// requested properties only.
struct PropertyAnswer {
  std::vector<bool> done = {};
  std::vector<TransportProperty> other = {};
};

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_VERSION_TWO_H_
