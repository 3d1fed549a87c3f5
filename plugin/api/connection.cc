#include "plugin/api/connection.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "plugin/api/limits.h"
#include "plugin/log/logging.h"
#include "plugin/wire/v1.h"
#include "plugin/wire/v2.h"

namespace rpcrdma {

Counters& Counters::operator+=(const Counters& o) {
  for (const CounterField& f : kCounterFields) this->*f.field += o.*f.field;
  credits_granted = std::max(credits_granted, o.credits_granted);
  peak_calls_outstanding =
      std::max(peak_calls_outstanding, o.peak_calls_outstanding);
  return *this;
}

namespace api_internal {

absl::StatusOr<std::unique_ptr<fabric::Fabric>> MakeFabricFor(
    const ParsedUri& uri, const config::TransportConfig& config) {
  if (absl::Status s = config::ValidateConfig(config, "config"); !s.ok()) {
    RPCRDMA_LOG(kError, 0, "rejected configuration: ", s.message());
    return s;
  }
  if (config.fabric() != config::TransportConfig::FABRIC_UNSPECIFIED &&
      config.fabric() != uri.fabric) {
    return absl::InvalidArgumentError(
        absl::StrCat("config: fabric: ",
                     config::TransportConfig::Fabric_Name(config.fabric()),
                     " does not match the uri scheme (",
                     config::TransportConfig::Fabric_Name(uri.fabric), ")"));
  }
  const config::ResolvedConfig resolved = config::Resolve(config);
  fabric::FabricTimeouts timeouts;
  timeouts.handshake_timeout_ms =
      static_cast<uint32_t>(resolved.handshake_timeout.count());
  // A Channel's connect notices a listener that does not speak the
  // handshake (not an rpcrdma server) within this, not its connect_ms.
  timeouts.handshake_answer_timeout_ms =
      static_cast<uint32_t>(resolved.handshake_answer_timeout.count());
  return fabric::MakeFabric(FabricKindOf(uri), timeouts);
}

engine::Config EngineConfigFor(const config::ResolvedConfig& resolved,
                               Role role, bool backward_service) {
  engine::Config c;
  c.local = resolved.inline_settings.ToPrivateData();
  c.local.remote_invalidation = resolved.inline_settings.remote_invalidation;
  if (resolved.version_policy != config::TransportConfig::V1) {
    c.max_receive_size_granted = resolved.inline_settings.receive_grantable;
  }
  c.requester = role == Role::kRequester;
  c.responder = role == Role::kResponder;
  c.credits = role == Role::kRequester ? resolved.max_requests
                                       : resolved.credits_granted;
  c.limits = resolved.chunk_limits;
  c.max_call_size = resolved.max_call_size;
  // As large as the device allows (Connection clamps it): a 16 MiB item
  // then takes one segment, where 1 MiB segments would exceed the eight a
  // header carries by default (limits.max_header_segments).
  c.max_segment_size = 1u << 30;
  // RFC 5666 §11; the Server adds its shared budget on top.
  c.max_reassembly_bytes = resolved.max_reassembly_bytes;
  c.max_header_segments = resolved.max_header_segments;
  // RFC 8167 §3: both ends use the configured backchannel credits (zero
  // when disabled); a client without a backward handler posts nothing for
  // backward calls and drops them.
  if (role == Role::kRequester) {
    c.backchannel_credits = backward_service ? resolved.backchannel_credits : 0;
    if (resolved.version_policy != config::TransportConfig::V1) {
      c.offered_version = 2;
      c.version_fallback =
          resolved.version_policy == config::TransportConfig::V2_WITH_FALLBACK;
    }
  } else {
    c.peer_backchannel_credits = resolved.backchannel_credits;
    // draft-cel-nfsv4-rpcrdma-version-two-04 §7: V2_WITH_FALLBACK serves
    // both versions on one listener; V2 answers version one ERR_VERS.
    c.serve_version_two =
        resolved.version_policy != config::TransportConfig::V1;
    c.require_version_two =
        resolved.version_policy == config::TransportConfig::V2;
  }
  return c;
}

fabric::EndpointOptions EndpointOptionsFor(const engine::Config& config) {
  fabric::EndpointOptions o;
  // Driven by a runtime loop (or by Channel::Create while it connects),
  // the owner-driven way (fabric.h).
  o.owner_driven = true;
  // Receives: one per credit plus slack. Send queue: per call a Send, its
  // window binds and invalidations, reads and writes.
  const uint32_t receives = engine::Engine::ReceivesFor(config);
  o.recv_queue_depth = std::min<uint32_t>(receives + 8, 4096);
  o.send_queue_depth = std::min<uint32_t>(config.credits * 16 + 64, 4096);
  return o;
}

Connection::Connection(std::unique_ptr<fabric::Endpoint> endpoint,
                       engine::Config config, Role role, Hooks hooks,
                       engine::ReassemblyBudget* shared_budget)
    : endpoint_(std::move(endpoint)),
      config_([&] {
        // Without remotely invalidatable windows, R must not be offered
        // (fabric.h Capabilities::remote_invalidation).
        if (!endpoint_->capabilities().remote_invalidation) {
          config.local.remote_invalidation = false;
        }
        // A chunk is cut into segments the device can move in one RDMA
        // Read or Write (RFC 8166 §3.4.3 lets a chunk have many).
        if (const uint32_t largest = endpoint_->capabilities().max_rdma_size;
            largest > 0) {
          config.max_segment_size = std::min(config.max_segment_size, largest);
        }
        return config;
      }()),
      role_(role),
      hooks_(std::move(hooks)),
      // An idle budget of zero: registrations end with their last use, so
      // memory a caller frees is never left registered (see
      // registration_cache.h on Forget()).
      cache_(*endpoint_, 0),
      engine_(config_, this, shared_budget) {
  // Counters come from the engine's own classification of each message.
  engine_.set_message_observer(
      [this](const engine::MessageSeen& seen) { CountMessage(seen); });
}

Connection::~Connection() {
  // Leases end before the cache and the endpoint go.
  read_leases_.clear();
  write_leases_.clear();
  windows_.clear();
}

void Connection::Connected(absl::Span<const uint8_t> peer_private_data,
                           uint32_t version_probe_xid) {
  engine::ConnectionParams params;
  params.version_probe_xid = version_probe_xid;
  params.peer_private_data.assign(peer_private_data.begin(),
                                  peer_private_data.end());
  params.max_outstanding_reads =
      std::max<uint32_t>(1, endpoint_->capabilities().initiator_depth);
  engine::Actions out;
  engine_.OnConnected(params, out);
  Run(out);
}

void Connection::Run(engine::Actions& actions) {
  for (engine::Action& a : actions) queue_.push_back(std::move(a));
  actions.clear();
  if (running_) return;
  running_ = true;
  while (!queue_.empty()) {
    engine::Action a = queue_.pop_front();
    Execute(a, scratch_);
    for (engine::Action& b : scratch_) queue_.push_back(std::move(b));
    scratch_.clear();
  }
  running_ = false;
  // Published under the lock only when they change: the peak rarely, the
  // connection's settings until the version negotiation is over.
  // Version two's properties change on a live connection (epoch).
  const uint32_t outstanding = engine_.calls_outstanding();
  const bool new_peak = outstanding > peak_outstanding_;
  const uint64_t epoch = engine_.version_two().epoch;
  if (!new_peak && info_settled_ && epoch == info_epoch_) return;
  peak_outstanding_ = std::max(peak_outstanding_, outstanding);
  std::optional<ConnectionInfo> info;
  if (!info_settled_ || epoch != info_epoch_) {
    info = ComputeInfo();
    info_epoch_ = epoch;
    if (!info_settled_) {
      info_settled_ = engine_.connected() && !engine_.negotiating();
    }
  }
  {
    std::lock_guard<std::mutex> lock(counters_mu_);
    counters_.peak_calls_outstanding = peak_outstanding_;
    if (info) info_ = *info;
  }
  if (info && info_settled_) LogSetUp(*info);
}

absl::StatusOr<engine::CallId> Connection::StartCall(
    engine::OutgoingCall call) {
  absl::StatusOr<engine::CallId> id =
      engine_.StartCall(std::move(call), operation_actions_);
  Run(operation_actions_);
  return id;
}

void Connection::Cancel(engine::CallId call, absl::Status status) {
  engine_.Cancel(call, std::move(status), operation_actions_);
  Run(operation_actions_);
}

absl::Status Connection::Reply(engine::CallId call,
                               engine::OutgoingReply reply) {
  // An RDMA_ERROR the engine makes while replying is logged as the reply's
  // (connection_log.cc).
  replying_ = true;
  absl::Status st = engine_.Reply(call, std::move(reply), operation_actions_);
  replying_ = false;
  Run(operation_actions_);
  return st;
}

void Connection::OnBudgetReleased() {
  engine_.OnBudgetReleased(operation_actions_);
  Run(operation_actions_);
}

void Connection::Fatal(absl::string_view what) {
  NoteLoss(what);
  if (!disconnected_) endpoint_->Disconnect();
}

void Connection::NoteLoss(absl::string_view what) {
  if (lost_reason_.empty() && !disconnected_) lost_reason_ = std::string(what);
  going_down_ = true;
}

void Connection::FatalCompletion(absl::string_view what,
                                 const fabric::Completion& c) {
  // A flush only echoes the loss; the first real failure says why.
  if (c.status != fabric::WorkStatus::kFlushed) {
    NoteLoss(absl::StrCat(what, " failed: ", fabric::WorkStatusName(c.status),
                          c.provider_status.empty() ? "" : " (",
                          c.provider_status,
                          c.provider_status.empty() ? "" : ")"));
  }
  if (!disconnected_) endpoint_->Disconnect();
}

void Connection::Execute(engine::Action& action, engine::Actions& out) {
  if (auto* p = std::get_if<engine::PostReceives>(&action)) {
    DoPostReceives(*p);
  } else if (auto* s = std::get_if<engine::Send>(&action)) {
    DoSend(*s, out);
  } else if (auto* r = std::get_if<engine::RdmaRead>(&action)) {
    DoRdmaRead(*r, out);
  } else if (auto* w = std::get_if<engine::RdmaWrite>(&action)) {
    DoRdmaWrite(*w);
  } else if (auto* i = std::get_if<engine::Invalidate>(&action)) {
    DoInvalidate(*i, out);
  } else if (std::holds_alternative<engine::DeliverCall>(action) ||
             std::holds_alternative<engine::ReplySent>(action) ||
             std::holds_alternative<engine::CompleteCall>(action)) {
    upcalls_.push_back(std::move(action));
  } else if (std::holds_alternative<engine::PropertiesAnswered>(action) ||
             std::holds_alternative<engine::PropertiesRequested>(action) ||
             std::holds_alternative<engine::DeliverOptional>(action) ||
             std::holds_alternative<engine::OptionalAnswered>(action)) {
    // Version two; what they changed is published as Run() ends.
    upcalls_.push_back(std::move(action));
  } else if (auto* f = std::get_if<engine::FailCall>(&action)) {
    // A call ended by the connection's loss says what was lost, when known.
    if (f->status.code() == absl::StatusCode::kUnavailable &&
        !lost_reason_.empty()) {
      f->status = absl::UnavailableError(
          absl::StrCat(f->status.message(), " (", lost_reason_, ")"));
    }
    upcalls_.push_back(std::move(action));
  } else if (auto* cc = std::get_if<engine::CloseConnection>(&action)) {
    DoCloseConnection(*cc);
  }
}

void Connection::DoRdmaRead(const engine::RdmaRead& r, engine::Actions& out) {
  absl::StatusOr<fabric::RegistrationCache::Lease> lease =
      cache_.Acquire(r.destination);
  absl::Status st = lease.status();
  if (lease.ok()) {
    fabric::LocalBuffer buffer = lease->buffer();
    st = endpoint_->PostRdmaRead(
        WrId(kReadKind, r.op), absl::MakeConstSpan(&buffer, 1),
        fabric::RemoteRegion{r.source.handle, r.source.offset,
                             r.source.length});
  }
  if (st.ok()) {
    read_leases_.emplace(r.op, std::move(*lease));
    ++outstanding_;
  } else {
    Fatal(st.message());
    engine_.OnReadComplete(r.op, false, out);
  }
}

void Connection::DoRdmaWrite(const engine::RdmaWrite& w) {
  if (w.source.empty()) return;
  absl::StatusOr<fabric::RegistrationCache::Lease> lease =
      cache_.Acquire(absl::Span<uint8_t>(const_cast<uint8_t*>(w.source.data()),
                                         w.source.size()));
  absl::Status st = lease.status();
  if (lease.ok()) {
    fabric::LocalBuffer buffer = lease->buffer();
    st = endpoint_->PostRdmaWrite(
        WrId(kWriteKind, w.op), absl::MakeConstSpan(&buffer, 1),
        fabric::RemoteRegion{w.target.handle, w.target.offset,
                             static_cast<uint32_t>(w.source.size())});
  }
  if (st.ok()) {
    write_leases_.emplace(w.op, std::move(*lease));
    ++outstanding_;
  } else {
    Fatal(st.message());
  }
}

void Connection::DoInvalidate(const engine::Invalidate& i,
                              engine::Actions& out) {
  absl::Status st =
      endpoint_->InvalidateWindow(WrId(kInvalidateKind, i.handle), i.handle);
  if (st.ok()) {
    ++outstanding_;
  } else {
    // Not bound any more (verbs: NotFound); nothing can reach it.
    windows_.erase(i.handle);
    engine_.OnInvalidated(i.handle, out);
  }
}

void Connection::DoCloseConnection(const engine::CloseConnection& cc) {
  // The peer broke a rule that leaves no way on (engine.h): counted,
  // reported once, and the connection closed; the calls it fails carry
  // the reason.
  if (!disconnected_ && lost_reason_.empty()) {
    {
      std::lock_guard<std::mutex> lock(counters_mu_);
      ++counters_.protocol_closes;
    }
    ReportConnectionEvent(
        absl::StrCat("closing a connection: ", cc.reason.message()));
  }
  Fatal(cc.reason.message());
}

void Connection::DoPostReceives(const engine::PostReceives& p) {
  if (recv_pool_ == nullptr) {
    absl::StatusOr<std::unique_ptr<fabric::RegisteredSlotPool>> pool =
        fabric::RegisteredSlotPool::Create(*endpoint_, p.buffer_size,
                                           engine_.receives_posted() + 4);
    if (!pool.ok()) {
      Fatal(pool.status().message());
      return;
    }
    recv_pool_ = std::move(*pool);
  }
  if (p.buffer_size > recv_pool_->buffer_size()) {
    Fatal("receive buffers too small");
    return;
  }
  receive_deficit_ += p.count;
  while (receive_deficit_ > 0 && !disconnected_) {
    std::optional<uint32_t> slot = recv_pool_->Acquire();
    if (!slot) break;
    absl::Status st = endpoint_->PostReceive(WrId(kRecvKind, *slot),
                                             recv_pool_->Buffer(*slot));
    if (!st.ok()) {
      recv_pool_->Release(*slot);
      Fatal(st.message());
      break;
    }
    ++outstanding_;
    --receive_deficit_;
  }
}

void Connection::DoSend(engine::Send& s, engine::Actions& out) {
  pending_sends_.push_back(std::move(s));
  TrySends(out);
}

void Connection::TrySends(engine::Actions& out) {
  if (send_pool_ == nullptr) {
    size_t size = std::max<size_t>(
        {config_.local.send_size, engine_.thresholds().send, 1024});
    absl::StatusOr<std::unique_ptr<fabric::RegisteredSlotPool>> pool =
        fabric::RegisteredSlotPool::Create(*endpoint_, size,
                                           config_.credits * 2 + 8);
    if (!pool.ok()) {
      Fatal(pool.status().message());
      while (!pending_sends_.empty()) {
        engine_.OnSendComplete(pending_sends_.pop_front().op, false, out);
      }
      return;
    }
    send_pool_ = std::move(*pool);
  }
  while (!pending_sends_.empty()) {
    engine::Send& s = pending_sends_.front();
    absl::Status st;
    if (s.bytes.size() > send_pool_->buffer_size()) {
      st = absl::InternalError("Send larger than the send buffers");
    } else {
      std::optional<uint32_t> slot = send_pool_->Acquire();
      if (!slot) return;  // resumes when a Send completes
      std::memcpy(send_pool_->Memory(*slot).data(), s.bytes.data(),
                  s.bytes.size());
      uint64_t id = next_send_++;
      fabric::LocalBuffer buffer = send_pool_->Buffer(*slot, s.bytes.size());
      // Counted before the post: the peer may act on the message (and a
      // reader look at both sides' counters) before PostSend returns.
      if (s.invalidate) Count(&Counters::remote_invalidations);
      if (hooks_.capture) hooks_.capture(true, s.bytes, s.invalidate);
      st = endpoint_->PostSend(WrId(kSendKind, id),
                               absl::MakeConstSpan(&buffer, 1), s.invalidate);
      if (st.ok()) {
        sends_[id] = SendInFlight{*slot, s.op};
        ++outstanding_;
      } else {
        send_pool_->Release(*slot);
      }
    }
    engine::Send sent = pending_sends_.pop_front();
    const engine::OpId op = sent.op;
    engine_.RecycleSendBuffer(std::move(sent.bytes));
    if (!st.ok()) {
      Fatal(st.message());
      engine_.OnSendComplete(op, false, out);
    }
  }
}

absl::StatusOr<wire::Segment> Connection::Expose(absl::Span<uint8_t> memory,
                                                 uint32_t access) {
  if (disconnected_) {
    return absl::UnavailableError("connection lost");
  }
  absl::StatusOr<fabric::RegistrationCache::Lease> lease =
      cache_.Acquire(memory);
  if (!lease.ok()) return lease.status();
  uint32_t fabric_access = 0;
  if (access & engine::kRemoteRead) fabric_access |= fabric::kRemoteRead;
  if (access & engine::kRemoteWrite) fabric_access |= fabric::kRemoteWrite;
  absl::StatusOr<fabric::RemoteRegion> region =
      endpoint_->BindWindow(WrId(kBindKind, 0), lease->buffer(), fabric_access);
  if (region.status().code() == absl::StatusCode::kFailedPrecondition) {
    // The endpoint has gone down and its event is not polled yet: the call
    // fails because the connection is lost, as channel.h promises (and one
    // that allows it is sent again after the reconnect).
    Fatal(region.status().message());
    return absl::UnavailableError(
        absl::StrCat("connection lost (", region.status().message(), ")"));
  }
  if (!region.ok()) return region.status();
  ++outstanding_;
  windows_.insert_or_assign(region->handle, std::move(*lease));
  return wire::Segment{region->handle, region->length, region->offset};
}

bool Connection::Spin() {
  const uint64_t before = activity_;
  endpoint_->OnSpin();
  Poll();
  return activity_ != before;
}

void Connection::Poll(bool readable) {
  if (readable) endpoint_->OnEventFdReadable();
  std::array<fabric::Completion, 32> completions;
  auto poll_completions = [&] {
    const size_t n = endpoint_->PollCompletions(absl::MakeSpan(completions));
    for (size_t i = 0; i < n; ++i) {
      ++activity_;
      OnCompletion(completions[i], completion_actions_);
      Run(completion_actions_);
    }
    return n > 0;
  };
  bool more = true;
  while (more) {
    more = poll_completions();
    while (std::optional<fabric::ConnectionEvent> ev =
               endpoint_->PollConnectionEvent()) {
      more = true;
      ++activity_;
      if (ev->type == fabric::ConnectionEventType::kEstablished) continue;
      NoteLoss(absl::StrCat("connection event ",
                            fabric::ConnectionEventTypeName(ev->type),
                            ev->detail.empty() ? "" : ": ", ev->detail));
      if (!disconnected_) {
        // A disconnect this side asked for, or a client leaving a server
        // without a failure before, is the normal end of a connection.
        const bool failed_before =
            lost_reason_.rfind("connection event", 0) != 0;
        orderly_end_ = local_disconnect_ ||
                       (role_ == Role::kResponder && !failed_before &&
                        ev->type == fabric::ConnectionEventType::kDisconnected);
        if (orderly_end_) {
          RPCRDMA_LOG(kInfo, log_id_, log_description_,
                      ": disconnected: ", lost_reason_);
        } else {
          RPCRDMA_LOG(kWarning, log_id_, log_description_,
                      ": connection lost: ", lost_reason_);
        }
        disconnected_ = true;
        engine::Actions out;
        engine_.OnDisconnected(out);
        Run(out);
      }
    }
    // PollConnectionEvent advances the endpoint as well (the soft fabric
    // reads its socket in every Poll*, a bounded slice at a time): what
    // that completed is only found by polling completions once more. Left
    // there, with the socket drained, nothing would wake the owner for it
    // (fabric.h: completions of work already taken in are found by
    // polling), and an RDMA Read finished there stalled its call.
    if (!more) more = poll_completions();
  }
}

void Connection::Disconnect() {
  if (!disconnected_) {
    local_disconnect_ = true;
    endpoint_->Disconnect();
  }
}

void Connection::OnCompletion(const fabric::Completion& c,
                              engine::Actions& out) {
  --outstanding_;
  bool ok = c.status == fabric::WorkStatus::kSuccess;
  uint64_t value = c.wr_id & ((uint64_t{1} << 56) - 1);
  switch (static_cast<Kind>(c.wr_id >> 56)) {
    case kRecvKind: {
      uint32_t slot = static_cast<uint32_t>(value);
      if (ok && !disconnected_) {
        absl::Span<const uint8_t> bytes =
            recv_pool_->Memory(slot).subspan(0, c.byte_length);
        if (c.invalidated_handle) Count(&Counters::remote_invalidations);
        if (hooks_.capture) hooks_.capture(false, bytes, c.invalidated_handle);
        engine_.OnReceive(bytes, c.invalidated_handle, out);
        if (c.invalidated_handle) windows_.erase(*c.invalidated_handle);
      } else if (!ok) {
        FatalCompletion("receive", c);
      }
      recv_pool_->Release(slot);
      if (receive_deficit_ > 0) DoPostReceives({0, 0});
      break;
    }
    case kSendKind: {
      auto it = sends_.find(value);
      if (it == sends_.end()) break;
      SendInFlight s = it->second;
      sends_.erase(it);
      send_pool_->Release(s.slot);
      if (!ok) FatalCompletion("send", c);
      engine_.OnSendComplete(s.op, ok, out);
      TrySends(out);
      break;
    }
    case kReadKind:
      read_leases_.erase(value);
      if (!ok) FatalCompletion("RDMA Read", c);
      engine_.OnReadComplete(value, ok, out);
      break;
    case kWriteKind:
      write_leases_.erase(value);
      if (!ok) FatalCompletion("RDMA Write", c);
      break;
    case kBindKind:
      if (!ok) FatalCompletion("memory window bind", c);
      break;
    case kInvalidateKind: {
      uint32_t handle = static_cast<uint32_t>(value);
      windows_.erase(handle);
      engine_.OnInvalidated(handle, out);
      break;
    }
  }
}

}  // namespace api_internal
}  // namespace rpcrdma
