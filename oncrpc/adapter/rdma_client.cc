#include "oncrpc/adapter/rdma_client.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "oncrpc/adapter/last_error.h"
#include "oncrpc/adapter/rdma_transport.h"
#include "oncrpc/adapter/rdma_xdr.h"
#include "oncrpc/adapter/rpc_error.h"
#include "rpcrdma/buffer.h"
#include "rpcrdma/config.h"
#include "rpcrdma/oncrpc/clnt_rdma.h"

namespace rpcrdma::oncrpc {
namespace {

char kNetid[] = "rdma";

rpc_err ErrorOf(clnt_stat stat, int error = 0) {
  rpc_err e{};
  e.re_status = stat;
  e.re_errno = error;
  return e;
}

bool IsZero(const timeval& t) { return t.tv_sec == 0 && t.tv_usec == 0; }

// The largest reduced reply that comes back inline to a call offering
// `write_chunks`: max_inline_reply less the write list the reply's
// transport header echoes (RFC 8166 §3.4.7, §3.5.4), each chunk a list
// entry and a segment count (8 octets) and its segments (16 each). Asking
// for more would make the transport offer a reply chunk as well. Segments
// are counted as if cut at 1 MiB, at least as many as the transport cuts
// (it cuts at the device's largest RDMA transfer, 8 MiB and up).
uint32_t InlineReplyRoom(uint32_t max_inline_reply,
                         const std::vector<absl::Span<uint8_t>>& write_chunks) {
  constexpr size_t kSegment = size_t{1} << 20;
  size_t echo = 0;
  for (absl::Span<uint8_t> chunk : write_chunks) {
    echo +=
        8 + 16 * std::max<size_t>(1, (chunk.size() + kSegment - 1) / kSegment);
  }
  return max_inline_reply > echo
             ? static_cast<uint32_t>(max_inline_reply - echo)
             : 0;
}

// libtirpc's own check (time_not_ok in clnt_vc.c).
bool ValidTimeout(const timeval& t) {
  return t.tv_sec >= 0 && t.tv_usec >= 0 && t.tv_usec < 1000000;
}

std::chrono::steady_clock::time_point DeadlineAfter(const timeval& t) {
  // A year stands for "forever": rpcgen programs pass large timeouts.
  constexpr int64_t kLongest = int64_t{365} * 24 * 3600;
  const int64_t seconds = std::min<int64_t>(t.tv_sec, kLongest);
  return std::chrono::steady_clock::now() + std::chrono::seconds(seconds) +
         std::chrono::microseconds(t.tv_usec);
}

// The largest message `transport` accepts (limits.max_call_size, or its
// default): the largest reply a call offers room for on its second try.
uint32_t LargestReply(const ::rpcrdma::config::TransportConfig& transport) {
  return transport.limits().has_max_call_size()
             ? transport.limits().max_call_size()
             : DefaultConfig().limits().max_call_size();
}

// RFC 8166 §4.5.2: the server's RDMA_ERROR ERR_CHUNK (channel.h), the
// answer to a reply larger than the call's chunks (or to a call larger
// than the server takes).
bool IsErrChunk(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument &&
         absl::StrContains(status.message(), "ERR_CHUNK");
}

// The copy of a call that a second try needs (RdmaClient::Exchange), made
// into a request this thread keeps: copy assignment reuses its vectors'
// capacity, so that the copy allocates nothing per call in steady state.
CallRequest& SpareRequest() {
  thread_local CallRequest spare;
  return spare;
}

// A thread keeps no more than this of a spare's stream: a large call
// leaves no large buffer behind.
constexpr size_t kMostSpareOctets = 64 * 1024;

void ReleaseLargeSpare(CallRequest& spare) {
  if (spare.xdr.capacity() > kMostSpareOctets) {
    std::vector<uint8_t>().swap(spare.xdr);
  }
}

uint32_t RandomXid() {
  std::random_device device;
  return static_cast<uint32_t>(device());
}

// The RPC header of a call (RFC 5531 §9) with its credential and
// verifier, never reduced; false if it does not encode.
bool EncodeCallHeader(RdmaXdrEncoder& encoder, AUTH* auth, uint32_t xid,
                      uint32_t program, uint32_t version, rpcproc_t procedure) {
  rpc_msg call{};
  call.rm_xid = xid;
  call.rm_direction = CALL;
  call.rm_call.cb_rpcvers = RPC_MSG_VERSION;
  call.rm_call.cb_prog = program;
  call.rm_call.cb_vers = version;
  uint32_t procedure32 = procedure;
  encoder.set_ddp(false);
  return xdr_callhdr(encoder.xdr(), &call) &&
         xdr_u_int32_t(encoder.xdr(), &procedure32) &&
         AUTH_MARSHALL(auth, encoder.xdr());
}

}  // namespace

RdmaClient::RdmaClient(std::unique_ptr<CallPath> path, rpcprog_t program,
                       rpcvers_t version, AdapterConfig config,
                       std::unique_ptr<RdmaTransport> backchannel)
    : path_(std::move(path)),
      config_(std::move(config)),
      backchannel_(std::move(backchannel)),
      program_(program),
      version_(version),
      next_xid_(RandomXid()),
      largest_reply_(LargestReply(config_.transport)) {
  static const __rpc_client::clnt_ops ops = {
      &RdmaClient::CallOp,     &RdmaClient::AbortOp,
      &RdmaClient::GetErrorOp, &RdmaClient::FreeResultsOp,
      &RdmaClient::DestroyOp,  &RdmaClient::ControlOp};
  client_.cl_ops = const_cast<__rpc_client::clnt_ops*>(&ops);
  client_.cl_private = this;
  client_.cl_auth = authnone_create();
  client_.cl_netid = kNetid;
  client_.cl_tp = kNetid;
  server_address_ = path_->server_address();
  if (server_address_.has_value()) {
    server_netbuf_.buf = &server_address_->storage;
    server_netbuf_.len = server_address_->length;
    server_netbuf_.maxlen = sizeof server_address_->storage;
  }
}

RdmaClient::~RdmaClient() {
  // Calls still waiting fail first; then nothing feeds the backchannel.
  path_.reset();
  backchannel_.reset();
}

RdmaClient* RdmaClient::Of(CLIENT* client) {
  if (client == nullptr || client->cl_ops == nullptr ||
      client->cl_ops->cl_call != &RdmaClient::CallOp) {
    return nullptr;
  }
  return static_cast<RdmaClient*>(client->cl_private);
}

clnt_stat RdmaClient::CallOp(CLIENT* client, rpcproc_t procedure,
                             xdrproc_t encode_arguments, void* arguments,
                             xdrproc_t decode_results, void* results,
                             timeval timeout) {
  RdmaClient& self = *Of(client);
  // Credentials that need refreshing get two more tries (clnt_vc does).
  rpc_err error;
  uint32_t xid = 0;
  for (int refreshes = 2;; --refreshes) {
    xid = self.next_xid_.fetch_add(1, std::memory_order_relaxed);
    error = self.Call(procedure, encode_arguments, arguments, decode_results,
                      results, timeout, xid);
    if (error.re_status != RPC_AUTHERROR || refreshes == 0 ||
        !AUTH_REFRESH(client->cl_auth, nullptr)) {
      break;
    }
  }
  self.Record(error, xid);
  return error.re_status;
}

timeval RdmaClient::EffectiveTimeout(timeval timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  return timeout_set_ ? timeout_ : timeout;
}

rpc_err RdmaClient::Call(rpcproc_t procedure, xdrproc_t encode_arguments,
                         void* arguments, xdrproc_t decode_results,
                         void* results, timeval timeout, uint32_t xid) {
  timeout = EffectiveTimeout(timeout);
  // libtirpc's message passing: a zero timeout sends the call and returns
  // without waiting for the reply.
  const bool wait = !IsZero(timeout);
  Prepared prepared;
  rpc_err error = Prepare(procedure, encode_arguments, arguments, timeout, xid,
                          wait, prepared);
  if (error.re_status != RPC_SUCCESS) return error;
  if (!wait) {
    path_->Send(std::move(prepared.request));
    SetLastError("clnt_call: sent without waiting (zero timeout)");
    return ErrorOf(RPC_TIMEDOUT);
  }
  absl::StatusOr<Reply> reply = Exchange(prepared);
  return Complete(prepared, std::move(reply), decode_results, results);
}

absl::StatusOr<Reply> RdmaClient::Exchange(Prepared& prepared) {
  // Only a call that offered less than the most it may gets a second try,
  // and only a forward one: the client side of a connection keeps no
  // replies for backward calls, which would run twice.
  const bool may_retry = path_->channel() != nullptr &&
                         prepared.request.max_reply_size < largest_reply_;
  CallRequest* again = nullptr;
  if (may_retry) {
    again = &SpareRequest();
    *again = prepared.request;  // into the spare's kept capacity
  }
  absl::StatusOr<Reply> reply = path_->Call(std::move(prepared.request));
  if (!may_retry || reply.ok() || !IsErrChunk(reply.status())) {
    if (again != nullptr) ReleaseLargeSpare(*again);
    return reply;
  }
  // The server kept the reply (svc_rdma.h): the same call, with the same
  // XID and before the same deadline, offering a reply chunk as large as
  // any reply may be, fetches it without running the procedure again.
  const uint32_t offered = again->max_reply_size;
  again->max_reply_size = largest_reply_;
  reply = path_->Call(std::move(*again));
  if (reply.ok() && !prepared.reply_size_stated) {
    LearnReplySize(prepared.program, prepared.version, prepared.procedure,
                   static_cast<uint32_t>(reply->xdr.size()));
  } else if (IsErrChunk(reply.status())) {
    reply = absl::InvalidArgumentError(absl::StrCat(
        "the server answered RDMA_ERROR ERR_CHUNK to procedure ",
        prepared.procedure, " offering ", offered,
        " octets of reply, and again offering ", largest_reply_,
        " (the transport's limits.max_call_size): the reply, or the call, "
        "is larger than this CLIENT's transport configuration allows; raise "
        "limits.max_call_size on both sides (",
        reply.status().message(), ")"));
  }
  return reply;
}

uint32_t RdmaClient::LearnedReplySize(uint32_t program, uint32_t version,
                                      rpcproc_t procedure) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = learned_reply_sizes_.find({program, version, procedure});
  return it == learned_reply_sizes_.end() ? 0 : it->second;
}

void RdmaClient::LearnReplySize(uint32_t program, uint32_t version,
                                rpcproc_t procedure, uint32_t octets) {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t& learned = learned_reply_sizes_[{program, version, procedure}];
  // The largest seen: a procedure's replies vary in size.
  learned = std::max(learned, octets);
}

bool_t RdmaClient::CallAsync(rpcproc_t procedure, xdrproc_t encode_arguments,
                             void* arguments, xdrproc_t decode_results,
                             void* results, timeval timeout, AsyncDone done,
                             void* done_argument) {
  timeout = EffectiveTimeout(timeout);
  if (done == nullptr || IsZero(timeout) || !ValidTimeout(timeout)) {
    SetLastError(
        "clnt_rdma_call_async: needs a completion and a nonzero timeout");
    return FALSE;
  }
  const uint32_t xid = next_xid_.fetch_add(1, std::memory_order_relaxed);
  auto prepared = std::make_shared<Prepared>();
  const rpc_err error = Prepare(procedure, encode_arguments, arguments, timeout,
                                xid, /*wait=*/true, *prepared);
  if (error.re_status != RPC_SUCCESS) {
    done(error.re_status, done_argument);
    return TRUE;
  }
  // The prepared call keeps the write chunks' spans and the memory behind
  // them until the reply is decoded.
  CallRequest request = std::move(prepared->request);
  path_->CallAsync(
      std::move(request), [prepared, decode_results, results, done,
                           done_argument](absl::StatusOr<Reply> reply) {
        const rpc_err e =
            Complete(*prepared, std::move(reply), decode_results, results);
        done(e.re_status, done_argument);
      });
  return TRUE;
}

rpc_err RdmaClient::Prepare(rpcproc_t procedure, xdrproc_t encode_arguments,
                            void* arguments, timeval timeout, uint32_t xid,
                            bool wait, Prepared& prepared) {
  AUTH* const auth = client_.cl_auth;
  const uint32_t program = program_.load(std::memory_order_relaxed);
  const uint32_t version = version_.load(std::memory_order_relaxed);
  const DdpPolicy& policy = config_.PolicyFor(program, version);
  // Under RPCSEC_GSS the arguments and results are wrapped: no DDP (Linux
  // switches it off under integrity and privacy, RFC 8166 §9.2).
  const bool ddp = wait && auth->ah_cred.oa_flavor != RPCSEC_GSS;
  prepared.auth = auth;
  prepared.procedure = procedure;
  prepared.xid = xid;
  prepared.ddp = ddp;
  prepared.program = program;
  prepared.version = version;

  RdmaXdrEncoder encoder(RdmaXdrEncoder::Message::kCall);
  if (!EncodeCallHeader(encoder, auth, xid, program, version, procedure)) {
    SetLastError("clnt_call: the RPC header does not encode");
    return ErrorOf(RPC_CANTENCODEARGS);
  }
  encoder.set_ddp(ddp);
  encoder.set_threshold(policy.argument_threshold);
  if (!AUTH_WRAP(auth, encoder.xdr(), encode_arguments,
                 static_cast<caddr_t>(arguments))) {
    SetLastError(absl::StrCat("clnt_call: the arguments of procedure ",
                              procedure, " do not encode"));
    return ErrorOf(RPC_CANTENCODEARGS);
  }

  CallRequest& request = prepared.request;
  request.xdr = encoder.TakeStream();
  request.retry_on_reconnect = retry_on_reconnect_.load();
  for (const DdpItem& item : encoder.items()) {
    request.arguments.push_back({item.position, item.data});
  }
  if (!wait) {
    request.max_reply_size = path_->max_inline_reply();
    return ErrorOf(RPC_SUCCESS);
  }
  OfferResults(encoder, policy, prepared);
  request.deadline = DeadlineAfter(timeout);
  return ErrorOf(RPC_SUCCESS);
}

void RdmaClient::OfferResults(const RdmaXdrEncoder& encoder,
                              const DdpPolicy& policy, Prepared& prepared) {
  CallRequest& request = prepared.request;
  // Write chunks: the one the policy binds to the procedure, then those
  // the arguments' routine asked for. Memory the caller did not provide
  // comes from the buffer pool, uninitialised.
  auto offer = [&](u_int length, void* buffer) {
    if (buffer == nullptr) {
      prepared.owned_results.emplace_back(length);
      buffer = prepared.owned_results.back().data();
    }
    request.results.push_back(
        absl::MakeSpan(static_cast<uint8_t*>(buffer), length));
  };
  const uint32_t bound_write_chunk =
      prepared.ddp ? policy.WriteChunkOctets(prepared.procedure) : 0;
  // Reserved, since `offer` keeps pointers into them; only when there are
  // any (a call without write chunks allocates nothing here).
  size_t owned = bound_write_chunk != 0 ? 1 : 0;
  for (const xdr_rdma_write_chunk& chunk : encoder.write_chunks()) {
    if (prepared.ddp && chunk.buffer == nullptr) ++owned;
  }
  if (owned != 0) prepared.owned_results.reserve(owned);
  if (bound_write_chunk != 0) offer(bound_write_chunk, nullptr);
  for (const xdr_rdma_write_chunk& chunk : encoder.write_chunks()) {
    if (prepared.ddp) offer(chunk.length, chunk.buffer);
  }
  // A size learned from an earlier call's second try saves this one the
  // extra round trip (a policy that offers enough saves the first's),
  // unless the call's own routine stated its reply chunk.
  prepared.reply_size_stated = encoder.reply_chunk().has_value();
  request.max_reply_size =
      std::max({policy.MaxReplyOctets(prepared.procedure),
                encoder.reply_chunk().value_or(0),
                InlineReplyRoom(path_->max_inline_reply(), request.results),
                prepared.reply_size_stated
                    ? 0
                    : LearnedReplySize(prepared.program, prepared.version,
                                       prepared.procedure)});
  prepared.offered = request.results;
  prepared.bound = bound_write_chunk != 0 || !encoder.write_chunks().empty();
  prepared.result_threshold = policy.result_threshold;
}

rpc_err RdmaClient::Complete(Prepared& prepared, absl::StatusOr<Reply> reply,
                             xdrproc_t decode_results, void* results) {
  if (!reply.ok()) {
    SetLastError(reply.status());
    return RpcErrorOf(reply.status());
  }
  const std::vector<absl::Span<uint8_t>>& offered = prepared.offered;
  std::vector<RdmaXdrDecoder::Chunk> chunks;
  for (size_t i = 0; i < reply->result_lengths.size() && i < offered.size();
       ++i) {
    chunks.emplace_back(offered[i].data(), reply->result_lengths[i]);
  }
  // Results the call bound to a write chunk may be short (nfsd places a
  // READ of any length there); other opaques take chunk data only from the
  // threshold up, as the responder's encoder put them (xdr_rdma.h).
  const uint32_t min_chunked = prepared.bound ? 1
                                              : (prepared.result_threshold != 0
                                                     ? prepared.result_threshold
                                                     : UINT32_MAX);
  RdmaXdrDecoder decoder(reply->xdr.span(), std::move(chunks), min_chunked,
                         prepared.ddp ? prepared.result_threshold : 0);
  AUTH* const auth = prepared.auth;
  const rpcproc_t procedure = prepared.procedure;
  rpc_msg reply_msg{};
  reply_msg.acpted_rply.ar_verf = _null_auth;
  reply_msg.acpted_rply.ar_results.where = nullptr;
  reply_msg.acpted_rply.ar_results.proc =
      reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(&xdr_void));
  if (!xdr_replymsg(decoder.xdr(), &reply_msg) ||
      reply_msg.rm_xid != prepared.xid) {
    FreeReplyVerifier(reply_msg);
    SetLastError("clnt_call: the reply's RPC header does not decode");
    return ErrorOf(RPC_CANTDECODERES);
  }
  rpc_err error{};
  _seterr_reply(&reply_msg, &error);
  if (error.re_status != RPC_SUCCESS) {
    // The server's answer is the failure (RFC 5531 §9).
    SetLastError(absl::StrCat("clnt_call: procedure ", procedure, ": ",
                              clnt_sperrno(error.re_status),
                              " (the server's reply)"));
  } else if (!AUTH_VALIDATE(auth, &reply_msg.acpted_rply.ar_verf)) {
    error.re_status = RPC_AUTHERROR;
    error.re_why = AUTH_INVALIDRESP;
    SetLastError("clnt_call: the reply's verifier is not valid");
  } else if (!AUTH_UNWRAP(auth, decoder.xdr(), decode_results,
                          static_cast<caddr_t>(results))) {
    error = ErrorOf(RPC_CANTDECODERES);
    SetLastError(absl::StrCat("clnt_call: the results of procedure ", procedure,
                              " do not decode"));
  } else if (decoder.unconsumed_chunks() != 0) {
    error = ErrorOf(RPC_CANTDECODERES);
    SetLastError(absl::StrCat(
        "clnt_call: the reply returned data in ", decoder.unconsumed_chunks(),
        " write chunk(s) that no result of procedure ", procedure,
        " took (the server's DDP policy differs from ours)"));
  }
  FreeReplyVerifier(reply_msg);
  return error;
}

void RdmaClient::AbortOp(CLIENT*) {}

void RdmaClient::Record(const rpc_err& error, uint32_t xid) {
  std::lock_guard<std::mutex> lock(mu_);
  last_outcome_ = Outcome{error, xid};
  outcomes_[std::this_thread::get_id()] = last_outcome_;
}

RdmaClient::Outcome RdmaClient::LastOutcome() const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = outcomes_.find(std::this_thread::get_id());
  return it != outcomes_.end() ? it->second : last_outcome_;
}

void RdmaClient::GetErrorOp(CLIENT* client, rpc_err* error) {
  *error = Of(client)->LastOutcome().error;
}

bool_t RdmaClient::FreeResultsOp(CLIENT*, xdrproc_t free_results,
                                 void* results) {
  xdr_free(free_results, results);
  return TRUE;
}

void RdmaClient::DestroyOp(CLIENT* client) { delete Of(client); }

bool_t RdmaClient::ControlOp(CLIENT* client, u_int request, void* info) {
  return Of(client)->Control(request, info) ? TRUE : FALSE;
}

bool RdmaClient::Control(u_int request, void* info) {
  switch (request) {
    case CLSET_FD_CLOSE:
    case CLSET_FD_NCLOSE:
      return true;  // no descriptor of the caller's to close
    default:
      break;
  }
  if (info == nullptr) return false;
  switch (request) {
    case CLSET_TIMEOUT: {
      const timeval t = *static_cast<const timeval*>(info);
      if (!ValidTimeout(t)) return false;
      std::lock_guard<std::mutex> lock(mu_);
      timeout_ = t;
      timeout_set_ = true;
      return true;
    }
    case CLGET_TIMEOUT: {
      std::lock_guard<std::mutex> lock(mu_);
      *static_cast<timeval*>(info) = timeout_;
      return true;
    }
    case CLGET_SERVER_ADDR:
      if (!server_address_.has_value()) return false;
      std::memcpy(info, &server_address_->storage, server_address_->length);
      return true;
    case CLGET_SVC_ADDR:
      if (!server_address_.has_value()) return false;
      *static_cast<netbuf*>(info) = server_netbuf_;
      return true;
    case CLGET_XID:
      *static_cast<uint32_t*>(info) = LastOutcome().xid;
      return true;
    case CLSET_XID:
      next_xid_.store(*static_cast<const uint32_t*>(info));
      return true;
    case CLGET_VERS:
      *static_cast<uint32_t*>(info) = version_.load();
      return true;
    case CLSET_VERS:
      version_.store(*static_cast<const uint32_t*>(info));
      return true;
    case CLGET_PROG:
      *static_cast<uint32_t*>(info) = program_.load();
      return true;
    case CLSET_PROG:
      program_.store(*static_cast<const uint32_t*>(info));
      return true;
    case CLSET_RDMA_RETRY:
      retry_on_reconnect_.store(*static_cast<const int*>(info) != 0);
      return true;
    case CLGET_RDMA_RETRY:
      *static_cast<int*>(info) = retry_on_reconnect_.load() ? 1 : 0;
      return true;
    default:
      // CLGET_FD: an RDMA connection has no socket; CLSET_SVC_ADDR: a
      // handle does not move (clnt_vc refuses it too).
      return false;
  }
}

}  // namespace rpcrdma::oncrpc
