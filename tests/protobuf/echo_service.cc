#include "tests/protobuf/echo_service.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "tests/testing/process_tag.h"

namespace rpcrdma::test {

using protobuf::ChannelOptions;
using protobuf::Completion;
using protobuf::ServerContext;
using protobuf::ServerWriter;
using protobuf::ServiceSetOptions;
using protobuf::Status;

namespace {

// Behaviour the request asks for: a sleep, then an error instead of the
// echo; the client's metadata comes back as trailing metadata.
Status Behave(ServerContext* context, const rpcrdma_test::EchoRequest& request,
              rpcrdma_test::EchoRequest* response) {
  const rpcrdma_test::Behaviour& b = request.behaviour();
  if (b.sleep_ms() != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(b.sleep_ms()));
  }
  for (const auto& [key, value] : context->client_metadata()) {
    if (key == "want-peer") {
      context->AddTrailingMetadata("peer", context->peer());
      continue;
    }
    context->AddTrailingMetadata("echo-" + key, value);
  }
  if (context->deadline().has_value()) {
    context->AddTrailingMetadata("had-deadline", "yes");
  }
  if (b.fail_code() != 0) {
    return Status(static_cast<absl::StatusCode>(b.fail_code()),
                  b.fail_message());
  }
  *response = request;
  return absl::OkStatus();
}

}  // namespace

EchoService::~EchoService() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void EchoService::Echo(ServerContext* context,
                       const rpcrdma_test::EchoRequest* request,
                       rpcrdma_test::EchoRequest* response, Completion done) {
  done.Finish(Behave(context, *request, response));
}

void EchoService::EchoLater(ServerContext* context,
                            const rpcrdma_test::EchoRequest* request,
                            rpcrdma_test::EchoRequest* response,
                            Completion done) {
  absl::MutexLock lock(&mu_);
  threads_.emplace_back(
      [this, context, request, response, done = std::move(done)]() mutable {
        {
          absl::MutexLock answer_lock(&mu_);
          answer_threads_.push_back(std::this_thread::get_id());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        done.Finish(Behave(context, *request, response));
      });
}

void EchoService::Drop(ServerContext* /*context*/,
                       const rpcrdma_test::EchoRequest* /*request*/,
                       rpcrdma_test::EchoRequest* /*response*/,
                       Completion done) {
  Completion dropped = std::move(done);
}

std::vector<std::thread::id> EchoService::answer_threads() {
  absl::MutexLock lock(&mu_);
  return answer_threads_;
}

void AdderService::Add(ServerContext* /*context*/,
                       const rpcrdma_test::AddRequest* request,
                       rpcrdma_test::AddReply* response, Completion done) {
  response->set_sum(request->a() + request->b());
  done.Finish(absl::OkStatus());
}

Status TickerService::Watch(ServerContext* context,
                            const rpcrdma_test::WatchRequest* request,
                            ServerWriter<rpcrdma_test::Tick>* writer) {
  bool ended_by_client = false;
  for (uint32_t i = 0; i < request->count() && !ended_by_client; ++i) {
    rpcrdma_test::Tick tick;
    tick.set_seq(i);
    if (request->payload_size() != 0) {
      tick.set_payload(TickPayload(i, request->payload_size()));
    }
    if (writer->Write(std::move(tick))) {
      writes_.fetch_add(1);
    } else {
      ended_by_client = true;
    }
  }
  // Held until the stream is cancelled; the ServiceSet's end cancels it
  // too, so a test that fails does not hang here.
  while (request->hold() && !ended_by_client && !context->IsCancelled()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  context->AddTrailingMetadata("ticks", absl::StrCat(request->count()));
  for (const auto& [key, value] : context->client_metadata()) {
    context->AddTrailingMetadata("echo-" + key, value);
  }
  {
    absl::MutexLock lock(&mu_);
    ++ended_;
    if (context->IsCancelled()) ++cancelled_;
  }
  if (request->fail_code() != 0) {
    return Status(static_cast<absl::StatusCode>(request->fail_code()),
                  request->fail_message());
  }
  return absl::OkStatus();
}

bool TickerService::WaitForHandlersEnded(int n, std::chrono::seconds limit) {
  absl::MutexLock lock(&mu_);
  auto ended = [this, n]()
                   ABSL_SHARED_LOCKS_REQUIRED(mu_) { return ended_ >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&ended), absl::FromChrono(limit));
}

int TickerService::handlers_cancelled() {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

std::string TickPayload(uint64_t seq, size_t size) {
  std::string payload(size, '\0');
  for (size_t i = 0; i < size; ++i) {
    payload[i] = static_cast<char>((seq * 131 + i * 7 + (i >> 12)) & 0xff);
  }
  return payload;
}

std::unique_ptr<TestServer> StartTestServer(const std::string& uri,
                                            ServiceSetOptions service_options) {
  auto s = std::make_unique<TestServer>(service_options);
  if (!s->services.Register(&s->echo).ok() ||
      !s->services.Register(&s->adder).ok() ||
      !s->services.Register(&s->ticker).ok() ||
      !s->services.Register(&s->collector).ok()) {
    return nullptr;
  }
  config::TransportConfig config;
  config.mutable_execution()->set_handler_threads(4);
  ServerOptions options;
  options.on_connection = s->services.ConnectionObserver();
  absl::StatusOr<std::unique_ptr<::rpcrdma::Server>> server =
      ::rpcrdma::Server::Create(uri, config, s->services.Handler(),
                                std::move(options));
  if (!server.ok()) return nullptr;
  s->server = *std::move(server);
  return s;
}

std::string TestUri(const std::string& scheme) {
  static std::atomic<int> next{0};
  if (scheme == "tcp") return "soft+tcp://127.0.0.1:0";
  if (scheme == "rdma") {
    // The VM's RDMA device (its harness sets RPCRDMA_TEST_ADDR): rdma-cm
    // cannot route to 127.0.0.1 over Soft-RoCE.
    const char* host = std::getenv("RPCRDMA_TEST_ADDR");
    return absl::StrCat(
        "rdma://", host != nullptr && *host != '\0' ? host : "192.0.2.1", ":0");
  }
  return absl::StrCat("soft+unix://@rpcrdma-protobuf-test-", ProcessTag(), "-",
                      next++);
}

ChannelOptions TestChannelOptions() {
  ChannelOptions options;
  options.max_reply_size = 20 << 20;
  return options;
}

}  // namespace rpcrdma::test
