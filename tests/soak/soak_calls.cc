#include "tests/soak/soak_calls.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "rpcrdma/xdr.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::test {
namespace {

uint32_t Uniform(std::mt19937_64& rng, uint32_t lo, uint32_t hi) {
  return std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
}

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::vector<uint8_t> EchoReply(uint32_t xid,
                               const std::vector<uint8_t>& complete_call) {
  std::vector<uint8_t> out = ReplyHeader(xid);
  out.insert(out.end(), complete_call.begin() + kCallHeaderSize,
             complete_call.end());
  return out;
}

void PlanEcho(PlannedCall& call, std::vector<uint8_t> stream,
              std::vector<uint8_t> complete) {
  call.expected_xdr = EchoReply(call.xid, complete);
  call.request.xdr = std::move(stream);
  call.request.max_reply_size = static_cast<uint32_t>(call.expected_xdr.size());
}

void PlanResult(PlannedCall& call, std::vector<uint8_t> stream, uint32_t n,
                uint32_t seed, uint32_t bulk, bool write_chunk,
                std::mt19937_64& rng) {
  test::AppendWord(stream, n);
  test::AppendWord(stream, seed);
  test::AppendWord(stream, bulk);
  call.request.xdr = std::move(stream);
  std::vector<uint8_t> reduced = ReplyHeader(call.xid);
  test::AppendWord(reduced, n);
  PutOpaque(reduced, Pattern(bulk, seed + 1));
  if (write_chunk) {
    call.result_memory.assign(n + Uniform(rng, 0, 64), 0xEE);
    call.expected_result = Pattern(n, seed);
    call.expected_result_lengths = {n};
    call.request.results.push_back(absl::MakeSpan(call.result_memory));
    call.expected_xdr = std::move(reduced);
  } else {
    call.expected_xdr =
        test::WithXdrItem(reduced, kReplyHeaderSize + 4, Pattern(n, seed));
  }
  call.request.max_reply_size = static_cast<uint32_t>(call.expected_xdr.size());
}

}  // namespace

uint32_t Get(absl::Span<const uint8_t> in, size_t offset) {
  if (offset + 4 > in.size()) return 0;
  return LoadBigEndian32(in.data() + offset);
}

std::vector<uint8_t> CallHeader(uint32_t xid, uint32_t proc) {
  std::vector<uint8_t> out;
  for (uint32_t w : {xid, 0u, 2u, kProgram, 1u, proc, 0u, 0u, 0u, 0u}) {
    test::AppendWord(out, w);
  }
  return out;
}

std::vector<uint8_t> ReplyHeader(uint32_t xid) {
  std::vector<uint8_t> out;
  for (uint32_t w : {xid, 1u, 0u, 0u, 0u, 0u}) test::AppendWord(out, w);
  return out;
}

std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = static_cast<uint8_t>(seed * 31 + i * 7 + (i >> 8));
  }
  return v;
}

void PutOpaque(std::vector<uint8_t>& out, const std::vector<uint8_t>& data) {
  // RFC 4506 §4.10; appending to a vector, the write cannot fail.
  (void)XdrWriter(&out).WriteVarOpaque("opaque", data);
}

const char* ShapeName(Shape shape) {
  switch (shape) {
    case Shape::kInline:
      return "inline";
    case Shape::kReadChunks:
      return "read-chunks";
    case Shape::kLongCall:
      return "long-call";
    case Shape::kWriteChunk:
      return "write-chunk";
    case Shape::kInlineResult:
      return "inline-result";
    case Shape::kLongReply:
      return "long-reply";
  }
  return "?";
}

void Plan(PlannedCall& call, Shape shape, uint32_t xid, std::mt19937_64& rng,
          const PlanOptions& options) {
  call.shape = shape;
  call.xid = xid;
  const uint32_t proc = shape == Shape::kWriteChunk ||
                                shape == Shape::kInlineResult ||
                                (shape == Shape::kLongReply && (rng() & 1))
                            ? kResult
                            : kEcho;
  std::vector<uint8_t> stream = CallHeader(xid, proc);
  test::AppendWord(stream, options.delay_ms);
  test::AppendWord(stream, options.backward);
  const uint32_t seed = static_cast<uint32_t>(rng());
  switch (shape) {
    case Shape::kInline: {
      PutOpaque(stream, RandomBytes(rng, Uniform(rng, 0, 600)));
      std::vector<uint8_t> complete = stream;
      PlanEcho(call, std::move(stream), std::move(complete));
      return;
    }
    case Shape::kReadChunks: {
      // One to three DDP-eligible arguments at their positions (RFC 8166
      // §3.4.5), inline words between them; the server sees them
      // reinserted with XDR roundup.
      const uint32_t items = Uniform(rng, 1, 3);
      call.argument_memory.reserve(items);
      std::vector<uint8_t> complete = stream;
      for (uint32_t i = 0; i < items; ++i) {
        const uint32_t size =
            (rng() & 3) == 0 ? Uniform(rng, 1, 64) : Uniform(rng, 256, 24576);
        call.argument_memory.push_back(RandomBytes(rng, size));
        test::AppendWord(stream, size);
        test::AppendWord(complete, size);
        call.request.arguments.push_back(
            {static_cast<uint32_t>(stream.size()),
             absl::MakeConstSpan(call.argument_memory.back())});
        complete = test::WithXdrItem(complete, complete.size(),
                                     call.argument_memory.back());
        const uint32_t filler = static_cast<uint32_t>(rng());
        test::AppendWord(stream, filler);
        test::AppendWord(complete, filler);
      }
      PlanEcho(call, std::move(stream), std::move(complete));
      return;
    }
    case Shape::kLongCall: {
      // Beyond the 4096-octet inline threshold: the whole call goes as a
      // position-zero read chunk (RFC 8166 §3.5.3), and the echo comes
      // back through the reply chunk (§3.5.4).
      PutOpaque(stream, RandomBytes(rng, Uniform(rng, 4500, 65536)));
      std::vector<uint8_t> complete = stream;
      PlanEcho(call, std::move(stream), std::move(complete));
      return;
    }
    case Shape::kWriteChunk:
      PlanResult(call, std::move(stream), Uniform(rng, 1, 65536), seed,
                 Uniform(rng, 0, 512), /*write_chunk=*/true, rng);
      return;
    case Shape::kInlineResult:
      PlanResult(call, std::move(stream), Uniform(rng, 0, 2048), seed,
                 Uniform(rng, 0, 256), /*write_chunk=*/false, rng);
      return;
    case Shape::kLongReply:
      if (proc == kResult) {
        PlanResult(call, std::move(stream), Uniform(rng, 0, 512), seed,
                   Uniform(rng, 8192, 131072), /*write_chunk=*/false, rng);
      } else {
        // A small call whose echo is large: the reply chunk carries it.
        PutOpaque(stream, RandomBytes(rng, Uniform(rng, 3000, 4000)));
        std::vector<uint8_t> complete = stream;
        PlanEcho(call, std::move(stream), std::move(complete));
        call.request.max_reply_size += Uniform(rng, 4096, 16384);
      }
      return;
  }
}

void PlanBackward(PlannedCall& call, uint32_t xid, uint32_t size,
                  std::mt19937_64& rng) {
  call.xid = xid;
  std::vector<uint8_t> stream = CallHeader(xid, kEcho);
  test::AppendWord(stream, 0);
  test::AppendWord(stream, 0);
  PutOpaque(stream, RandomBytes(rng, size));
  std::vector<uint8_t> complete = stream;
  PlanEcho(call, std::move(stream), std::move(complete));
}

std::string CheckReply(const PlannedCall& call, const Reply& reply) {
  if (reply.xdr != call.expected_xdr) {
    size_t at = 0;
    while (at < reply.xdr.size() && at < call.expected_xdr.size() &&
           reply.xdr[at] == call.expected_xdr[at]) {
      ++at;
    }
    size_t differing = 0;
    std::string where;
    for (size_t i = at; i < reply.xdr.size() && i < call.expected_xdr.size();
         ++i) {
      if (reply.xdr[i] == call.expected_xdr[i]) continue;
      if (++differing <= 6) {
        absl::StrAppend(&where, " @", i, ":", reply.xdr[i],
                        "!=", call.expected_xdr[i]);
      }
    }
    return absl::StrCat(ShapeName(call.shape), " xid ", call.xid,
                        ": reply (xid ", Get(reply.xdr, 0), ") of ",
                        reply.xdr.size(), " octets, expected ",
                        call.expected_xdr.size(), "; first difference at ", at,
                        ", ", differing, " octets differ:", where);
  }
  if (reply.result_lengths != call.expected_result_lengths) {
    return absl::StrCat(ShapeName(call.shape), " xid ", call.xid,
                        ": wrong result lengths (", reply.result_lengths.size(),
                        " entries)");
  }
  if (!call.expected_result.empty() &&
      !std::equal(call.expected_result.begin(), call.expected_result.end(),
                  call.result_memory.begin())) {
    return absl::StrCat(ShapeName(call.shape), " xid ", call.xid,
                        ": write chunk contents differ");
  }
  if (std::any_of(call.result_memory.begin() +
                      static_cast<ptrdiff_t>(call.expected_result.size()),
                  call.result_memory.end(),
                  [](uint8_t b) { return b != 0xEE; })) {
    return absl::StrCat(ShapeName(call.shape), " xid ", call.xid,
                        ": written beyond the result");
  }
  return "";
}

HandlerReply Answer(const IncomingCall& call) {
  absl::Span<const uint8_t> m = call.message;
  HandlerReply reply;
  reply.xdr = ReplyHeader(call.xid);
  if (m.size() < kCallHeaderSize + kControlSize) return reply;
  if (Get(m, 20) == kEcho) {
    reply.xdr.insert(reply.xdr.end(), m.begin() + kCallHeaderSize, m.end());
    return reply;
  }
  const size_t args = kCallHeaderSize + kControlSize;
  const uint32_t n = std::min<uint32_t>(Get(m, args), 1 << 20);
  const uint32_t seed = Get(m, args + 4);
  const uint32_t bulk = std::min<uint32_t>(Get(m, args + 8), 1 << 20);
  test::AppendWord(reply.xdr, n);
  reply.results.push_back({kReplyHeaderSize + 4, Pattern(n, seed)});
  PutOpaque(reply.xdr, Pattern(bulk, seed + 1));
  return reply;
}

}  // namespace rpcrdma::test
