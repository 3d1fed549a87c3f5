// Version two's property operations, benchmarked (property_bench.cc):
// registered by api_bench.cc next to Version/rpcrdma_v1 and _v2.
#ifndef RPCRDMA_BENCH_API_PROPERTY_BENCH_H_
#define RPCRDMA_BENCH_API_PROPERTY_BENCH_H_

#include <benchmark/benchmark.h>

namespace rpcrdma::bench {

// RDMA2_REQPROP and its RDMA2_RESPROP, the Server's receive buffer size
// alternating between two sizes it grants (draft-04 §5.3.2, §5.3.3).
void PropertyChangeRpcrdma(benchmark::State& state);
// RDMA2_UPDPROP and the empty RDMA2_REQPROP whose answer shows the Server
// took it (§5.3.4).
void PropertyUpdateRpcrdma(benchmark::State& state);

}  // namespace rpcrdma::bench

#endif  // RPCRDMA_BENCH_API_PROPERTY_BENCH_H_
