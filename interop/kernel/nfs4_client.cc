#include "interop/kernel/nfs4_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rpcrdma::nfs4 {
namespace {

// Largest reduced replies of the COMPOUNDs below: the RPC reply header (24
// octets with an AUTH_NONE verifier, at most 424 with any verifier) plus
// the COMPOUND4res, whose largest here is a LOOKUP walk ending in a file
// handle of at most 128 octets. Results that go through a write chunk are
// not counted (types.h).
constexpr uint32_t kSmallReply = 1024;
// READDIR4resok holds at most maxcount octets (RFC 7530 §16.24.4); the
// headers around it fit in this.
constexpr uint32_t kReplyOverhead = 1024;
// Linux limits symbolic link text to PATH_MAX.
constexpr uint32_t kMaxLinkText = 4096;

uint32_t XidOf(const std::vector<uint8_t>& stream) {
  return wire::LoadBigEndian32(stream.data());
}

absl::Status Annotate(const absl::Status& s, absl::string_view what) {
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

// Checks the reply and starts decoding its COMPOUND4res.
absl::StatusOr<CompoundReplyDecoder> StartDecoding(const Reply& reply,
                                                   uint32_t xid,
                                                   const std::vector<Op>& ops) {
  absl::StatusOr<size_t> body = CheckRpcReply(reply, xid);
  if (!body.ok()) return body.status();
  return CompoundReplyDecoder::Start(
      absl::MakeConstSpan(reply.xdr).subspan(*body), reply.result_lengths, ops);
}

absl::StatusOr<ReadResult> DecodeRead(const absl::StatusOr<Reply>& reply,
                                      uint32_t xid, const std::vector<Op>& ops,
                                      absl::Span<uint8_t> into) {
  if (!reply.ok()) return reply.status();
  absl::StatusOr<CompoundReplyDecoder> d = StartDecoding(*reply, xid, ops);
  if (!d.ok()) return d.status();
  absl::Status s = d->Putfh();
  if (!s.ok()) return s;
  absl::StatusOr<ReadResult> r =
      d->Read(/*offered_chunk=*/true, static_cast<uint32_t>(into.size()));
  if (!r.ok()) return r.status();
  s = d->Finish();
  if (!s.ok()) return s;
  // Data the server sent inline instead of through the chunk ends up in
  // `into` all the same.
  if (!r->via_chunk) {
    std::copy(r->inline_data.begin(), r->inline_data.end(), into.begin());
  }
  return r;
}

}  // namespace

absl::StatusOr<size_t> CheckRpcReply(const Reply& reply, uint32_t xid) {
  absl::StatusOr<oncrpc::DecodedReply> d = oncrpc::DecodeReplyHeader(reply.xdr);
  if (!d.ok()) return Annotate(d.status(), "RPC reply header");
  if (d->header.xid != xid) {
    return absl::DataLossError(
        absl::StrCat("reply XID ", d->header.xid, " for call XID ", xid));
  }
  absl::Status s = oncrpc::ReplyStatus(d->header);
  if (!s.ok()) return s;
  return d->body_offset;
}

Client::Client(Channel& channel, oncrpc::OpaqueAuth credential,
               uint32_t first_xid)
    : channel_(channel),
      credential_(std::move(credential)),
      next_xid_(first_xid) {}

absl::Status Client::Null() {
  CallRequest r;
  absl::Status s =
      oncrpc::EncodeCallHeader({next_xid_++, kProgram, kVersion, kProcNull,
                                credential_, oncrpc::AuthNone()},
                               r.xdr);
  if (!s.ok()) return s;
  r.max_reply_size = kSmallReply;
  const uint32_t xid = XidOf(r.xdr);
  absl::StatusOr<Reply> reply = channel_.Call(std::move(r)).get();
  if (!reply.ok()) return reply.status();
  last_reply_ = *reply;
  absl::StatusOr<size_t> body = CheckRpcReply(*reply, xid);
  if (!body.ok()) return body.status();
  // NULL has void results (RFC 7530 §16.1).
  if (*body != reply->xdr.size()) {
    return absl::DataLossError(absl::StrCat(
        "NULL reply carries ", reply->xdr.size() - *body, " result octets"));
  }
  return absl::OkStatus();
}

Client::Prepared Client::Compound(
    const std::function<void(CompoundEncoder&)>& build,
    uint32_t max_reply_size) {
  Prepared p;
  // Encoding fails only for an auth body over 400 octets, which an
  // OpaqueAuth from oncrpc::AuthSys/AuthNone never has.
  (void)oncrpc::EncodeCallHeader(
      {next_xid_++, kProgram, kVersion, kProcCompound, credential_,
       oncrpc::AuthNone()},
      p.request.xdr);
  CompoundEncoder enc(p.request.xdr, "");
  build(enc);
  p.ops = enc.Finish();
  for (const DdpItem& item : enc.ddp_items()) {
    p.request.arguments.push_back({item.position, item.data});
  }
  p.request.max_reply_size = max_reply_size;
  return p;
}

template <typename T>
absl::StatusOr<T> Client::Exchange(
    Prepared p,
    const std::function<absl::StatusOr<T>(CompoundReplyDecoder&)>& read) {
  const uint32_t xid = XidOf(p.request.xdr);
  absl::StatusOr<Reply> reply = channel_.Call(std::move(p.request)).get();
  if (!reply.ok()) return reply.status();
  last_reply_ = *reply;
  absl::StatusOr<CompoundReplyDecoder> d = StartDecoding(*reply, xid, p.ops);
  if (!d.ok()) return d.status();
  absl::StatusOr<T> result = read(*d);
  if (!result.ok()) return result.status();
  absl::Status s = d->Finish();
  if (!s.ok()) return s;
  return result;
}

absl::StatusOr<FileHandle> Client::Lookup(
    const std::vector<std::string>& path) {
  Prepared p = Compound(
      [&](CompoundEncoder& e) {
        e.Putrootfh();
        for (const std::string& c : path) e.Lookup(c);
        e.Getfh();
      },
      kSmallReply);
  return Exchange<FileHandle>(
      std::move(p), [&](CompoundReplyDecoder& d) -> absl::StatusOr<FileHandle> {
        absl::Status s = d.Putrootfh();
        for (size_t i = 0; s.ok() && i < path.size(); ++i) {
          s = d.Lookup();
          if (!s.ok()) s = Annotate(s, absl::StrCat("\"", path[i], "\""));
        }
        if (!s.ok()) return s;
        return d.Getfh();
      });
}

absl::StatusOr<Attributes> Client::Getattr(const FileHandle& fh,
                                           const Bitmap& attrs) {
  Prepared p = Compound(
      [&](CompoundEncoder& e) {
        e.Putfh(fh);
        e.Getattr(attrs);
      },
      kSmallReply);
  return Exchange<Attributes>(
      std::move(p), [](CompoundReplyDecoder& d) -> absl::StatusOr<Attributes> {
        absl::Status s = d.Putfh();
        if (!s.ok()) return s;
        return d.Getattr();
      });
}

absl::StatusOr<ReadResult> Client::Read(const FileHandle& fh, uint64_t offset,
                                        absl::Span<uint8_t> into) {
  Prepared p = Compound(
      [&](CompoundEncoder& e) {
        e.Putfh(fh);
        e.Read(Stateid{}, offset, static_cast<uint32_t>(into.size()));
      },
      kSmallReply);
  p.request.results.push_back(into);
  const uint32_t xid = XidOf(p.request.xdr);
  absl::StatusOr<Reply> reply = channel_.Call(std::move(p.request)).get();
  if (reply.ok()) last_reply_ = *reply;
  return DecodeRead(reply, xid, p.ops, into);
}

void Client::ReadAsync(const FileHandle& fh, uint64_t offset,
                       absl::Span<uint8_t> into,
                       std::function<void(absl::StatusOr<ReadResult>)> done) {
  Prepared p = Compound(
      [&](CompoundEncoder& e) {
        e.Putfh(fh);
        e.Read(Stateid{}, offset, static_cast<uint32_t>(into.size()));
      },
      kSmallReply);
  p.request.results.push_back(into);
  const uint32_t xid = XidOf(p.request.xdr);
  channel_.Call(std::move(p.request),
                [xid, ops = std::move(p.ops), into,
                 done = std::move(done)](absl::StatusOr<Reply> reply) {
                  done(DecodeRead(reply, xid, ops, into));
                });
}

absl::StatusOr<std::vector<ReadResult>> Client::ReadPieces(
    const FileHandle& fh, const std::vector<ReadPiece>& pieces) {
  Prepared p = Compound(
      [&](CompoundEncoder& e) {
        e.Putfh(fh);
        for (const ReadPiece& piece : pieces) {
          e.Read(Stateid{}, piece.offset,
                 static_cast<uint32_t>(piece.into.size()));
        }
      },
      kSmallReply);
  for (const ReadPiece& piece : pieces) p.request.results.push_back(piece.into);
  return Exchange<std::vector<ReadResult>>(
      std::move(p),
      [&](CompoundReplyDecoder& d) -> absl::StatusOr<std::vector<ReadResult>> {
        absl::Status s = d.Putfh();
        if (!s.ok()) return s;
        std::vector<ReadResult> results;
        for (const ReadPiece& piece : pieces) {
          absl::StatusOr<ReadResult> r =
              d.Read(true, static_cast<uint32_t>(piece.into.size()));
          if (!r.ok()) return r.status();
          if (!r->via_chunk) {
            std::copy(r->inline_data.begin(), r->inline_data.end(),
                      piece.into.begin());
          }
          results.push_back(*std::move(r));
        }
        return results;
      });
}

absl::StatusOr<WriteResult> Client::Write(const FileHandle& fh, uint64_t offset,
                                          absl::Span<const uint8_t> data,
                                          StableHow stable) {
  Prepared p = Compound(
      [&](CompoundEncoder& e) {
        e.Putfh(fh);
        e.Write(Stateid{}, offset, stable, data);
      },
      kSmallReply);
  return Exchange<WriteResult>(
      std::move(p), [](CompoundReplyDecoder& d) -> absl::StatusOr<WriteResult> {
        absl::Status s = d.Putfh();
        if (!s.ok()) return s;
        return d.Write();
      });
}

absl::StatusOr<ReaddirResult> Client::Readdir(
    const FileHandle& dir, uint64_t cookie,
    const std::array<uint8_t, 8>& cookieverf, uint32_t maxcount,
    const Bitmap& attrs) {
  Prepared p = Compound(
      [&](CompoundEncoder& e) {
        e.Putfh(dir);
        e.Readdir(cookie, cookieverf, maxcount, maxcount, attrs);
      },
      maxcount + kReplyOverhead);
  return Exchange<ReaddirResult>(
      std::move(p),
      [](CompoundReplyDecoder& d) -> absl::StatusOr<ReaddirResult> {
        absl::Status s = d.Putfh();
        if (!s.ok()) return s;
        return d.Readdir();
      });
}

absl::StatusOr<ChangeInfo> Client::CreateSymlink(const FileHandle& dir,
                                                 absl::string_view name,
                                                 absl::string_view text) {
  Prepared p = Compound(
      [&](CompoundEncoder& e) {
        e.Putfh(dir);
        e.CreateSymlink(name, text);
      },
      kSmallReply);
  return Exchange<ChangeInfo>(
      std::move(p), [](CompoundReplyDecoder& d) -> absl::StatusOr<ChangeInfo> {
        absl::Status s = d.Putfh();
        if (!s.ok()) return s;
        return d.CreateSymlink();
      });
}

absl::StatusOr<LinkResult> Client::Readlink(const FileHandle& fh,
                                            absl::Span<uint8_t> chunk) {
  const bool offered = !chunk.empty();
  // Without a chunk the link text comes inline or through a reply chunk.
  Prepared p = Compound(
      [&](CompoundEncoder& e) {
        e.Putfh(fh);
        e.Readlink();
      },
      offered ? kSmallReply : kSmallReply + kMaxLinkText);
  if (offered) p.request.results.push_back(chunk);
  absl::StatusOr<LinkResult> l = Exchange<LinkResult>(
      std::move(p),
      [offered](CompoundReplyDecoder& d) -> absl::StatusOr<LinkResult> {
        absl::Status s = d.Putfh();
        if (!s.ok()) return s;
        return d.Readlink(offered);
      });
  if (l.ok() && l->via_chunk) {
    l->text.assign(reinterpret_cast<const char*>(chunk.data()),
                   last_reply_.result_lengths.at(0));
  }
  return l;
}

absl::StatusOr<ChangeInfo> Client::Remove(const FileHandle& dir,
                                          absl::string_view name) {
  Prepared p = Compound(
      [&](CompoundEncoder& e) {
        e.Putfh(dir);
        e.Remove(name);
      },
      kSmallReply);
  return Exchange<ChangeInfo>(
      std::move(p), [](CompoundReplyDecoder& d) -> absl::StatusOr<ChangeInfo> {
        absl::Status s = d.Putfh();
        if (!s.ok()) return s;
        return d.Remove();
      });
}

}  // namespace rpcrdma::nfs4
