// A small NFS version 4.0 COMPOUND codec (RFC 7530, XDR from RFC 7531),
// just large enough to drive the Linux kernel's NFS server over
// RPC-over-RDMA: PUTROOTFH, PUTFH, LOOKUP, GETFH, GETATTR, READ, WRITE,
// READDIR, CREATE (symbolic link), READLINK and REMOVE.
//
// The encoder produces the arguments of NFSPROC4_COMPOUND in the form the
// RPC-over-RDMA Upper Layer Binding asks for (RFC 8166 §6, types.h): the
// *reduced* XDR stream plus the DDP-eligible items cut out of it. RFC 8267
// §4.1 names the DDP-eligible items of NFS version 4: the data of
// WRITE4args, the linkdata of the NF4LNK arm of createtype4, the data of
// READ4resok and the linkdata of READLINK4resok. A requester chooses which
// eligible items it actually moves by DDP (RFC 8166 §6.1): this encoder
// reduces WRITE data and sends CREATE's link text inline, as the Linux
// client does (it marks only WRITE payloads for a read chunk at their
// position; any other long call goes as a position-zero read chunk).
//
// The decoder reads COMPOUND4res from a ReplyStream: results in the order
// of the operations sent, each checked against the operation it answers.
// DDP-eligible results are read from their write chunk when the responder
// used it (the stream holds only the length word, RFC 8166 §3.4.6),
// otherwise inline. Every length is checked against what is left of the
// stream and against a protocol bound before it is used. The stream is the
// reduced reply and its write chunks' lengths (tests), or an XDR stream of
// libtirpc, over which an RPC-over-RDMA CLIENT puts write-chunk data back
// itself (nfs4_client.h).
#ifndef RPCRDMA_INTEROP_KERNEL_NFS4_XDR_H_
#define RPCRDMA_INTEROP_KERNEL_NFS4_XDR_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::test {

// RFC 7530 §16 (ONC RPC program 100003, version 4).
constexpr uint32_t kProgram = 100003;
constexpr uint32_t kVersion = 4;
constexpr uint32_t kProcNull = 0;
constexpr uint32_t kProcCompound = 1;
constexpr uint32_t kMinorVersion = 0;

// RFC 7531 nfs_opnum4 (only the operations this codec speaks).
enum class Op : uint32_t {
  kCreate = 6,
  kGetattr = 9,
  kGetfh = 10,
  kLookup = 15,
  kPutfh = 22,
  kPutrootfh = 24,
  kRead = 25,
  kReaddir = 26,
  kReadlink = 27,
  kRemove = 28,
  kWrite = 38,
};
absl::string_view OpName(Op op);

// RFC 7531 nfsstat4 (NFS4_OK and the errors are plain numbers here).
constexpr uint32_t kNfs4Ok = 0;
// "NFS4ERR_NOENT" for 2 and so on; "nfsstat4 <n>" for a value not listed.
std::string StatusName(uint32_t status);

// RFC 7531 nfs_ftype4.
enum class FileType : uint32_t {
  kRegular = 1,
  kDirectory = 2,
  kBlock = 3,
  kCharacter = 4,
  kSymlink = 5,
  kSocket = 6,
  kFifo = 7,
};

// RFC 7531 stable_how4.
enum class StableHow : uint32_t { kUnstable = 0, kDataSync = 1, kFileSync = 2 };

// RFC 7530 §9.1.4.3: the anonymous stateid, all zeros, usable for READ
// and WRITE without OPEN.
struct Stateid {
  uint32_t seqid = 0;
  std::array<uint8_t, 12> other{};
};

// RFC 7530 §5.8 attribute numbers this codec decodes.
constexpr uint32_t kAttrType = 1;
constexpr uint32_t kAttrChange = 3;
constexpr uint32_t kAttrSize = 4;
constexpr uint32_t kAttrFileid = 20;
constexpr uint32_t kAttrMaxread = 30;
constexpr uint32_t kAttrMaxwrite = 31;
constexpr uint32_t kAttrMode = 33;
constexpr uint32_t kAttrNumlinks = 35;

// RFC 7531 bounds this codec enforces on what it decodes.
constexpr uint32_t kMaxFhSize = 128;          // NFS4_FHSIZE
constexpr uint32_t kMaxNameSize = 255;        // a component (NAME_MAX)
constexpr uint32_t kMaxTagSize = 1024;        // utf8str_cs tag
constexpr uint32_t kMaxLinkSize = 65536;      // linktext4
constexpr uint32_t kMaxBitmapWords = 8;       // bitmap4
constexpr uint32_t kMaxAttrValsSize = 65536;  // attrlist4

using Bitmap = std::vector<uint32_t>;
// A bitmap4 with the given attribute numbers set.
Bitmap AttrBitmap(std::initializer_list<uint32_t> attrs);

// A DDP-eligible argument cut out of the stream: its XDR position (the
// offset just after its length word, in the whole RPC call stream) and its
// octets, which the caller keeps alive until the call completes.
struct DdpItem {
  uint32_t position = 0;
  absl::Span<const uint8_t> data;
};

// Builds COMPOUND4args after an RPC call header.
class CompoundEncoder {
 public:
  // `stream` already holds the RPC call header (RFC 5531 §9); positions of
  // DDP items count from its first octet, the XID. Appends the tag,
  // minorversion 0 and the operation count, which Finish() fills in.
  CompoundEncoder(std::vector<uint8_t>& stream, absl::string_view tag);

  void Putrootfh();
  void Putfh(absl::Span<const uint8_t> fh);
  void Lookup(absl::string_view name);
  void Getfh();
  void Getattr(const Bitmap& attrs);
  void Read(const Stateid& stateid, uint64_t offset, uint32_t count);
  // WRITE4args: the data is DDP-eligible (RFC 8267 §4.1): the stream keeps
  // its length word and the item is recorded, unless `reduce` is false,
  // when the data goes inline with its XDR roundup.
  void Write(const Stateid& stateid, uint64_t offset, StableHow stable,
             absl::Span<const uint8_t> data, bool reduce = true);
  void Readdir(uint64_t cookie, const std::array<uint8_t, 8>& cookieverf,
               uint32_t dircount, uint32_t maxcount, const Bitmap& attrs);
  // CREATE of type NF4LNK with no attributes; the link text goes inline.
  void CreateSymlink(absl::string_view name, absl::string_view linktext);
  void Readlink();
  void Remove(absl::string_view name);

  // Writes the operation count into the header; returns the operations in
  // order. The encoder must not be used afterwards.
  std::vector<Op> Finish();
  const std::vector<DdpItem>& ddp_items() const { return items_; }

 private:
  void AddOp(Op op);

  std::vector<uint8_t>& stream_;
  size_t count_offset_ = 0;
  std::vector<Op> ops_;
  std::vector<DdpItem> items_;
};

// Decoded attributes (fattr4) of the kinds this codec knows; an attribute
// the server did not return stays unset.
struct Attributes {
  std::optional<FileType> type;
  std::optional<uint64_t> change;
  std::optional<uint64_t> size;
  std::optional<uint64_t> fileid;
  std::optional<uint64_t> maxread;
  std::optional<uint64_t> maxwrite;
  std::optional<uint32_t> mode;
  std::optional<uint32_t> numlinks;
};
// Decodes fattr4 values (attrlist4) for the attributes set in `mask`, in
// increasing attribute number. INVALID_ARGUMENT for an attribute this codec
// cannot decode or octets left over; OUT_OF_RANGE when truncated.
absl::StatusOr<Attributes> DecodeAttributes(const Bitmap& mask,
                                            absl::Span<const uint8_t> vals);

struct ReadResult {
  bool eof = false;
  uint32_t length = 0;     // data octets returned
  bool via_chunk = false;  // the responder put them in the write chunk
};

struct WriteResult {
  uint32_t count = 0;
  StableHow committed = StableHow::kUnstable;
  std::array<uint8_t, 8> verifier{};
};

struct DirEntry {
  uint64_t cookie = 0;
  std::string name;
  Attributes attrs;
};

struct ReaddirResult {
  std::array<uint8_t, 8> cookieverf{};
  std::vector<DirEntry> entries;
  bool eof = false;
};

struct ChangeInfo {
  bool atomic = false;
  uint64_t before = 0;
  uint64_t after = 0;
};

struct LinkResult {
  std::string text;
  bool via_chunk = false;
};

// What CompoundReplyDecoder reads a reply from. Each Read* consumes its
// item only on success; failures name the field (OUT_OF_RANGE when the
// stream ends first, INVALID_ARGUMENT for a bad value).
class ReplyStream {
 public:
  virtual ~ReplyStream() = default;
  virtual absl::Status ReadUint32(absl::string_view field, uint32_t* out) = 0;
  virtual absl::Status ReadUint64(absl::string_view field, uint64_t* out) = 0;
  // RFC 4506 §4.4: 0 or 1.
  absl::Status ReadBool(absl::string_view field, bool* out);
  // A variable-length opaque of at most `max_length` octets (RFC 4506
  // §4.10), and a fixed-length one (§4.9), without their roundup.
  virtual absl::Status ReadVarOpaque(absl::string_view field,
                                     uint32_t max_length,
                                     std::vector<uint8_t>* out) = 0;
  virtual absl::Status ReadFixedOpaque(absl::string_view field, size_t length,
                                       std::vector<uint8_t>* out) = 0;
  // The content of a DDP-eligible opaque whose length word (into.size())
  // was just read, into `into`; true when a write chunk carried it (RFC
  // 8166 §3.4.6: the stream then holds neither the content nor its
  // roundup). `chunk_offered`: the call offered a write chunk for it.
  virtual absl::StatusOr<bool> ReadDdpData(absl::string_view field,
                                           bool chunk_offered,
                                           absl::Span<uint8_t> into) = 0;
  // Consumes and returns what is left of the stream.
  virtual std::vector<uint8_t> ReadRest() = 0;
  // Octets consumed since the start of the COMPOUND4res.
  virtual size_t offset() const = 0;
  // OK when every write chunk the responder filled was taken by a result.
  virtual absl::Status CheckChunksTaken() const = 0;
};

// A reduced reply in memory with the lengths the responder wrote into each
// write chunk the call offered, in order. It has the chunks' lengths only:
// data that came through a chunk is wherever the chunk's memory was.
class SpanReplyStream final : public ReplyStream {
 public:
  SpanReplyStream(absl::Span<const uint8_t> body,
                  std::vector<uint32_t> chunk_lengths)
      : reader_(body), chunk_lengths_(std::move(chunk_lengths)) {}
  absl::Status ReadUint32(absl::string_view field, uint32_t* out) override;
  absl::Status ReadUint64(absl::string_view field, uint64_t* out) override;
  absl::Status ReadVarOpaque(absl::string_view field, uint32_t max_length,
                             std::vector<uint8_t>* out) override;
  absl::Status ReadFixedOpaque(absl::string_view field, size_t length,
                               std::vector<uint8_t>* out) override;
  absl::StatusOr<bool> ReadDdpData(absl::string_view field, bool chunk_offered,
                                   absl::Span<uint8_t> into) override;
  std::vector<uint8_t> ReadRest() override;
  size_t offset() const override { return reader_.offset(); }
  absl::Status CheckChunksTaken() const override;

 private:
  XdrReader reader_;
  std::vector<uint32_t> chunk_lengths_;
  size_t next_chunk_ = 0;
};

// Reads COMPOUND4res. Each Read* call consumes the next result, which must
// answer the operation named (the order of CompoundEncoder::Finish()); a
// result whose nfsstat4 is not NFS4_OK yields FAILED_PRECONDITION naming
// the operation and the status (e.g. "LOOKUP: NFS4ERR_NOENT (2)"), and the
// reply ends there (RFC 7530 §15.2: a COMPOUND stops at the first error).
class CompoundReplyDecoder {
 public:
  // Reads from `stream`; `ops` are the operations sent.
  static absl::StatusOr<CompoundReplyDecoder> Start(
      std::unique_ptr<ReplyStream> stream, std::vector<Op> ops);
  // `body` is the reply from the RPC results on (the reduced stream);
  // `chunk_lengths` the octets the responder wrote into each write chunk
  // the call offered, in order (a SpanReplyStream).
  static absl::StatusOr<CompoundReplyDecoder> Start(
      absl::Span<const uint8_t> body, std::vector<uint32_t> chunk_lengths,
      std::vector<Op> ops);

  uint32_t status() const { return status_; }
  size_t result_count() const { return result_count_; }

  absl::Status Putrootfh() { return Simple(Op::kPutrootfh); }
  absl::Status Putfh() { return Simple(Op::kPutfh); }
  absl::Status Lookup() { return Simple(Op::kLookup); }
  absl::StatusOr<std::vector<uint8_t>> Getfh();
  absl::StatusOr<Attributes> Getattr();
  // `offered_chunk`: the call offered a write chunk for this result.
  // The data goes into `into`, whose size is the count the READ asked for
  // (no copy when `into` is the chunk's memory).
  absl::StatusOr<ReadResult> Read(bool offered_chunk, absl::Span<uint8_t> into);
  absl::StatusOr<WriteResult> Write();
  absl::StatusOr<ReaddirResult> Readdir();
  absl::StatusOr<ChangeInfo> CreateSymlink();
  // With `offered_chunk`, a text that fits `chunk` (the chunk's memory) is
  // decoded there; LinkResult::text holds it either way.
  absl::StatusOr<LinkResult> Readlink(bool offered_chunk,
                                      absl::Span<uint8_t> chunk = {});
  absl::StatusOr<ChangeInfo> Remove();
  // Every result read, nothing left in the stream, every write chunk
  // accounted for.
  absl::Status Finish();
  // What Finish() found after the last result (the octets it reports).
  const std::vector<uint8_t>& trailing() const { return trailing_; }

 private:
  CompoundReplyDecoder(std::unique_ptr<ReplyStream> stream, std::vector<Op> ops)
      : stream_(std::move(stream)), ops_(std::move(ops)) {}
  // Reads the next resop and its status; OK only for NFS4_OK.
  absl::Status Next(Op op);
  absl::Status Simple(Op op) { return Next(op); }
  absl::StatusOr<ChangeInfo> ReadChangeInfo();
  absl::StatusOr<Bitmap> ReadBitmap(absl::string_view field);
  absl::StatusOr<Attributes> ReadFattr(absl::string_view field);

  std::unique_ptr<ReplyStream> stream_;
  std::vector<Op> ops_;
  std::vector<uint8_t> trailing_;
  uint32_t status_ = 0;
  size_t result_count_ = 0;
  size_t next_result_ = 0;
  bool stopped_ = false;
};

}  // namespace rpcrdma::test

#endif  // RPCRDMA_INTEROP_KERNEL_NFS4_XDR_H_
