// The requester half of the bridge, behind TRdmaSocket (forward calls on a
// Channel) and callback transports (backward calls through Server::Call):
// what a Thrift client writes becomes one RPC call per flush(), and what it
// reads comes from the replies, in the order the calls were made.
//
// - A message whose bulk items lend the caller's memory (MessageWriter)
//   is sent and answered within flush(): the peer reads that memory with
//   RDMA Read until it replies, and Thrift keeps it only until flush()
//   returns. Its reply is kept for the reads that follow.
// - Any other message is sent and flush() returns; reads wait for the
//   replies in turn (several may be in flight: TConcurrentClientSyncInfo).
// - A oneway message (T_ONEWAY in its header) is THRIFT_ONEWAY: the server
//   answers it on receipt, the client reads no reply.
// - Replies: bulk items arrive in write chunks the call offered, sized from
//   what earlier replies of the same method needed; a reply that does not
//   fit is fetched with THRIFT_FETCH offering what it needs.
#ifndef RPCRDMA_BRIDGE_CLIENT_CORE_H_
#define RPCRDMA_BRIDGE_CLIENT_CORE_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bridge/message_buffers.h"
#include "rpcrdma/types.h"

namespace rpcrdma::thrift::internal {

// How calls reach the peer.
class CallPort {
 public:
  using Ticket = uint64_t;
  using Callback = std::function<void(absl::StatusOr<Reply>)>;
  virtual ~CallPort() = default;
  // A call whose outcome Await(ticket) returns.
  virtual Ticket Start(CallRequest request) = 0;
  virtual absl::StatusOr<Reply> Await(Ticket ticket) = 0;
  // A call nobody waits for.
  virtual void Send(CallRequest request, Callback done) = 0;
  virtual uint32_t NextXid() = 0;
};

struct ClientLimits {
  WriterLimits writer;
  // Write chunks a call may offer, and the largest reduced reply that
  // arrives inline (RFC 8166 §3.5.4: larger needs a reply chunk).
  size_t max_write_chunks = 2;
  uint32_t inline_reply = 3072;
  // The transport header's segments per call (limits.max_header_segments),
  // shared by read, write and reply chunks, each cut into segments of at
  // most max_segment_size octets (RFC 8166 §3.4).
  uint32_t header_segments = 32;
  uint32_t max_segment_size = 1u << 20;
  uint64_t max_message_size = 100u << 20;
  // Deadline of each call; none when zero.
  std::chrono::milliseconds timeout{0};
};

class ClientCore {
 public:
  // `broken` runs (once) when a call finds the connection lost.
  ClientCore(CallPort& port, ClientLimits limits,
             std::function<void(const absl::Status&)> broken);
  ClientCore(const ClientCore&) = delete;
  ClientCore& operator=(const ClientCore&) = delete;

  void set_limits(const ClientLimits& limits);
  void set_timeout(std::chrono::milliseconds timeout);

  // TTransport calls; they throw TTransportException.
  void Write(const uint8_t* data, uint32_t length);
  void Flush();
  uint32_t Read(uint8_t* buffer, uint32_t length);
  const uint8_t* Borrow(uint32_t* length);
  void Consume(uint32_t length);
  // The octets of the message just read; the rest of it is dropped.
  uint32_t ReadEnd();
  uint64_t message_size() const { return reader_.size(); }
  uint64_t message_consumed() const { return reader_.consumed(); }
  // Counts the messages delivered to the read side.
  uint64_t messages() const { return messages_; }
  // Replies not yet read (tests, and TRdmaSocket::peek()).
  size_t outstanding() const;
  // Forgets every call and message (TRdmaSocket::close()).
  void Clear();

 private:
  struct Outstanding {
    CallPort::Ticket ticket = 0;
    uint32_t xid = 0;
    std::string method;
    // Set when the call was answered within flush().
    std::optional<absl::StatusOr<Reply>> outcome;
    std::vector<Buffer> results;  // the write chunks' memory
    std::shared_ptr<void> owned;  // the runs the call carries
  };
  struct Profile {  // what replies of one method needed
    std::vector<uint32_t> chunks;
    uint32_t max_reply = 0;
  };

  // Offers write chunks of `capacities` (in order, as long as the header
  // has segments for them beside `reserved` ones) and, when `max_reply`
  // does not arrive inline, the reply chunk.
  void OfferChunks(CallRequest& request,
                   const std::vector<uint32_t>& capacities, uint64_t reserved,
                   std::vector<Buffer>& results);
  CallRequest BuildCall(uint32_t xid, bool oneway,
                        const wire::OutgoingMessage& message,
                        std::vector<Buffer>& results);
  void NextReply();
  // Handles a reply to `call` (sent with `xid`): true when it delivered a
  // message to read.
  bool Take(const Outstanding& call, uint32_t xid, absl::StatusOr<Reply> reply,
            std::vector<Buffer> results, bool fetched);
  absl::StatusOr<Reply> Fetch(const Outstanding& call,
                              const wire::Deferred& deferred, uint32_t xid,
                              std::vector<Buffer>& results);
  // Segments of a chunk of `octets` (at least one).
  uint64_t Segments(uint64_t octets) const;
  [[noreturn]] void Fail(const absl::Status& status, absl::string_view what);
  void Learn(const std::string& method, const wire::Deferred& deferred);

  CallPort& port_;
  const std::function<void(const absl::Status&)> broken_;
  MessageWriter writer_;  // the write side: one thread at a time
  MessageReader reader_;  // the read side: one thread at a time
  uint64_t messages_ = 0;
  mutable std::mutex mu_;  // what both sides touch:
  ClientLimits limits_;
  std::deque<Outstanding> outstanding_;
  absl::flat_hash_map<std::string, Profile> profiles_;
};

}  // namespace rpcrdma::thrift::internal

#endif  // RPCRDMA_BRIDGE_CLIENT_CORE_H_
