// Version two of the engine (draft-cel-nfsv4-rpcrdma-version-two-04): the
// actions of transport properties (§5) and optional messages (§4.1), and
// the state one connection keeps for them. Included by engine.h.
//
// Messages that carry no RPC (draft-04 leaves their flow control open):
// RDMA2_REQPROP, RDMA2_UPDPROP and RDMA2_OPTIONAL each take a receive at
// the peer that no credit accounts for (credits count RPC calls, RFC 8166
// §3.3.1). Here each side posts 2 x kControlWindow receives beyond its
// credits on a version-two connection: kControlWindow for the peer's
// messages of this kind, kControlWindow for the answers to its own. A side
// has at most kControlWindow of them awaiting their answer: an
// RDMA2_REQPROP until its RDMA2_RESPROP, an RDMA2_OPTIONAL (CALL) until the
// peer's RDMA2_OPTIONAL (REPLY) with its XID or an RDMA2_ERROR, and an
// RDMA2_UPDPROP, which has no answer of its own, until the answer to an
// empty RDMA2_REQPROP sent right after it: the peer processes its receives
// in order, so that answer shows the update was taken and its receive
// posted again. More wait in order.
#ifndef RPCRDMA_PLUGIN_ENGINE_VERSION_TWO_H_
#define RPCRDMA_PLUGIN_ENGINE_VERSION_TWO_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "plugin/wire/v2.h"

namespace rpcrdma::engine {

inline constexpr uint32_t kControlWindow = 4;

// The peer answered RequestProperties or UpdateProperties (§5.3.3);
// `accepted[i]` says whether the i-th requested change was made as asked
// (an index the answer marks both done and rejected, or neither, or also
// names in rdma_other, was not). `other`: the values the peer reported
// instead (rdma_other), for requested properties only. `status`: not OK
// when no answer came (UNAVAILABLE: the connection was lost) or the peer
// answered with an RDMA2_ERROR.
struct PropertiesAnswered {
  uint32_t xid = 0;
  std::vector<bool> accepted;
  bool connection_lost = false;
  wire::PropSet other = {};
  absl::Status status = absl::OkStatus();
};

// The peer asks to change experimental properties of this side (§5.4.2,
// RDMA2_REQPROP): the owner decides each with DecideProperties(xid, ...).
// `wanted`: the request's experimental items, with their index in it.
struct PropertiesRequested {
  uint32_t xid = 0;
  std::vector<std::pair<size_t, wire::PropVal>> wanted;
};

// An RDMA2_OPTIONAL (CALL) of a type this side serves
// (Config::optional_types): the owner answers with AnswerOptional(xid, ...).
// `payload`: whatever follows the transport header (§6.2.1).
struct DeliverOptional {
  uint32_t xid = 0;
  uint32_t type = 0;
  std::vector<uint8_t> info = {};
  std::vector<uint8_t> payload = {};
};

// The peer answered StartOptional: its RDMA2_OPTIONAL (REPLY) with
// `info` and `payload`, or, when `status` is not OK, an RDMA2_ERROR (named
// in the status) or the connection's loss (UNAVAILABLE).
struct OptionalAnswered {
  uint32_t xid = 0;
  absl::Status status = absl::OkStatus();
  std::vector<uint8_t> info = {};
  std::vector<uint8_t> payload = {};
};

// The owner's decision on one requested experimental property: the value
// in effect after it (the one requested: done; another: reported in
// rdma_other), or nullopt to reject the change.
using PropertyDecision = std::optional<std::vector<uint8_t>>;

// What one version-two connection keeps for properties and optional
// messages (engine-internal).
struct VersionTwoState {
  // This side's properties as advertised (§5.2.1: what every posted
  // receive holds at least) and its experimental ones (§5.4.2).
  uint32_t local_rbsiz = wire::kDefaultRbsiz;
  wire::PropSet local_experimental;
  // The peer's, as it last stated them (CONNPROP, UPDPROP, RESPROP).
  uint32_t peer_rbsiz = wire::kDefaultRbsiz;
  wire::BackwardRequestSupport peer_brs = wire::kDefaultBrs;
  wire::PropSet peer_experimental;
  // Ids the peer's RDMA2_CONNPROP let change: stated in rdma_start and not
  // in rdma_nochg (§5.3.1).
  std::set<uint32_t> peer_changeable;
  // Grows with every change of the above (the owner republishes).
  uint64_t epoch = 0;

  // A message of this side that awaits an answer (see the top of file).
  struct Exchange {
    enum class Kind { kRequest, kUpdate, kOptional };
    Kind kind = Kind::kRequest;
    uint32_t xid = 0;  // of the answer awaited
    uint32_t slots = 1;
    std::vector<std::vector<uint8_t>> messages;  // sent when admitted
    wire::PropSet want;                          // kRequest, kUpdate
    uint32_t opttype = 0;                        // kOptional
  };
  std::deque<Exchange> waiting;
  std::map<uint32_t, Exchange> in_flight;
  uint32_t slots_used = 0;
  uint32_t next_xid = 0x52455150;  // "REQP"
  // RDMA2_REQPROP that lowered the peer's RBSIZ and await their answer:
  // §5.2.1 bounds this side's Sends by the lower size meanwhile.
  std::map<uint32_t, uint32_t> lowering;

  // Incoming, awaiting the owner: optional messages delivered (XID to
  // type), and property requests with experimental items to decide.
  std::map<uint32_t, uint32_t> optionals_delivered;
  struct Undecided {
    wire::V2ResProp answer;  // the engine's own decisions so far
    wire::PropSet want;
    std::vector<size_t> indices;  // of the items the owner decides
  };
  std::map<uint32_t, Undecided> undecided;
};

}  // namespace rpcrdma::engine

#endif  // RPCRDMA_PLUGIN_ENGINE_VERSION_TWO_H_
