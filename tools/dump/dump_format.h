// Turns one RPC-over-RDMA message (the payload of one RC SEND) into the JSON
// object rpcrdma-dump prints for it. The keys are documented in the tool's
// --help text (tools/dump/dump_cli.cc).
#ifndef RPCRDMA_TOOLS_DUMP_DUMP_FORMAT_H_
#define RPCRDMA_TOOLS_DUMP_DUMP_FORMAT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "nlohmann/json.hpp"
#include "tools/dump/protobuf_decoder.h"

namespace rpcrdma::dump {

struct MessageContext {
  uint64_t frame = 0;  // pcap frame number of the last packet, or index
  // The R_Key of the IETH when the message came in a
  // SEND_*_WITH_INVALIDATE.
  std::optional<uint32_t> invalidate;
};

// Whether `message` is taken as RPC-over-RDMA at all: at least 8 octets and
// rdma_vers (octets 4..7, RFC 8166 §4.2.1) equal to 1 or 2. Anything else is
// some other upper-layer protocol and is skipped.
bool IsRpcRdmaCandidate(absl::Span<const uint8_t> message);

// The JSON object for `message`, or nullopt when it is not a candidate. A
// candidate whose header does not decode gives {"frame": N, "error": "..."}
// with the decoder's classified message. With `protobuf`, the RPC message
// of a protobuf service it knows, or a reply to one of its calls, also gets
// "protobuf" (the decoder remembers calls, so messages go in capture order).
std::optional<nlohmann::json> FormatMessage(
    absl::Span<const uint8_t> message, const MessageContext& context,
    ProtobufDecoder* protobuf = nullptr);

// Serializes an object from FormatMessage with its keys in a fixed, readable
// order (frame, xid, vers, credits, proc, ... rpc) rather than sorted: one
// line, or indented when `pretty`.
std::string FormatLine(const nlohmann::json& object, bool pretty);

// `octets` a peer chose (a Thrift method name...) as printable UTF-8 text:
// valid UTF-8 is kept as it is, except that a backslash is doubled and a
// control character (U+0000..U+001F, U+007F) becomes \xNN; each octet that
// is not part of a valid UTF-8 sequence (RFC 3629 §3-§4: no overlong form,
// surrogate or code point past U+10FFFF) becomes \xNN too. The result is
// always valid UTF-8, so that it can be put in a JSON string (RFC 8259 §8.1)
// and printed, and the peer's octets can be read back from it.
std::string EscapeOctets(absl::string_view octets);

// Parses hexadecimal octets; whitespace and colons between digits are
// ignored, as is a leading "0x". Fails on any other character or an odd
// number of digits.
absl::StatusOr<std::vector<uint8_t>> ParseHex(absl::string_view text);

}  // namespace rpcrdma::dump

#endif  // RPCRDMA_TOOLS_DUMP_DUMP_FORMAT_H_
