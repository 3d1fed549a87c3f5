// The CLIENT behind clnt_rdma_create and clnt_rdma_callback_create: a
// libtirpc client handle whose calls go through a CallPath. Every call
// encodes, sends and decodes on the calling thread with state of its own,
// so one handle serves many threads at once (clnt_rdma.h).
#ifndef RPCRDMA_ONCRPC_ADAPTER_RDMA_CLIENT_H_
#define RPCRDMA_ONCRPC_ADAPTER_RDMA_CLIENT_H_

#include <rpc/rpc.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "oncrpc/adapter/call_path.h"
#include "rpcrdma/buffer.h"
#include "rpcrdma/oncrpc/config.h"

namespace rpcrdma::oncrpc {

class RdmaTransport;
class RdmaXdrEncoder;

class RdmaClient {
 public:
  // `backchannel`, when set, serves the calls the peer makes back on the
  // path's connection; it is destroyed after the path.
  RdmaClient(std::unique_ptr<CallPath> path, rpcprog_t program,
             rpcvers_t version, AdapterConfig config,
             std::unique_ptr<RdmaTransport> backchannel = nullptr);
  RdmaClient(const RdmaClient&) = delete;
  RdmaClient& operator=(const RdmaClient&) = delete;
  ~RdmaClient();

  CLIENT* handle() { return &client_; }
  // Null when `client` is not an RPC-over-RDMA handle.
  static RdmaClient* Of(CLIENT* client);
  RdmaTransport* backchannel() { return backchannel_.get(); }
  CallPath& path() { return *path_; }

  // clnt_rdma_call_async (clnt_rdma.h).
  using AsyncDone = void (*)(clnt_stat, void*);
  bool_t CallAsync(rpcproc_t procedure, xdrproc_t encode_arguments,
                   void* arguments, xdrproc_t decode_results, void* results,
                   timeval timeout, AsyncDone done, void* done_argument);

 private:
  struct Outcome {
    rpc_err error{};
    uint32_t xid = 0;
  };
  // A call encoded and ready to send, with what decoding its reply needs.
  struct Prepared {
    CallRequest request;
    AUTH* auth = nullptr;
    rpcproc_t procedure = 0;
    uint32_t xid = 0;
    bool ddp = false;
    // Where the write chunks are (the request's results), and the memory
    // the adapter provides for those the caller did not.
    std::vector<absl::Span<uint8_t>> offered;
    std::vector<Buffer> owned_results;
    bool bound = false;  // a write chunk was bound or asked for
    uint32_t result_threshold = 0;
    uint32_t program = 0;
    uint32_t version = 0;
    // The arguments' routine stated this call's reply chunk itself
    // (xdr_rdma): a size chosen for this one call, which a second try may
    // exceed but which teaches nothing about the procedure's other calls.
    bool reply_size_stated = false;
  };

  static clnt_stat CallOp(CLIENT* client, rpcproc_t procedure,
                          xdrproc_t encode_arguments, void* arguments,
                          xdrproc_t decode_results, void* results,
                          timeval timeout);
  static void AbortOp(CLIENT*);
  static void GetErrorOp(CLIENT* client, rpc_err* error);
  static bool_t FreeResultsOp(CLIENT* client, xdrproc_t free_results,
                              void* results);
  static void DestroyOp(CLIENT* client);
  static bool_t ControlOp(CLIENT* client, u_int request, void* info);

  // Sends the call, and once more with the largest reply chunk when the
  // server answers ERR_CHUNK (RFC 8166 §4.5.2; clnt_rdma.h).
  absl::StatusOr<Reply> Exchange(Prepared& prepared);
  // The reply chunk calls of `procedure` offer beyond their policy's: the
  // largest reduced reply one of them needed a second try for.
  uint32_t LearnedReplySize(uint32_t program, uint32_t version,
                            rpcproc_t procedure) const;
  void LearnReplySize(uint32_t program, uint32_t version, rpcproc_t procedure,
                      uint32_t octets);
  rpc_err Call(rpcproc_t procedure, xdrproc_t encode_arguments, void* arguments,
               xdrproc_t decode_results, void* results, timeval timeout,
               uint32_t xid);
  // Encodes the call (`wait` false: to be sent without waiting for the
  // reply, no DDP). An error leaves `prepared` unusable.
  rpc_err Prepare(rpcproc_t procedure, xdrproc_t encode_arguments,
                  void* arguments, timeval timeout, uint32_t xid, bool wait,
                  Prepared& prepared);
  // The write chunks and reply chunk a waited-for call offers (RFC 8166
  // §3.4.6, §3.5.4), by its policy and its arguments' routine.
  void OfferResults(const RdmaXdrEncoder& encoder, const DdpPolicy& policy,
                    Prepared& prepared);
  // Decodes `reply` into `results`.
  static rpc_err Complete(Prepared& prepared, absl::StatusOr<Reply> reply,
                          xdrproc_t decode_results, void* results);
  timeval EffectiveTimeout(timeval timeout);
  bool Control(u_int request, void* info);
  void Record(const rpc_err& error, uint32_t xid);
  Outcome LastOutcome() const;

  CLIENT client_{};
  std::unique_ptr<CallPath> path_;
  const AdapterConfig config_;
  std::unique_ptr<RdmaTransport> backchannel_;
  std::atomic<uint32_t> program_;
  std::atomic<uint32_t> version_;
  std::atomic<uint32_t> next_xid_;
  std::atomic<bool> retry_on_reconnect_{false};
  std::optional<SocketAddress> server_address_;
  netbuf server_netbuf_{};

  mutable std::mutex mu_;
  timeval timeout_{};  // CLSET_TIMEOUT
  bool timeout_set_ = false;
  // clnt_geterr / CLGET_XID answer for the calling thread's last call.
  absl::flat_hash_map<std::thread::id, Outcome> outcomes_;
  Outcome last_outcome_;
  // By (program, version, procedure): LearnedReplySize. At most as many
  // entries as procedures this CLIENT called, each at most
  // largest_reply_.
  absl::flat_hash_map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t>
      learned_reply_sizes_;
  // The largest reduced reply a call offers room for on a second try: the
  // largest message the transport configuration accepts
  // (limits.max_call_size).
  const uint32_t largest_reply_;
};

}  // namespace rpcrdma::oncrpc

#endif  // RPCRDMA_ONCRPC_ADAPTER_RDMA_CLIENT_H_
