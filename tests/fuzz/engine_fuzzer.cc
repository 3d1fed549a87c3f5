// Drives one protocol engine (a server with a backchannel, or a client
// serving backward calls) against a scripted hostile peer: every input is
// a sequence of events (messages from a small grammar or raw octets, send
// and read completions in any order and with either outcome, invalidations,
// calls, replies, cancels, disconnects, reconnects, budget releases). After
// every step the engine's invariants are checked:
// - a call completes or fails exactly once, and only once every handle its
//   messages exposed has been invalidated;
// - the requester never has more calls outstanding than it may, the
//   responder never more unanswered calls than it granted;
// - reassembly memory stays within the per-connection limit and the shared
//   budget, and all of it is released once the connection is gone;
// - every span an action names is valid memory (ASan checks the accesses).
// Half the inputs run the connection in version two (draft-04): the peer
// opens or answers with RDMA2_CONNPROP, the grammar's messages go in their
// version-two form (with the direction sometimes a lie and a random
// rdma_inv_handle), and property, optional and error messages are mixed in;
// this side makes property requests, updates and optional messages, answers
// the peer's and decides its requests, and every one of its own ends
// exactly once, with at most kControlWindow awaiting their answer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <vector>

#include "absl/types/span.h"
#include "plugin/engine/engine.h"
#include "plugin/wire/v1.h"
#include "plugin/wire/v2.h"
#include "rpcrdma/xdr.h"
#include "tests/fuzz/engine_fuzz_support.h"

namespace {

using namespace rpcrdma::engine;  // NOLINT: a test driver
using namespace rpcrdma::test;    // NOLINT
using rpcrdma::LoadBigEndian32;
using rpcrdma::StoreBigEndian32;
namespace wire = rpcrdma::wire;

class Driver {
 public:
  Driver(Input& in) : in_(in) {  // NOLINT
    client_ = (in_.Byte() & 1) != 0;
    config_.credits = 1 + in_.Byte() % 4;
    config_.max_call_size = 1 + in_.Word() % (1 << 16);
    config_.max_reassembly_bytes = in_.Byte() % 2 ? in_.Word() % 8192 : 0;
    if (client_) {
      config_.backchannel_credits = 1 + in_.Byte() % 3;
    } else {
      config_.requester = false;
      config_.peer_backchannel_credits = 1 + in_.Byte() % 3;
    }
    budget_ = std::make_unique<Budget>(1 + in_.Word() % 16384);
    version_two_ = in_.Byte() % 2 == 0;
    if (version_two_) {
      config_.local = {in_.Byte() % 2 == 0, 4096, 4096};
      config_.max_receive_size_granted = in_.Byte() % 2 ? 8192 : 0;
      config_.optional_types = {kOptType};
      config_.decides_properties = in_.Byte() % 2 == 0;
      if (in_.Byte() % 2) config_.experimental_properties = {{kExpProp, {1}}};
      if (client_) {
        config_.offered_version = 2;
      } else {
        config_.serve_version_two = true;
      }
    }
    engine_ = std::make_unique<Engine>(config_, &exposer_, budget_.get());
    requester_limit_ =
        client_ ? config_.credits : config_.peer_backchannel_credits;
    responder_grant_ = client_ ? config_.backchannel_credits : config_.credits;
  }

  void Run() {
    Connect();
    while (!in_.empty()) Step();
    // The connection goes away; every completion flushes.
    engine_->OnDisconnected(out_);
    Apply();
    while (!reads_.empty() || !sends_.empty() || !invalidations_.empty()) {
      for (OpId op : std::exchange(sends_, {})) {
        engine_->OnSendComplete(op, false, out_);
      }
      for (const RdmaRead& r : std::exchange(reads_, {})) {
        engine_->OnReadComplete(r.op, false, out_);
      }
      for (uint32_t h : std::exchange(invalidations_, {})) {
        exposer_.valid[h] = false;
        engine_->OnInvalidated(h, out_);
      }
      Apply();
    }
    Check(started_.empty());    // every call ended, exactly once
    Check(exchanges_.empty());  // and every exchange of version two
    for (const auto& [h, valid] : exposer_.valid) Check(!valid);
    Check(engine_->reassembly_bytes_held() == 0);
    Check(budget_->held == other_held_);
  }

 private:
  void Connect() {
    std::vector<uint8_t> pd;
    if (in_.Byte() % 2) pd = in_.Bytes(8);
    const uint32_t probe_xid = in_.Word();
    engine_->OnConnected({pd, 1 + in_.Byte() % 4u, probe_xid}, out_);
    Apply();
    // Version two opens with the client's RDMA2_CONNPROP and the server's
    // answer (§7); sometimes the peer never says it.
    if (version_two_ && in_.Byte() % 8 != 0) {
      wire::PropSet props;
      if (in_.Byte() % 2) {
        props.push_back(
            wire::MakeRbsizProperty(in_.Byte() % 2 ? in_.Word() : 4096));
      }
      if (in_.Byte() % 2) {
        props.push_back({wire::kPropIdBrs, Words({in_.Byte() % 4})});
      }
      engine_->OnReceive(wire::EncodeV2(wire::V2Header{
                             client_ ? probe_xid : in_.Word(), 2,
                             in_.Byte() % 6, wire::V2ConnProp{props, {}}}),
                         std::nullopt, out_);
      Apply();
    }
  }

  // A grammar message in its version-two form, or a version-two message
  // of its own.
  std::vector<uint8_t> ToVersionTwo(const std::vector<uint8_t>& bytes) {
    const uint32_t xid = bytes.size() >= 4 ? LoadBigEndian32(bytes.data()) : 0;
    if (std::optional<std::vector<uint8_t>> own =
            VersionTwoMessage(in_, xid, PickExchange())) {
      return *std::move(own);
    }
    auto d = wire::DecodeV1(bytes);
    if (!d.ok() || d->header.chunks() == nullptr) {
      std::vector<uint8_t> raw = bytes;
      if (raw.size() >= 8) StoreBigEndian32(raw.data() + 4, 2);
      return raw;
    }
    const size_t at = d->header_length;
    bool is_call = d->header.proc() == wire::V1Proc::kMsg
                       ? bytes.size() >= at + 8 &&
                             LoadBigEndian32(bytes.data() + at + 4) == 0
                       : !d->header.chunks()->reads.empty();
    if (in_.Byte() % 8 == 0) is_call = !is_call;  // a lying peer
    const uint32_t inv = in_.Byte() % 2 ? 0 : 0x100 + in_.Byte() % 16;
    wire::V2ChunkLists lists{
        is_call ? wire::MsgDirection::kCall : wire::MsgDirection::kReply, inv,
        *d->header.chunks()};
    wire::V2Header h{d->header.xid, 2, d->header.credits, wire::V2Msg{lists}};
    if (d->header.proc() == wire::V1Proc::kNoMsg) h.body = wire::V2NoMsg{lists};
    std::vector<uint8_t> out = wire::EncodeV2(h);
    out.insert(out.end(), bytes.begin() + static_cast<std::ptrdiff_t>(at),
               bytes.end());
    return out;
  }

  // The loss, then the flush of every send and read in flight (a queue
  // pair in error completes its work requests with errors).
  void Disconnect() {
    engine_->OnDisconnected(out_);
    Apply();
    // What the peer sent that awaited this side's answer is gone with it.
    optionals_.clear();
    requested_.clear();
    for (OpId op : std::exchange(sends_, {})) {
      engine_->OnSendComplete(op, false, out_);
    }
    for (const RdmaRead& r : std::exchange(reads_, {})) {
      engine_->OnReadComplete(r.op, false, out_);
    }
    Apply();
  }

  void Receive(const std::vector<uint8_t>& bytes,
               std::optional<uint32_t> invalidated = std::nullopt) {
    if (invalidated && exposer_.valid.count(*invalidated)) {
      exposer_.valid[*invalidated] = false;  // Send With Invalidate
    }
    if (engine_->version() == 2 && in_.Byte() % 8 != 0) {
      engine_->OnReceive(ToVersionTwo(bytes), invalidated, out_);
      return;
    }
    engine_->OnReceive(bytes, invalidated, out_);
  }

  std::vector<uint8_t> RpcCall(uint32_t xid) {
    std::vector<uint8_t> call = Words({xid, 0, 2, 100003, 3, 0});
    switch (in_.Byte() % 5) {
      case 0:
        call.resize(in_.Byte() % 24);  // short
        break;
      case 1:
        StoreBigEndian32(call.data() + 4, 1);  // a REPLY
        break;
      case 2:
        StoreBigEndian32(call.data(), xid + 1);  // another XID
        break;
      default:
        break;
    }
    return call;
  }

  std::vector<uint8_t> Segment() {
    return Words({in_.Byte() % 2 ? 0x100u + in_.Byte() % 8 : in_.Word(),
                  in_.Byte() % 2 ? in_.Byte() : in_.Word() % 70000, 0,
                  in_.Word()});
  }

  void Step() {
    if (closed_) {  // the driver carries out CloseConnection
      closed_ = false;
      Disconnect();
    }
    switch (in_.Byte() % 18) {
      case 14:  // version two: a property request, update or optional
        StartExchange();
        break;
      case 15:  // version two: answer the peer's optional or request
        AnswerPeer();
        break;
      case 0: {  // inline call
        uint32_t xid = in_.Byte();
        Receive(Concat(Words({xid, 1, in_.Byte(), 0, 0, 0, 0}), RpcCall(xid)));
        break;
      }
      case 1: {  // long call: position-zero chunk, maybe more chunks
        uint32_t xid = in_.Byte();
        std::vector<uint8_t> m = Words({xid, 1, in_.Byte(), 1, 1, 0});
        Append(m, Segment());
        if (in_.Byte() % 3 == 0) {
          AppendWord(m, 1);
          AppendWord(m, 4 * (in_.Byte() % 8));
          Append(m, Segment());
        }
        Append(m, Words({0, 0, 0}));
        Receive(m);
        break;
      }
      case 2: {  // RDMA_MSG with a read chunk, a write chunk, a reply chunk
        uint32_t xid = in_.Byte();
        std::vector<uint8_t> m = Words({xid, 1, in_.Byte(), 0});
        if (in_.Byte() % 2) {
          Append(m, Words({1, 4 * (in_.Byte() % 8)}));
          Append(m, Segment());
        }
        AppendWord(m, 0);
        if (in_.Byte() % 2) {
          Append(m, Words({1, 1}));
          Append(m, Segment());
        }
        AppendWord(m, 0);
        if (in_.Byte() % 2) {
          AppendWord(m, 1);
          AppendWord(m, 1);
          Append(m, Segment());
        } else {
          AppendWord(m, 0);
        }
        Append(m, RpcCall(xid));
        Receive(m);
        break;
      }
      case 3:  // raw octets
        Receive(in_.Bytes(in_.Byte() % 80));
        break;
      case 4: {  // a reply (or error) to one of our calls, or to none
        uint32_t xid = PickXid();
        std::vector<uint8_t> m;
        switch (in_.Byte() % 4) {
          case 0:
            m = Concat(Words({xid, 1, in_.Byte() % 6, 0, 0, 0, 0}),
                       Words({xid, 1, 0, 0, 0, 0}));
            m.resize(m.size() + 4 * (in_.Byte() % 32));
            break;
          case 1:
            m = Words({xid, 1, in_.Byte() % 6, 4, 1 + in_.Byte() % 2, 1, 1});
            break;
          case 2: {  // a write chunk returned with one segment
            m = Words({xid, 1, in_.Byte() % 6, 0, 0, 1, 1});
            Append(m, Segment());
            Append(m, Words({0, 0, xid, 1, 0, 0, 0, 0}));
            break;
          }
          default: {  // RDMA_NOMSG through a reply chunk
            m = Words({xid, 1, in_.Byte() % 6, 1, 0, 0, 1, 1});
            Append(m, Segment());
            break;
          }
        }
        std::optional<uint32_t> inv;
        if (in_.Byte() % 4 == 0) inv = 0x100 + in_.Byte() % 16;
        Receive(m, inv);
        break;
      }
      case 5:  // a send completes
        if (!sends_.empty()) {
          size_t i = in_.Byte() % sends_.size();
          OpId op = sends_[i];
          sends_.erase(sends_.begin() + i);
          engine_->OnSendComplete(op, in_.Byte() % 4 != 0, out_);
        }
        break;
      case 6:  // a read completes, in any order
        if (!reads_.empty()) {
          size_t i = in_.Byte() % reads_.size();
          RdmaRead r = reads_[i];
          reads_.erase(reads_.begin() + i);
          bool ok = in_.Byte() % 4 != 0;
          if (ok) {
            std::memset(r.destination.data(), 0, r.destination.size());
            std::vector<uint8_t> call = RpcCall(in_.Byte());
            std::memcpy(r.destination.data(), call.data(),
                        std::min(call.size(), r.destination.size()));
          }
          engine_->OnReadComplete(r.op, ok, out_);
        }
        break;
      case 7:  // an invalidation completes
        if (!invalidations_.empty()) {
          size_t i = in_.Byte() % invalidations_.size();
          uint32_t h = invalidations_[i];
          invalidations_.erase(invalidations_.begin() + i);
          exposer_.valid[h] = false;
          engine_->OnInvalidated(h, out_);
        }
        break;
      case 8: {  // start a call (forward, or backward on a server)
        auto& c = buffers_.emplace_back();
        c.xdr = Words({in_.Byte(), 0, 2, 100003, 3, 0});
        c.xdr.resize(c.xdr.size() + 4 * (in_.Byte() % 8));
        c.argument.resize(in_.Byte() % 2 ? in_.Word() % 5000 : 0);
        c.result.resize(in_.Byte() % 2 ? 1 + in_.Word() % 5000 : 0);
        OutgoingCall call{c.xdr, {}, {}, in_.Word() % 6000};
        if (!c.argument.empty()) {
          call.arguments.push_back({static_cast<uint32_t>(c.xdr.size()),
                                    absl::MakeSpan(c.argument)});
        }
        if (!c.result.empty()) call.results.push_back(absl::MakeSpan(c.result));
        auto id = engine_->StartCall(std::move(call), out_);
        if (id.ok()) {
          const uint32_t xid = LoadBigEndian32(c.xdr.data());
          started_[*id] = xid;
          latest_by_xid_[xid] = *id;
        }
        break;
      }
      case 9:  // cancel
        if (!started_.empty()) {
          auto it = started_.begin();
          std::advance(it, in_.Byte() % started_.size());
          engine_->Cancel(it->first, absl::CancelledError("fuzz"), out_);
        }
        break;
      case 10:  // answer a delivered call
        if (!delivered_.empty()) {
          size_t i = in_.Byte() % delivered_.size();
          CallId id = delivered_[i];
          delivered_.erase(delivered_.begin() + i);
          auto& r = reply_buffers_.emplace_back();
          r.resize(in_.Byte() % 2 ? in_.Word() % 8000 : 0);
          OutgoingReply reply{Words({0, 1, 0, 0, 0, 0}), {}};
          reply.xdr.resize(reply.xdr.size() + 4 * (in_.Byte() % 300));
          if (!r.empty()) reply.results.push_back({24, r});
          (void)engine_->Reply(id, std::move(reply), out_);
        }
        break;
      case 11:  // the connection is lost
        Disconnect();
        break;
      case 12:  // and comes back
        if (!engine_->connected()) Connect();
        break;
      case 13: {  // another connection takes or releases shared memory
        if (in_.Byte() % 2) {
          uint64_t n = in_.Word() % 8192;
          if (budget_->TryReserve(n)) other_held_ += n;
        } else {
          budget_->Release(other_held_);
          other_held_ = 0;
          engine_->OnBudgetReleased(out_);
        }
        break;
      }
      default: {  // the header of a backward call we would receive as client
        uint32_t xid = in_.Byte();
        Receive(Concat(Words({xid, 1, in_.Byte(), in_.Byte() % 5, 0, 0, 0}),
                       RpcCall(xid)));
        break;
      }
    }
    Apply();
  }

  uint32_t PickExchange() {
    if (!exchanges_.empty() && in_.Byte() % 4 != 0) {
      auto it = exchanges_.begin();
      std::advance(it, in_.Byte() % exchanges_.size());
      return *it;
    }
    return in_.Word();
  }

  void StartExchange() {
    absl::StatusOr<uint32_t> xid;
    switch (in_.Byte() % 3) {
      case 0:
        xid = engine_->RequestProperties({RandomProperty(in_)}, out_);
        break;
      case 1:
        xid = engine_->UpdateProperties({RandomProperty(in_)}, out_);
        break;
      default:
        xid = engine_->StartOptional(in_.Byte() % 2 ? kOptType : in_.Byte(),
                                     in_.Bytes(in_.Byte() % 8),
                                     in_.Bytes(in_.Byte() % 16), out_);
        break;
    }
    // Refused outside version two; otherwise awaited until answered.
    if (xid.ok()) Check(exchanges_.insert(*xid).second);
  }

  void AnswerPeer() {
    if (!optionals_.empty() && in_.Byte() % 2) {
      const uint32_t xid = *optionals_.begin();
      optionals_.erase(optionals_.begin());
      absl::StatusOr<DeliverOptional> answer =
          in_.Byte() % 4 == 0
              ? absl::StatusOr<DeliverOptional>(absl::InternalError("fuzz"))
              : DeliverOptional{0, 0, in_.Bytes(in_.Byte() % 8),
                                in_.Bytes(in_.Byte() % 5000)};
      (void)engine_->AnswerOptional(xid, std::move(answer), out_);
    } else if (!requested_.empty()) {
      auto [xid, items] = *requested_.begin();
      requested_.erase(requested_.begin());
      std::vector<PropertyDecision> decisions;
      for (size_t i = 0; i < items; ++i) {
        if (in_.Byte() % 2) {
          decisions.push_back(in_.Bytes(in_.Byte() % 6));
        } else {
          decisions.push_back(std::nullopt);
        }
      }
      if (in_.Byte() % 8 == 0) decisions.push_back(std::nullopt);  // too many
      (void)engine_->DecideProperties(xid, std::move(decisions), out_);
    }
  }

  uint32_t PickXid() {
    if (!started_.empty() && in_.Byte() % 4 != 0) {
      auto it = started_.begin();
      std::advance(it, in_.Byte() % started_.size());
      return it->second;
    }
    return in_.Byte();
  }

  static std::vector<uint8_t> Concat(std::vector<uint8_t> a,
                                     const std::vector<uint8_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  static void Append(std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
  }

  // Records what the actions ask for and checks the invariants.
  void Apply() {
    for (Action& a : std::exchange(out_, {})) {
      if (auto* s = std::get_if<Send>(&a)) {
        sends_.push_back(s->op);
        RecordHandles(s->bytes);
      } else if (auto* r = std::get_if<RdmaRead>(&a)) {
        reads_.push_back(*r);
      } else if (auto* w = std::get_if<RdmaWrite>(&a)) {
        volatile uint8_t sink = 0;
        for (uint8_t b : w->source) sink = sink + b;  // must be valid memory
      } else if (auto* i = std::get_if<Invalidate>(&a)) {
        Check(exposer_.valid.count(i->handle) == 1);
        invalidations_.push_back(i->handle);
      } else if (auto* d = std::get_if<DeliverCall>(&a)) {
        // RFC 8166 §4.1: only RPC calls with the transport's XID.
        Check(d->message.size() >= 24);
        Check(LoadBigEndian32(d->message.data()) == d->xid);
        Check(LoadBigEndian32(d->message.data() + 4) == 0);
        delivered_.push_back(d->call);
      } else if (auto* c = std::get_if<CompleteCall>(&a)) {
        Finished(c->call);
      } else if (auto* f = std::get_if<FailCall>(&a)) {
        Finished(f->call);
      } else if (std::holds_alternative<CloseConnection>(a)) {
        closed_ = true;
      } else if (auto* pa = std::get_if<PropertiesAnswered>(&a)) {
        Check(exchanges_.erase(pa->xid) == 1);  // started, answered once
      } else if (auto* oa = std::get_if<OptionalAnswered>(&a)) {
        Check(exchanges_.erase(oa->xid) == 1);
      } else if (auto* o = std::get_if<DeliverOptional>(&a)) {
        Check(o->type == kOptType);
        Check(optionals_.insert(o->xid).second);
      } else if (auto* pr = std::get_if<PropertiesRequested>(&a)) {
        Check(!pr->wanted.empty());
        for (const auto& item : pr->wanted) {
          Check(item.second.which == kExpProp);
        }
        requested_[pr->xid] = pr->wanted.size();
      }
    }
    // version_two.h: at most kControlWindow of this side's messages
    // without RPC await their answer.
    Check(engine_->version_two().slots_used <= kControlWindow);
    Check(engine_->version_two().in_flight.size() <= kControlWindow);
    Check(engine_->calls_outstanding() <= requester_limit_);
    Check(engine_->calls_unanswered() <= responder_grant_);
    if (config_.max_reassembly_bytes != 0) {
      Check(engine_->reassembly_bytes_held() <= config_.max_reassembly_bytes);
    }
    Check(budget_->held <= budget_->capacity());
    Check(budget_->held == engine_->reassembly_bytes_held() + other_held_);
  }

  // Handles our own calls expose, by the XID of the call that named them.
  void RecordHandles(const std::vector<uint8_t>& bytes) {
    uint32_t xid = 0;
    const wire::ChunkLists* lists = nullptr;
    bool is_call = false;
    auto v1 = wire::DecodeV1(bytes);
    auto v2 = wire::DecodeV2(bytes);
    if (v1.ok() && v1->header.chunks() != nullptr) {
      xid = v1->header.xid;
      lists = v1->header.chunks();
      const size_t at = v1->header_length;
      is_call = v1->header.proc() == wire::V1Proc::kMsg
                    ? bytes.size() >= at + 8 &&
                          LoadBigEndian32(bytes.data() + at + 4) == 0
                    : !lists->reads.empty();
    } else if (v2.ok() && v2->header.chunks() != nullptr) {
      xid = v2->header.xid;
      lists = &v2->header.chunks()->lists;
      is_call = v2->header.chunks()->direction == wire::MsgDirection::kCall;
      // §6.2.3: a named handle must be one of the call's own.
      const uint32_t inv = v2->header.chunks()->inv_handle;
      Check(inv == 0 || exposer_.valid.count(inv) == 1);
    }
    // Only this side's calls expose memory (a reply echoes the peer's).
    if (lists == nullptr || !is_call) return;
    // A call sends only before it ends, and its XID is free for another
    // call only once it ends: the Send belongs to the latest call started
    // with that XID.
    auto latest = latest_by_xid_.find(xid);
    if (latest == latest_by_xid_.end()) return;
    std::vector<uint32_t>& handles = handles_by_call_[latest->second];
    for (const auto& r : lists->reads) {
      if (exposer_.valid.count(r.target.handle)) {
        handles.push_back(r.target.handle);
      }
    }
    for (const auto& w : lists->writes) {
      for (const auto& s : w) {
        if (exposer_.valid.count(s.handle)) handles.push_back(s.handle);
      }
    }
    if (lists->reply) {
      for (const auto& s : *lists->reply) {
        if (exposer_.valid.count(s.handle)) handles.push_back(s.handle);
      }
    }
  }

  void Finished(CallId id) {
    auto it = started_.find(id);
    Check(it != started_.end());
    Check(finished_.insert(id).second);  // exactly once
    for (uint32_t h : handles_by_call_[id]) Check(!exposer_.valid[h]);
    handles_by_call_.erase(id);
    started_.erase(it);
  }

  struct CallBuffers {
    std::vector<uint8_t> xdr;
    std::vector<uint8_t> argument;
    std::vector<uint8_t> result;
  };

  Input& in_;
  bool client_ = false;
  bool version_two_ = false;
  Config config_;
  Exposer exposer_;
  std::unique_ptr<Budget> budget_;
  std::unique_ptr<Engine> engine_;
  uint32_t requester_limit_ = 1;
  uint32_t responder_grant_ = 1;
  uint64_t other_held_ = 0;
  bool closed_ = false;
  Actions out_;
  std::vector<OpId> sends_;
  std::vector<RdmaRead> reads_;
  std::vector<uint32_t> invalidations_;
  std::vector<CallId> delivered_;
  std::map<CallId, uint32_t> started_;  // not yet finished
  std::set<CallId> finished_;
  std::map<uint32_t, CallId> latest_by_xid_;
  std::map<CallId, std::vector<uint32_t>> handles_by_call_;
  std::deque<CallBuffers> buffers_;  // stable: spans point into them
  std::deque<std::vector<uint8_t>> reply_buffers_;
  // Version two: this side's exchanges awaiting their answer; the peer's
  // optional messages and property requests awaiting this side's.
  std::set<uint32_t> exchanges_;
  std::set<uint32_t> optionals_;
  std::map<uint32_t, size_t> requested_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  Driver driver(in);
  driver.Run();
  return 0;
}
