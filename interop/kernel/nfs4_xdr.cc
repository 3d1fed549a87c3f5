#include "interop/kernel/nfs4_xdr.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rpcrdma::test {
namespace {

void PutFixed(std::vector<uint8_t>& out, absl::Span<const uint8_t> bytes) {
  out.insert(out.end(), bytes.begin(), bytes.end());
  out.resize(out.size() + XdrPad(bytes.size()), 0);
}

// RFC 4506 §4.10: length, octets, zero roundup.
void PutOpaque(std::vector<uint8_t>& out, absl::Span<const uint8_t> bytes) {
  AppendBigEndian32(out, static_cast<uint32_t>(bytes.size()));
  PutFixed(out, bytes);
}

void PutString(std::vector<uint8_t>& out, absl::string_view s) {
  PutOpaque(out, absl::Span<const uint8_t>(
                     reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

void PutBitmap(std::vector<uint8_t>& out, const Bitmap& bitmap) {
  AppendBigEndian32(out, static_cast<uint32_t>(bitmap.size()));
  for (uint32_t w : bitmap) AppendBigEndian32(out, w);
}

void PutStateid(std::vector<uint8_t>& out, const Stateid& stateid) {
  AppendBigEndian32(out, stateid.seqid);
  PutFixed(out, stateid.other);
}

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(what);
}

}  // namespace

absl::string_view OpName(Op op) {
  switch (op) {
    case Op::kCreate:
      return "CREATE";
    case Op::kGetattr:
      return "GETATTR";
    case Op::kGetfh:
      return "GETFH";
    case Op::kLookup:
      return "LOOKUP";
    case Op::kPutfh:
      return "PUTFH";
    case Op::kPutrootfh:
      return "PUTROOTFH";
    case Op::kRead:
      return "READ";
    case Op::kReaddir:
      return "READDIR";
    case Op::kReadlink:
      return "READLINK";
    case Op::kRemove:
      return "REMOVE";
    case Op::kWrite:
      return "WRITE";
  }
  return "?";
}

std::string StatusName(uint32_t status) {
  struct Name {
    uint32_t value;
    const char* name;
  };
  // RFC 7531 enum nfsstat4.
  static constexpr Name kNames[] = {
      {0, "NFS4_OK"},
      {1, "NFS4ERR_PERM"},
      {2, "NFS4ERR_NOENT"},
      {5, "NFS4ERR_IO"},
      {6, "NFS4ERR_NXIO"},
      {13, "NFS4ERR_ACCESS"},
      {17, "NFS4ERR_EXIST"},
      {18, "NFS4ERR_XDEV"},
      {20, "NFS4ERR_NOTDIR"},
      {21, "NFS4ERR_ISDIR"},
      {22, "NFS4ERR_INVAL"},
      {27, "NFS4ERR_FBIG"},
      {28, "NFS4ERR_NOSPC"},
      {30, "NFS4ERR_ROFS"},
      {31, "NFS4ERR_MLINK"},
      {63, "NFS4ERR_NAMETOOLONG"},
      {66, "NFS4ERR_NOTEMPTY"},
      {69, "NFS4ERR_DQUOT"},
      {70, "NFS4ERR_STALE"},
      {10001, "NFS4ERR_BADHANDLE"},
      {10003, "NFS4ERR_BAD_COOKIE"},
      {10004, "NFS4ERR_NOTSUPP"},
      {10005, "NFS4ERR_TOOSMALL"},
      {10006, "NFS4ERR_SERVERFAULT"},
      {10007, "NFS4ERR_BADTYPE"},
      {10008, "NFS4ERR_DELAY"},
      {10009, "NFS4ERR_SAME"},
      {10010, "NFS4ERR_DENIED"},
      {10011, "NFS4ERR_EXPIRED"},
      {10012, "NFS4ERR_LOCKED"},
      {10013, "NFS4ERR_GRACE"},
      {10014, "NFS4ERR_FHEXPIRED"},
      {10015, "NFS4ERR_SHARE_DENIED"},
      {10016, "NFS4ERR_WRONGSEC"},
      {10017, "NFS4ERR_CLID_INUSE"},
      {10018, "NFS4ERR_RESOURCE"},
      {10019, "NFS4ERR_MOVED"},
      {10020, "NFS4ERR_NOFILEHANDLE"},
      {10021, "NFS4ERR_MINOR_VERS_MISMATCH"},
      {10022, "NFS4ERR_STALE_CLIENTID"},
      {10023, "NFS4ERR_STALE_STATEID"},
      {10024, "NFS4ERR_OLD_STATEID"},
      {10025, "NFS4ERR_BAD_STATEID"},
      {10026, "NFS4ERR_BAD_SEQID"},
      {10027, "NFS4ERR_NOT_SAME"},
      {10028, "NFS4ERR_LOCK_RANGE"},
      {10029, "NFS4ERR_SYMLINK"},
      {10030, "NFS4ERR_RESTOREFH"},
      {10031, "NFS4ERR_LEASE_MOVED"},
      {10032, "NFS4ERR_ATTRNOTSUPP"},
      {10033, "NFS4ERR_NO_GRACE"},
      {10034, "NFS4ERR_RECLAIM_BAD"},
      {10035, "NFS4ERR_RECLAIM_CONFLICT"},
      {10036, "NFS4ERR_BADXDR"},
      {10037, "NFS4ERR_LOCKS_HELD"},
      {10038, "NFS4ERR_OPENMODE"},
      {10039, "NFS4ERR_BADOWNER"},
      {10040, "NFS4ERR_BADCHAR"},
      {10041, "NFS4ERR_BADNAME"},
      {10042, "NFS4ERR_BAD_RANGE"},
      {10043, "NFS4ERR_LOCK_NOTSUPP"},
      {10044, "NFS4ERR_OP_ILLEGAL"},
      {10045, "NFS4ERR_DEADLOCK"},
      {10046, "NFS4ERR_FILE_OPEN"},
      {10047, "NFS4ERR_ADMIN_REVOKED"},
      {10048, "NFS4ERR_CB_PATH_DOWN"},
  };
  for (const Name& n : kNames) {
    if (n.value == status) return n.name;
  }
  return absl::StrCat("nfsstat4 ", status);
}

Bitmap AttrBitmap(std::initializer_list<uint32_t> attrs) {
  Bitmap bitmap;
  for (uint32_t a : attrs) {
    const size_t word = a / 32;
    if (bitmap.size() <= word) bitmap.resize(word + 1, 0);
    bitmap[word] |= 1u << (a % 32);
  }
  return bitmap;
}

// ---- Encoder ---------------------------------------------------------------

CompoundEncoder::CompoundEncoder(std::vector<uint8_t>& stream,
                                 absl::string_view tag)
    : stream_(stream) {
  // RFC 7531 COMPOUND4args: tag, minorversion, argarray<>.
  PutString(stream_, tag);
  AppendBigEndian32(stream_, kMinorVersion);
  count_offset_ = stream_.size();
  AppendBigEndian32(stream_, 0);
}

void CompoundEncoder::AddOp(Op op) {
  ops_.push_back(op);
  AppendBigEndian32(stream_, static_cast<uint32_t>(op));
}

void CompoundEncoder::Putrootfh() { AddOp(Op::kPutrootfh); }

void CompoundEncoder::Putfh(absl::Span<const uint8_t> fh) {
  AddOp(Op::kPutfh);
  PutOpaque(stream_, fh);
}

void CompoundEncoder::Lookup(absl::string_view name) {
  AddOp(Op::kLookup);
  PutString(stream_, name);
}

void CompoundEncoder::Getfh() { AddOp(Op::kGetfh); }

void CompoundEncoder::Getattr(const Bitmap& attrs) {
  AddOp(Op::kGetattr);
  PutBitmap(stream_, attrs);
}

void CompoundEncoder::Read(const Stateid& stateid, uint64_t offset,
                           uint32_t count) {
  AddOp(Op::kRead);
  PutStateid(stream_, stateid);
  AppendBigEndian64(stream_, offset);
  AppendBigEndian32(stream_, count);
}

void CompoundEncoder::Write(const Stateid& stateid, uint64_t offset,
                            StableHow stable, absl::Span<const uint8_t> data,
                            bool reduce) {
  AddOp(Op::kWrite);
  PutStateid(stream_, stateid);
  AppendBigEndian64(stream_, offset);
  AppendBigEndian32(stream_, static_cast<uint32_t>(stable));
  if (!reduce) {
    PutOpaque(stream_, data);
    return;
  }
  // RFC 8166 §3.4.5: the length word stays; the item's position is where
  // its content would start.
  AppendBigEndian32(stream_, static_cast<uint32_t>(data.size()));
  items_.push_back({static_cast<uint32_t>(stream_.size()), data});
}

void CompoundEncoder::Readdir(uint64_t cookie,
                              const std::array<uint8_t, 8>& cookieverf,
                              uint32_t dircount, uint32_t maxcount,
                              const Bitmap& attrs) {
  AddOp(Op::kReaddir);
  AppendBigEndian64(stream_, cookie);
  PutFixed(stream_, cookieverf);
  AppendBigEndian32(stream_, dircount);
  AppendBigEndian32(stream_, maxcount);
  PutBitmap(stream_, attrs);
}

void CompoundEncoder::CreateSymlink(absl::string_view name,
                                    absl::string_view linktext) {
  AddOp(Op::kCreate);
  // createtype4: NF4LNK arm carries linktext4.
  AppendBigEndian32(stream_, static_cast<uint32_t>(FileType::kSymlink));
  PutString(stream_, linktext);
  PutString(stream_, name);
  // createattrs: an empty fattr4 (no bitmap words, no values).
  PutBitmap(stream_, {});
  AppendBigEndian32(stream_, 0);
}

void CompoundEncoder::Readlink() { AddOp(Op::kReadlink); }

void CompoundEncoder::Remove(absl::string_view name) {
  AddOp(Op::kRemove);
  PutString(stream_, name);
}

std::vector<Op> CompoundEncoder::Finish() {
  StoreBigEndian32(stream_.data() + count_offset_,
                   static_cast<uint32_t>(ops_.size()));
  return std::move(ops_);
}

// ---- Attributes ------------------------------------------------------------

absl::StatusOr<Attributes> DecodeAttributes(const Bitmap& mask,
                                            absl::Span<const uint8_t> vals) {
  Attributes a;
  XdrReader r(vals);
  for (size_t word = 0; word < mask.size(); ++word) {
    for (uint32_t bit = 0; bit < 32; ++bit) {
      if ((mask[word] & (1u << bit)) == 0) continue;
      const uint32_t attr = static_cast<uint32_t>(word * 32 + bit);
      uint32_t v32 = 0;
      uint64_t v64 = 0;
      absl::Status s;
      switch (attr) {
        case kAttrType:
          s = r.ReadUint32("fattr4_type", &v32);
          if (s.ok() && (v32 < 1 || v32 > 7)) {
            return Bad(absl::StrCat("fattr4_type: bad nfs_ftype4 ", v32));
          }
          a.type = static_cast<FileType>(v32);
          break;
        case kAttrChange:
          s = r.ReadUint64("fattr4_change", &v64);
          a.change = v64;
          break;
        case kAttrSize:
          s = r.ReadUint64("fattr4_size", &v64);
          a.size = v64;
          break;
        case kAttrFileid:
          s = r.ReadUint64("fattr4_fileid", &v64);
          a.fileid = v64;
          break;
        case kAttrMaxread:
          s = r.ReadUint64("fattr4_maxread", &v64);
          a.maxread = v64;
          break;
        case kAttrMaxwrite:
          s = r.ReadUint64("fattr4_maxwrite", &v64);
          a.maxwrite = v64;
          break;
        case kAttrMode:
          s = r.ReadUint32("fattr4_mode", &v32);
          a.mode = v32;
          break;
        case kAttrNumlinks:
          s = r.ReadUint32("fattr4_numlinks", &v32);
          a.numlinks = v32;
          break;
        default:
          return Bad(absl::StrCat("fattr4: attribute ", attr,
                                  " is set in the mask but not decodable"));
      }
      if (!s.ok()) return s;
    }
  }
  if (r.remaining() != 0) {
    return Bad(absl::StrCat("fattr4: ", r.remaining(),
                            " octets left after the attributes in the mask"));
  }
  return a;
}

}  // namespace rpcrdma::test
