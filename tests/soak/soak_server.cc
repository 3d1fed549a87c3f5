#include "tests/soak/soak_server.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace rpcrdma::test {

bool IsCleanStatus(absl::StatusCode code) {
  return code == absl::StatusCode::kOk ||
         code == absl::StatusCode::kUnavailable ||
         code == absl::StatusCode::kDeadlineExceeded ||
         code == absl::StatusCode::kCancelled;
}

void SoakStats::Count(bool retried, absl::StatusCode code) {
  if (retried) ++retried_calls;
  switch (code) {
    case absl::StatusCode::kOk:
      ++ok;
      return;
    case absl::StatusCode::kUnavailable:
      ++unavailable;
      return;
    case absl::StatusCode::kDeadlineExceeded:
      ++deadline_exceeded;
      return;
    case absl::StatusCode::kCancelled:
      ++cancelled;
      return;
    default:
      ++other;
      return;
  }
}

void SoakStats::Fail(std::string what) {
  // Failures of one kind differ only in their numbers (xids, sizes): count
  // them by the message with digits taken out, and keep each kind's first
  // message.
  std::string kind;
  for (char c : what) {
    if (c < '0' || c > '9') kind.push_back(c);
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, fresh] = failure_kinds_.try_emplace(kind, 0, what);
  ++it->second.first;
}

std::vector<std::string> SoakStats::failures() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [kind, count_and_first] : failure_kinds_) {
    out.push_back(absl::StrCat(count_and_first.first,
                               " x (first: ", count_and_first.second, ")"));
  }
  return out;
}

std::string SoakStats::Summary(const std::string& transport,
                               uint64_t cuts) const {
  std::string wire;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wire = wire_;
  }
  std::string by_shape;
  for (int i = 0; i < kShapes; ++i) {
    absl::StrAppend(&by_shape, i == 0 ? "" : " ",
                    ShapeName(static_cast<Shape>(i)), " ", shapes[i].load());
  }
  return absl::StrCat(
      "soak ", transport, ": calls ", calls.load(), " (retried ",
      retried_calls.load(), "; ", by_shape, "), ok ", ok.load(),
      ", unavailable ", unavailable.load(), ", deadline_exceeded ",
      deadline_exceeded.load(), ", cancelled ", cancelled.load(), ", other ",
      other.load(), "; backward calls ", backward_calls.load(), " (ok ",
      backward_ok.load(), ", failed cleanly ", backward_failed.load(),
      "), delayed replies ", delayed_replies.load(), "; breaks: links cut ",
      cuts, ", channels replaced ", channels_replaced.load(), "; reconnects ",
      reconnects.load(),
      v2_updates + v2_optionals == 0
          ? std::string()
          : absl::StrCat("; version two: receive size raised ",
                         v2_updates_ok.load(), " of ", v2_updates.load(),
                         ", optional messages answered ",
                         v2_optionals_ok.load(), " of ", v2_optionals.load()),
      "; ", wire);
}

void SoakStats::SetWire(std::string wire) {
  std::lock_guard<std::mutex> lock(mu_);
  wire_ = std::move(wire);
}

SoakServer::SoakServer(const config::TransportConfig& config,
                       const std::string& uri, uint64_t seed, SoakStats* stats)
    : stats_(stats), rng_(seed ^ 0x5eed5eed) {
  // Version two: optional messages of the soak type come back as sent.
  ServerOptions options;
  options.version_two.optional_handlers[kSoakOptionalType] =
      [](ConnectionId,
         const OptionalMessage& m) -> absl::StatusOr<OptionalMessage> {
    return m;
  };
  auto server = Server::Create(
      uri, config,
      [this](IncomingCall call, Responder responder) {
        Handle(std::move(call), std::move(responder));
      },
      std::move(options));
  if (!server.ok()) {
    status_ = server.status();
    return;
  }
  server_ = std::move(*server);
  thread_ = std::thread([this] { Run(); });
}

SoakServer::~SoakServer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (server_ != nullptr) {
    // What actually crossed the wire, by transfer form (RFC 8166 §3.4,
    // §3.5), to show every chunk path was taken.
    const Counters c = server_->counters();
    stats_->SetWire(absl::StrCat(
        "server saw: calls ", c.calls, " (inline ", c.inline_calls,
        ", with read chunks ", c.read_chunk_calls, ", long ", c.long_calls,
        "), write chunks ", c.write_chunks, ", reply chunks ", c.reply_chunks,
        ", long replies ", c.long_replies, ", remote invalidations ",
        c.remote_invalidations, ", errors sent ", c.errors_sent,
        ", backward calls ", c.backward_calls));
  }
  server_.reset();
  // With the Server gone, the Responders not yet due answer nothing.
  jobs_.clear();
  never_answered_.clear();
  // ~Server fails what is still outstanding: every backward call has
  // completed now.
  if (backward_done_ != stats_->backward_calls) {
    stats_->Fail(absl::StrCat(stats_->backward_calls.load() - backward_done_,
                              " backward calls never completed"));
  }
}

void SoakServer::Handle(IncomingCall call, Responder responder) {
  absl::Span<const uint8_t> m = call.message;
  // Only complete CALL messages of the program may reach a handler (RFC
  // 5531: msg_type 0 is CALL).
  if (m.size() < kCallHeaderSize + kControlSize || Get(m, 4) != 0 ||
      Get(m, 12) != kProgram || Get(m, 0) != call.xid) {
    stats_->Fail(absl::StrCat("server: malformed call of ", m.size(),
                              " octets delivered to the handler"));
    return;
  }
  const uint32_t delay_ms = Get(m, kCallHeaderSize);
  const uint32_t backward = Get(m, kCallHeaderSize + 4);
  if (delay_ms == kNeverAnswer) {
    // Never answered: the caller waits until its deadline, and its credit
    // stays with this call until then (RFC 8166 §3.3.1). The Responder is
    // kept, since dropping it would answer SYSTEM_ERR, until the Server is
    // gone.
    ++stats_->dropped_calls;
    std::lock_guard<std::mutex> lock(mu_);
    never_answered_.push_back(std::move(responder));
    return;
  }
  HandlerReply reply = Answer(call);
  if (backward != 0 || delay_ms != 0) {
    std::lock_guard<std::mutex> lock(mu_);
    if (backward != 0) {
      Job job;
      job.due = std::chrono::steady_clock::now();
      job.connection = call.connection;
      job.backward_size = backward;
      jobs_.push_back(std::move(job));
    }
    if (delay_ms != 0) {
      Job job;
      job.due = std::chrono::steady_clock::now() +
                std::chrono::milliseconds(delay_ms);
      job.responder = std::make_unique<Responder>(std::move(responder));
      job.reply = std::move(reply);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_all();
    if (delay_ms != 0) return;
  }
  // FAILED_PRECONDITION only when the Server is gone.
  absl::Status s = responder.Send(std::move(reply));
  if (!s.ok()) stats_->Fail(absl::StrCat("server: Send: ", s.ToString()));
}

void SoakServer::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (jobs_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto next = std::min_element(
        jobs_.begin(), jobs_.end(),
        [](const Job& a, const Job& b) { return a.due < b.due; });
    if (next->due > std::chrono::steady_clock::now()) {
      cv_.wait_until(lock, next->due);
      continue;
    }
    Job job = std::move(*next);
    jobs_.erase(next);
    lock.unlock();
    if (job.responder != nullptr) {
      ++stats_->delayed_replies;
      absl::Status s = job.responder->Send(std::move(job.reply));
      if (!s.ok())
        stats_->Fail(absl::StrCat("server: late Send: ", s.ToString()));
    } else {
      CallBackward(job.connection, job.backward_size);
    }
    lock.lock();
  }
}

void SoakServer::CallBackward(ConnectionId connection, uint32_t size) {
  auto call = std::make_shared<PlannedCall>();
  PlanBackward(*call, next_backward_xid_++, size, rng_);
  call->request.deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(3);
  ++stats_->backward_calls;
  server_->Call(
      connection, call->request, [this, call](absl::StatusOr<Reply> result) {
        if (call->completions.fetch_add(1) != 0) {
          stats_->Fail(
              absl::StrCat("backward xid ", call->xid, " completed twice"));
          return;
        }
        ++backward_done_;
        if (result.ok()) {
          ++stats_->backward_ok;
          std::string bad = CheckReply(*call, *result);
          if (!bad.empty()) stats_->Fail("backward: " + bad);
          return;
        }
        ++stats_->backward_failed;
        // NOT_FOUND: the connection was lost before the call.
        if (!IsCleanStatus(result.status().code()) &&
            result.status().code() != absl::StatusCode::kNotFound) {
          stats_->Fail(absl::StrCat("backward xid ", call->xid, ": ",
                                    result.status().ToString()));
        }
      });
}

}  // namespace rpcrdma::test
