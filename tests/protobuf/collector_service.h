// The test server's client-streaming and bidirectional service. Its
// handlers read what the client's metadata asks for:
//   "fail-after" N   return ABORTED after reading N chunks (early: the
//                    client's later SEND calls are answered with it)
//   "gate"           after the first chunk, read no more until
//                    OpenGate() (or the stream is cancelled)
//   "after-close" N  Chat: write N more chunks after the half-close
#ifndef RPCRDMA_TESTS_PROTOBUF_COLLECTOR_SERVICE_H_
#define RPCRDMA_TESTS_PROTOBUF_COLLECTOR_SERVICE_H_

#include <atomic>
#include <chrono>

#include "absl/synchronization/mutex.h"
#include "rpcrdma/protobuf/service.h"
#include "rpcrdma_test/stream.rpcrdma.pb.h"

namespace rpcrdma::test {

class CollectorService : public rpcrdma_test::rdma::Collector::Service {
 public:
  protobuf::Status Collect(protobuf::ServerContext* context,
                           protobuf::ServerReader<rpcrdma_test::Chunk>* reader,
                           rpcrdma_test::Summary* response) override;
  protobuf::Status Chat(
      protobuf::ServerContext* context,
      protobuf::ServerReaderWriter<rpcrdma_test::Chunk, rpcrdma_test::Chunk>*
          stream) override;

  // Lets the handlers held by "gate" read on.
  void OpenGate();
  // Chunks read, over every stream.
  int reads() const { return reads_.load(); }
  // As TickerService's: waits (at most `limit`) until `n` handlers have
  // returned; how many saw ServerContext::IsCancelled() true then.
  bool WaitForHandlersEnded(int n, std::chrono::seconds limit);
  int handlers_cancelled();

 private:
  // Reads the next chunk, waiting at the gate first when the stream asks.
  bool ReadChunk(protobuf::ServerContext* context,
                 protobuf::ServerStreamReader& reader,
                 rpcrdma_test::Chunk& chunk, int already_read);
  void Ended(protobuf::ServerContext* context);

  std::atomic<int> reads_{0};
  absl::Mutex mu_;
  bool gate_open_ ABSL_GUARDED_BY(mu_) = false;
  int ended_ ABSL_GUARDED_BY(mu_) = 0;
  int cancelled_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_PROTOBUF_COLLECTOR_SERVICE_H_
