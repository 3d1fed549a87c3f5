// The soak test's RPC program: how a random call is built, what the
// Server (and a Channel's backward service) answers, and the exact reply
// the caller must get back. Every answer is a function of the call's
// bytes, so the caller can check each octet it receives.
#ifndef RPCRDMA_TESTS_SOAK_SOAK_CALLS_H_
#define RPCRDMA_TESTS_SOAK_SOAK_CALLS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "rpcrdma/responder.h"
#include "rpcrdma/types.h"

namespace rpcrdma::test {

inline constexpr uint32_t kProgram = 0x20000199;
// Procedures. Every call's arguments start with two control words:
//   u32 delay_ms     the Server answers this much later, from another
//                    thread (0: at once, on its loop thread;
//                    kNeverAnswer: it drops the call unanswered)
//   u32 backward     when nonzero, the Server also makes a backward call
//                    (RFC 8167) of this many argument octets to the caller
inline constexpr uint32_t kNeverAnswer = 0xFFFFFFFF;
inline constexpr uint32_t kEcho = 1;  // reply: everything after the header
// args n, seed, bulk: a DDP-eligible opaque<n> result (a write chunk when
// offered, else inline) followed by opaque<bulk> inline.
inline constexpr uint32_t kResult = 2;

inline constexpr size_t kCallHeaderSize = 40;     // RFC 5531, AUTH_NONE
inline constexpr uint32_t kReplyHeaderSize = 24;  // accepted, SUCCESS
inline constexpr size_t kControlSize = 8;

uint32_t Get(absl::Span<const uint8_t> in, size_t offset);
std::vector<uint8_t> CallHeader(uint32_t xid, uint32_t proc);
std::vector<uint8_t> ReplyHeader(uint32_t xid);
// Octets that depend on `seed` and the position.
std::vector<uint8_t> Pattern(size_t n, uint32_t seed);
void PutOpaque(std::vector<uint8_t>& out, const std::vector<uint8_t>& data);

// The shape of one random call.
enum class Shape {
  kInline,        // small echo, no chunks
  kReadChunks,    // echo with DDP-eligible arguments at positions
  kLongCall,      // echo of a body beyond the inline threshold (RDMA_NOMSG)
  kWriteChunk,    // kResult with a write chunk offered
  kInlineResult,  // kResult with no write chunk: the result comes inline
  kLongReply,     // echo or kResult whose reply needs the reply chunk
};
inline constexpr int kShapes = 6;
const char* ShapeName(Shape shape);

// A call with its memory and the reply it must produce. The memory
// (arguments, result buffer) must outlive the call's completion.
struct PlannedCall {
  Shape shape = Shape::kInline;
  uint32_t xid = 0;
  std::vector<std::vector<uint8_t>> argument_memory;
  std::vector<uint8_t> result_memory;  // the write chunk's target
  CallRequest request;                 // spans point into the above
  std::vector<uint8_t> expected_xdr;
  std::vector<uint32_t> expected_result_lengths;
  std::vector<uint8_t> expected_result;  // in result_memory
  // Bookkeeping of the test driving it.
  uint64_t serial = 0;
  std::atomic<int> completions{0};
};

struct PlanOptions {
  uint32_t delay_ms = 0;
  uint32_t backward = 0;
};
// Builds a call of `shape` with random sizes from `rng`.
void Plan(PlannedCall& call, Shape shape, uint32_t xid, std::mt19937_64& rng,
          const PlanOptions& options);

// Empty when `reply` is exactly what `call` must get back, else what
// differs.
std::string CheckReply(const PlannedCall& call, const Reply& reply);

// The answer to a call (forward or backward) of this program.
HandlerReply Answer(const IncomingCall& call);

// A backward call: kEcho of `size` random octets.
void PlanBackward(PlannedCall& call, uint32_t xid, uint32_t size,
                  std::mt19937_64& rng);

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_SOAK_SOAK_CALLS_H_
