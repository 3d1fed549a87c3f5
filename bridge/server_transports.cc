#include "bridge/server_transports.h"

#include <thrift/Thrift.h>
#include <thrift/transport/TTransportException.h>

#include <exception>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rpcrdma::thrift::internal {

using apache::thrift::TException;
using apache::thrift::transport::TTransportException;

namespace {

// See GuardNote in server_transports.h.
TTransportException AsTransportError(const char* what) {
  return TTransportException(
      TTransportException::INTERNAL_ERROR,
      absl::StrCat("rpcrdma: the call failed in the transport: ", what));
}

template <typename Body>
auto RunGuarded(Body body, const std::function<void(const char*)>& failed)
    -> decltype(body()) {
  try {
    return body();
  } catch (const TException&) {
    throw;
  } catch (const std::exception& e) {
    if (failed) failed(e.what());
    throw AsTransportError(e.what());
  } catch (...) {
    if (failed) failed("an exception of unknown type");
    throw AsTransportError("an exception of unknown type");
  }
}

// See ClaimNote in server_transports.h: `borrowed` is the reader's answer
// to a borrow of `length` octets.
const uint8_t* RefuseClaimsBeyondTheMessage(const uint8_t* borrowed,
                                            uint32_t length,
                                            const MessageReader& reader) {
  if (borrowed != nullptr || length <= kSpeculativeBorrow) return borrowed;
  const uint64_t left = reader.size() - reader.consumed();
  if (length <= left) return nullptr;  // spread over pieces: read it
  throw TTransportException(
      TTransportException::END_OF_FILE,
      absl::StrCat("rpcrdma: ", length,
                   " octets claimed where the message has ", left, " left"));
}

}  // namespace

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

template <typename Body>
auto ConnectionTransport::Guarded(Body body) -> decltype(body()) {
  return RunGuarded(std::move(body), [this](const char* what) {
    if (std::shared_ptr<Listener> listener = state_->listener.lock()) {
      (void)listener->Disconnect(state_->id,
                                 absl::StrCat("the transport failed: ", what));
    }
  });
}

bool ConnectionTransport::isOpen() const {
  if (closed_) return false;
  std::lock_guard<std::mutex> lock(state_->mu);
  return !state_->closed || !state_->calls.empty();
}

bool ConnectionTransport::peek() {
  return Guarded([&] {
    if (serving_ && !core_.reader().exhausted()) return true;
    return isOpen();
  });
}

void ConnectionTransport::close() {
  Guarded([&] { CloseUnguarded(); });
}

void ConnectionTransport::CloseUnguarded() {
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
  return Guarded([&] {
    if (closed_) {
      throw TTransportException(TTransportException::NOT_OPEN,
                                "rpcrdma: transport closed");
    }
    if (length == 0) return uint32_t{0};
    if (!serving_ || core_.reader().exhausted()) NextCall();
    const uint32_t n = core_.reader().Read(buffer, length);
    countConsumedMessageBytes(n);
    return n;
  });
}

const uint8_t* ConnectionTransport::borrow(uint8_t* /*buffer*/,
                                           uint32_t* length) {
  return Guarded([&]() -> const uint8_t* {
    if (!serving_) return nullptr;
    const uint32_t wanted = *length;
    return RefuseClaimsBeyondTheMessage(core_.reader().Borrow(length), wanted,
                                        core_.reader());
  });
}

void ConnectionTransport::consume(uint32_t length) {
  Guarded([&] {
    if (!serving_ || !core_.reader().Consume(length)) {
      throw TTransportException(TTransportException::BAD_ARGS,
                                "rpcrdma: consume() past the message's end");
    }
    countConsumedMessageBytes(length);
  });
}

uint32_t ConnectionTransport::readEnd() {
  return static_cast<uint32_t>(core_.reader().consumed());
}

void ConnectionTransport::write(const uint8_t* buffer, uint32_t length) {
  Guarded([&] { core_.Write(buffer, length); });
}

void ConnectionTransport::flush() {
  Guarded([&] { core_.Flush(); });
}

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

// A call's transport serves TRdmaServer, which ends the connection on any
// processing failure itself, and a client's callback service: the guard
// only keeps what escapes a TException (see GuardNote).
bool CallTransport::peek() {
  return RunGuarded([&] { return !core_.reader().exhausted(); }, nullptr);
}

uint32_t CallTransport::read(uint8_t* buffer, uint32_t length) {
  return RunGuarded(
      [&] {
        const uint32_t n = core_.reader().Read(buffer, length);
        countConsumedMessageBytes(n);
        return n;
      },
      nullptr);
}

const uint8_t* CallTransport::borrow(uint8_t* /*buffer*/, uint32_t* length) {
  return RunGuarded(
      [&] {
        const uint32_t wanted = *length;
        return RefuseClaimsBeyondTheMessage(core_.reader().Borrow(length),
                                            wanted, core_.reader());
      },
      nullptr);
}

void CallTransport::consume(uint32_t length) {
  RunGuarded(
      [&] {
        if (!core_.reader().Consume(length)) {
          throw TTransportException(
              TTransportException::BAD_ARGS,
              "rpcrdma: consume() past the message's end");
        }
        countConsumedMessageBytes(length);
      },
      nullptr);
}

void CallTransport::write(const uint8_t* buffer, uint32_t length) {
  RunGuarded([&] { core_.Write(buffer, length); }, nullptr);
}

void CallTransport::flush() {
  RunGuarded([&] { core_.Flush(); }, nullptr);
}

}  // namespace rpcrdma::thrift::internal
