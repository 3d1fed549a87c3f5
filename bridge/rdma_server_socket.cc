#include "rpcrdma/thrift/rdma_server_socket.h"

#include <thrift/transport/TTransportException.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bridge/config_defaults.h"
#include "bridge/server_socket_state.h"
#include "bridge/server_transports.h"

namespace rpcrdma::thrift {
namespace internal {

using apache::thrift::transport::TTransport;
using apache::thrift::transport::TTransportException;

ServerSocketState::ServerSocketState(
    std::string uri, config::TransportConfig transport_config,
    TRdmaServerSocketOptions socket_options,
    std::shared_ptr<apache::thrift::TConfiguration> thrift_config)
    : requested_uri(std::move(uri)),
      transport(
          ServerTransportConfig(std::move(transport_config), *thrift_config)),
      options(std::move(socket_options)),
      config(thrift_config),
      limits(MakeResponderLimits(options.bulk_threshold, *thrift_config)) {}

void ServerSocketState::Listen(std::optional<Listener::Hooks> hooks) {
  std::unique_lock<std::mutex> lock(mu_);
  if (listener_ != nullptr && !closing_) return;
  if (listener_ != nullptr) StopListener(lock);  // listening anew
  Listener::Hooks queueing;
  if (hooks.has_value()) {
    queueing = *std::move(hooks);
  } else {
    queueing.accepted = [this](const std::shared_ptr<ConnectionState>& state) {
      std::lock_guard<std::mutex> accepted(mu_);
      accepted_.push_back(state);
      cv_.notify_all();
    };
    queueing.call = [](const std::shared_ptr<ConnectionState>& state,
                       QueuedCall call) {
      std::lock_guard<std::mutex> queued(state->mu);
      if (state->closed) return;
      state->calls.push_back(std::move(call));
      state->cv.notify_all();
    };
  }
  absl::StatusOr<std::shared_ptr<Listener>> listener = Listener::Start(
      requested_uri, transport, options.runtime, std::move(queueing));
  if (!listener.ok()) {
    throw TTransportException(
        TTransportException::NOT_OPEN,
        absl::StrCat("rpcrdma: could not listen on ", requested_uri, ": ",
                     listener.status().ToString()));
  }
  listener_ = *std::move(listener);
  interrupted_ = false;
  closing_ = false;
}

std::shared_ptr<TTransport> ServerSocketState::Accept() {
  std::shared_ptr<ConnectionState> state;
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto ready = [&] {
      return interrupted_ || listener_ == nullptr || closing_ ||
             !accepted_.empty();
    };
    const int timeout = accept_timeout_ms.load();
    if (timeout > 0) {
      if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout), ready)) {
        throw TTransportException(TTransportException::TIMED_OUT,
                                  "rpcrdma: accept timed out");
      }
    } else {
      cv_.wait(lock, ready);
    }
    if (interrupted_) {
      // As TServerSocket: one interrupt ends one accept().
      interrupted_ = false;
      throw TTransportException(TTransportException::INTERRUPTED,
                                "rpcrdma: accept interrupted");
    }
    if (listener_ == nullptr || closing_) {
      throw TTransportException(TTransportException::NOT_OPEN,
                                "rpcrdma: TRdmaServerSocket not listening");
    }
    state = std::move(accepted_.front());
    accepted_.pop_front();
    ++live_transports_;
  }
  std::weak_ptr<ServerSocketState> weak = weak_from_this();
  auto accepted = std::make_shared<ConnectionTransport>(
      std::move(state), limits, config, [weak] {
        if (std::shared_ptr<ServerSocketState> self = weak.lock()) {
          self->TransportClosed();
        }
      });
  accepted->set_recv_timeout(
      std::chrono::milliseconds(std::max(recv_timeout_ms.load(), 0)));
  return accepted;
}

void ServerSocketState::Interrupt() {
  std::lock_guard<std::mutex> lock(mu_);
  interrupted_ = true;
  cv_.notify_all();
}

void ServerSocketState::TransportClosed() {
  std::unique_lock<std::mutex> lock(mu_);
  --live_transports_;
  if (closing_ && live_transports_ == 0) StopListener(lock);
}

void ServerSocketState::StopListener(std::unique_lock<std::mutex>& lock) {
  std::shared_ptr<Listener> listener = std::move(listener_);
  if (listener == nullptr) return;
  lock.unlock();
  listener->Stop();
  lock.lock();
  final_counters_ = listener->counters();
}

void ServerSocketState::Close() {
  std::shared_ptr<Listener> listener;
  std::deque<std::shared_ptr<ConnectionState>> never_accepted;
  std::unique_lock<std::mutex> lock(mu_);
  if (listener_ == nullptr) return;
  closing_ = true;
  never_accepted.swap(accepted_);
  cv_.notify_all();
  listener = listener_;
  if (live_transports_ == 0) {
    StopListener(lock);
    return;
  }
  lock.unlock();
  // New connections are refused until the last transport goes.
  listener->RefuseNewConnections();
  for (const std::shared_ptr<ConnectionState>& state : never_accepted) {
    (void)listener->Disconnect(state->id, "the server stopped listening");
  }
}

bool ServerSocketState::listening() const {
  std::lock_guard<std::mutex> lock(mu_);
  return listener_ != nullptr && !closing_;
}

std::shared_ptr<Listener> ServerSocketState::listener() const {
  std::lock_guard<std::mutex> lock(mu_);
  return listener_;
}

Counters ServerSocketState::counters() const {
  std::shared_ptr<Listener> listener = this->listener();
  if (listener != nullptr) return listener->counters();
  std::lock_guard<std::mutex> lock(mu_);
  return final_counters_;
}

}  // namespace internal

TRdmaServerSocket::TRdmaServerSocket(
    std::string uri, std::shared_ptr<apache::thrift::TConfiguration> config)
    : TRdmaServerSocket(std::move(uri), config::TransportConfig(), {},
                        std::move(config)) {}

TRdmaServerSocket::TRdmaServerSocket(
    std::string uri, const config::TransportConfig& transport,
    TRdmaServerSocketOptions options,
    std::shared_ptr<apache::thrift::TConfiguration> config)
    : state_(std::make_shared<internal::ServerSocketState>(
          std::move(uri), transport, std::move(options),
          internal::OrDefault(std::move(config)))) {}

TRdmaServerSocket::~TRdmaServerSocket() { state_->Close(); }

void TRdmaServerSocket::listen() { state_->Listen(); }

bool TRdmaServerSocket::isOpen() const { return state_->listening(); }

void TRdmaServerSocket::interrupt() { state_->Interrupt(); }

void TRdmaServerSocket::interruptChildren() {
  if (auto listener = state_->listener()) listener->InterruptChildren();
}

void TRdmaServerSocket::close() { state_->Close(); }

void TRdmaServerSocket::setAcceptTimeout(int milliseconds) {
  state_->accept_timeout_ms = std::max(milliseconds, 0);
}

void TRdmaServerSocket::setRecvTimeout(int milliseconds) {
  state_->recv_timeout_ms = std::max(milliseconds, 0);
}

std::string TRdmaServerSocket::uri() const {
  auto listener = state_->listener();
  return listener != nullptr ? listener->uri() : std::string();
}

Counters TRdmaServerSocket::counters() const { return state_->counters(); }

size_t TRdmaServerSocket::connections() const {
  auto listener = state_->listener();
  return listener != nullptr ? listener->connections() : 0;
}

std::shared_ptr<apache::thrift::transport::TTransport>
TRdmaServerSocket::acceptImpl() {
  return state_->Accept();
}

}  // namespace rpcrdma::thrift
