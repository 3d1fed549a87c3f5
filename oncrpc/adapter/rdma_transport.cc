#include "oncrpc/adapter/rdma_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <rpc/svc_mt.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "oncrpc/adapter/last_error.h"
#include "oncrpc/adapter/rdma_xdr.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::oncrpc {
namespace {
char kRdmaNetid[] = "rdma";

// The transport whose runtime this thread is driving from svc_run (calls
// its handler queues then wait for this thread, without a wake-up).
thread_local const RdmaTransport* t_driving = nullptr;

class DrivingScope {
 public:
  explicit DrivingScope(const RdmaTransport* transport)
      : previous_(std::exchange(t_driving, transport)) {}
  ~DrivingScope() { t_driving = previous_; }
  DrivingScope(const DrivingScope&) = delete;
  DrivingScope& operator=(const DrivingScope&) = delete;

 private:
  const RdmaTransport* previous_;
};

}  // namespace

// One SVCXPRT and the call being dispatched on it (see the header).
struct DispatchState {
  RdmaTransport* transport = nullptr;
  bool main = false;    // takes calls from the transport's queue
  bool drives = false;  // the driver (rdma_transport.h)
  SVCXPRT xprt{};
  SVCXPRT_EXT ext{};
  int own_fd = -1;  // a thread's: never signalled
  std::optional<Job> pending;
  std::optional<Job> current;
  bool replied = false;
  size_t arguments_at = 0;
  uint32_t xid = 0;
  uint32_t program = 0;
  uint32_t version = 0;
  uint32_t procedure = 0;
  bool gss = false;
  SocketAddress peer{};
  // The call's identity in the reply cache, while it is being executed.
  std::optional<CallIdentity> cached_call;
  // svc_sendreply returns once the transport reads no more of the
  // results' memory (the dispatcher frees it right after).
  std::mutex released_mu;
  std::condition_variable released_cv;
  bool released = false;

  static DispatchState& Of(SVCXPRT* xprt) {
    return *static_cast<DispatchState*>(xprt->xp_p1);
  }
  static bool_t Receive(SVCXPRT* xprt, rpc_msg* msg);
  static xprt_stat Status(SVCXPRT* xprt);
  static bool_t GetArguments(SVCXPRT* xprt, xdrproc_t decode, void* where);
  static bool_t SendReply(SVCXPRT* xprt, rpc_msg* msg);
  static bool_t FreeArguments(SVCXPRT* xprt, xdrproc_t free, void* where);
  static void Destroy(SVCXPRT* xprt);
  static bool_t Control(SVCXPRT* xprt, u_int request, void* info);

  bool Take(Job job, rpc_msg* msg);
  void AnswerUndecodable(Job& job);
  // The call's identity, as the reply cache and the kept replies know it.
  CallIdentity IdentityOf(const Job& job) const;
  // True when the call is a second try of one whose reply was kept
  // (kept_replies.h): it is answered with that reply, not executed.
  bool AnswerFromKept(Job& job);
  // False when the reply cache answers the call (or parks it behind its
  // first instance).
  bool ExecuteAfterCache(Job& job);
  // The copy the reply cache keeps (null when it keeps none).
  std::shared_ptr<const CachedReply> CacheReply(const HandlerReply& reply);
  // Keeps a copy of `reply` when it may be too large for what `job`'s
  // call offered (the Responder then answers ERR_CHUNK, RFC 8166 §4.5.2).
  void KeepIfTooLarge(const Job& job, const HandlerReply& reply);
  void KeepIfTooLarge(const Job& job,
                      const std::shared_ptr<const CachedReply>& reply);
  bool MayNotFit(const IncomingCall& call, size_t reduced_reply) const;
};

namespace {

// The ops' struct types are named after SVCXPRT's members, which hide them.
using XprtOps =
    std::remove_const_t<std::remove_pointer_t<decltype(SVCXPRT::xp_ops)>>;
using XprtOps2 =
    std::remove_const_t<std::remove_pointer_t<decltype(SVCXPRT::xp_ops2)>>;
const XprtOps kOps = {&DispatchState::Receive,       &DispatchState::Status,
                      &DispatchState::GetArguments,  &DispatchState::SendReply,
                      &DispatchState::FreeArguments, &DispatchState::Destroy};
const XprtOps2 kOps2 = {&DispatchState::Control};

// The reply as the transport would send it, copied.
std::shared_ptr<CachedReply> CopyOf(const HandlerReply& reply) {
  auto kept = std::make_shared<CachedReply>();
  kept->xdr = reply.xdr;
  for (const ReplyItem& item : reply.results) {
    const absl::Span<const uint8_t> octets = item.bytes();
    kept->items.emplace_back(
        item.position(), std::vector<uint8_t>(octets.begin(), octets.end()));
  }
  return kept;
}

// At least as long as the RPC-over-RDMA version 1 transport header of a
// reply to a call offering `write_chunks` (RFC 8166 §4.2.1): XID, version,
// credits, procedure, an empty read list, the write list echoed, and no
// reply chunk (seven words), each write chunk a list entry, a segment
// count and its segments, counted as if cut at 1 MiB (the requester cuts
// at its device's largest transfer, 8 MiB and up).
size_t ReplyHeaderBound(absl::Span<const uint64_t> write_chunks) {
  constexpr uint64_t kSegment = uint64_t{1} << 20;
  size_t header = 28;
  for (uint64_t capacity : write_chunks) {
    header +=
        8 + 16 * std::max<uint64_t>(1, (capacity + kSegment - 1) / kSegment);
  }
  return header;
}

uint16_t PortOf(const SocketAddress& address) {
  switch (address.storage.ss_family) {
    case AF_INET:
      return ntohs(
          reinterpret_cast<const sockaddr_in*>(&address.storage)->sin_port);
    case AF_INET6:
      return ntohs(
          reinterpret_cast<const sockaddr_in6*>(&address.storage)->sin6_port);
    default:
      return 0;
  }
}

// RFC 5531 §9 call_body: cred at octet 24 of the message (after xid,
// msg_type, rpcvers, prog, vers, proc), then verf; each an opaque_auth
// (flavor, then body<400>, §8.2). AUTH_BADCRED or AUTH_BADVERF when the
// length of one exceeds 400 (the verifier is read only after a credential
// within bounds), else nothing.
std::optional<auth_stat> OversizedAuth(absl::Span<const uint8_t> message) {
  constexpr size_t kCredential = 24;
  if (message.size() < kCredential + 8) return std::nullopt;
  const uint32_t credential_length =
      LoadBigEndian32(message.data() + kCredential + 4);
  if (credential_length > MAX_AUTH_BYTES) return AUTH_BADCRED;
  const size_t verifier = kCredential + 8 + XdrRoundUp(credential_length);
  if (message.size() < verifier + 8) return std::nullopt;
  if (LoadBigEndian32(message.data() + verifier + 4) > MAX_AUTH_BYTES) {
    return AUTH_BADVERF;
  }
  return std::nullopt;
}

netbuf NetbufOf(SocketAddress& address) {
  netbuf n{};
  n.maxlen = sizeof address.storage;
  n.len = address.length;
  n.buf = &address.storage;
  return n;
}

}  // namespace

bool_t DispatchState::Receive(SVCXPRT* xprt, rpc_msg* msg) {
  DispatchState& self = Of(xprt);
  self.current.reset();
  // The driver's descriptor is the runtime's: read the connections here
  // (once the calls found last time are dispatched).
  if (self.drives && self.transport->queue_.empty()) {
    self.transport->DriveFromCaller(std::chrono::milliseconds(0));
  }
  for (;;) {
    std::optional<Job> job =
        self.main ? self.transport->queue_.TryPop(/*clear_signal=*/!self.drives)
                  : std::exchange(self.pending, {});
    if (!job.has_value()) return FALSE;
    if (self.Take(*std::move(job), msg)) return TRUE;
  }
}

bool DispatchState::Take(Job job, rpc_msg* msg) {
  RdmaXdrDecoder decoder(job.call.message.span());
  if (!xdr_callmsg(decoder.xdr(), msg)) {
    AnswerUndecodable(job);
    return false;
  }
  arguments_at = XDR_GETPOS(decoder.xdr());
  xid = msg->rm_xid;
  program = msg->rm_call.cb_prog;
  version = msg->rm_call.cb_vers;
  procedure = msg->rm_call.cb_proc;
  gss = msg->rm_call.cb_cred.oa_flavor == RPCSEC_GSS;
  peer = job.peer.value_or(transport->default_peer_);
  xprt.xp_rtaddr = NetbufOf(peer);
  if (AnswerFromKept(job)) return false;
  if (!ExecuteAfterCache(job)) return false;
  replied = false;
  current = std::move(job);
  return true;
}

CallIdentity DispatchState::IdentityOf(const Job& job) const {
  // Not `peer`, which falls back on the transport's own address.
  const std::optional<SocketAddress>& known = job.peer;
  return IdentifyCall(
      job.call.connection.value(),
      known.has_value() ? absl::MakeConstSpan(
                              reinterpret_cast<const uint8_t*>(&known->storage),
                              known->length)
                        : absl::Span<const uint8_t>(),
      xid, program, version, procedure,
      job.call.message.span().subspan(arguments_at));
}

bool DispatchState::AnswerFromKept(Job& job) {
  KeptReplies& kept = transport->kept_replies();
  if (kept.maybe_empty()) return false;
  std::shared_ptr<const CachedReply> reply = kept.Take(IdentityOf(job));
  if (reply == nullptr) return false;
  // Still too large for this try's chunks: kept again for another.
  KeepIfTooLarge(job, reply);
  (void)job.responder.Send(CachedReply::ToSend(std::move(reply)));
  return true;
}

bool DispatchState::MayNotFit(const IncomingCall& call,
                              size_t reduced_reply) const {
  // RFC 8166 §3.5.4: a reply chunk carries a reduced reply up to its size.
  if (reduced_reply <= call.reply_chunk_capacity) return false;
  const size_t header = ReplyHeaderBound(call.write_chunk_capacities);
  // Every inline threshold is at least 1024 octets (RFC 8166 §3.3.3).
  if (header + reduced_reply <= 1024) return false;
  Server* server = transport->server();
  if (server == nullptr) return false;  // a backchannel keeps nothing
  absl::StatusOr<ConnectionInfo> info =
      server->connection_info(call.connection);
  if (!info.ok()) return false;  // the connection is gone
  return header + reduced_reply > info->send_threshold;
}

void DispatchState::KeepIfTooLarge(const Job& job, const HandlerReply& reply) {
  if (!MayNotFit(job.call, reply.xdr.size())) return;
  KeepIfTooLarge(job, CopyOf(reply));
}

void DispatchState::KeepIfTooLarge(
    const Job& job, const std::shared_ptr<const CachedReply>& reply) {
  if (!MayNotFit(job.call, reply->xdr.size())) return;
  (void)transport->kept_replies().Keep(IdentityOf(job), reply);
}

bool DispatchState::ExecuteAfterCache(Job& job) {
  cached_call.reset();
  ReplyCache* cache = transport->cache();
  if (cache == nullptr || !cache->Caches(program, version, procedure)) {
    return true;
  }
  const CallIdentity call = IdentityOf(job);
  ReplyCache::Lookup found = cache->Begin(call, [&job] {
    return ReplyCache::Waiter(
        [responder = std::move(job.responder)](
            std::shared_ptr<const CachedReply> reply) mutable {
          (void)responder.Send(CachedReply::ToSend(std::move(reply)));
        });
  });
  if (found.reply != nullptr) {
    (void)job.responder.Send(CachedReply::ToSend(std::move(found.reply)));
  }
  if (!found.execute) return false;
  cached_call = call;
  return true;
}

std::shared_ptr<const CachedReply> DispatchState::CacheReply(
    const HandlerReply& reply) {
  if (!cached_call.has_value()) return nullptr;
  std::shared_ptr<const CachedReply> kept = CopyOf(reply);
  std::vector<ReplyCache::Waiter> waiting =
      transport->cache()->Complete(*cached_call, kept);
  cached_call.reset();
  // Duplicates that arrived while the call ran get its reply.
  for (ReplyCache::Waiter& duplicate : waiting) duplicate(kept);
  return kept;
}

// A call whose RPC header libtirpc cannot read still gets an answer
// (RFC 5531 §9): RPC_MISMATCH for another RPC version, AUTH_ERROR for a
// credential or verifier over the 400 octets of RFC 5531 §8.2 (which
// xdr_callmsg refuses), else GARBAGE_ARGS.
void DispatchState::AnswerUndecodable(Job& job) {
  const Buffer& m = job.call.message;
  rpc_msg reply{};
  reply.rm_xid = job.call.xid;
  reply.rm_direction = REPLY;
  const std::optional<auth_stat> bad_auth = OversizedAuth(m.span());
  if (m.size() >= 12 && LoadBigEndian32(m.data() + 8) != RPC_MSG_VERSION) {
    reply.rm_reply.rp_stat = MSG_DENIED;
    reply.rjcted_rply.rj_stat = RPC_MISMATCH;
    reply.rjcted_rply.rj_vers.low = RPC_MSG_VERSION;
    reply.rjcted_rply.rj_vers.high = RPC_MSG_VERSION;
  } else if (bad_auth.has_value()) {
    reply.rm_reply.rp_stat = MSG_DENIED;
    reply.rjcted_rply.rj_stat = AUTH_ERROR;
    reply.rjcted_rply.rj_why = *bad_auth;
  } else {
    reply.rm_reply.rp_stat = MSG_ACCEPTED;
    reply.acpted_rply.ar_verf = _null_auth;
    reply.acpted_rply.ar_stat = GARBAGE_ARGS;
  }
  RdmaXdrEncoder encoder(RdmaXdrEncoder::Message::kReply);
  encoder.set_ddp(false);
  if (xdr_replymsg(encoder.xdr(), &reply)) {
    (void)job.responder.Send(HandlerReply(encoder.TakeStream()));
  }
}

xprt_stat DispatchState::Status(SVCXPRT* xprt) {
  DispatchState& self = Of(xprt);
  // svc_getreq_common asks after each call: that call is over (a call the
  // dispatcher did not answer, and each of its duplicates, is answered
  // SYSTEM_ERR as its Responder goes: rpcrdma/responder.h).
  if (self.cached_call.has_value()) {
    (void)self.transport->cache()->Abandon(*self.cached_call);
    self.cached_call.reset();
  }
  self.current.reset();
  return self.main && !self.transport->queue_.empty() ? XPRT_MOREREQS
                                                      : XPRT_IDLE;
}

bool_t DispatchState::GetArguments(SVCXPRT* xprt, xdrproc_t decode,
                                   void* where) {
  DispatchState& self = Of(xprt);
  if (!self.current.has_value()) return FALSE;
  const DdpPolicy& policy =
      self.transport->config_.PolicyFor(self.program, self.version);
  // Read chunks are already in place: the call is complete.
  RdmaXdrDecoder decoder(self.current->call.message.span(),
                         self.gss ? 0 : policy.argument_threshold);
  decoder.SetPosition(self.arguments_at);
  return SVCAUTH_UNWRAP(&SVC_XP_AUTH(xprt), decoder.xdr(), decode,
                        static_cast<caddr_t>(where));
}

bool_t DispatchState::FreeArguments(SVCXPRT*, xdrproc_t free, void* where) {
  xdr_free(free, where);
  return TRUE;
}

bool_t DispatchState::SendReply(SVCXPRT* xprt, rpc_msg* msg) {
  DispatchState& self = Of(xprt);
  if (!self.current.has_value() || self.replied) return FALSE;
  xdrproc_t encode_results = nullptr;
  caddr_t results = nullptr;
  // The results go through the AUTH's wrapping, after the header (as
  // svc_vc_reply does).
  const bool has_results = msg->rm_reply.rp_stat == MSG_ACCEPTED &&
                           msg->acpted_rply.ar_stat == SUCCESS;
  if (has_results) {
    encode_results = msg->acpted_rply.ar_results.proc;
    results = msg->acpted_rply.ar_results.where;
    msg->acpted_rply.ar_results.proc =
        reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(&xdr_void));
    msg->acpted_rply.ar_results.where = nullptr;
  }
  msg->rm_xid = self.xid;
  RdmaXdrEncoder encoder(RdmaXdrEncoder::Message::kReply);
  encoder.set_ddp(false);
  if (!xdr_replymsg(encoder.xdr(), msg)) return FALSE;
  if (has_results) {
    const DdpPolicy& policy =
        self.transport->config_.PolicyFor(self.program, self.version);
    encoder.set_ddp(!self.gss);
    // A procedure bound to a write chunk places its result there whatever
    // its length, as the client's decoder expects (xdr_rdma.h) and as
    // Linux's nfsd places a short READ (RFC 8267 §4.1).
    encoder.set_threshold(policy.WriteChunkOctets(self.procedure) != 0
                              ? 1
                              : policy.result_threshold);
    encoder.set_item_capacities(self.current->call.write_chunk_capacities);
    if (!SVCAUTH_WRAP(&SVC_XP_AUTH(xprt), encoder.xdr(), encode_results,
                      results)) {
      SetLastError("svc_sendreply: the results do not encode");
      return FALSE;
    }
  }
  HandlerReply reply(encoder.TakeStream());
  for (const DdpItem& item : encoder.items()) {
    reply.results.push_back(ReplyItem::Lent(item.position, item.data));
  }
  const bool lends = !reply.results.empty();
  if (lends) {
    self.released = false;
    reply.on_released = [&self] {
      std::lock_guard<std::mutex> lock(self.released_mu);
      self.released = true;
      self.released_cv.notify_all();
    };
  }
  self.replied = true;
  // One copy serves both stores.
  if (std::shared_ptr<const CachedReply> cached = self.CacheReply(reply)) {
    self.KeepIfTooLarge(*self.current, cached);
  } else {
    self.KeepIfTooLarge(*self.current, reply);
  }
  const absl::Status sent = self.current->responder.Send(std::move(reply));
  if (lends) {
    std::unique_lock<std::mutex> lock(self.released_mu);
    while (!self.released) {
      if (self.transport->caller_drives()) {
        // Nobody else drives the runtime: this thread must, for the
        // transfer to finish.
        lock.unlock();
        self.transport->DriveFromCaller(std::chrono::milliseconds(1));
        lock.lock();
      } else {
        self.released_cv.wait_for(lock, std::chrono::milliseconds(1));
      }
    }
  }
  if (!sent.ok()) {
    SetLastError(sent);
    return FALSE;
  }
  return TRUE;
}

void DispatchState::Destroy(SVCXPRT* xprt) {
  RdmaTransport* transport = Of(xprt).transport;
  transport->Stop();
  if (transport->owned_by_xprt_) delete transport;
}

bool_t DispatchState::Control(SVCXPRT*, u_int, void*) { return FALSE; }

RdmaTransport::RdmaTransport(const AdapterConfig& config, bool owned_by_xprt)
    : config_(config), owned_by_xprt_(owned_by_xprt) {}

absl::StatusOr<RdmaTransport*> RdmaTransport::Listen(
    absl::string_view uri, const AdapterConfig& config) {
  std::unique_ptr<RdmaTransport> transport(
      new RdmaTransport(config, /*owned_by_xprt=*/true));
  ServerOptions options;
  options.runtime = config.runtime;
  if (options.runtime == nullptr) {
    // svc_run's thread drives it (rdma_transport.h).
    absl::StatusOr<std::shared_ptr<Runtime>> runtime =
        Runtime::Create({.loop_threads = 0});
    if (!runtime.ok()) return runtime.status();
    transport->own_runtime_ = *runtime;
    options.runtime = *runtime;
  }
  RdmaTransport* self = transport.get();
  options.on_connection = [self](const ServerConnectionEvent& event) {
    self->OnConnection(event);
  };
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Create(
      uri, config.transport, transport->Handler(), std::move(options));
  if (!server.ok()) return server.status();
  transport->server_ = *std::move(server);
  transport->uri_ = transport->server_->uri();
  absl::StatusOr<SocketAddress> local = ResolveUriAddress(transport->uri_);
  if (local.ok()) {
    transport->local_ = *local;
    transport->default_peer_ = *local;
  }
  if (absl::Status s = transport->Start(); !s.ok()) return s;
  return transport.release();
}

absl::StatusOr<std::unique_ptr<RdmaTransport>> RdmaTransport::ForBackchannel(
    const AdapterConfig& config, absl::string_view peer) {
  std::unique_ptr<RdmaTransport> transport(
      new RdmaTransport(config, /*owned_by_xprt=*/false));
  transport->uri_ = std::string(peer);
  absl::StatusOr<SocketAddress> address = ResolveUriAddress(peer);
  if (address.ok()) transport->default_peer_ = *address;
  if (absl::Status s = transport->Start(); !s.ok()) return s;
  return transport;
}

absl::Status RdmaTransport::Start() {
  if (!queue_.ok()) {
    return absl::ResourceExhaustedError("svc_rdma: no eventfd for the calls");
  }
  if (AddDispatcher(Dispatcher::kMain) == nullptr) {
    return absl::ResourceExhaustedError(
        "svc_rdma: libtirpc would not register the SVCXPRT's descriptor");
  }
  if (own_runtime_ != nullptr) {
    driver_ = AddDispatcher(Dispatcher::kDriver);
    keeper_wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (driver_ == nullptr || keeper_wake_fd_ < 0) {
      return absl::ResourceExhaustedError(
          "svc_rdma: no descriptor to drive the transport's runtime");
    }
    keeper_ = std::thread([this] { Keep(); });
  }
  return absl::OkStatus();
}

DispatchState* RdmaTransport::AddDispatcher(Dispatcher kind) {
  auto state = std::make_unique<DispatchState>();
  state->transport = this;
  state->main = kind != Dispatcher::kThread;
  state->drives = kind == Dispatcher::kDriver;
  int fd = queue_.event_fd();
  if (kind == Dispatcher::kDriver) fd = own_runtime_->event_fd();
  if (kind == Dispatcher::kThread) {
    state->own_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (state->own_fd < 0) return nullptr;
    fd = state->own_fd;
  }
  SVCXPRT& x = state->xprt;
  x.xp_fd = fd;
  x.xp_port = PortOf(local_);
  x.xp_ops = &kOps;
  x.xp_ops2 = &kOps2;
  x.xp_netid = kRdmaNetid;
  x.xp_tp = kRdmaNetid;
  x.xp_ltaddr = NetbufOf(local_);
  x.xp_p1 = state.get();
  x.xp_p3 = &state->ext;
  x.xp_verf = _null_auth;
  xprt_register(&x);
  dispatchers_.push_back(std::move(state));
  return dispatchers_.back().get();
}

RdmaTransport::~RdmaTransport() { Stop(); }

void RdmaTransport::Stop() {
  if (stopped_) return;
  stopped_ = true;
  // Calls waiting are never dispatched (kept unanswered until after the
  // Server is gone, their requesters see the connection close) and the
  // threads leave once their current call is answered.
  queue_.Stop();
  for (std::thread& t : threads_) t.join();
  // Then nothing delivers calls; a Server waits for its connections, which
  // the keeper drives meanwhile whoever drove them before.
  if (keeper_.joinable()) DriveFromKeeper();
  server_.reset();
  if (keeper_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(keeper_mu_);
      keeper_stop_ = true;
    }
    keeper_cv_.notify_all();
    const uint64_t one = 1;
    (void)!write(keeper_wake_fd_, &one, sizeof one);
    keeper_.join();
  }
  if (keeper_wake_fd_ >= 0) close(keeper_wake_fd_);
  keeper_wake_fd_ = -1;
  for (auto& d : dispatchers_) {
    xprt_unregister(&d->xprt);
    if (d->own_fd >= 0) close(d->own_fd);
    d->own_fd = -1;
  }
}

void RdmaTransport::Keep() {
  pollfd fds[2] = {{own_runtime_->event_fd(), POLLIN, 0},
                   {keeper_wake_fd_, POLLIN, 0}};
  std::unique_lock<std::mutex> lock(keeper_mu_);
  while (!keeper_stop_) {
    if (caller_drives_.load(std::memory_order_relaxed)) {
      keeper_cv_.wait(lock);
      continue;
    }
    lock.unlock();
    // Not inside RunReady while it waits: svc_run's thread may take over
    // at any time.
    if (poll(fds, 2, -1) > 0) {
      if (fds[1].revents != 0) {
        uint64_t count;
        (void)!read(keeper_wake_fd_, &count, sizeof count);
      }
      if (fds[0].revents != 0) own_runtime_->RunReady();
    }
    lock.lock();
  }
}

void RdmaTransport::DriveFromCaller(std::chrono::milliseconds timeout) {
  if (!caller_drives_.load(std::memory_order_acquire)) {
    {
      std::lock_guard<std::mutex> lock(keeper_mu_);
      if (keeper_only_ || keeper_stop_) return;
      caller_drives_.store(true, std::memory_order_release);
    }
    // The keeper leaves its poll and waits (its RunReady, if it is in one,
    // ends first: RunReady lets one thread in at a time).
    const uint64_t one = 1;
    (void)!write(keeper_wake_fd_, &one, sizeof one);
  }
  DrivingScope scope(this);
  own_runtime_->RunReady(timeout);
}

void RdmaTransport::DriveFromKeeper() {
  {
    std::lock_guard<std::mutex> lock(keeper_mu_);
    keeper_only_ = true;
    caller_drives_.store(false, std::memory_order_release);
  }
  keeper_cv_.notify_all();
}

RdmaTransport* RdmaTransport::Of(const SVCXPRT* xprt) {
  if (xprt == nullptr || xprt->xp_ops != &kOps) return nullptr;
  return static_cast<const DispatchState*>(xprt->xp_p1)->transport;
}

SVCXPRT* RdmaTransport::xprt() { return &dispatchers_.front()->xprt; }

CallHandler RdmaTransport::Handler() {
  return [this](IncomingCall call, Responder responder) {
    // Delivered to svc_run's thread driving the runtime: it takes the call
    // from the queue once RunReady returns.
    // The peer now: kClosed, after which it is forgotten, comes after
    // the connection's last call reached this handler.
    std::optional<SocketAddress> peer = KnownPeerOf(call.connection.value());
    queue_.Push(Job{std::move(call), std::move(responder), std::move(peer)},
                /*wake=*/t_driving != this);
  };
}

bool RdmaTransport::RunThreads(u_int threads) {
  if (threads == 0 || threads > 1024 || !threads_.empty() || stopped_) {
    return false;
  }
  std::vector<DispatchState*> states;
  for (u_int i = 0; i < threads; ++i) {
    DispatchState* state = AddDispatcher(Dispatcher::kThread);
    if (state == nullptr) return false;
    states.push_back(state);
  }
  queue_.HandToThreads();
  // The threads take the calls the keeper's RunReady delivers; svc_run no
  // longer drives.
  if (driver_ != nullptr) {
    xprt_unregister(&driver_->xprt);
    DriveFromKeeper();
  }
  for (DispatchState* state : states) {
    threads_.emplace_back([this, state] {
      while (std::optional<Job> job = queue_.WaitPop()) {
        state->pending = *std::move(job);
        // libtirpc authenticates the call and finds the program
        // registered with svc_reg, on this thread's own SVCXPRT.
        svc_getreq_common(state->xprt.xp_fd);
      }
    });
  }
  return true;
}

bool RdmaTransport::EnableCache(size_t entries, size_t max_bytes) {
  if (entries == 0 || cache_owner_ != nullptr) return false;
  cache_owner_ = std::make_unique<ReplyCache>(entries, max_bytes);
  // Under peers_mu_, so that no event falls between the connections
  // already open and the cache taking them over.
  std::lock_guard<std::mutex> lock(peers_mu_);
  for (const auto& [connection, address] : peers_) {
    cache_owner_->Opened(connection);
  }
  cache_.store(cache_owner_.get(), std::memory_order_release);
  return true;
}

uint64_t RdmaTransport::ConnectionOf(const svc_req* request) {
  if (request == nullptr || Of(request->rq_xprt) == nullptr) return 0;
  const auto& state =
      *static_cast<const DispatchState*>(request->rq_xprt->xp_p1);
  return state.current.has_value() ? state.current->call.connection.value() : 0;
}

void RdmaTransport::OnConnection(const ServerConnectionEvent& event) {
  {
    std::lock_guard<std::mutex> lock(peers_mu_);
    ReplyCache* cache = cache_.load(std::memory_order_acquire);
    if (event.type == ServerConnectionEvent::Type::kClosed) {
      peers_.erase(event.connection.value());
      kept_replies_.Closed(event.connection.value());
      // From now on the cache lets a retransmission from a new connection
      // have this one's replies (reply_cache.h).
      if (cache != nullptr) cache->Closed(event.connection.value());
    } else {
      absl::StatusOr<SocketAddress> address = ResolveUriAddress(event.peer);
      peers_[event.connection.value()] =
          address.ok() ? std::optional<SocketAddress>(*address) : std::nullopt;
      if (cache != nullptr) cache->Opened(event.connection.value());
    }
  }
  // After the adapter took note: whoever sees kClosed may count on its
  // cache knowing the connection gone.
  if (config_.on_connection) config_.on_connection(event);
}

SocketAddress RdmaTransport::PeerOf(uint64_t connection) {
  return KnownPeerOf(connection).value_or(default_peer_);
}

std::optional<SocketAddress> RdmaTransport::KnownPeerOf(uint64_t connection) {
  std::lock_guard<std::mutex> lock(peers_mu_);
  auto it = peers_.find(connection);
  if (it == peers_.end()) return std::nullopt;
  return it->second;
}

}  // namespace rpcrdma::oncrpc
