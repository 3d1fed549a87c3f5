#include "bench/fabric_pair.h"

#include <poll.h>

#include <algorithm>
#include <array>
#include <chrono>

#include "absl/strings/str_cat.h"

namespace rpcrdma::bench {
namespace {

using fabric::Completion;
using fabric::ConnectionEventType;
using fabric::Endpoint;

constexpr auto kWaitLimit = std::chrono::seconds(10);

}  // namespace

absl::StatusOr<std::unique_ptr<FabricPair>> FabricPair::Connect(
    std::unique_ptr<fabric::Fabric> client_fabric,
    std::unique_ptr<fabric::Fabric> server_fabric,
    const std::string& listen_address, const fabric::EndpointOptions& options) {
  std::unique_ptr<FabricPair> pair(new FabricPair());
  pair->client_fabric_ = std::move(client_fabric);
  pair->server_fabric_ = std::move(server_fabric);
  auto listener = pair->server_fabric_->Listen(listen_address);
  if (!listener.ok()) return listener.status();
  pair->listener_ = *std::move(listener);
  auto client =
      pair->client_fabric_->Connect(pair->listener_->address(), {}, options);
  if (!client.ok()) return client.status();
  pair->client_ = *std::move(client);

  const auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
  while (pair->server_ == nullptr) {
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError("no connect request arrived");
    }
    std::array<pollfd, 2> fds{pollfd{pair->listener_->event_fd(), POLLIN, 0},
                              pollfd{pair->client_->event_fd(), POLLIN, 0}};
    poll(fds.data(), fds.size(), 10);
    auto request = pair->listener_->PollConnectRequest();
    if (!request.ok()) return request.status();
    if (*request == nullptr) continue;
    auto server = (*request)->Accept({}, options);
    if (!server.ok()) return server.status();
    pair->server_ = *std::move(server);
  }
  // The passive side may need the active side's progress (and vice versa)
  // before either reports kEstablished, so poll both in turn.
  bool client_up = false;
  bool server_up = false;
  while (!(client_up && server_up)) {
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError("connection was not established");
    }
    if (!client_up) {
      if (auto event = pair->client_->PollConnectionEvent()) {
        if (event->type != ConnectionEventType::kEstablished) {
          return absl::UnavailableError(
              absl::StrCat("client: ", event->detail));
        }
        client_up = true;
      }
    }
    if (!server_up) {
      if (auto event = pair->server_->PollConnectionEvent()) {
        if (event->type != ConnectionEventType::kEstablished) {
          return absl::UnavailableError(
              absl::StrCat("server: ", event->detail));
        }
        server_up = true;
      }
    }
    std::array<pollfd, 2> fds{pollfd{pair->client_->event_fd(), POLLIN, 0},
                              pollfd{pair->server_->event_fd(), POLLIN, 0}};
    poll(fds.data(), fds.size(), 10);
  }
  return pair;
}

FabricPair::~FabricPair() {
  if (client_ != nullptr) client_->Disconnect();
  if (server_ != nullptr) server_->Disconnect();
}

absl::StatusOr<RegisteredBuffer> FabricPair::Register(Endpoint& endpoint,
                                                      size_t size) {
  RegisteredBuffer buffer;
  buffer.bytes.assign(size, 0x5a);
  auto registration = endpoint.Register(absl::MakeSpan(buffer.bytes));
  if (!registration.ok()) return registration.status();
  buffer.registration = *std::move(registration);
  return buffer;
}

absl::Status FabricPair::PollOnce(int timeout_ms) {
  std::array<Completion, 32> batch;
  for (auto [endpoint, seen] : {std::pair{client_.get(), &client_seen_},
                                std::pair{server_.get(), &server_seen_}}) {
    size_t n = endpoint->PollCompletions(absl::MakeSpan(batch));
    seen->insert(seen->end(), batch.begin(),
                 batch.begin() + static_cast<ptrdiff_t>(n));
  }
  if (timeout_ms > 0) {
    std::array<pollfd, 2> fds{pollfd{client_->event_fd(), POLLIN, 0},
                              pollfd{server_->event_fd(), POLLIN, 0}};
    poll(fds.data(), fds.size(), timeout_ms);
  }
  return absl::OkStatus();
}

absl::Status FabricPair::WaitCompletion(Endpoint& endpoint, uint64_t wr_id) {
  std::vector<Completion>& seen =
      &endpoint == client_.get() ? client_seen_ : server_seen_;
  const auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
  int idle_polls = 0;
  while (true) {
    auto it = std::find_if(seen.begin(), seen.end(),
                           [wr_id](const auto& c) { return c.wr_id == wr_id; });
    if (it != seen.end()) {
      Completion c = *it;
      seen.erase(it);
      if (c.status != fabric::WorkStatus::kSuccess) {
        return absl::InternalError(
            absl::StrCat(fabric::WorkTypeName(c.type), " completed with ",
                         fabric::WorkStatusName(c.status)));
      }
      return absl::OkStatus();
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("work request ", wr_id, " did not complete"));
    }
    // Spin a little before sleeping in poll(2), as a busy-polling RPC
    // transport would.
    (void)PollOnce(++idle_polls > 64 ? 1 : 0);
  }
}

}  // namespace rpcrdma::bench
