#include "tests/protobuf/collector_service.h"

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "tests/protobuf/echo_service.h"

namespace rpcrdma::test {

using protobuf::ServerContext;
using protobuf::Status;

namespace {

// The metadata's number under `key`, or -1.
int64_t NumberOf(const ServerContext& context, const std::string& key) {
  auto it = context.client_metadata().find(key);
  int64_t n = -1;
  if (it == context.client_metadata().end() ||
      !absl::SimpleAtoi(it->second, &n)) {
    return -1;
  }
  return n;
}

// Adapts a typed reader to the untyped one ReadChunk takes.
template <typename Typed>
class TypedReader final : public protobuf::ServerStreamReader {
 public:
  explicit TypedReader(Typed* typed) : typed_(typed) {}
  bool Read(google::protobuf::Message& message) override {
    return typed_->Read(static_cast<rpcrdma_test::Chunk*>(&message));
  }

 private:
  Typed* typed_;
};

}  // namespace

bool CollectorService::ReadChunk(ServerContext* context,
                                 protobuf::ServerStreamReader& reader,
                                 rpcrdma_test::Chunk& chunk, int already_read) {
  if (already_read == 1 && context->client_metadata().contains("gate")) {
    absl::MutexLock lock(&mu_);
    while (!gate_open_ && !context->IsCancelled()) {
      mu_.AwaitWithTimeout(absl::Condition(&gate_open_),
                           absl::Milliseconds(10));
    }
  }
  if (!reader.Read(chunk)) return false;
  ++reads_;
  return true;
}

Status CollectorService::Collect(
    ServerContext* context, protobuf::ServerReader<rpcrdma_test::Chunk>* reader,
    rpcrdma_test::Summary* response) {
  TypedReader untyped(reader);
  const int64_t fail_after = NumberOf(*context, "fail-after");
  rpcrdma_test::Chunk chunk;
  bool intact = true;
  int read = 0;
  while (read != fail_after && ReadChunk(context, untyped, chunk, read)) {
    ++read;
    response->set_count(response->count() + 1);
    response->set_seq_sum(response->seq_sum() + chunk.seq());
    response->mutable_text()->append(chunk.text());
    response->set_payload_octets(response->payload_octets() +
                                 chunk.payload().size());
    intact = intact && chunk.payload() ==
                           TickPayload(chunk.seq(), chunk.payload().size());
  }
  response->set_payloads_intact(intact);
  context->AddTrailingMetadata("read", absl::StrCat(read));
  Ended(context);
  if (read == fail_after) {
    return absl::AbortedError(absl::StrCat("failed after ", read, " chunks"));
  }
  return absl::OkStatus();
}

Status CollectorService::Chat(
    ServerContext* context,
    protobuf::ServerReaderWriter<rpcrdma_test::Chunk, rpcrdma_test::Chunk>*
        stream) {
  TypedReader untyped(stream);
  const int64_t fail_after = NumberOf(*context, "fail-after");
  rpcrdma_test::Chunk chunk;
  int read = 0;
  uint64_t next_seq = 0;
  while (read != fail_after && ReadChunk(context, untyped, chunk, read)) {
    ++read;
    next_seq = chunk.seq() + 1;
    if (!stream->Write(chunk)) break;
  }
  if (read == fail_after) {
    Ended(context);
    return absl::AbortedError(absl::StrCat("failed after ", read, " chunks"));
  }
  // After the half-close the server goes on writing.
  for (int64_t i = 0; i < NumberOf(*context, "after-close"); ++i) {
    rpcrdma_test::Chunk more;
    more.set_seq(next_seq++);
    more.set_text("after");
    if (!stream->Write(std::move(more))) break;
  }
  Ended(context);
  return absl::OkStatus();
}

void CollectorService::OpenGate() {
  absl::MutexLock lock(&mu_);
  gate_open_ = true;
}

void CollectorService::Ended(ServerContext* context) {
  absl::MutexLock lock(&mu_);
  ++ended_;
  if (context->IsCancelled()) ++cancelled_;
}

bool CollectorService::WaitForHandlersEnded(int n, std::chrono::seconds limit) {
  absl::MutexLock lock(&mu_);
  auto ended = [this, n]()
                   ABSL_SHARED_LOCKS_REQUIRED(mu_) { return ended_ >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&ended), absl::FromChrono(limit));
}

int CollectorService::handlers_cancelled() {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

}  // namespace rpcrdma::test
