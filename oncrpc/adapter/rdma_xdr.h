// The XDR streams of the ONC RPC adapter (rpcrdma/oncrpc/xdr_rdma.h says
// what they do to unchanged XDR routines): an encoder that produces the
// reduced stream and DDP items of RFC 8166 §3.4, and a decoder that reads a
// message with the write chunks of a reply put back.
//
// Hand-written because libtirpc has no stream that can leave an opaque's
// content out: its xdrmem and xdrrec streams copy every octet. Both are
// `XDR`s whose x_private points at the object.
#ifndef RPCRDMA_ONCRPC_ADAPTER_RDMA_XDR_H_
#define RPCRDMA_ONCRPC_ADAPTER_RDMA_XDR_H_

#include <rpc/rpc.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "rpcrdma/oncrpc/xdr_rdma.h"

namespace rpcrdma::oncrpc {

// A DDP-eligible opaque's content, left out of the reduced stream.
struct DdpItem {
  uint32_t position = 0;  // XDR position in the reduced stream
  absl::Span<const uint8_t> data;
};

class RdmaXdrEncoder {
 public:
  enum class Message {
    kCall,   // takes XDR_RDMA_WRITE_CHUNK and XDR_RDMA_REPLY_CHUNK
    kReply,  // refuses them
  };
  explicit RdmaXdrEncoder(Message message);
  RdmaXdrEncoder(const RdmaXdrEncoder&) = delete;
  RdmaXdrEncoder& operator=(const RdmaXdrEncoder&) = delete;

  XDR* xdr() { return &xdr_; }
  // Opaques of at least `octets` become items from now on (0: only marked
  // ones, and none while `ddp` is false: the RPC header is never reduced).
  void set_threshold(uint32_t octets) { threshold_ = octets; }
  void set_ddp(bool on) { ddp_ = on; }
  // A reply's items go into the write chunks its call offered: at most
  // one per chunk, each only when it fits (a larger one stays inline and
  // the chunk it would have taken goes to the next item that fits it).
  void set_item_capacities(absl::Span<const uint64_t> capacities) {
    capacities_ = capacities;
    bounded_ = true;
  }

  // The reduced stream written so far (up to the current position).
  std::vector<uint8_t> TakeStream();
  const std::vector<DdpItem>& items() const { return items_; }
  // What XDR_RDMA_WRITE_CHUNK / XDR_RDMA_REPLY_CHUNK asked for.
  const std::vector<xdr_rdma_write_chunk>& write_chunks() const {
    return write_chunks_;
  }
  std::optional<uint32_t> reply_chunk() const { return reply_chunk_; }

 private:
  static RdmaXdrEncoder& Of(XDR* xdrs);
  static bool_t PutLong(XDR* xdrs, const long* value);
  static bool_t PutBytes(XDR* xdrs, const char* data, u_int length);
  static u_int GetPosition(XDR* xdrs);
  static bool_t SetPosition(XDR* xdrs, u_int position);
  static int32_t* Inline(XDR* xdrs, u_int length);
  static bool_t Control(XDR* xdrs, int request, void* argument);
  bool Eligible(u_int length, bool marked) const;
  void Write(const void* data, size_t length);

  XDR xdr_{};
  const Message message_;
  uint32_t threshold_ = 0;
  bool ddp_ = true;
  bool bounded_ = false;
  absl::Span<const uint64_t> capacities_;
  std::vector<uint8_t> stream_;
  size_t cursor_ = 0;
  std::vector<DdpItem> items_;
  // The last thing put was a length word of this value (an opaque's
  // content may follow).
  std::optional<uint32_t> length_word_;
  bool marked_ = false;  // XDR_RDMA_DDP_NEXT, for the next opaque
  // Octets of roundup to drop: xdr_opaque puts them right after the
  // content of an item.
  u_int roundup_to_drop_ = 0;
  std::vector<xdr_rdma_write_chunk> write_chunks_;
  std::optional<uint32_t> reply_chunk_;
};

class RdmaXdrDecoder {
 public:
  // A write chunk's octets as the reply returned them, in the memory the
  // chunk was offered in (when an opaque's destination is that memory,
  // nothing is copied).
  using Chunk = absl::Span<const uint8_t>;
  // `stream` (the reduced reply, or a complete message without chunks)
  // must outlive the decoder, as must every chunk's octets. An opaque of
  // at least `min_chunked_length` octets (or marked) may take a chunk's
  // data; 0 lets any opaque whose length word matches take it.
  RdmaXdrDecoder(absl::Span<const uint8_t> stream, std::vector<Chunk> chunks,
                 uint32_t min_chunked_length, uint32_t threshold);
  explicit RdmaXdrDecoder(absl::Span<const uint8_t> stream,
                          uint32_t threshold = 0)
      : RdmaXdrDecoder(stream, {}, 0, threshold) {}
  RdmaXdrDecoder(const RdmaXdrDecoder&) = delete;
  RdmaXdrDecoder& operator=(const RdmaXdrDecoder&) = delete;

  XDR* xdr() { return &xdr_; }
  void SetPosition(size_t position);
  // Write chunks with data that no opaque took (their data would be lost:
  // the reply does not match the binding).
  size_t unconsumed_chunks() const;

 private:
  static RdmaXdrDecoder& Of(XDR* xdrs);
  static bool_t GetLong(XDR* xdrs, long* value);
  static bool_t GetBytes(XDR* xdrs, char* data, u_int length);
  static u_int GetPosition(XDR* xdrs);
  static bool_t SetPosition(XDR* xdrs, u_int position);
  static int32_t* Inline(XDR* xdrs, u_int length);
  static bool_t Control(XDR* xdrs, int request, void* argument);
  void SkipEmptyChunks();

  XDR xdr_{};
  absl::Span<const uint8_t> stream_;
  size_t cursor_ = 0;
  std::vector<Chunk> chunks_;
  size_t next_chunk_ = 0;
  u_int chunks_taken_ = 0;  // XDR_RDMA_WRITE_CHUNKS_TAKEN
  uint32_t min_chunked_length_;
  uint32_t threshold_;
  std::optional<uint32_t> length_word_;
  bool marked_ = false;
  u_int roundup_to_fill_ = 0;
};

// Frees what xdr_replymsg allocated for an accepted reply's verifier
// (clnt_vc does the same). A rejected reply's fields share that memory
// (rm_reply is a union), and a reply that failed to decode may hold any
// reply_stat a peer sent: only MSG_ACCEPTED's verifier is freed.
void FreeReplyVerifier(rpc_msg& reply);

}  // namespace rpcrdma::oncrpc

#endif  // RPCRDMA_ONCRPC_ADAPTER_RDMA_XDR_H_
