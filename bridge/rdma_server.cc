#include "rpcrdma/thrift/rdma_server.h"

#include <thrift/TOutput.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TTransportException.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bridge/client_core.h"
#include "bridge/config_defaults.h"
#include "bridge/server_socket_state.h"
#include "bridge/server_transports.h"

namespace rpcrdma::thrift {
namespace internal {

using apache::thrift::TConnectionInfo;
using apache::thrift::TProcessor;
using apache::thrift::transport::TTransportException;

// TRdmaServer's work: processors per connection, calls on a pool.
class PoolServer {
 public:
  struct Factories {
    std::shared_ptr<apache::thrift::TProcessorFactory> processors;
    std::shared_ptr<apache::thrift::transport::TTransportFactory> input;
    std::shared_ptr<apache::thrift::transport::TTransportFactory> output;
    std::shared_ptr<apache::thrift::protocol::TProtocolFactory> input_protocol;
    std::shared_ptr<apache::thrift::protocol::TProtocolFactory> output_protocol;
    std::shared_ptr<apache::thrift::server::TServerEventHandler> events;
  };

  PoolServer(Factories factories, std::shared_ptr<ServerSocketState> socket,
             uint32_t workers)
      : factories_(std::move(factories)),
        socket_(std::move(socket)),
        pool_(std::make_unique<WorkerPool>(workers, "thrift-worker")) {}

  void Serve() {
    Listener::Hooks hooks;
    hooks.accepted = [this](const std::shared_ptr<ConnectionState>& state) {
      Accepted(state);
    };
    hooks.call = [this](const std::shared_ptr<ConnectionState>& state,
                        QueuedCall call) { Call(state, std::move(call)); };
    hooks.closed = [this](const std::shared_ptr<ConnectionState>& state) {
      std::lock_guard<std::mutex> lock(mu_);
      processors_.erase(state->id);
    };
    socket_->Listen(std::move(hooks));
    if (factories_.events) factories_.events->preServe();
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_; });
    }
    // Calls already taken are processed and answered; new ones are not.
    pool_.reset();
    socket_->Close();
  }

  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }

 private:
  void Accepted(const std::shared_ptr<ConnectionState>& state) {
    std::shared_ptr<TProcessor> processor;
    // The application's processor factory runs on the listener's thread:
    // its failure ends that connection (its calls find no processor and
    // are dropped), not the process.
    try {
      TConnectionInfo info;
      info.transport = std::make_shared<ConnectionTransport>(
          state, socket_->limits, socket_->config);
      processor = factories_.processors->getProcessor(info);
    } catch (const std::exception& e) {
      Failed(state, e.what());
      return;
    } catch (...) {
      Failed(state, "an exception that is not a std::exception");
      return;
    }
    if (processor == nullptr) {
      Failed(state, "the processor factory gave no processor");
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    processors_[state->id] = std::move(processor);
  }

  void Call(const std::shared_ptr<ConnectionState>& state, QueuedCall call) {
    auto queued = std::make_shared<QueuedCall>(std::move(call));
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;  // dropped; the connection closes soon
    auto it = processors_.find(state->id);
    if (it == processors_.end()) return;
    std::shared_ptr<TProcessor> processor = it->second;
    pool_->Submit([this, state, processor, queued] {
      Process(state, *processor, *queued);
    });
  }

  void Process(const std::shared_ptr<ConnectionState>& state,
               TProcessor& processor, QueuedCall& call) {
    ResponderCore core(state->stash, socket_->limits);
    // As TConnectedClient: a call that cannot be processed ends its
    // connection. Any exception, not only Thrift's, and from anything the
    // call runs (the transport and protocol factories and the event
    // handler are the application's too): the generated code throws
    // std::bad_alloc or std::length_error for a container header claiming
    // more elements than memory holds (0.17's size check multiplies in int
    // and lets 2^31-1 elements through), and an exception leaving a
    // worker would end the process.
    try {
      if (!core.Begin(std::move(call.call), std::move(call.responder),
                      call.args_offset, call.oneway)) {
        return;
      }
      CurrentConnectionState() = state;
      auto transport =
          std::make_shared<CallTransport>(core, socket_->config, state);
      auto input = factories_.input->getTransport(transport);
      auto output = factories_.output->getTransport(transport);
      auto in = factories_.input_protocol->getProtocol(input);
      auto out = factories_.output_protocol
                     ? factories_.output_protocol->getProtocol(output)
                     : in;
      if (factories_.events)
        factories_.events->processContext(nullptr, transport);
      processor.process(in, out, nullptr);
    } catch (const std::exception& e) {
      Failed(state, e.what());
    } catch (...) {
      Failed(state, "an exception that is not a std::exception");
    }
    core.Finish();
    call.acknowledged.reset();
    CurrentConnectionState().reset();
  }

  static void Failed(const std::shared_ptr<ConnectionState>& state,
                     absl::string_view what) {
    apache::thrift::GlobalOutput(
        absl::StrCat("TRdmaServer processing exception: ", what).c_str());
    if (auto listener = state->listener.lock()) {
      (void)listener->Disconnect(state->id,
                                 absl::StrCat("processing exception: ", what));
    }
  }

  const Factories factories_;
  const std::shared_ptr<ServerSocketState> socket_;
  std::unique_ptr<WorkerPool> pool_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<ConnectionId, std::shared_ptr<TProcessor>> processors_;
  bool stopping_ = false;
};

// ---- Callbacks (RFC 8167)
// ----------------------------------------------------

// Backward calls to the client of one connection.
class ServerPort final : public CallPort {
 public:
  explicit ServerPort(std::shared_ptr<ConnectionState> state)
      : state_(std::move(state)) {}

  Ticket Start(CallRequest request) override {
    auto slot = std::make_shared<Slot>();
    Ticket ticket;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ticket = next_ticket_++;
      slots_[ticket] = slot;
    }
    Send(std::move(request), [this, slot](absl::StatusOr<Reply> reply) {
      std::lock_guard<std::mutex> lock(mu_);
      slot->reply = std::move(reply);
      cv_.notify_all();
    });
    return ticket;
  }

  absl::StatusOr<Reply> Await(Ticket ticket) override {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = slots_.find(ticket);
    if (it == slots_.end()) return absl::NotFoundError("no such call");
    std::shared_ptr<Slot> slot = it->second;
    slots_.erase(it);
    cv_.wait(lock, [&] { return slot->reply.has_value(); });
    return *std::move(slot->reply);
  }

  void Send(CallRequest request, Callback done) override {
    std::shared_ptr<Listener> listener = state_->listener.lock();
    std::shared_ptr<Server> server =
        listener != nullptr ? listener->server() : nullptr;
    if (server == nullptr) {
      done(absl::UnavailableError("the server stopped"));
      return;
    }
    server->Call(state_->id, std::move(request), std::move(done));
  }

  uint32_t NextXid() override { return state_->next_xid++; }

 private:
  struct Slot {
    std::optional<absl::StatusOr<Reply>> reply;
  };
  const std::shared_ptr<ConnectionState> state_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<Ticket, std::shared_ptr<Slot>> slots_;
  Ticket next_ticket_ = 1;
};

// Backward calls have no private data of their own to size them: RFC 8797
// §5.1's 1024 octets.
constexpr uint32_t kCallbackInline = 1024;
// Segments of 1 MiB: no longer than any device's largest RDMA operation.
constexpr uint32_t kCallbackSegment = 1u << 20;

uint32_t CallbackHeaderSegments(const std::shared_ptr<ConnectionState>& state) {
  std::shared_ptr<Listener> listener = state->listener.lock();
  return listener != nullptr ? listener->header_segments() : 8;
}

class CallbackTransport
    : public apache::thrift::transport::TVirtualTransport<CallbackTransport> {
 public:
  CallbackTransport(std::shared_ptr<ConnectionState> state,
                    std::shared_ptr<apache::thrift::TConfiguration> config)
      : TVirtualTransport(std::move(config)),
        state_(state),
        port_(std::move(state)),
        core_(port_,
              MakeClientLimits(0, kCallbackInline, kCallbackInline,
                               CallbackHeaderSegments(state_), kCallbackSegment,
                               true, *getConfiguration()),
              nullptr) {}

  bool isOpen() const override {
    std::lock_guard<std::mutex> lock(state_->mu);
    return !state_->closed;
  }
  bool peek() override { return isOpen() && core_.outstanding() > 0; }
  void open() override {}
  void close() override { core_.Clear(); }
  uint32_t read(uint8_t* buffer, uint32_t length) {
    const uint32_t n = core_.Read(buffer, length);
    if (core_.messages() != messages_) {
      messages_ = core_.messages();
      // See ConsumedSizeNote in server_transports.h.
      resetConsumedMessageSize();
    }
    countConsumedMessageBytes(n);
    return n;
  }
  void write(const uint8_t* buffer, uint32_t length) {
    CheckOpen();
    core_.Write(buffer, length);
  }
  void flush() override {
    CheckOpen();
    core_.Flush();
  }
  const uint8_t* borrow(uint8_t* /*buffer*/, uint32_t* length) {
    return core_.Borrow(length);
  }
  void consume(uint32_t length) {
    core_.Consume(length);
    countConsumedMessageBytes(length);
  }
  uint32_t readEnd() override { return core_.ReadEnd(); }
  const std::string getOrigin() const override { return state_->peer; }

 private:
  void CheckOpen() const {
    if (!isOpen()) {
      throw TTransportException(
          TTransportException::NOT_OPEN,
          absl::StrCat("rpcrdma: connection ", state_->id.value(), " to ",
                       state_->peer, " is closed"));
    }
  }

  const std::shared_ptr<ConnectionState> state_;
  ServerPort port_;
  ClientCore core_;
  uint64_t messages_ = 0;
};

}  // namespace internal

// ---- TRdmaServer
// ---------------------------------------------------------------

TRdmaServer::TRdmaServer(
    const std::shared_ptr<apache::thrift::TProcessorFactory>& processors,
    const std::shared_ptr<TRdmaServerSocket>& socket,
    const std::shared_ptr<apache::thrift::protocol::TProtocolFactory>&
        protocols,
    uint32_t workers)
    : TServer(processors, socket,
              std::make_shared<apache::thrift::transport::TTransportFactory>(),
              protocols),
      socket_(socket),
      workers_(workers != 0
                   ? workers
                   : std::max(1u, std::thread::hardware_concurrency())) {}

TRdmaServer::TRdmaServer(
    const std::shared_ptr<apache::thrift::TProcessor>& processor,
    const std::shared_ptr<TRdmaServerSocket>& socket,
    const std::shared_ptr<apache::thrift::protocol::TProtocolFactory>&
        protocols,
    uint32_t workers)
    : TServer(processor, socket,
              std::make_shared<apache::thrift::transport::TTransportFactory>(),
              protocols),
      socket_(socket),
      workers_(workers != 0
                   ? workers
                   : std::max(1u, std::thread::hardware_concurrency())) {}

TRdmaServer::~TRdmaServer() { stop(); }

void TRdmaServer::serve() {
  internal::PoolServer::Factories f{
      processorFactory_,     inputTransportFactory_, outputTransportFactory_,
      inputProtocolFactory_, outputProtocolFactory_, eventHandler_};
  auto pool = std::make_shared<internal::PoolServer>(std::move(f),
                                                     socket_->state_, workers_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    pool_ = pool;
  }
  pool->Serve();
  std::lock_guard<std::mutex> lock(mu_);
  pool_.reset();
}

void TRdmaServer::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  if (pool_ != nullptr) pool_->Stop();
}

// ---- TRdmaConnection
// -----------------------------------------------------------

TRdmaConnection::TRdmaConnection(
    std::shared_ptr<internal::ConnectionState> state)
    : state_(std::move(state)) {}

std::shared_ptr<TRdmaConnection> TRdmaConnection::current() {
  const std::shared_ptr<internal::ConnectionState>& state =
      internal::CurrentConnectionState();
  if (state == nullptr) return nullptr;
  return std::make_shared<TRdmaConnection>(state);
}

std::shared_ptr<TRdmaConnection> TRdmaConnection::of(
    const std::shared_ptr<apache::thrift::transport::TTransport>& transport) {
  std::shared_ptr<apache::thrift::transport::TTransport> t = transport;
  for (int depth = 0; t != nullptr && depth < 4; ++depth) {
    if (auto c = std::dynamic_pointer_cast<internal::ConnectionTransport>(t)) {
      return std::make_shared<TRdmaConnection>(c->state());
    }
    if (auto c = std::dynamic_pointer_cast<internal::CallTransport>(t)) {
      if (c->state() == nullptr) return nullptr;
      return std::make_shared<TRdmaConnection>(c->state());
    }
    if (auto b = std::dynamic_pointer_cast<
            apache::thrift::transport::TBufferedTransport>(t)) {
      t = b->getUnderlyingTransport();
    } else if (auto f = std::dynamic_pointer_cast<
                   apache::thrift::transport::TFramedTransport>(t)) {
      t = f->getUnderlyingTransport();
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

ConnectionId TRdmaConnection::id() const { return state_->id; }

const std::string& TRdmaConnection::peer() const { return state_->peer; }

bool TRdmaConnection::isOpen() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return !state_->closed;
}

std::shared_ptr<apache::thrift::transport::TTransport>
TRdmaConnection::callbackTransport(
    std::shared_ptr<apache::thrift::TConfiguration> config) {
  return std::make_shared<internal::CallbackTransport>(
      state_, internal::OrDefault(std::move(config)));
}

}  // namespace rpcrdma::thrift
