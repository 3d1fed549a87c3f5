// Codec cost per header: encode and decode of the shapes the engine sends
// most, with a plain memcpy of the same octets as the baseline measured in
// the same run.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "plugin/wire/private_data.h"
#include "plugin/wire/v1.h"
#include "plugin/wire/v2.h"

namespace rpcrdma::wire {
namespace {

V1Header InlineCall() {
  return V1Header{.xid = 0x1234, .credits = 128, .body = V1Msg{}};
}

V1Header ChunkedReply() {
  ChunkLists lists;
  lists.writes.push_back(WriteChunk{{0x100, 1 << 20, 0x7f0000001000}});
  lists.reply = WriteChunk{{0x200, 4096, 0x7f0000200000}};
  return V1Header{.xid = 0x1234, .credits = 128, .body = V1NoMsg{lists}};
}

V1Header LongCallWithReads() {
  ChunkLists lists;
  for (uint32_t i = 0; i < 8; ++i) {
    lists.reads.push_back(ReadSegment{0, {0x300 + i, 65536, 0x1000ull * i}});
  }
  return V1Header{.xid = 7, .credits = 32, .body = V1NoMsg{lists}};
}

void BM_MemcpyBaseline(benchmark::State& state) {
  std::vector<uint8_t> src = EncodeV1(ChunkedReply());
  std::vector<uint8_t> dst(src.size());
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_MemcpyBaseline);

template <V1Header (*Make)()>
void BM_V1Encode(benchmark::State& state) {
  V1Header header = Make();
  std::vector<uint8_t> buffer(1024);
  for (auto _ : state) {
    auto n = EncodeV1(header, absl::MakeSpan(buffer));
    benchmark::DoNotOptimize(n);
  }
}
BENCHMARK_TEMPLATE(BM_V1Encode, InlineCall);
BENCHMARK_TEMPLATE(BM_V1Encode, ChunkedReply);
BENCHMARK_TEMPLATE(BM_V1Encode, LongCallWithReads);

template <V1Header (*Make)()>
void BM_V1Decode(benchmark::State& state) {
  std::vector<uint8_t> bytes = EncodeV1(Make());
  for (auto _ : state) {
    auto decoded = DecodeV1(bytes);
    benchmark::DoNotOptimize(decoded);
  }
}
BENCHMARK_TEMPLATE(BM_V1Decode, InlineCall);
BENCHMARK_TEMPLATE(BM_V1Decode, ChunkedReply);
BENCHMARK_TEMPLATE(BM_V1Decode, LongCallWithReads);

void BM_V2DecodeConnProp(benchmark::State& state) {
  V2Header header{
      .xid = 1,
      .credits = 1,
      .body = V2ConnProp{{MakeRbsizProperty(8192),
                          MakeBrsProperty(BackwardRequestSupport::kGeneral)},
                         {}}};
  std::vector<uint8_t> bytes = EncodeV2(header);
  for (auto _ : state) {
    auto decoded = DecodeV2(bytes);
    benchmark::DoNotOptimize(decoded);
  }
}
BENCHMARK(BM_V2DecodeConnProp);

void BM_FindPrivateDataIn196OctetReply(benchmark::State& state) {
  std::vector<uint8_t> buffer(196, 0);
  auto encoded = EncodePrivateData(PrivateData{true, 4096, 4096});
  std::memcpy(buffer.data() + 40, encoded->data(), encoded->size());
  for (auto _ : state) {
    auto found = FindPrivateData(buffer);
    benchmark::DoNotOptimize(found);
  }
}
BENCHMARK(BM_FindPrivateDataIn196OctetReply);

}  // namespace
}  // namespace rpcrdma::wire

BENCHMARK_MAIN();
