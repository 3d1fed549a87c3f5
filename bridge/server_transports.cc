#include "bridge/server_transports.h"

#include <thrift/transport/TTransportException.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace rpcrdma::thrift::internal {

using apache::thrift::transport::TTransportException;

ConnectionTransport::ConnectionTransport(
    std::shared_ptr<ConnectionState> state, ResponderLimits limits,
    std::shared_ptr<apache::thrift::TConfiguration> config,
    std::function<void()> closed)
    : TVirtualTransport(std::move(config)),
      state_(std::move(state)),
      core_(state_->stash, limits),
      on_closed_(std::move(closed)) {}

ConnectionTransport::~ConnectionTransport() {
  if (CurrentConnectionState() == state_) CurrentConnectionState().reset();
  if (on_closed_) on_closed_();
}

bool ConnectionTransport::isOpen() const {
  if (closed_) return false;
  std::lock_guard<std::mutex> lock(state_->mu);
  return !state_->closed || !state_->calls.empty();
}

bool ConnectionTransport::peek() {
  if (serving_ && !core_.reader().exhausted()) return true;
  return isOpen();
}

void ConnectionTransport::close() {
  if (closed_) return;
  closed_ = true;
  core_.Finish();
  acknowledged_.reset();
  serving_ = false;
  if (std::shared_ptr<Listener> listener = state_->listener.lock()) {
    (void)listener->Disconnect(state_->id, "the server closed the transport");
  }
  if (std::function<void()> closed = std::move(on_closed_)) closed();
}

void ConnectionTransport::NextCall() {
  if (serving_) {
    core_.Finish();
    acknowledged_.reset();
    serving_ = false;
  }
  for (;;) {
    QueuedCall next;
    {
      std::unique_lock<std::mutex> lock(state_->mu);
      auto ready = [&] {
        return state_->interrupted || state_->closed || !state_->calls.empty();
      };
      if (recv_timeout_.count() > 0) {
        if (!state_->cv.wait_for(lock, recv_timeout_, ready)) {
          throw TTransportException(TTransportException::TIMED_OUT,
                                    absl::StrCat("rpcrdma: no call within ",
                                                 recv_timeout_.count(), " ms"));
        }
      } else {
        state_->cv.wait(lock, ready);
      }
      if (state_->interrupted) {
        throw TTransportException(TTransportException::INTERRUPTED,
                                  "rpcrdma: interrupted");
      }
      if (state_->calls.empty()) {
        throw TTransportException(
            TTransportException::END_OF_FILE,
            absl::StrCat("rpcrdma: connection closed: ", state_->closed_why));
      }
      next = std::move(state_->calls.front());
      state_->calls.pop_front();
    }
    if (core_.Begin(std::move(next.call), std::move(next.responder),
                    next.args_offset, next.oneway)) {
      acknowledged_ = std::move(next.acknowledged);
      serving_ = true;
      CurrentConnectionState() = state_;
      // See ConsumedSizeNote and KnownSizeNote in server_transports.h.
      resetConsumedMessageSize();
      resetConsumedMessageSize(
          KnownMessageSize(core_.call_size(), getMaxMessageSize()));
      return;
    }
  }
}

uint32_t ConnectionTransport::read(uint8_t* buffer, uint32_t length) {
  if (closed_) {
    throw TTransportException(TTransportException::NOT_OPEN,
                              "rpcrdma: transport closed");
  }
  if (length == 0) return 0;
  if (!serving_ || core_.reader().exhausted()) NextCall();
  const uint32_t n = core_.reader().Read(buffer, length);
  countConsumedMessageBytes(n);
  return n;
}

const uint8_t* ConnectionTransport::borrow(uint8_t* /*buffer*/,
                                           uint32_t* length) {
  if (!serving_) return nullptr;
  return core_.reader().Borrow(length);
}

void ConnectionTransport::consume(uint32_t length) {
  if (!serving_ || !core_.reader().Consume(length)) {
    throw TTransportException(TTransportException::BAD_ARGS,
                              "rpcrdma: consume() past the message's end");
  }
  countConsumedMessageBytes(length);
}

uint32_t ConnectionTransport::readEnd() {
  return static_cast<uint32_t>(core_.reader().consumed());
}

void ConnectionTransport::write(const uint8_t* buffer, uint32_t length) {
  core_.Write(buffer, length);
}

void ConnectionTransport::flush() { core_.Flush(); }

CallTransport::CallTransport(
    ResponderCore& core, std::shared_ptr<apache::thrift::TConfiguration> config,
    std::shared_ptr<ConnectionState> state)
    : TVirtualTransport(std::move(config)),
      core_(core),
      state_(std::move(state)) {
  // See ConsumedSizeNote and KnownSizeNote in server_transports.h.
  resetConsumedMessageSize();
  resetConsumedMessageSize(
      KnownMessageSize(core_.call_size(), getMaxMessageSize()));
}

uint32_t CallTransport::read(uint8_t* buffer, uint32_t length) {
  const uint32_t n = core_.reader().Read(buffer, length);
  countConsumedMessageBytes(n);
  return n;
}

const uint8_t* CallTransport::borrow(uint8_t* /*buffer*/, uint32_t* length) {
  return core_.reader().Borrow(length);
}

void CallTransport::consume(uint32_t length) {
  if (!core_.reader().Consume(length)) {
    throw TTransportException(TTransportException::BAD_ARGS,
                              "rpcrdma: consume() past the message's end");
  }
  countConsumedMessageBytes(length);
}

void CallTransport::write(const uint8_t* buffer, uint32_t length) {
  core_.Write(buffer, length);
}

void CallTransport::flush() { core_.Flush(); }

}  // namespace rpcrdma::thrift::internal
