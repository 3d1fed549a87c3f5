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
//   CMA_OFFER  u64 probe_address  u64 probe_cookie  u32 gate_fd
//   CMA_ANSWER u8 accepted (0 or 1)
//   READ_REQ_CMA   u64 id  u32 handle  u64 address  u32 length  segments
//   WRITE_CMA      u64 id  u32 handle  u64 address  u32 length  segments
//
// where segments (the rest of the body, at most kMaxCmaSegments of them)
// are each  u64 address  u32 length  in the initiator's address space.
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
//
// Cross-memory attach (Unix-domain sockets only). A side that offers it
// sends CMA_OFFER right behind its CONNECT or ACCEPT, naming an 8-octet
// cookie in its own memory. The peer, if it offers the path too, learns
// the offerer's process from the socket (SO_PEERCRED), reads the cookie
// with process_vm_readv(2) and writes it back with process_vm_writev(2),
// opens the offerer's gate (gate_fd, a memfd whose first word is the
// cookie; soft_cma_gate.h) and answers CMA_ANSWER accepted = 1 when all
// that worked and the values matched, else 0. The responder copies for a
// request only after taking its gate slot, which the initiator withdraws
// before it completes the operation (flushed or not). An offerer holds its RDMA
// Reads and Writes until the answer; after accepted = 1 it sends READ_REQ_CMA
// and WRITE_CMA instead of READ_REQ and WRITE pieces, naming its own
// scatter/gather memory. The responder checks the request against its window
// table exactly as for READ_REQ and WRITE, then copies between its window and
// the initiator's memory with one process_vm_writev (Read) or process_vm_readv
// (Write) and answers with one READ_RESP (last = 1, no data) or one ACK. Each
// direction is negotiated on its own; a side that never accepted the
// path treats READ_REQ_CMA and WRITE_CMA as protocol errors. The copy
// only ever touches the responder's validated window and the initiator's
// own address space, so a bad segment list can hurt only the initiator
// (its operation fails with kLocalProtectionError). A responder that finds
// the initiator's process gone (pidfd) copies nothing and breaks the
// connection. CMA_ANSWER may overtake queued frames; the initiator may
// still send short transfers as READ_REQ and WRITE.
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
inline constexpr size_t kMaxCmaSegments = 256;
inline constexpr size_t kCmaSegmentSize = 12;  // u64 address + u32 length
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
  kCmaOffer = 10,
  kCmaAnswer = 11,
  kReadReqCma = 12,
  kWriteCma = 13,
};

// A scatter/gather element in the initiator's address space.
struct CmaSegment {
  uint64_t address = 0;
  uint32_t length = 0;
  bool operator==(const CmaSegment&) const = default;
};

// A decoded frame. Only the fields of its type are meaningful; `data`
// points into the buffer that was decoded.
struct Frame {
  FrameType type = FrameType::kDisconnect;
  uint32_t initiator_depth = 0;      // CONNECT, ACCEPT
  uint32_t responder_resources = 0;  // CONNECT, ACCEPT
  uint64_t id = 0;       // SEND, ACK, READ_REQ, READ_RESP, WRITE, *_CMA
  uint32_t handle = 0;   // READ_REQ, WRITE, *_CMA
  uint64_t address = 0;  // READ_REQ, WRITE, *_CMA; CMA_OFFER: probe address
  uint32_t length = 0;   // READ_REQ, *_CMA
  uint64_t cookie = 0;   // CMA_OFFER
  uint32_t gate_fd = 0;  // CMA_OFFER
  uint8_t status = 0;    // ACK, READ_RESP; CMA_ANSWER: accepted
  bool last = false;     // READ_RESP, WRITE
  std::optional<uint32_t> invalidate;  // SEND
  // CONNECT/ACCEPT/REJECT: private data; SEND: payload; READ_RESP, WRITE:
  // data.
  absl::Span<const uint8_t> data;
  std::vector<CmaSegment> segments;  // READ_REQ_CMA, WRITE_CMA
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
void AppendCmaOffer(std::vector<uint8_t>& out, uint64_t probe_address,
                    uint64_t probe_cookie, uint32_t gate_fd);
void AppendCmaAnswer(std::vector<uint8_t>& out, bool accepted);
// `type` is kReadReqCma or kWriteCma; at most kMaxCmaSegments segments.
void AppendCmaRequest(std::vector<uint8_t>& out, FrameType type, uint64_t id,
                      uint32_t handle, uint64_t address, uint32_t length,
                      absl::Span<const CmaSegment> segments);

}  // namespace rpcrdma::fabric::soft

#endif  // RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_WIRE_H_
