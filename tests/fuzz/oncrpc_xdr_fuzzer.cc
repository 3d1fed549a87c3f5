// Fuzzes the ONC RPC adapter's reply decoder (oncrpc/adapter/rdma_xdr.h)
// under rpcgen's routines: a hostile reduced reply stream and write-chunk
// data, as a peer could return them, decoded as the RPC reply header and
// testprog.x's results (not its unbounded listing: libtirpc's xdr_array
// allocates whatever count the peer's length word says before it reads an
// element, over any stream). Whatever decodes must encode again to a reduced
// stream and items that decode to the same complete XDR stream (libtirpc's
// own memory stream is the reference), and every allocation is freed
// (LeakSanitizer).
#include <rpc/rpc.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "oncrpc/adapter/rdma_xdr.h"
#include "testprog.h"

namespace {

using rpcrdma::oncrpc::DdpItem;
using rpcrdma::oncrpc::FreeReplyVerifier;
using rpcrdma::oncrpc::RdmaXdrDecoder;
using rpcrdma::oncrpc::RdmaXdrEncoder;

template <typename Function>
xdrproc_t AsXdrProc(Function* function) {
  return reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(function));
}

template <typename T>
std::vector<uint8_t> Full(bool_t (*routine)(XDR*, T*), T* value) {
  std::vector<uint8_t> out(xdr_sizeof(AsXdrProc(routine), value));
  XDR x;
  xdrmem_create(&x, reinterpret_cast<char*>(out.data()),
                static_cast<u_int>(out.size()), XDR_ENCODE);
  if (!routine(&x, value)) __builtin_trap();
  out.resize(xdr_getpos(&x));
  return out;
}

// `value` encoded reduced, then decoded with its items as write chunks:
// the same complete stream as before.
template <typename T>
void CheckRoundTrip(bool_t (*routine)(XDR*, T*), T* value, uint32_t threshold) {
  RdmaXdrEncoder encoder(RdmaXdrEncoder::Message::kReply);
  encoder.set_threshold(threshold);
  if (!routine(encoder.xdr(), value)) __builtin_trap();
  std::vector<std::vector<uint8_t>> landed;
  std::vector<RdmaXdrDecoder::Chunk> chunks;
  for (const DdpItem& item : encoder.items()) {
    landed.emplace_back(item.data.begin(), item.data.end());
  }
  for (auto& l : landed) chunks.emplace_back(l.data(), l.size());
  const std::vector<uint8_t> reduced = encoder.TakeStream();
  RdmaXdrDecoder decoder(reduced, std::move(chunks), threshold, threshold);
  T again{};
  if (!routine(decoder.xdr(), &again)) __builtin_trap();
  if (decoder.unconsumed_chunks() != 0) __builtin_trap();
  if (Full(routine, &again) != Full(routine, value)) __builtin_trap();
  xdr_free(AsXdrProc(routine), &again);
}

template <typename T>
void Decode(bool_t (*routine)(XDR*, T*), const std::vector<uint8_t>& stream,
            const std::vector<RdmaXdrDecoder::Chunk>& chunks,
            uint32_t minimum) {
  RdmaXdrDecoder decoder(stream, chunks, minimum, 1024);
  T value{};
  if (routine(decoder.xdr(), &value)) CheckRoundTrip(routine, &value, 1024);
  xdr_free(AsXdrProc(routine), &value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // data[0]: which decoder and whether the result is bound (any length
  // may take a chunk); data[1]: how many chunks; then per chunk a 16-bit
  // length taken from what follows; the rest is the reduced stream.
  const uint8_t which = data[0] % 3;
  const uint32_t minimum = (data[0] & 0x80) ? 1 : 1024;
  const size_t count = data[1] % 4;
  size_t at = 2;
  std::vector<RdmaXdrDecoder::Chunk> chunks;
  for (size_t i = 0; i < count && at + 2 <= size; ++i) {
    size_t length = (size_t{data[at]} << 8 | data[at + 1]) % 8192;
    at += 2;
    if (length > size - at) length = size - at;
    chunks.emplace_back(data + at, length);
    at += length;
  }
  const std::vector<uint8_t> stream(data + at, data + size);
  switch (which) {
    case 0: {
      RdmaXdrDecoder decoder(stream, chunks, minimum, 1024);
      rpc_msg reply{};
      reply.acpted_rply.ar_verf = _null_auth;
      reply.acpted_rply.ar_results.proc = AsXdrProc(&xdr_void);
      (void)xdr_replymsg(decoder.xdr(), &reply);
      FreeReplyVerifier(reply);
      break;
    }
    case 1:
      Decode(&xdr_pair, stream, chunks, minimum);
      break;
    case 2:
      Decode(&xdr_read_res, stream, chunks, minimum);
      break;
  }
  return 0;
}
