// The Thrift bridge's Upper Layer Binding (bridge/README.md): how a Thrift
// message travels as the arguments or results of an ONC RPC (RFC 5531)
// call, in XDR (RFC 4506). Pure codecs, without Apache Thrift, so that
// tools (rpcrdma-dump) decode the traffic too.
//
//   program THRIFT_BRIDGE 0x20007468, version 1:
//     THRIFT_NULL   (0)  void                -> void
//     THRIFT_CALL   (1)  thrift_call_args    -> thrift_result
//     THRIFT_ONEWAY (2)  thrift_call_args    -> thrift_result (NO_REPLY, sent
//                                               once the call is received)
//     THRIFT_FETCH  (3)  thrift_fetch_args   -> thrift_result
#ifndef RPCRDMA_BRIDGE_WIRE_THRIFT_XDR_H_
#define RPCRDMA_BRIDGE_WIRE_THRIFT_XDR_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::thrift::wire {

// In the range RFC 5531 leaves to local administrators and experiments
// (0x20000000-0x3fffffff); "th" in its low half.
inline constexpr uint32_t kProgram = 0x20007468;
inline constexpr uint32_t kVersion = 1;

enum class Procedure : uint32_t {
  kNull = 0,
  kCall = 1,
  kOneway = 2,
  kFetch = 3,
};
const char* ProcedureName(uint32_t procedure);

// thrift_status: what a thrift_result holds.
enum class Status : uint32_t {
  kOk = 0,        // the Thrift reply message
  kNoReply = 1,   // the processor wrote none (a oneway call)
  kDeferred = 2,  // it did not fit the chunks the call offered: fetch it
  kRefused = 3,   // the call was not processed; a reason follows
};

// Thrift's TMessageType; 0 when the bridge could not read the header.
inline constexpr uint32_t kTypeUnknown = 0;
inline constexpr uint32_t kTypeCall = 1;
inline constexpr uint32_t kTypeReply = 2;
inline constexpr uint32_t kTypeException = 3;
inline constexpr uint32_t kTypeOneway = 4;
const char* MessageTypeName(uint32_t type);

// What the Thrift message's own header says, repeated in front of it for
// observers and for choosing the procedure.
struct MessageInfo {
  std::string name;
  int32_t seqid = 0;
  uint32_t type = kTypeUnknown;
  friend bool operator==(const MessageInfo&, const MessageInfo&) = default;
};

// Reads name, sequence id and type from the start of a Thrift message as
// its protocol stack wrote it: TBinaryProtocol (strict or not),
// TCompactProtocol, TJSONProtocol, any of them inside a TFramedTransport
// frame, and THeaderTransport frames (whose payload is read when no
// transform was applied; otherwise only the sequence id is known).
// `head` is the message's first octets (up to kPeekLength are looked at).
// nullopt when none of these forms matches.
inline constexpr size_t kPeekLength = 512;
std::optional<MessageInfo> PeekMessageHeader(absl::Span<const uint8_t> head);

// XDR building (RFC 4506) for the bridge's messages: a layer over the
// appending form of rpcrdma::XdrWriter (<rpcrdma/xdr.h>) whose writes
// cannot fail, so its calls return nothing.
class XdrWriter {
 public:
  explicit XdrWriter(std::vector<uint8_t>& out) : out_(out), xdr_(&out) {}
  void Uint32(uint32_t value);
  void Int32(int32_t value) { Uint32(static_cast<uint32_t>(value)); }
  // Length word, octets and roundup.
  void Opaque(absl::Span<const uint8_t> data);
  void String(absl::string_view text);
  void Padding(size_t length);  // the roundup of `length` octets
  size_t size() const { return out_.size(); }

 private:
  std::vector<uint8_t>& out_;
  ::rpcrdma::XdrWriter xdr_;
};

// Bounded XDR reading for the bridge's messages, over rpcrdma::XdrReader.
// Every failure is DATA_LOSS (what the bridge reports for a peer's bad
// message) and names the field.
class XdrReader {
 public:
  explicit XdrReader(absl::Span<const uint8_t> in) : xdr_(in) {}
  absl::StatusOr<uint32_t> Uint32(absl::string_view field);
  absl::StatusOr<int32_t> Int32(absl::string_view field);
  // A length word at most `limit`, then that many octets and the roundup.
  absl::StatusOr<absl::Span<const uint8_t>> Opaque(absl::string_view field,
                                                   uint32_t limit);
  absl::StatusOr<std::string> String(absl::string_view field, uint32_t limit);
  // Skips `octets`, a multiple of four (whole XDR items).
  absl::Status Skip(size_t octets, absl::string_view field);
  size_t position() const { return xdr_.offset(); }
  size_t remaining() const { return xdr_.remaining(); }

 private:
  ::rpcrdma::XdrReader xdr_;
};

// Longest method name carried (Thrift has no bound of its own).
inline constexpr uint32_t kMaxNameLength = 4096;

// RFC 5531 §9 headers with AUTH_NONE credentials and verifiers.
std::vector<uint8_t> CallHeader(uint32_t xid, Procedure procedure);
// An accepted reply (MSG_ACCEPTED) with `accept_stat` (SUCCESS = 0).
std::vector<uint8_t> ReplyHeader(uint32_t xid, uint32_t accept_stat = 0);
inline constexpr uint32_t kProgUnavail = 1;
inline constexpr uint32_t kProgMismatch = 2;
inline constexpr uint32_t kProcUnavail = 3;
inline constexpr uint32_t kGarbageArgs = 4;

struct DecodedCallHeader {
  uint32_t xid = 0;
  // Another RPC version leaves the rest unread (its format is unknown).
  uint32_t rpc_version = 2;
  uint32_t program = 0;
  uint32_t version = 0;
  uint32_t procedure = 0;
  uint32_t cred_flavor = 0;
  absl::Span<const uint8_t> cred_body;
  uint32_t verf_flavor = 0;
  absl::Span<const uint8_t> verf_body;
  size_t body_offset = 0;  // where the arguments start
};
// DATA_LOSS for what is not an RPC call or ends inside its header.
absl::StatusOr<DecodedCallHeader> DecodeCallHeader(
    absl::Span<const uint8_t> message);

// RFC 5531 §9 auth_stat.
inline constexpr uint32_t kAuthOk = 0;
inline constexpr uint32_t kAuthBadCred = 1;
inline constexpr uint32_t kAuthBadVerf = 3;
inline constexpr uint32_t kAuthTooWeak = 5;
// What the bridge answers a call's credential and verifier with (kAuthOk
// when it serves them): AUTH_NONE, and AUTH_SYS when its body is a
// well-formed authsys_parms (the bridge does not act on it), with an
// AUTH_NONE verifier. Other flavors are AUTH_BADCRED, as RFC 9289 §4.1
// has a server answer a flavor it does not know; a malformed body of a
// served flavor is AUTH_BADCRED, a verifier of another flavor
// AUTH_BADVERF.
uint32_t CheckCallAuth(const DecodedCallHeader& header);
// Denied replies (MSG_DENIED): RPC_MISMATCH naming version 2 as both the
// lowest and the highest served, and AUTH_ERROR with `auth_stat`.
std::vector<uint8_t> RpcMismatchReply(uint32_t xid);
std::vector<uint8_t> AuthErrorReply(uint32_t xid, uint32_t auth_stat);
// A reply's results offset; FAILED_PRECONDITION naming the refusal for a
// denied reply or an accept_stat other than SUCCESS.
absl::StatusOr<size_t> DecodeReplyHeader(absl::Span<const uint8_t> message,
                                         uint32_t expected_xid);

// thrift_message: the info, then the message's octets cut into runs,
// `leading` and after it each bulk item with the octets that follow it:
//   struct thrift_bulk { opaque data<>; opaque following<>; };
//   struct thrift_message { string name<>; int seqid; unsigned type;
//                           opaque leading<>; thrift_bulk bulk<>; };
// thrift_bulk.data is the only DDP-eligible item (RFC 8166 §6.1).
struct OutgoingMessage {
  struct Bulk {
    absl::Span<const uint8_t> data;
    absl::Span<const uint8_t> following;
  };
  MessageInfo info;
  absl::Span<const uint8_t> leading;
  std::vector<Bulk> bulk;
};
// Appends the message to `out` with the data of every bulk item left out
// (a reduced stream, RFC 8166 §6.2); `positions` gets each item's XDR
// position (after its length word).
void EncodeMessage(const OutgoingMessage& message, std::vector<uint8_t>& out,
                   std::vector<uint32_t>& positions);
// The encoded size with the data of the first `reduced` bulk items left
// out and the others inline.
size_t EncodedMessageSize(const OutgoingMessage& message, size_t reduced);

// A received thrift_message: its info and its octets, in order, as spans
// into the received memory.
struct IncomingMessage {
  MessageInfo info;
  std::vector<absl::Span<const uint8_t>> pieces;
  uint64_t size = 0;  // octets of the Thrift message
};
// Decodes a thrift_message from `in`. `chunked` holds the bulk items that
// came apart from the stream (a reduced reply's write chunks, in order):
// item i < chunked.size() is taken from there, its length word checked
// against it; the rest are read inline. DATA_LOSS for a malformed message;
// RESOURCE_EXHAUSTED when it exceeds `max_size` octets.
absl::StatusOr<IncomingMessage> DecodeMessage(
    XdrReader& in, absl::Span<const absl::Span<const uint8_t>> chunked,
    uint64_t max_size);

// thrift_fetch_args.
struct FetchArgs {
  uint32_t ticket = 0;
  bool discard = false;
  uint32_t max_reply = 0;
};
void EncodeFetchArgs(const FetchArgs& args, std::vector<uint8_t>& out);
absl::StatusOr<FetchArgs> DecodeFetchArgs(absl::Span<const uint8_t> args);

// thrift_deferred.
struct Deferred {
  uint32_t ticket = 0;
  // The reduced reply's size when every bulk item goes in a write chunk.
  uint32_t reduced_size = 0;
  std::vector<uint32_t> bulk_sizes;
};
void EncodeDeferred(const Deferred& deferred, std::vector<uint8_t>& out);
absl::StatusOr<Deferred> DecodeDeferred(XdrReader& in);

// For observers (rpcrdma-dump): the procedure of a bridge call and, for
// THRIFT_CALL and THRIFT_ONEWAY, the message's header as the call states
// it. `rpc_message` is a complete or reduced RPC call message; nullopt
// when it is not a call of this program.
struct CallPeek {
  uint32_t procedure = 0;
  std::optional<MessageInfo> info;
};
std::optional<CallPeek> PeekCall(absl::Span<const uint8_t> rpc_message);

}  // namespace rpcrdma::thrift::wire

#endif  // RPCRDMA_BRIDGE_WIRE_THRIFT_XDR_H_
