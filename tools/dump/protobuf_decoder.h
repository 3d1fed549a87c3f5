// What rpcrdma-dump shows of the protobuf adapter's RPC messages
// (protobuf/README.md §1, §2, §6): the service and method of a call, the
// stream id and seq of a stream control call, and the status, bulk-field
// count or stream id of the reply. A reply names neither program nor
// procedure, so the decoder remembers each call it labelled by XID until
// its reply comes.
#ifndef RPCRDMA_TOOLS_DUMP_PROTOBUF_DECODER_H_
#define RPCRDMA_TOOLS_DUMP_PROTOBUF_DECODER_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "nlohmann/json.hpp"
#include "tools/dump/protobuf_services.h"

namespace rpcrdma::dump {

class ProtobufDecoder {
 public:
  // `services` must outlive the decoder.
  explicit ProtobufDecoder(const ProtobufServices& services)
      : services_(services) {}

  // The "protobuf" object for the RPC message `rpc` (RFC 5531 §9, from its
  // XID on): for a call of one of the services, or a reply to a call this
  // decoder saw; nullopt for anything else. A body that does not decode
  // still names the service, with "error" saying why.
  std::optional<nlohmann::json> Decode(absl::Span<const uint8_t> rpc);

  // A capture may hold calls never answered (or answered in a reply chunk,
  // which the capture does not show): past this many, the calls waiting
  // are forgotten, and so are the streams past as many opens.
  static constexpr size_t kMaxRemembered = 1 << 16;

 private:
  struct Call {
    const ProtobufService* service = nullptr;
    uint32_t procedure = 0;
    // The stream a stream control call names, and the method that opened
    // it when the open's reply was seen.
    std::optional<uint64_t> stream_id;
    std::optional<uint64_t> seq;
    const ProtobufMethod* method = nullptr;
  };
  struct OpenStream {
    const ProtobufService* service = nullptr;
    const ProtobufMethod* method = nullptr;
  };

  std::optional<nlohmann::json> DecodeCall(uint32_t xid,
                                           absl::Span<const uint8_t> rpc);
  std::optional<nlohmann::json> DecodeReply(uint32_t xid,
                                            absl::Span<const uint8_t> rpc);

  const ProtobufServices& services_;
  absl::flat_hash_map<uint32_t, Call> calls_;          // by XID
  absl::flat_hash_map<uint64_t, OpenStream> streams_;  // by stream id
};

}  // namespace rpcrdma::dump

#endif  // RPCRDMA_TOOLS_DUMP_PROTOBUF_DECODER_H_
