#include "plugin/include/rpcrdma/channel.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "plugin/api/capture_tap.h"
#include "plugin/api/connection.h"

namespace rpcrdma {
namespace api_internal {

using Clock = std::chrono::steady_clock;

class ChannelLoop {
 public:
  ~ChannelLoop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    Wake();
    if (thread_.joinable()) thread_.join();
    if (wake_fd_ >= 0) close(wake_fd_);
  }

  absl::Status Start(absl::string_view uri,
                     const config::TransportConfig& config) {
    absl::StatusOr<ParsedUri> parsed = ParseUri(uri);
    if (!parsed.ok()) return parsed.status();
    absl::StatusOr<std::unique_ptr<fabric::Fabric>> fab =
        MakeFabricFor(*parsed, config);
    if (!fab.ok()) return fab.status();
    fabric_ = std::move(*fab);
    absl::StatusOr<std::shared_ptr<CaptureTap>> capture =
        OpenCaptureFor(config);
    if (!capture.ok()) return capture.status();
    config::ResolvedConfig resolved = config::Resolve(config);
    default_deadline_ = resolved.request_deadline;
    engine::Config ecfg = EngineConfigFor(resolved, Role::kRequester);
    std::vector<uint8_t> private_data;
    if (resolved.inline_settings.cm_private_data) {
      engine::Engine probe(ecfg, nullptr);
      auto pd = probe.LocalPrivateData();
      private_data.assign(pd.begin(), pd.end());
    }
    absl::StatusOr<std::unique_ptr<fabric::Endpoint>> ep = fabric_->Connect(
        parsed->address, private_data, EndpointOptionsFor(ecfg));
    if (!ep.ok()) {
      return absl::UnavailableError(absl::StrCat(
          "connect to ", uri, ": ", std::string(ep.status().message())));
    }
    // Wait for the outcome of the connect.
    Clock::time_point until = Clock::now() + resolved.connect_timeout;
    std::optional<fabric::ConnectionEvent> ev;
    while (!ev) {
      ev = (*ep)->PollConnectionEvent();
      if (ev) break;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - Clock::now());
      if (left.count() <= 0) {
        (*ep)->Disconnect();
        return absl::DeadlineExceededError(
            absl::StrCat("connect to ", uri, ": no answer within ",
                         resolved.connect_timeout.count(), " ms"));
      }
      pollfd p{(*ep)->event_fd(), POLLIN, 0};
      poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
    }
    if (ev->type != fabric::ConnectionEventType::kEstablished) {
      return absl::UnavailableError(absl::StrCat(
          "connect to ", uri, ": ", fabric::ConnectionEventTypeName(ev->type),
          ev->detail.empty() ? "" : ": ", ev->detail));
    }
    // The remote invalidation bit must match what was sent, so the
    // connection recomputes nothing: the engine config is used as sent.
    Connection::Hooks hooks;
    hooks.complete = [this](engine::CompleteCall& c) {
      Finish(c.call, Reply{std::move(c.reply), std::move(c.result_lengths)});
    };
    hooks.fail = [this](engine::FailCall& f) {
      Finish(f.call, std::move(f.status));
    };
    AttachCapture(*capture, Role::kRequester, hooks);
    conn_ = std::make_unique<Connection>(std::move(*ep), ecfg, Role::kRequester,
                                         std::move(hooks));
    conn_->Connected(ev->private_data);
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) return absl::InternalError("eventfd failed");
    thread_ = std::thread([this] { Loop(); });
    return absl::OkStatus();
  }

  Channel::CallId Submit(CallRequest request, Channel::Callback done) {
    std::unique_lock<std::mutex> lock(mu_);
    Channel::CallId id = next_id_++;
    if (stopping_ || !connected_) {
      lock.unlock();
      done(absl::UnavailableError("channel: connection lost"));
      return id;
    }
    commands_.push_back(
        Command{id, std::move(request), std::move(done), false});
    lock.unlock();
    Wake();
    return id;
  }

  void Cancel(Channel::CallId id) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      commands_.push_back(Command{id, {}, nullptr, true});
    }
    Wake();
  }

  Counters counters() const { return conn_->counters(); }
  bool connected() const {
    std::lock_guard<std::mutex> lock(mu_);
    return connected_;
  }

 private:
  struct Command {
    Channel::CallId id = 0;
    CallRequest request;
    Channel::Callback done;
    bool cancel = false;
  };
  struct Pending {
    engine::CallId engine_id = 0;
    Channel::Callback done;
    std::optional<Clock::time_point> deadline;
  };

  void Wake() {
    uint64_t one = 1;
    if (wake_fd_ >= 0) {
      ssize_t n = write(wake_fd_, &one, sizeof one);
      (void)n;
    }
  }

  void Finish(engine::CallId engine_id, absl::StatusOr<Reply> result) {
    auto it = by_engine_.find(engine_id);
    if (it == by_engine_.end()) return;
    Channel::CallId id = it->second;
    by_engine_.erase(it);
    auto p = pending_.find(id);
    if (p == pending_.end()) return;
    Channel::Callback done = std::move(p->second.done);
    pending_.erase(p);
    done(std::move(result));
  }

  void StartCall(Command& c) {
    engine::OutgoingCall call;
    call.xdr = std::move(c.request.xdr);
    for (const CallArgument& a : c.request.arguments) {
      call.arguments.push_back(engine::DdpArgument{
          a.position, absl::Span<uint8_t>(const_cast<uint8_t*>(a.data.data()),
                                          a.data.size())});
    }
    call.results = std::move(c.request.results);
    call.max_reply_size = c.request.max_reply_size;
    std::optional<Clock::time_point> deadline = c.request.deadline;
    if (!deadline && default_deadline_.count() > 0) {
      deadline = Clock::now() + default_deadline_;
    }
    if (conn_->disconnected()) {
      c.done(absl::UnavailableError("channel: connection lost"));
      return;
    }
    if (deadline && *deadline <= Clock::now()) {
      c.done(absl::DeadlineExceededError(
          "channel: deadline passed before the call was sent"));
      return;
    }
    engine::Actions out;
    absl::StatusOr<engine::CallId> eid =
        conn_->engine().StartCall(std::move(call), out);
    if (!eid.ok()) {
      conn_->Run(out);
      c.done(eid.status());
      return;
    }
    pending_[c.id] = Pending{*eid, std::move(c.done), deadline};
    by_engine_[*eid] = c.id;
    conn_->Run(out);
  }

  void CancelCall(Channel::CallId id, absl::Status status) {
    auto p = pending_.find(id);
    if (p == pending_.end()) return;
    engine::Actions out;
    conn_->engine().Cancel(p->second.engine_id, std::move(status), out);
    conn_->Run(out);
  }

  void Loop() {
    bool stop = false;
    while (true) {
      std::vector<Command> commands;
      {
        std::lock_guard<std::mutex> lock(mu_);
        commands.swap(commands_);
        stop = stopping_;
      }
      for (Command& c : commands) {
        if (c.cancel) {
          CancelCall(c.id, absl::CancelledError("channel: call cancelled"));
        } else if (stop) {
          c.done(absl::UnavailableError("channel: shut down"));
        } else {
          StartCall(c);
        }
      }
      conn_->Poll();
      if (conn_->disconnected()) {
        std::lock_guard<std::mutex> lock(mu_);
        connected_ = false;
      }
      // Deadlines, enforced here: the engine has no clock.
      Clock::time_point now = Clock::now();
      std::optional<Clock::time_point> next;
      std::vector<Channel::CallId> expired;
      for (auto& [id, p] : pending_) {
        if (!p.deadline) continue;
        if (*p.deadline <= now) {
          expired.push_back(id);
          p.deadline.reset();
        } else if (!next || *p.deadline < *next) {
          next = p.deadline;
        }
      }
      for (Channel::CallId id : expired) {
        CancelCall(id,
                   absl::DeadlineExceededError("channel: deadline exceeded"));
      }
      if (!expired.empty()) continue;
      if (stop) {
        if (!stop_since_) {
          stop_since_ = now;
          conn_->Disconnect();
        }
        // Every posted operation flushes after a disconnect; the bound is a
        // guard against a provider that never reports.
        if (conn_->finished() ||
            now - *stop_since_ > std::chrono::seconds(10)) {
          break;
        }
      }
      int timeout = -1;
      if (next) {
        auto ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(*next - now)
                .count();
        timeout = static_cast<int>(std::clamp<int64_t>(ms + 1, 1, 1000));
      }
      if (stop) timeout = 10;
      pollfd fds[2] = {{wake_fd_, POLLIN, 0},
                       {conn_->endpoint().event_fd(), POLLIN, 0}};
      poll(fds, 2, timeout);
      if (fds[0].revents & POLLIN) {
        uint64_t v;
        ssize_t n = read(wake_fd_, &v, sizeof v);
        (void)n;
      }
    }
    // Calls still waiting (none normally: the disconnect failed them).
    std::vector<Channel::Callback> left;
    for (auto& [id, p] : pending_) left.push_back(std::move(p.done));
    pending_.clear();
    for (auto& done : left) done(absl::UnavailableError("channel: shut down"));
    conn_.reset();
  }

  std::unique_ptr<fabric::Fabric> fabric_;
  std::unique_ptr<Connection> conn_;
  std::chrono::milliseconds default_deadline_{0};
  int wake_fd_ = -1;
  std::thread thread_;
  std::optional<Clock::time_point> stop_since_;

  mutable std::mutex mu_;
  bool stopping_ = false;
  bool connected_ = true;
  Channel::CallId next_id_ = 1;
  std::vector<Command> commands_;

  // Loop thread only.
  std::map<Channel::CallId, Pending> pending_;
  std::map<engine::CallId, Channel::CallId> by_engine_;
};

}  // namespace api_internal

absl::StatusOr<std::unique_ptr<Channel>> Channel::Create(
    absl::string_view uri, const config::TransportConfig& config) {
  auto loop = std::make_unique<api_internal::ChannelLoop>();
  if (absl::Status s = loop->Start(uri, config); !s.ok()) return s;
  return std::unique_ptr<Channel>(new Channel(std::move(loop)));
}

Channel::Channel(std::unique_ptr<api_internal::ChannelLoop> loop)
    : loop_(std::move(loop)) {}

Channel::~Channel() = default;

Channel::CallId Channel::Call(CallRequest request, Callback done) {
  return loop_->Submit(std::move(request), std::move(done));
}

std::future<absl::StatusOr<Reply>> Channel::Call(CallRequest request) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<Reply>>>();
  std::future<absl::StatusOr<Reply>> future = promise->get_future();
  loop_->Submit(std::move(request), [promise](absl::StatusOr<Reply> r) {
    promise->set_value(std::move(r));
  });
  return future;
}

void Channel::Cancel(CallId call) { loop_->Cancel(call); }

Counters Channel::counters() const { return loop_->counters(); }
bool Channel::connected() const { return loop_->connected(); }

}  // namespace rpcrdma
