#include "plugin/include/rpcrdma/server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

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

// Shared between the loop and every Responder: replies queued for the loop.
struct ReplyQueue {
  struct Item {
    uint64_t connection = 0;
    engine::CallId call = 0;
    ServerReply reply;
  };
  std::mutex mu;
  bool closed = false;
  int wake_fd = -1;
  std::vector<Item> items;

  absl::Status Push(Item item) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (closed) {
        return absl::FailedPreconditionError("server: shut down");
      }
      items.push_back(std::move(item));
    }
    uint64_t one = 1;
    ssize_t n = write(wake_fd, &one, sizeof one);
    (void)n;
    return absl::OkStatus();
  }
};

}  // namespace api_internal

struct Responder::State {
  std::shared_ptr<api_internal::ReplyQueue> queue;
  uint64_t connection = 0;
  engine::CallId call = 0;
  bool replied = false;
};

Responder::Responder(std::unique_ptr<State> state) : state_(std::move(state)) {}
Responder::Responder(Responder&&) noexcept = default;
Responder& Responder::operator=(Responder&&) noexcept = default;
Responder::~Responder() = default;

absl::Status Responder::Send(ServerReply reply) {
  if (state_ == nullptr || state_->replied) {
    return absl::FailedPreconditionError("responder: already replied");
  }
  state_->replied = true;
  return state_->queue->Push(api_internal::ReplyQueue::Item{
      state_->connection, state_->call, std::move(reply)});
}

namespace api_internal {

class ServerLoop {
 public:
  explicit ServerLoop(Server::Handler handler)
      : handler_(std::move(handler)), queue_(std::make_shared<ReplyQueue>()) {}

  ~ServerLoop() {
    {
      std::lock_guard<std::mutex> lock(queue_->mu);
      queue_->closed = true;
    }
    uint64_t one = 1;
    if (queue_->wake_fd >= 0) {
      ssize_t n = write(queue_->wake_fd, &one, sizeof one);
      (void)n;
    }
    if (thread_.joinable()) thread_.join();
    if (queue_->wake_fd >= 0) close(queue_->wake_fd);
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
    capture_ = std::move(*capture);
    resolved_ = config::Resolve(config);
    absl::StatusOr<std::unique_ptr<fabric::Listener>> listener =
        fabric_->Listen(parsed->address);
    if (!listener.ok()) {
      return absl::UnavailableError(absl::StrCat(
          "listen on ", uri, ": ", std::string(listener.status().message())));
    }
    listener_ = std::move(*listener);
    std::string address = listener_->address();
    switch (parsed->fabric) {
      case config::TransportConfig::SOFT_UNIX:
        uri_ = absl::StrCat("soft+unix://", address.substr(5));
        break;
      case config::TransportConfig::SOFT_TCP:
        uri_ = absl::StrCat("soft+tcp://", address.substr(4));
        break;
      default:
        uri_ = absl::StrCat("rdma://", address);
        break;
    }
    queue_->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (queue_->wake_fd < 0) return absl::InternalError("eventfd failed");
    thread_ = std::thread([this] { Loop(); });
    return absl::OkStatus();
  }

  std::string uri() const { return uri_; }

  Counters counters() const {
    std::lock_guard<std::mutex> lock(mu_);
    Counters total = closed_counters_;
    for (const auto& [id, c] : conns_) total += c->counters();
    return total;
  }
  size_t connections() const {
    std::lock_guard<std::mutex> lock(mu_);
    return conns_.size();
  }

 private:
  void Accept() {
    while (true) {
      absl::StatusOr<std::unique_ptr<fabric::ConnectRequest>> req =
          listener_->PollConnectRequest();
      if (!req.ok() || *req == nullptr) return;
      engine::Config ecfg = EngineConfigFor(resolved_, Role::kResponder);
      std::vector<uint8_t> private_data;
      if (resolved_.inline_settings.cm_private_data) {
        engine::Engine probe(ecfg, nullptr);
        auto pd = probe.LocalPrivateData();
        private_data.assign(pd.begin(), pd.end());
      }
      std::vector<uint8_t> peer((*req)->private_data().begin(),
                                (*req)->private_data().end());
      absl::StatusOr<std::unique_ptr<fabric::Endpoint>> ep =
          (*req)->Accept(private_data, EndpointOptionsFor(ecfg));
      if (!ep.ok()) continue;
      uint64_t id = next_conn_++;
      Connection::Hooks hooks;
      hooks.deliver = [this, id](engine::DeliverCall& d) {
        auto state = std::make_unique<Responder::State>();
        state->queue = queue_;
        state->connection = id;
        state->call = d.call;
        IncomingCall call{id, d.xid, std::move(d.message),
                          std::move(d.write_chunk_capacities),
                          d.reply_chunk_capacity};
        handler_(std::move(call), Responder(std::move(state)));
      };
      hooks.reply_sent = [this, id](engine::ReplySent& r) {
        replies_.erase({id, r.call});
      };
      AttachCapture(capture_, Role::kResponder, hooks);
      auto conn = std::make_unique<Connection>(std::move(*ep), ecfg,
                                               Role::kResponder, hooks);
      Connection* raw = conn.get();
      {
        std::lock_guard<std::mutex> lock(mu_);
        conns_[id] = std::move(conn);
      }
      // Receives are posted at once: the requester may send as soon as it
      // sees the connection established.
      raw->Connected(peer);
    }
  }

  void SendReplies() {
    std::vector<ReplyQueue::Item> items;
    {
      std::lock_guard<std::mutex> lock(queue_->mu);
      items.swap(queue_->items);
    }
    for (ReplyQueue::Item& item : items) {
      auto it = conns_.find(item.connection);
      if (it == conns_.end() || it->second->disconnected()) continue;
      auto stored = std::make_unique<ServerReply>(std::move(item.reply));
      engine::OutgoingReply out_reply;
      out_reply.xdr = stored->xdr;
      for (const ReplyItem& r : stored->results) {
        out_reply.results.push_back(engine::DdpResult{r.position, r.data});
      }
      std::pair<uint64_t, engine::CallId> key{item.connection, item.call};
      replies_[key] = std::move(stored);
      engine::Actions out;
      absl::Status st =
          it->second->engine().Reply(item.call, std::move(out_reply), out);
      if (!st.ok()) replies_.erase(key);
      it->second->Run(out);
    }
  }

  void Loop() {
    std::optional<Clock::time_point> stop_since;
    while (true) {
      bool stop;
      {
        std::lock_guard<std::mutex> lock(queue_->mu);
        stop = queue_->closed;
      }
      if (!stop) {
        Accept();
        SendReplies();
      }
      for (auto& [id, c] : conns_) c->Poll();
      Clock::time_point now = Clock::now();
      if (stop && !stop_since) {
        stop_since = now;
        for (auto& [id, c] : conns_) c->Disconnect();
      }
      // Connections that are gone and drained.
      for (auto it = conns_.begin(); it != conns_.end();) {
        bool expired = stop && now - *stop_since > std::chrono::seconds(10);
        if (it->second->finished() || expired) {
          for (auto r = replies_.begin(); r != replies_.end();) {
            r = r->first.first == it->first ? replies_.erase(r) : std::next(r);
          }
          std::unique_ptr<Connection> dead;
          {
            std::lock_guard<std::mutex> lock(mu_);
            closed_counters_ += it->second->counters();
            dead = std::move(it->second);
            it = conns_.erase(it);
          }
        } else {
          ++it;
        }
      }
      if (stop && conns_.empty()) break;
      std::vector<pollfd> fds;
      fds.push_back({queue_->wake_fd, POLLIN, 0});
      fds.push_back({listener_->event_fd(), POLLIN, 0});
      for (auto& [id, c] : conns_) {
        fds.push_back({c->endpoint().event_fd(), POLLIN, 0});
      }
      poll(fds.data(), fds.size(), stop ? 10 : 1000);
      if (fds[0].revents & POLLIN) {
        uint64_t v;
        ssize_t n = read(queue_->wake_fd, &v, sizeof v);
        (void)n;
      }
    }
    replies_.clear();
  }

  Server::Handler handler_;
  std::shared_ptr<ReplyQueue> queue_;
  std::unique_ptr<fabric::Fabric> fabric_;
  std::unique_ptr<fabric::Listener> listener_;
  config::ResolvedConfig resolved_;
  std::shared_ptr<CaptureTap> capture_;  // null without capture_path
  std::string uri_;
  std::thread thread_;
  uint64_t next_conn_ = 1;

  mutable std::mutex mu_;  // guards conns_ membership and closed_counters_
  std::map<uint64_t, std::unique_ptr<Connection>> conns_;
  Counters closed_counters_;

  // Loop thread only: reply memory kept until its Send completes.
  std::map<std::pair<uint64_t, engine::CallId>, std::unique_ptr<ServerReply>>
      replies_;
};

}  // namespace api_internal

absl::StatusOr<std::unique_ptr<Server>> Server::Create(
    absl::string_view uri, const config::TransportConfig& config,
    Handler handler) {
  auto loop = std::make_unique<api_internal::ServerLoop>(std::move(handler));
  if (absl::Status s = loop->Start(uri, config); !s.ok()) return s;
  return std::unique_ptr<Server>(new Server(std::move(loop)));
}

Server::Server(std::unique_ptr<api_internal::ServerLoop> loop)
    : loop_(std::move(loop)) {}
Server::~Server() = default;

std::string Server::uri() const { return loop_->uri(); }
Counters Server::counters() const { return loop_->counters(); }
size_t Server::connections() const { return loop_->connections(); }

}  // namespace rpcrdma
