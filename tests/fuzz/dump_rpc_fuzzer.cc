// Fuzzes what rpcrdma-dump makes of the RPC message an RPC-over-RDMA
// message carries: the ONC RPC peek (oncrpc/rpc_peek.h), the Thrift
// bridge's (bridge/wire/thrift_xdr.h) and the protobuf adapter's decoder
// (tools/dump/protobuf_decoder.h, given one service whose calls it
// remembers across inputs, so a reply may meet its call), through
// FormatMessage and FormatLine,
// the functions the tool describes and prints each message with. The input
// is the RPC message, put behind a version one RDMA_MSG header (RFC 8166
// §4.2) and a version two RDMA2_MSG header
// (draft-cel-nfsv4-rpcrdma-version-two-04 §6.2); it is also tried as a
// whole transport message. Whatever the octets, the tool must not stop,
// and every line it prints, one-line or indented, must be JSON that parses
// back to the object it printed (so every string in it is UTF-8).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "tests/testing/byte_vectors.h"
#include "tools/dump/dump_format.h"
#include "tools/dump/protobuf_decoder.h"
#include "tools/dump/protobuf_services.h"

namespace {

using nlohmann::json;

std::vector<uint8_t> Behind(std::initializer_list<uint32_t> header,
                            absl::Span<const uint8_t> rpc) {
  std::vector<uint8_t> message = rpcrdma::test::Words(header);
  message.insert(message.end(), rpc.begin(), rpc.end());
  return message;
}

// "fuzz.Svc", program 0x26fae85c: a unary method, a server-streaming one
// and a bidirectional one.
rpcrdma::dump::ProtobufDecoder& Decoder() {
  static auto* services = new rpcrdma::dump::ProtobufServices(
      *rpcrdma::dump::ProtobufServices::Create({{"fuzz.Svc",
                                                 {{"Get", false, false},
                                                  {"Watch", false, true},
                                                  {"Chat", true, true}}}}));
  static auto* decoder = new rpcrdma::dump::ProtobufDecoder(*services);
  return *decoder;
}

void Check(absl::Span<const uint8_t> message) {
  std::optional<json> object;
  try {
    object =
        rpcrdma::dump::FormatMessage(message, {1, std::nullopt}, &Decoder());
  } catch (const std::exception&) {
    __builtin_trap();
  }
  if (!object.has_value()) return;
  for (bool pretty : {false, true}) {
    try {
      const std::string line = rpcrdma::dump::FormatLine(*object, pretty);
      if (json::parse(line) != *object) __builtin_trap();
    } catch (const std::exception&) {
      __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::Span<const uint8_t> rpc(data, size);
  // xid, vers 1, credits, RDMA_MSG; no reads, writes or reply chunk.
  Check(Behind({1, 1, 32, 0, 0, 0, 0}, rpc));
  // xid, vers 2, credits, RDMA2_MSG, direction CALL, inv_handle 0; no
  // reads, writes or reply chunk.
  Check(Behind({1, 2, 32, 0, 0, 0, 0, 0, 0}, rpc));
  Check(rpc);
  return 0;
}
