// A minimal NFS version 4.0 client over rpcrdma's ONC RPC adapter: each
// method is one COMPOUND (RFC 7530 §15.2) made with clnt_call() on a
// CLIENT of clnt_rdma_create (rpcrdma/oncrpc/clnt_rdma.h), with the
// AUTH_SYS credential of root.
//
// Why NFSv4.0 COMPOUNDs with PUTROOTFH/LOOKUP and the anonymous stateid:
// everything then goes over the one RPC-over-RDMA connection to port 20049
// (NFSv3 needs the MOUNT protocol over TCP or UDP for its root file handle:
// nfs3_interop_test.cc). NFSv4.0 starts from PUTROOTFH and walks the pseudo
// file system with LOOKUP. READ and WRITE with the anonymous stateid (RFC
// 7530 §9.1.4.3) need no SETCLIENTID/OPEN state, so each operation is a
// single, self-contained call (and the NFSv4.1 session machinery is not
// needed).
//
// The COMPOUNDs go through the adapter as XDR routines (EncodeCompoundCall,
// DecodeCompoundReply below) around the hand-written codec of nfs4_xdr.h.
// DDP (RFC 8267 §4.1, RFC 8166 §6) is the routines' choice, made with the
// adapter's XDR_CONTROL requests (rpcrdma/oncrpc/xdr_rdma.h): WRITE data is
// marked DDP-eligible (XDR_RDMA_DDP_NEXT), so the transport sends it inline
// or as a read chunk; READ data (and READLINK's text, when asked) gets a
// write chunk over the caller's buffer (XDR_RDMA_WRITE_CHUNK), where the
// server's RDMA Writes land without a copy; READDIR and READLINK offer a
// reply chunk (XDR_RDMA_REPLY_CHUNK). The program's DDP policy makes
// nothing else eligible and offers no other chunk, so each call carries
// exactly the chunks its method says.
#ifndef RPCRDMA_INTEROP_KERNEL_NFS4_CLIENT_H_
#define RPCRDMA_INTEROP_KERNEL_NFS4_CLIENT_H_

#include <rpc/rpc.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "interop/kernel/nfs4_xdr.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/oncrpc/clnt_rdma.h"

namespace rpcrdma::test {

using FileHandle = std::vector<uint8_t>;

// The argument of EncodeCompoundCall: COMPOUND4args as CompoundEncoder
// wrote them (the reduced stream, without an RPC header, and its DDP items,
// at positions counted from the stream's start), and the chunks the call
// offers.
struct CompoundCall {
  std::vector<uint8_t> stream;
  std::vector<DdpItem> items;
  // Write chunks in the caller's memory, in the order of the results that
  // may use them.
  std::vector<absl::Span<uint8_t>> write_chunks;
  // A reply chunk for a reduced reply of up to this many octets (0: none).
  uint32_t reply_chunk = 0;
};

// An xdrproc_t: puts the call's octets, each DDP item marked with
// XDR_RDMA_DDP_NEXT after its length word, and offers its chunks. FALSE on
// a stream that refuses the requests (not RPC-over-RDMA).
bool_t EncodeCompoundCall(XDR* xdrs, CompoundCall* call);

// What a reply looked like on the wire, for tests that check it.
struct ReplyShape {
  // Octets of the reduced reply: the RPC reply header and the results,
  // without what came through write chunks (the XDR stream's position at
  // the end of the results).
  size_t reduced_octets = 0;
  // The length of each result that came through a write chunk, in order.
  std::vector<uint32_t> chunk_lengths;
  // Octets found after the last result (none in a valid reply).
  std::vector<uint8_t> trailing;
};

// The result argument of DecodeCompoundReply: `read` decodes the results
// of `ops` with a CompoundReplyDecoder over the XDR stream. The decoder's
// outcome lands in `status`; the routine fails (RPC_CANTDECODERES) when the
// reply does not decode, and succeeds when it does, whatever the NFS status
// of the operations.
struct CompoundReply {
  std::vector<Op> ops;
  std::function<absl::Status(CompoundReplyDecoder&)> read;
  absl::Status status;
  ReplyShape shape;
};
bool_t DecodeCompoundReply(XDR* xdrs, CompoundReply* reply);

// What the latest call on this thread's Client ended with, as the CLIENT
// API reports it.
struct CallOutcome {
  clnt_stat stat = RPC_SUCCESS;
  int error_number = 0;  // clnt_geterr()'s re_errno (transport errors)
  std::string message;   // rdma_oncrpc_error() after a failure
  ReplyShape shape;      // of the reply decoded, when there was one
};

class Client {
 public:
  // A CLIENT of NFS version 4 at `uri` (clnt_rdma_create's C++ form,
  // CreateClient) with the transport configuration `transport`; XIDs
  // count up from `first_xid`.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(
      absl::string_view uri, const config::TransportConfig& transport,
      uint32_t first_xid);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  CLIENT* handle() { return clnt_; }
  // The Channel under the CLIENT (counters, connection_info()).
  Channel& channel() { return *oncrpc::ChannelOf(clnt_); }

  // NFSPROC4_NULL: no arguments, no results (RFC 7530 §16.1).
  absl::Status Null();

  // PUTROOTFH, LOOKUP of each component, GETFH.
  absl::StatusOr<FileHandle> Lookup(const std::vector<std::string>& path);
  absl::StatusOr<Attributes> Getattr(const FileHandle& fh, const Bitmap& attrs);

  // PUTFH, READ of `into.size()` octets at `offset` with the anonymous
  // stateid, the data item given a write chunk over `into`.
  absl::StatusOr<ReadResult> Read(const FileHandle& fh, uint64_t offset,
                                  absl::Span<uint8_t> into);
  // PUTFH, READ of `count` octets offering a write chunk over `chunk`,
  // which may be smaller than `count` (the data lands in `chunk`).
  absl::StatusOr<ReadResult> ReadIntoChunk(const FileHandle& fh,
                                           uint64_t offset, uint32_t count,
                                           absl::Span<uint8_t> chunk);
  // Read() without waiting (clnt_rdma_call_async): `done` runs on the
  // connection's loop thread and may start further calls. `into` must stay
  // valid until then.
  void ReadAsync(const FileHandle& fh, uint64_t offset,
                 absl::Span<uint8_t> into,
                 std::function<void(absl::StatusOr<ReadResult>)> done);

  // PUTFH and one READ per piece, in one COMPOUND: each READ's data gets
  // its own write chunk, in order (RFC 8166 §3.4.7: a write list of
  // several chunks).
  struct ReadPiece {
    uint64_t offset = 0;
    absl::Span<uint8_t> into;
  };
  absl::StatusOr<std::vector<ReadResult>> ReadPieces(
      const FileHandle& fh, const std::vector<ReadPiece>& pieces);

  // PUTFH, WRITE of `data` at `offset`; the data is DDP-eligible.
  absl::StatusOr<WriteResult> Write(const FileHandle& fh, uint64_t offset,
                                    absl::Span<const uint8_t> data,
                                    StableHow stable);

  // PUTFH, READDIR: one page of at most `maxcount` octets of entries. The
  // call offers a reply chunk of `reply_chunk` octets (default: maxcount
  // and room for the headers; 0: none).
  absl::StatusOr<ReaddirResult> Readdir(
      const FileHandle& dir, uint64_t cookie,
      const std::array<uint8_t, 8>& cookieverf, uint32_t maxcount,
      const Bitmap& attrs, std::optional<uint32_t> reply_chunk = {});

  // PUTFH, CREATE (NF4LNK) of `name` in `dir` pointing at `text`.
  absl::StatusOr<ChangeInfo> CreateSymlink(const FileHandle& dir,
                                           absl::string_view name,
                                           absl::string_view text);
  // PUTFH, READLINK. With a non-empty `chunk`, the link text is given a
  // write chunk over it; without, a reply chunk for the longest text.
  // LinkResult::text is filled either way.
  absl::StatusOr<LinkResult> Readlink(const FileHandle& fh,
                                      absl::Span<uint8_t> chunk);
  // PUTFH, REMOVE `name` from `dir`.
  absl::StatusOr<ChangeInfo> Remove(const FileHandle& dir,
                                    absl::string_view name);

  // How the calling thread's latest synchronous call (of any Client) ended.
  const CallOutcome& last() const;

 private:
  explicit Client(CLIENT* clnt, AUTH* auth) : clnt_(clnt), auth_(auth) {}
  // Builds COMPOUND4args with `build`, makes the call and decodes the
  // results with `read`, recording the outcome.
  template <typename T>
  absl::StatusOr<T> Exchange(
      const std::function<void(CompoundEncoder&)>& build, CompoundCall call,
      const std::function<absl::StatusOr<T>(CompoundReplyDecoder&)>& read);
  absl::Status Call(rpcproc_t procedure, xdrproc_t encode, void* arguments,
                    xdrproc_t decode, void* results, const ReplyShape* shape,
                    const absl::Status* decoded);

  CLIENT* clnt_;
  AUTH* auth_;
};

// The COMPOUND4args of `build` as EncodeCompoundCall takes them.
CompoundCall BuildCompound(const std::function<void(CompoundEncoder&)>& build,
                           std::vector<Op>* ops);

}  // namespace rpcrdma::test

#endif  // RPCRDMA_INTEROP_KERNEL_NFS4_CLIENT_H_
