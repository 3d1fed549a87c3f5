// A minimal NFS version 4.0 client over rpcrdma::Channel: each method is
// one COMPOUND (RFC 7530 §15.2) sent as an ONC RPC call (RFC 5531) with
// the AUTH_SYS credential given at construction.
//
// Why NFSv4.0 COMPOUNDs with PUTROOTFH/LOOKUP and the anonymous stateid:
// everything then goes over the one RPC-over-RDMA connection to port 20049.
// NFSv3 would need the MOUNT protocol for the root file handle and
// rpcbind to find it, both over TCP/UDP, which the test VM does not run;
// NFSv4.0 starts from PUTROOTFH and walks the pseudo file system with
// LOOKUP. READ and WRITE with the anonymous stateid (RFC 7530 §9.1.4.3)
// need no SETCLIENTID/OPEN state, so each operation is a single,
// self-contained call (and the NFSv4.1 session machinery is not needed).
//
// DDP (RFC 8267 §4.1, RFC 8166 §6): READ data lands through a write chunk
// in the caller's buffer; WRITE data goes as a read chunk the server pulls
// with RDMA Read (or inline when the call fits the inline threshold);
// READLINK's link text may be given a write chunk. Everything else is
// inline or, when too large, goes through the transport's long-call and
// reply-chunk forms without the client doing anything.
#ifndef RPCRDMA_INTEROP_KERNEL_NFS4_CLIENT_H_
#define RPCRDMA_INTEROP_KERNEL_NFS4_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "interop/kernel/nfs4_xdr.h"
#include "oncrpc/rpc_msg.h"
#include "rpcrdma/channel.h"

namespace rpcrdma::nfs4 {

using FileHandle = std::vector<uint8_t>;

class Client {
 public:
  // `channel` must outlive the client. XIDs count up from `first_xid`.
  Client(Channel& channel, oncrpc::OpaqueAuth credential, uint32_t first_xid);

  // NFSPROC4_NULL: no arguments, no results (RFC 7530 §16.1).
  absl::Status Null();

  // PUTROOTFH, LOOKUP of each component, GETFH.
  absl::StatusOr<FileHandle> Lookup(const std::vector<std::string>& path);
  absl::StatusOr<Attributes> Getattr(const FileHandle& fh, const Bitmap& attrs);

  // PUTFH, READ of `into.size()` octets at `offset` with the anonymous
  // stateid. The data item is given a write chunk over `into`.
  absl::StatusOr<ReadResult> Read(const FileHandle& fh, uint64_t offset,
                                  absl::Span<uint8_t> into);
  // The same, completing on the Channel's loop thread. `into` must stay
  // valid until `done` has run.
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

  // PUTFH, READDIR: one page of at most `maxcount` octets of entries.
  absl::StatusOr<ReaddirResult> Readdir(
      const FileHandle& dir, uint64_t cookie,
      const std::array<uint8_t, 8>& cookieverf, uint32_t maxcount,
      const Bitmap& attrs);

  // PUTFH, CREATE (NF4LNK) of `name` in `dir` pointing at `text`.
  absl::StatusOr<ChangeInfo> CreateSymlink(const FileHandle& dir,
                                           absl::string_view name,
                                           absl::string_view text);
  // PUTFH, READLINK. With a non-empty `chunk`, the link text is given a
  // write chunk over it; LinkResult::text is filled either way.
  absl::StatusOr<LinkResult> Readlink(const FileHandle& fh,
                                      absl::Span<uint8_t> chunk);
  // PUTFH, REMOVE `name` from `dir`.
  absl::StatusOr<ChangeInfo> Remove(const FileHandle& dir,
                                    absl::string_view name);

  // The reply of the latest synchronous call (its reduced stream and write
  // chunk lengths), for tests that check what came on the wire.
  const Reply& last_reply() const { return last_reply_; }

 private:
  struct Prepared {
    CallRequest request;
    std::vector<Op> ops;
  };
  // Starts a COMPOUND call: the RPC header and COMPOUND4args prefix are in
  // the returned request; `build` adds the operations.
  Prepared Compound(const std::function<void(CompoundEncoder&)>& build,
                    uint32_t max_reply_size);
  // Runs the call, checks the RPC reply header and the COMPOUND4res
  // header, and lets `read` decode the results; then checks that nothing
  // is left over.
  template <typename T>
  absl::StatusOr<T> Exchange(
      Prepared p,
      const std::function<absl::StatusOr<T>(CompoundReplyDecoder&)>& read);

  Channel& channel_;
  oncrpc::OpaqueAuth credential_;
  std::atomic<uint32_t> next_xid_;
  Reply last_reply_;
};

// Checks an RPC reply header (RFC 5531 §9) for an accepted, successful
// reply to `xid` and returns where the results start.
absl::StatusOr<size_t> CheckRpcReply(const Reply& reply, uint32_t xid);

}  // namespace rpcrdma::nfs4

#endif  // RPCRDMA_INTEROP_KERNEL_NFS4_CLIENT_H_
