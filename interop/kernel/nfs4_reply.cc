// The reply side of the NFS version 4.0 COMPOUND codec (nfs4_xdr.h): the
// streams CompoundReplyDecoder reads from, and the decoder.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "interop/kernel/nfs4_xdr.h"

namespace rpcrdma::test {
namespace {

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(what);
}

std::string ToString(absl::Span<const uint8_t> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace

// ---- Reply streams ---------------------------------------------------------

absl::Status ReplyStream::ReadBool(absl::string_view field, bool* out) {
  uint32_t v = 0;
  absl::Status s = ReadUint32(field, &v);
  if (!s.ok()) return s;
  if (v > 1) {
    return Bad(absl::StrCat("bad boolean ", v, " at ", field, " (offset ",
                            offset() - 4, ")"));
  }
  *out = v == 1;
  return absl::OkStatus();
}

absl::Status SpanReplyStream::ReadUint32(absl::string_view field,
                                         uint32_t* out) {
  return reader_.ReadUint32(field, out);
}

absl::Status SpanReplyStream::ReadUint64(absl::string_view field,
                                         uint64_t* out) {
  return reader_.ReadUint64(field, out);
}

absl::Status SpanReplyStream::ReadVarOpaque(absl::string_view field,
                                            uint32_t max_length,
                                            std::vector<uint8_t>* out) {
  absl::Span<const uint8_t> bytes;
  absl::Status s = reader_.ReadVarOpaque(field, max_length, &bytes);
  if (s.ok()) out->assign(bytes.begin(), bytes.end());
  return s;
}

absl::Status SpanReplyStream::ReadFixedOpaque(absl::string_view field,
                                              size_t length,
                                              std::vector<uint8_t>* out) {
  absl::Span<const uint8_t> bytes;
  absl::Status s = reader_.ReadFixedOpaque(field, length, &bytes);
  if (s.ok()) out->assign(bytes.begin(), bytes.end());
  return s;
}

absl::StatusOr<bool> SpanReplyStream::ReadDdpData(absl::string_view field,
                                                  bool chunk_offered,
                                                  absl::Span<uint8_t> into) {
  // A write chunk the responder did not return counts as unused.
  uint32_t in_chunk = 0;
  if (chunk_offered) {
    const size_t i = next_chunk_++;
    in_chunk = i < chunk_lengths_.size() ? chunk_lengths_[i] : 0;
  }
  if (in_chunk != 0) {
    // RFC 8166 §3.4.6: the content and its roundup are not in the stream.
    if (in_chunk != into.size()) {
      return Bad(absl::StrCat(field, ": the write chunk holds ", in_chunk,
                              " octets, the length word says ", into.size()));
    }
    return true;
  }
  absl::Span<const uint8_t> data;
  absl::Status s = reader_.ReadFixedOpaque(field, into.size(), &data);
  if (!s.ok()) return s;
  std::copy(data.begin(), data.end(), into.begin());
  return false;
}

std::vector<uint8_t> SpanReplyStream::ReadRest() {
  const absl::Span<const uint8_t> rest = reader_.rest();
  absl::Span<const uint8_t> skipped;
  // The rest is whole words whenever the reply is (a short tail stays).
  (void)reader_.ReadFixedOpaque("rest", rest.size() & ~size_t{3}, &skipped);
  return std::vector<uint8_t>(rest.begin(), rest.end());
}

absl::Status SpanReplyStream::CheckChunksTaken() const {
  for (size_t i = next_chunk_; i < chunk_lengths_.size(); ++i) {
    if (chunk_lengths_[i] != 0) {
      return Bad(absl::StrCat("write chunk ", i, " holds ", chunk_lengths_[i],
                              " octets no result accounts for"));
    }
  }
  return absl::OkStatus();
}

// ---- Reply decoder ---------------------------------------------------------

absl::StatusOr<CompoundReplyDecoder> CompoundReplyDecoder::Start(
    absl::Span<const uint8_t> body, std::vector<uint32_t> chunk_lengths,
    std::vector<Op> ops) {
  return Start(
      std::make_unique<SpanReplyStream>(body, std::move(chunk_lengths)),
      std::move(ops));
}

absl::StatusOr<CompoundReplyDecoder> CompoundReplyDecoder::Start(
    std::unique_ptr<ReplyStream> stream, std::vector<Op> ops) {
  CompoundReplyDecoder d(std::move(stream), std::move(ops));
  // RFC 7531 COMPOUND4res: status, tag, resarray<>.
  absl::Status s = d.stream_->ReadUint32("COMPOUND4res.status", &d.status_);
  if (!s.ok()) return s;
  std::vector<uint8_t> tag;
  s = d.stream_->ReadVarOpaque("COMPOUND4res.tag", kMaxTagSize, &tag);
  if (!s.ok()) return s;
  uint32_t count = 0;
  s = d.stream_->ReadUint32("COMPOUND4res.resarray", &count);
  if (!s.ok()) return s;
  // RFC 7530 §15.2: one result per operation evaluated, never more than
  // were sent; fewer only when the last one failed.
  if (count > d.ops_.size()) {
    return Bad(absl::StrCat("COMPOUND4res: ", count, " results for ",
                            d.ops_.size(), " operations"));
  }
  if (count < d.ops_.size() && d.status_ == kNfs4Ok) {
    return Bad(absl::StrCat("COMPOUND4res: NFS4_OK with ", count,
                            " results for ", d.ops_.size(), " operations"));
  }
  if (count == 0 && d.status_ != kNfs4Ok) {
    return absl::FailedPreconditionError(
        absl::StrCat("COMPOUND: ", StatusName(d.status_), " (", d.status_,
                     ") before any operation"));
  }
  d.result_count_ = count;
  return d;
}

absl::Status CompoundReplyDecoder::Next(Op op) {
  if (stopped_) {
    return absl::FailedPreconditionError(
        absl::StrCat(OpName(op),
                     ": not evaluated, an earlier operation "
                     "failed"));
  }
  if (next_result_ >= ops_.size() || ops_[next_result_] != op) {
    return absl::InternalError(absl::StrCat(
        "decoder misuse: result ", next_result_, " read as ", OpName(op)));
  }
  if (next_result_ >= result_count_) {
    return Bad(absl::StrCat("COMPOUND4res: no result for ", OpName(op), " (",
                            result_count_, " results)"));
  }
  ++next_result_;
  uint32_t resop = 0;
  absl::Status s = stream_->ReadUint32("nfs_resop4.resop", &resop);
  if (!s.ok()) return s;
  if (resop != static_cast<uint32_t>(op)) {
    return Bad(absl::StrCat("nfs_resop4: result for operation ", resop,
                            " where ", OpName(op), " (",
                            static_cast<uint32_t>(op), ") was sent"));
  }
  uint32_t status = 0;
  s = stream_->ReadUint32(absl::StrCat(OpName(op), " status"), &status);
  if (!s.ok()) return s;
  if (status != kNfs4Ok) {
    stopped_ = true;
    if (next_result_ != result_count_) {
      return Bad(absl::StrCat(OpName(op), " failed with ", StatusName(status),
                              " but results follow"));
    }
    if (status_ != status) {
      return Bad(absl::StrCat("COMPOUND4res.status ", StatusName(status_),
                              " differs from the failing ", OpName(op), "'s ",
                              StatusName(status)));
    }
    return absl::FailedPreconditionError(
        absl::StrCat(OpName(op), ": ", StatusName(status), " (", status, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint8_t>> CompoundReplyDecoder::Getfh() {
  absl::Status s = Next(Op::kGetfh);
  if (!s.ok()) return s;
  std::vector<uint8_t> fh;
  s = stream_->ReadVarOpaque("GETFH4resok.object", kMaxFhSize, &fh);
  if (!s.ok()) return s;
  return fh;
}

absl::StatusOr<Bitmap> CompoundReplyDecoder::ReadBitmap(
    absl::string_view field) {
  uint32_t words = 0;
  absl::Status s = stream_->ReadUint32(field, &words);
  if (!s.ok()) return s;
  if (words > kMaxBitmapWords) {
    return Bad(absl::StrCat(field, ": ", words, " words, more than ",
                            kMaxBitmapWords));
  }
  Bitmap bitmap(words);
  for (uint32_t& w : bitmap) {
    s = stream_->ReadUint32(field, &w);
    if (!s.ok()) return s;
  }
  return bitmap;
}

absl::StatusOr<Attributes> CompoundReplyDecoder::ReadFattr(
    absl::string_view field) {
  absl::StatusOr<Bitmap> mask = ReadBitmap(absl::StrCat(field, ".attrmask"));
  if (!mask.ok()) return mask.status();
  std::vector<uint8_t> vals;
  absl::Status s = stream_->ReadVarOpaque(absl::StrCat(field, ".attr_vals"),
                                          kMaxAttrValsSize, &vals);
  if (!s.ok()) return s;
  return DecodeAttributes(*mask, vals);
}

absl::StatusOr<Attributes> CompoundReplyDecoder::Getattr() {
  absl::Status s = Next(Op::kGetattr);
  if (!s.ok()) return s;
  return ReadFattr("GETATTR4resok.obj_attributes");
}

absl::StatusOr<ReadResult> CompoundReplyDecoder::Read(
    bool offered_chunk, absl::Span<uint8_t> into) {
  absl::Status s = Next(Op::kRead);
  if (!s.ok()) return s;
  ReadResult r;
  s = stream_->ReadBool("READ4resok.eof", &r.eof);
  if (!s.ok()) return s;
  s = stream_->ReadUint32("READ4resok.data length", &r.length);
  if (!s.ok()) return s;
  if (r.length > into.size()) {
    return Bad(absl::StrCat("READ4resok.data: ", r.length,
                            " octets for a READ of ", into.size()));
  }
  absl::StatusOr<bool> via = stream_->ReadDdpData(
      "READ4resok.data", offered_chunk, into.first(r.length));
  if (!via.ok()) return via.status();
  r.via_chunk = *via;
  return r;
}

absl::StatusOr<WriteResult> CompoundReplyDecoder::Write() {
  absl::Status s = Next(Op::kWrite);
  if (!s.ok()) return s;
  WriteResult w;
  s = stream_->ReadUint32("WRITE4resok.count", &w.count);
  if (!s.ok()) return s;
  uint32_t committed = 0;
  s = stream_->ReadUint32("WRITE4resok.committed", &committed);
  if (!s.ok()) return s;
  if (committed > 2) {
    return Bad(
        absl::StrCat("WRITE4resok.committed: bad stable_how4 ", committed));
  }
  w.committed = static_cast<StableHow>(committed);
  std::vector<uint8_t> verf;
  s = stream_->ReadFixedOpaque("WRITE4resok.writeverf", 8, &verf);
  if (!s.ok()) return s;
  std::copy(verf.begin(), verf.end(), w.verifier.begin());
  return w;
}

absl::StatusOr<ReaddirResult> CompoundReplyDecoder::Readdir() {
  absl::Status s = Next(Op::kReaddir);
  if (!s.ok()) return s;
  ReaddirResult r;
  std::vector<uint8_t> verf;
  s = stream_->ReadFixedOpaque("READDIR4resok.cookieverf", 8, &verf);
  if (!s.ok()) return s;
  std::copy(verf.begin(), verf.end(), r.cookieverf.begin());
  // dirlist4: entry4 *entries (an XDR optional-data list), bool eof. Each
  // entry takes at least 20 octets of the stream, so the loop is bounded by
  // the stream's length.
  for (;;) {
    bool more = false;
    s = stream_->ReadBool("dirlist4 entry follows", &more);
    if (!s.ok()) return s;
    if (!more) break;
    DirEntry e;
    s = stream_->ReadUint64("entry4.cookie", &e.cookie);
    if (!s.ok()) return s;
    std::vector<uint8_t> name;
    s = stream_->ReadVarOpaque("entry4.name", kMaxNameSize, &name);
    if (!s.ok()) return s;
    e.name = ToString(name);
    absl::StatusOr<Attributes> attrs = ReadFattr("entry4.attrs");
    if (!attrs.ok()) return attrs.status();
    e.attrs = *attrs;
    r.entries.push_back(std::move(e));
  }
  s = stream_->ReadBool("dirlist4.eof", &r.eof);
  if (!s.ok()) return s;
  return r;
}

absl::StatusOr<ChangeInfo> CompoundReplyDecoder::ReadChangeInfo() {
  ChangeInfo c;
  absl::Status s = stream_->ReadBool("change_info4.atomic", &c.atomic);
  if (!s.ok()) return s;
  s = stream_->ReadUint64("change_info4.before", &c.before);
  if (!s.ok()) return s;
  s = stream_->ReadUint64("change_info4.after", &c.after);
  if (!s.ok()) return s;
  return c;
}

absl::StatusOr<ChangeInfo> CompoundReplyDecoder::CreateSymlink() {
  absl::Status s = Next(Op::kCreate);
  if (!s.ok()) return s;
  absl::StatusOr<ChangeInfo> c = ReadChangeInfo();
  if (!c.ok()) return c;
  absl::StatusOr<Bitmap> attrset = ReadBitmap("CREATE4resok.attrset");
  if (!attrset.ok()) return attrset.status();
  return c;
}

absl::StatusOr<LinkResult> CompoundReplyDecoder::Readlink(
    bool offered_chunk, absl::Span<uint8_t> chunk) {
  absl::Status s = Next(Op::kReadlink);
  if (!s.ok()) return s;
  uint32_t length = 0;
  s = stream_->ReadUint32("READLINK4resok.link length", &length);
  if (!s.ok()) return s;
  if (length > kMaxLinkSize) {
    return Bad(absl::StrCat("READLINK4resok.link: ", length,
                            " octets, more than ", kMaxLinkSize));
  }
  // A text the chunk can hold is decoded into the chunk's memory (where a
  // responder that used the chunk put it); any other into a buffer.
  std::vector<uint8_t> buffer;
  absl::Span<uint8_t> into;
  if (offered_chunk && length <= chunk.size()) {
    into = chunk.first(length);
  } else {
    buffer.resize(length);
    into = absl::MakeSpan(buffer);
  }
  absl::StatusOr<bool> via =
      stream_->ReadDdpData("READLINK4resok.link", offered_chunk, into);
  if (!via.ok()) return via.status();
  LinkResult r;
  r.via_chunk = *via;
  r.text = ToString(into);
  return r;
}

absl::StatusOr<ChangeInfo> CompoundReplyDecoder::Remove() {
  absl::Status s = Next(Op::kRemove);
  if (!s.ok()) return s;
  return ReadChangeInfo();
}

absl::Status CompoundReplyDecoder::Finish() {
  if (!stopped_ && next_result_ != result_count_) {
    return absl::InternalError(absl::StrCat("decoder misuse: ", next_result_,
                                            " of ", result_count_,
                                            " results read"));
  }
  const size_t at = stream_->offset();
  trailing_ = stream_->ReadRest();
  if (!trailing_.empty()) {
    return Bad(absl::StrCat("COMPOUND4res: ", trailing_.size(),
                            " octets after the last result (offset ", at, ")"));
  }
  return stream_->CheckChunksTaken();
}

}  // namespace rpcrdma::test
