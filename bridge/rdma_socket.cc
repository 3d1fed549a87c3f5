#include "rpcrdma/thrift/rdma_socket.h"

#include <thrift/TOutput.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TTransportException.h>

#include <atomic>
#include <mutex>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bridge/client_core.h"
#include "bridge/config_defaults.h"
#include "bridge/listener.h"
#include "bridge/server_transports.h"
#include "rpcrdma/channel.h"

namespace rpcrdma::thrift {
namespace internal {

using apache::thrift::transport::TTransportException;

// Without the peer's private data, RFC 8797 §5.1's 1024 octets.
constexpr uint32_t kDefaultInline = 1024;

class SocketState final : public CallPort {
 public:
  SocketState(std::string uri, const config::TransportConfig& transport,
              TRdmaSocketOptions options,
              std::shared_ptr<apache::thrift::TConfiguration> config)
      : uri_(std::move(uri)),
        transport_(ClientTransportConfig(transport)),
        options_(std::move(options)),
        config_(std::move(config)),
        core_(*this, ClientLimits(),
              [this](const absl::Status& status) { Broken(status); }),
        next_xid_(std::random_device{}()) {
    if (options_.callback_processor != nullptr &&
        options_.callback_protocol == nullptr) {
      options_.callback_protocol =
          std::make_shared<apache::thrift::protocol::TBinaryProtocolFactory>();
    }
  }
  ~SocketState() override { Close(); }

  void Open();
  void Close();
  bool IsOpen() const { return channel_ != nullptr && !broken_.load(); }
  // Throws NOT_OPEN unless calls can be made.
  void CheckOpen() const;

  Ticket Start(CallRequest request) override {
    return channel_->StartCall(std::move(request)).value();
  }
  absl::StatusOr<Reply> Await(Ticket ticket) override {
    return channel_->Await(Channel::CallId(ticket));
  }
  void Send(CallRequest request, Callback done) override {
    channel_->Call(std::move(request), std::move(done));
  }
  uint32_t NextXid() override { return next_xid_++; }

  ClientCore& core() { return core_; }
  const std::string& uri() const { return uri_; }
  Channel* channel() const { return channel_.get(); }
  std::shared_ptr<apache::thrift::TConfiguration> config() const {
    return config_;
  }

 private:
  void Broken(const absl::Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!broken_.exchange(true)) broken_why_ = status.ToString();
  }
  // A backward call (RFC 8167) for the callback service.
  void ServeCallback(QueuedCall call);

  const std::string uri_;
  const config::TransportConfig transport_;
  TRdmaSocketOptions options_;
  const std::shared_ptr<apache::thrift::TConfiguration> config_;
  ClientCore core_;
  std::atomic<uint32_t> next_xid_;
  mutable std::mutex mu_;
  std::atomic<bool> broken_{false};
  std::string broken_why_;
  std::shared_ptr<ReplyStash> stash_;
  ResponderLimits callback_limits_;
  std::unique_ptr<WorkerPool> callbacks_;  // before the Channel: outlives it
  std::unique_ptr<Channel> channel_;
};

void SocketState::Open() {
  if (channel_ != nullptr && !broken_.load()) return;  // as TSocket
  Close();
  ChannelOptions channel_options;
  channel_options.runtime = options_.runtime;
  if (options_.callback_processor != nullptr) {
    stash_ = std::make_shared<ReplyStash>();
    callback_limits_ = MakeResponderLimits(0, *config_);
    callbacks_ = std::make_unique<WorkerPool>(
        std::max<uint32_t>(1, options_.callback_threads), "thrift-callback");
    std::shared_ptr<ReplyStash> stash = stash_;
    channel_options.backward_handler = [this, stash](IncomingCall call,
                                                     Responder responder) {
      Dispatch(std::move(call), std::move(responder), *stash,
               [this](QueuedCall queued) { ServeCallback(std::move(queued)); });
    };
  }
  absl::StatusOr<std::unique_ptr<Channel>> channel =
      Channel::Create(uri_, transport_, std::move(channel_options));
  if (!channel.ok()) {
    callbacks_.reset();
    throw TTransportException(
        TTransportException::NOT_OPEN,
        absl::StrCat("rpcrdma: could not connect to ", uri_, ": ",
                     channel.status().ToString()));
  }
  channel_ = *std::move(channel);
  broken_ = false;
  const ConnectionInfo info = channel_->connection_info();
  const uint32_t reply_inline =
      std::min(info.receive_threshold,
               info.peer_private_data ? info.peer_send_size : kDefaultInline);
  core_.set_limits(MakeClientLimits(
      options_.bulk_threshold, info.send_threshold, reply_inline,
      HeaderSegments(transport_), info.max_segment_size, options_.borrow_writes,
      *config_));
}

void SocketState::Close() {
  core_.Clear();
  // Backward calls in progress finish (their replies are dropped) before
  // the Channel goes.
  if (stash_ != nullptr) stash_->Close();
  channel_.reset();
  callbacks_.reset();
  stash_.reset();
}

void SocketState::CheckOpen() const {
  if (channel_ == nullptr) {
    throw TTransportException(TTransportException::NOT_OPEN,
                              "rpcrdma: socket not open");
  }
  if (broken_.load()) {
    std::lock_guard<std::mutex> lock(mu_);
    throw TTransportException(
        TTransportException::NOT_OPEN,
        absl::StrCat("rpcrdma: connection to ", uri_, " lost (", broken_why_,
                     "); open() connects again"));
  }
}

void SocketState::ServeCallback(QueuedCall call) {
  auto queued = std::make_shared<QueuedCall>(std::move(call));
  std::shared_ptr<ReplyStash> stash = stash_;
  callbacks_->Submit([this, queued, stash] {
    ResponderCore core(stash, callback_limits_);
    if (!core.Begin(std::move(queued->call), std::move(queued->responder),
                    queued->args_offset, queued->oneway)) {
      return;
    }
    auto transport = std::make_shared<CallTransport>(core, config_);
    auto protocol = options_.callback_protocol->getProtocol(transport);
    // Any exception ends the backward call, not the client's process: a
    // hostile server's message can make the generated code throw
    // std::bad_alloc (see TRdmaServer's PoolServer::Process).
    try {
      options_.callback_processor->process(protocol, protocol, nullptr);
    } catch (const std::exception& e) {
      apache::thrift::GlobalOutput(
          absl::StrCat("rpcrdma thrift: callback processing: ", e.what())
              .c_str());
    } catch (...) {
      apache::thrift::GlobalOutput(
          "rpcrdma thrift: callback processing: an exception that is not a "
          "std::exception");
    }
    core.Finish();
  });
}

}  // namespace internal

using apache::thrift::transport::TTransportException;

TRdmaSocket::TRdmaSocket(std::string uri,
                         std::shared_ptr<apache::thrift::TConfiguration> config)
    : TRdmaSocket(std::move(uri), config::TransportConfig(), {},
                  std::move(config)) {}

TRdmaSocket::TRdmaSocket(std::string uri,
                         const config::TransportConfig& transport,
                         TRdmaSocketOptions options,
                         std::shared_ptr<apache::thrift::TConfiguration> config)
    : TVirtualTransport(internal::OrDefault(std::move(config))),
      state_(std::make_unique<internal::SocketState>(
          std::move(uri), transport, std::move(options), getConfiguration())) {}

TRdmaSocket::~TRdmaSocket() = default;

void TRdmaSocket::open() { state_->Open(); }

bool TRdmaSocket::isOpen() const { return state_->IsOpen(); }

bool TRdmaSocket::peek() {
  return state_->IsOpen() && state_->core().outstanding() > 0;
}

void TRdmaSocket::close() { state_->Close(); }

uint32_t TRdmaSocket::read(uint8_t* buffer, uint32_t length) {
  if (state_->channel() == nullptr) state_->CheckOpen();
  const uint32_t n = state_->core().Read(buffer, length);
  if (state_->core().messages() != messages_read_) {
    messages_read_ = state_->core().messages();
    // See ConsumedSizeNote in server_transports.h.
    resetConsumedMessageSize();
  }
  countConsumedMessageBytes(n);
  return n;
}

void TRdmaSocket::write(const uint8_t* buffer, uint32_t length) {
  state_->CheckOpen();
  state_->core().Write(buffer, length);
}

void TRdmaSocket::flush() {
  state_->CheckOpen();
  resetConsumedMessageSize();
  state_->core().Flush();
}

const uint8_t* TRdmaSocket::borrow(uint8_t* /*buffer*/, uint32_t* length) {
  return state_->core().Borrow(length);
}

void TRdmaSocket::consume(uint32_t length) {
  state_->core().Consume(length);
  countConsumedMessageBytes(length);
}

uint32_t TRdmaSocket::readEnd() { return state_->core().ReadEnd(); }

uint32_t TRdmaSocket::writeEnd() { return 0; }

const std::string TRdmaSocket::getOrigin() const { return state_->uri(); }

void TRdmaSocket::setRecvTimeout(int milliseconds) {
  state_->core().set_timeout(
      std::chrono::milliseconds(milliseconds > 0 ? milliseconds : 0));
}

const std::string& TRdmaSocket::uri() const { return state_->uri(); }

Counters TRdmaSocket::counters() const {
  Channel* channel = state_->channel();
  return channel != nullptr ? channel->counters() : Counters();
}

ConnectionInfo TRdmaSocket::connectionInfo() const {
  Channel* channel = state_->channel();
  return channel != nullptr ? channel->connection_info() : ConnectionInfo();
}

}  // namespace rpcrdma::thrift
