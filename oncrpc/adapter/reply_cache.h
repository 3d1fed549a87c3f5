// A duplicate request cache (svc_rdma_enablecache): the replies of calls
// an SVCXPRT answered, by the identity of the call, so that a call its
// client sends again (RFC 5531 §9: a retransmission keeps its XID; an
// RPC-over-RDMA client does so after a reconnect) is answered with the
// first reply instead of being executed a second time. A duplicate that
// arrives while the first is still being executed waits for its reply.
//
// The identity is what Linux's nfsd uses (its c_key holds the client's
// whole sockaddr, port included): the client's address and port, XID,
// program, version, procedure, the argument length and a hash of their
// first octets. No two connections open at once share an address and a
// port, while a client that reconnects from the port it had (as Linux's
// NFS clients do) is still recognised. A client whose transport gives no
// such address (a Unix-domain one, which has no name, or one whose
// connection is already gone) is known by its connection alone: otherwise
// all of them would look alike, and one client's call would be answered
// with another's reply. Bounded in entries and in the octets of the
// replies kept; the oldest go first.
#ifndef RPCRDMA_ONCRPC_ADAPTER_REPLY_CACHE_H_
#define RPCRDMA_ONCRPC_ADAPTER_REPLY_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "rpcrdma/types.h"

namespace rpcrdma::oncrpc {

struct CallIdentity {
  // The client's address with its port, or else its connection.
  std::string client;
  uint32_t xid = 0;
  uint32_t program = 0;
  uint32_t version = 0;
  uint32_t procedure = 0;
  uint64_t arguments_length = 0;
  uint64_t arguments_hash = 0;

  friend bool operator==(const CallIdentity&, const CallIdentity&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const CallIdentity& c) {
    return H::combine(std::move(h), c.client, c.xid, c.program, c.version,
                      c.procedure, c.arguments_length, c.arguments_hash);
  }
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
  static ServerReply ToSend(std::shared_ptr<const CachedReply> cached);
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
  // returned, to be dropped unanswered as the call itself was.
  std::vector<Waiter> Abandon(const CallIdentity& call);

  size_t entries() const;
  uint64_t hits() const;

 private:
  struct Entry {
    std::shared_ptr<const CachedReply> reply;  // null while in progress
    std::vector<Waiter> waiting;
    std::list<CallIdentity>::iterator age;
  };
  void Evict();

  const size_t max_entries_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
  absl::flat_hash_map<CallIdentity, Entry> entries_;
  std::list<CallIdentity> oldest_first_;
  size_t bytes_ = 0;
  uint64_t hits_ = 0;
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>,
                      absl::flat_hash_set<uint32_t>>
      only_;
};

}  // namespace rpcrdma::oncrpc

#endif  // RPCRDMA_ONCRPC_ADAPTER_REPLY_CACHE_H_
