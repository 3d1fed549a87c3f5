// A duplicate request cache (svc_rdma_enablecache): the replies of calls
// an SVCXPRT answered, by the identity of the call, so that a call its
// client sends again (RFC 5531 §9: servers detect retransmissions by
// their XID; an RPC-over-RDMA client retransmits only after a reconnect)
// is answered with the first reply instead of being executed a second
// time. A duplicate that arrives while the first is still being executed
// waits for its reply.
//
// Which calls are the same call. A call is identified by its XID,
// program, version, procedure, the length of its arguments and a checksum
// of all of their octets. An entry also remembers the connection its call
// came on and the client's address without the port:
// - while that connection is open, only a call on it matches the entry.
//   Two clients open at once never share a reply, even when they share an
//   address (every soft+unix client has none, every local soft+tcp client
//   is 127.0.0.1), an XID and their arguments;
// - once it has closed, a call from the same address matches it whatever
//   its connection and port: a client that lost its connection sends its
//   calls again on a new one, from a new port (Linux's RDMA client does),
//   and what had run must not run again. The whole arguments are compared
//   (not the first 256 octets nfsd's checksum covers), so that another
//   client at that address is taken for this one only if it sends the
//   very same call;
// - a call on a connection already closed (queued before the loss,
//   dispatched after it) matches any entry from its address: its reply is
//   dropped, it cannot take anyone else's, and the call it repeats must
//   not run twice.
//
// Bounds: at most `max_entries` entries, whose replies hold at most
// `max_bytes` octets between them; the oldest replies go first. Calls
// still being executed stay beyond these (their duplicates wait on them):
// there are at most as many as calls being dispatched at once, one per
// dispatching thread. Each entry adds its bookkeeping (under 200 octets),
// and the set of open connections is the Server's (limits.max_connections).
// A parked duplicate holds its call until answered, within the Server's
// reassembly budget (rpcrdma/server.h).
#ifndef RPCRDMA_ONCRPC_ADAPTER_REPLY_CACHE_H_
#define RPCRDMA_ONCRPC_ADAPTER_REPLY_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "rpcrdma/types.h"

namespace rpcrdma::oncrpc {

struct CallIdentity {
  // IncomingCall::connection: a Server never reuses one.
  uint64_t connection = 0;
  // The client's address without its port; empty when it has none (a
  // Unix-domain client) or it is unknown.
  std::string address;
  uint32_t xid = 0;
  uint32_t program = 0;
  uint32_t version = 0;
  uint32_t procedure = 0;
  uint64_t arguments_length = 0;
  uint64_t arguments_checksum = 0;  // of every octet of the arguments

  friend bool operator==(const CallIdentity&, const CallIdentity&) = default;
};

// `connection`: the call's IncomingCall::connection; `client_address`: a
// sockaddr where the client connects from, empty when unknown; `arguments`:
// the call's octets after its RPC header.
CallIdentity IdentifyCall(uint64_t connection,
                          absl::Span<const uint8_t> client_address,
                          uint32_t xid, uint32_t program, uint32_t version,
                          uint32_t procedure,
                          absl::Span<const uint8_t> arguments);

// A reply as it was sent, kept: its reduced stream and its items' octets.
struct CachedReply {
  std::vector<uint8_t> xdr;
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> items;
  size_t bytes() const;
  // A reply to send: the items lent from this cached reply, kept alive
  // until the transport releases them.
  static HandlerReply ToSend(std::shared_ptr<const CachedReply> cached);
};

class ReplyCache {
 public:
  // Answers a duplicate with the reply of its first instance.
  using Waiter =
      absl::AnyInvocable<void(std::shared_ptr<const CachedReply> reply)>;

  ReplyCache(size_t max_entries, size_t max_bytes)
      : max_entries_(max_entries), max_bytes_(max_bytes) {}

  // Which procedures are kept (none given: all).
  void Only(uint32_t program, uint32_t version,
            absl::Span<const uint32_t> procedures);
  bool Caches(uint32_t program, uint32_t version, uint32_t procedure) const;

  // The connections open now (ServerConnectionEvent). One never reported
  // open counts as closed.
  void Opened(uint64_t connection);
  void Closed(uint64_t connection);

  struct Lookup {
    // The call is new: execute it, then Complete (or Abandon) it.
    bool execute = false;
    // Its reply is kept: send it.
    std::shared_ptr<const CachedReply> reply;
  };
  // A duplicate of a call in progress is parked in the cache until the
  // call completes: the waiter `park` makes answers it then.
  Lookup Begin(const CallIdentity& call, absl::FunctionRef<Waiter()> park);
  // The reply of a call begun: kept (if it fits), and the waiters of its
  // duplicates are returned, to be called with it.
  std::vector<Waiter> Complete(const CallIdentity& call,
                               std::shared_ptr<const CachedReply> reply);
  // The call was not answered: forgotten; the waiters of its duplicates are
  // returned, to be dropped unanswered as the call itself was (their
  // Responders then answer SYSTEM_ERR: rpcrdma/responder.h).
  std::vector<Waiter> Abandon(const CallIdentity& call);

  size_t entries() const;
  uint64_t hits() const;

 private:
  // What two instances of one call share, whatever their connection.
  struct Key {
    uint32_t xid = 0;
    uint32_t program = 0;
    uint32_t version = 0;
    uint32_t procedure = 0;
    uint64_t arguments_length = 0;
    uint64_t arguments_checksum = 0;

    friend bool operator==(const Key&, const Key&) = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.xid, k.program, k.version, k.procedure,
                        k.arguments_length, k.arguments_checksum);
    }
  };
  struct Entry {
    Key key;
    uint64_t connection = 0;
    std::string address;
    std::shared_ptr<const CachedReply> reply;  // null while in progress
    std::vector<Waiter> waiting;
  };
  using EntryRef = std::list<Entry>::iterator;
  static Key KeyOf(const CallIdentity& call);
  // The entry `call` is a duplicate of (rules in the file comment).
  std::optional<EntryRef> Match(const CallIdentity& call) const;
  // The entry `call` itself made.
  std::optional<EntryRef> Own(const CallIdentity& call) const;
  void Erase(EntryRef entry);
  void Evict();

  const size_t max_entries_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::list<Entry> oldest_first_;
  absl::flat_hash_map<Key, std::vector<EntryRef>> by_key_;
  absl::flat_hash_set<uint64_t> open_;
  size_t bytes_ = 0;
  uint64_t hits_ = 0;
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>,
                      absl::flat_hash_set<uint32_t>>
      only_;
};

}  // namespace rpcrdma::oncrpc

#endif  // RPCRDMA_ONCRPC_ADAPTER_REPLY_CACHE_H_
