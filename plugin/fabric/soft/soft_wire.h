// Framing of the soft fabric's byte stream.
//
// Two soft endpoints talk over one stream socket (Unix-domain or TCP). The
// stream carries frames; every integer is big-endian:
//
//   frame  := u32 body_length  u8 type  body[body_length - 1]
//
// body_length counts the type octet and is at most kMaxFrameBody. The
// frame types and their bodies are:
//
//   CONNECT    u32 magic ("SOFT")  u8 version (1)
//              u32 initiator_depth  u32 responder_resources
//              u16 private_data_length  private_data
//   ACCEPT     u32 initiator_depth  u32 responder_resources
//              u16 private_data_length  private_data
//   REJECT     u16 private_data_length  private_data
//   SEND       u64 id  u8 flags (bit 0: invalidate)  u32 invalidate_handle
//              payload (the rest of the body)
//   ACK        u64 id  u8 status          (answers SEND and the last WRITE)
//   READ_REQ   u64 id  u32 handle  u64 address  u32 length
//   READ_RESP  u64 id  u8 status  u8 last  data (the rest of the body)
//   WRITE      u64 id  u32 handle  u64 address  u8 last  data (the rest)
//   DISCONNECT (empty)
//
// The active side sends CONNECT; the passive side answers ACCEPT or REJECT
// (and closes after REJECT). Private data is delivered exactly as sent (at
// most kMaxPrivateData octets); unlike rdma-cm nothing pads it, so callers
// that search it as RFC 8797 §5.2 requires still work.
//
// `id` is the initiator's sequence number of the operation. The responder
// answers every SEND with an ACK once it has placed the data (or found it
// could not), every READ_REQ with one or more READ_RESP frames (the last one
// has last = 1; data arrives in order; an error carries no data), and the
// last WRITE frame of an RDMA Write with an ACK. RDMA data travels in
// pieces of at most kMaxRdmaChunk octets so neither side has to hold a
// whole large transfer in one frame; a WRITE piece names the address of
// its own first octet. Responses arrive in request order, as on a reliable
// connected queue pair.
//
// `status` is a WorkStatus value as seen by the initiator. A non-success
// status is fatal: the responder closes the connection after sending it,
// and the initiator, on receiving it, completes that operation with the
// status and flushes everything else. DISCONNECT announces an orderly
// close; end of stream without it is a lost connection. Any malformed
// frame (unknown type, short or oversized body) breaks the connection.
#ifndef RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_WIRE_H_
#define RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace rpcrdma::fabric::soft {

inline constexpr uint32_t kMagic = 0x534f4654;  // "SOFT"
inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kMaxPrivateData = 196;
inline constexpr size_t kMaxRdmaChunk = 64 * 1024;
inline constexpr size_t kMaxSendPayload = 1024 * 1024;
inline constexpr size_t kFrameHeaderSize = 5;  // u32 length + u8 type
// The largest body: a SEND header (13 octets) plus the largest payload.
inline constexpr size_t kMaxFrameBody = 1 + 13 + kMaxSendPayload;

enum class FrameType : uint8_t {
  kConnect = 1,
  kAccept = 2,
  kReject = 3,
  kSend = 4,
  kAck = 5,
  kReadReq = 6,
  kReadResp = 7,
  kWrite = 8,
  kDisconnect = 9,
};

// A decoded frame. Only the fields of its type are meaningful; `data`
// points into the buffer that was decoded.
struct Frame {
  FrameType type = FrameType::kDisconnect;
  uint32_t initiator_depth = 0;        // CONNECT, ACCEPT
  uint32_t responder_resources = 0;    // CONNECT, ACCEPT
  uint64_t id = 0;                     // SEND, ACK, READ_REQ, READ_RESP, WRITE
  uint32_t handle = 0;                 // READ_REQ, WRITE
  uint64_t address = 0;                // READ_REQ, WRITE
  uint32_t length = 0;                 // READ_REQ
  uint8_t status = 0;                  // ACK, READ_RESP
  bool last = false;                   // READ_RESP, WRITE
  std::optional<uint32_t> invalidate;  // SEND
  // CONNECT/ACCEPT/REJECT: private data; SEND: payload; READ_RESP, WRITE:
  // data.
  absl::Span<const uint8_t> data;
};

// Outcome of trying to decode the front of a byte stream.
struct DecodeResult {
  // Octets the frame occupied, 0 when more input is needed.
  size_t consumed = 0;
  Frame frame;
};

// Decodes one frame from the front of `input`. Returns consumed = 0 when
// `input` holds only part of a frame, and an error (InvalidArgument or
// OutOfRange) for a malformed frame; never reads past `input`.
absl::StatusOr<DecodeResult> DecodeFrame(absl::Span<const uint8_t> input);

// Encoders append one whole frame to `out`.
void AppendConnect(std::vector<uint8_t>& out, uint32_t initiator_depth,
                   uint32_t responder_resources,
                   absl::Span<const uint8_t> private_data);
void AppendAccept(std::vector<uint8_t>& out, uint32_t initiator_depth,
                  uint32_t responder_resources,
                  absl::Span<const uint8_t> private_data);
void AppendReject(std::vector<uint8_t>& out,
                  absl::Span<const uint8_t> private_data);
// The payload is the concatenation of `pieces`.
void AppendSend(std::vector<uint8_t>& out, uint64_t id,
                std::optional<uint32_t> invalidate,
                absl::Span<const absl::Span<const uint8_t>> pieces);
void AppendAck(std::vector<uint8_t>& out, uint64_t id, uint8_t status);
void AppendReadReq(std::vector<uint8_t>& out, uint64_t id, uint32_t handle,
                   uint64_t address, uint32_t length);
void AppendReadResp(std::vector<uint8_t>& out, uint64_t id, uint8_t status,
                    bool last, absl::Span<const uint8_t> data);
// The data is the concatenation of `pieces`.
void AppendWrite(std::vector<uint8_t>& out, uint64_t id, uint32_t handle,
                 uint64_t address, bool last,
                 absl::Span<const absl::Span<const uint8_t>> pieces);
void AppendDisconnect(std::vector<uint8_t>& out);

}  // namespace rpcrdma::fabric::soft

#endif  // RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_WIRE_H_
