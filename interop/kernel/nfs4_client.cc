#include "interop/kernel/nfs4_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rpcrdma/oncrpc/config.h"
#include "rpcrdma/oncrpc/xdr_rdma.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::test {
namespace {

// READDIR4resok holds at most maxcount octets (RFC 7530 §16.24.4); the RPC
// reply header (at most 424 octets with any verifier) and COMPOUND4res
// around it fit in this.
constexpr uint32_t kReplyOverhead = 1024;
// Linux limits symbolic link text to PATH_MAX.
constexpr uint32_t kMaxLinkText = 4096;
// The longest rest of a reply DecodeCompoundReply reads to report it.
constexpr size_t kMaxTrailing = 1 << 16;
// clnt_call's timeout (the Linux client's NFS timeo is 60 s).
constexpr timeval kTimeout{25, 0};

template <typename Function>
xdrproc_t AsXdrProc(Function* function) {
  return reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(function));
}

// The adapter's XDR stream under DecodeCompoundReply, as a ReplyStream:
// write-chunk data is put back by the stream itself (rpcrdma/oncrpc/
// xdr_rdma.h), so a DDP-eligible result is an ordinary opaque here, and
// XDR_RDMA_WRITE_CHUNKS_TAKEN tells whether a chunk carried it.
class XdrReplyStream final : public ReplyStream {
 public:
  XdrReplyStream(XDR* xdrs, ReplyShape* shape)
      : xdrs_(xdrs), start_(xdr_getpos(xdrs)), shape_(shape) {}

  absl::Status ReadUint32(absl::string_view field, uint32_t* out) override {
    u_int v = 0;
    if (!xdr_u_int(xdrs_, &v)) return Truncated(field);
    *out = v;
    return absl::OkStatus();
  }
  absl::Status ReadUint64(absl::string_view field, uint64_t* out) override {
    u_quad_t v = 0;
    if (!xdr_u_quad_t(xdrs_, &v)) return Truncated(field);
    *out = v;
    return absl::OkStatus();
  }
  absl::Status ReadVarOpaque(absl::string_view field, uint32_t max_length,
                             std::vector<uint8_t>* out) override {
    uint32_t length = 0;
    absl::Status s = ReadUint32(field, &length);
    if (!s.ok()) return s;
    if (length > max_length) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": length ", length, " exceeds ", max_length,
                       " (offset ", offset() - 4, ")"));
    }
    return ReadFixedOpaque(field, length, out);
  }
  absl::Status ReadFixedOpaque(absl::string_view field, size_t length,
                               std::vector<uint8_t>* out) override {
    out->resize(length);
    if (!xdr_opaque(xdrs_, reinterpret_cast<char*>(out->data()),
                    static_cast<u_int>(length))) {
      return Truncated(field);
    }
    return absl::OkStatus();
  }
  absl::StatusOr<bool> ReadDdpData(absl::string_view field, bool,
                                   absl::Span<uint8_t> into) override {
    const u_int before = Taken();
    // The stream puts the chunk's data here, without a copy when `into` is
    // the chunk's memory, or reads the octets inline.
    if (!xdr_opaque(xdrs_, reinterpret_cast<char*>(into.data()),
                    static_cast<u_int>(into.size()))) {
      return Truncated(field);
    }
    const bool via_chunk = Taken() != before;
    if (via_chunk) {
      shape_->chunk_lengths.push_back(static_cast<uint32_t>(into.size()));
    }
    return via_chunk;
  }
  std::vector<uint8_t> ReadRest() override {
    // The stream hands out whole words; they go back to octets as XDR
    // laid them out.
    std::vector<uint8_t> rest;
    XdrWriter octets(&rest);  // appending to a vector: no write fails
    u_int word = 0;
    while (rest.size() < kMaxTrailing && xdr_u_int(xdrs_, &word)) {
      (void)octets.WriteUint32("trailing word", word);
    }
    return rest;
  }
  size_t offset() const override { return xdr_getpos(xdrs_) - start_; }
  // The adapter fails the call itself (RPC_CANTDECODERES) when a write
  // chunk's data was not taken.
  absl::Status CheckChunksTaken() const override { return absl::OkStatus(); }

 private:
  u_int Taken() const {
    u_int taken = 0;
    (void)xdr_rdma_control(xdrs_, XDR_RDMA_WRITE_CHUNKS_TAKEN, &taken);
    return taken;
  }
  absl::Status Truncated(absl::string_view field) const {
    return absl::OutOfRangeError(absl::StrCat(
        field, ": the reply ends at offset ", offset(), " (XDR decode)"));
  }

  XDR* const xdrs_;
  const u_int start_;
  ReplyShape* const shape_;
};

// NULL's results: none (RFC 7530 §16.1). Records the reply's size and
// anything after the header.
bool_t DecodeNullReply(XDR* xdrs, ReplyShape* shape) {
  XdrReplyStream stream(xdrs, shape);
  shape->trailing = stream.ReadRest();
  shape->reduced_octets = xdr_getpos(xdrs);
  return shape->trailing.empty() ? TRUE : FALSE;
}

// clnt_call's outcome as a Status (the CallOutcome keeps the details).
absl::Status StatusOf(const CallOutcome& o) {
  const std::string what = absl::StrCat(clnt_sperrno(o.stat), " (errno ",
                                        o.error_number, "): ", o.message);
  switch (o.stat) {
    case RPC_TIMEDOUT:
      return absl::DeadlineExceededError(what);
    case RPC_CANTRECV:
      return absl::UnavailableError(what);
    case RPC_CANTSEND:
    case RPC_CANTENCODEARGS:
      return absl::FailedPreconditionError(what);
    case RPC_CANTDECODERES:
      return absl::DataLossError(what);
    default:
      return absl::InternalError(what);
  }
}

absl::Status Annotate(const absl::Status& s, absl::string_view what) {
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

// The COMPOUND that READs into `chunk` (DecodeCompoundReply's `read`).
absl::StatusOr<ReadResult> ReadOne(CompoundReplyDecoder& d,
                                   absl::Span<uint8_t> chunk) {
  absl::Status s = d.Putfh();
  if (!s.ok()) return s;
  return d.Read(/*offered_chunk=*/true, chunk);
}

// An asynchronous READ: its COMPOUND, results and completion, freed when
// the completion has run.
struct AsyncReadCall {
  CompoundCall call;
  CompoundReply reply;
  absl::Span<uint8_t> into;
  std::optional<ReadResult> result;
  std::function<void(absl::StatusOr<ReadResult>)> done;
};

void OnAsyncRead(clnt_stat stat, void* argument) {
  std::unique_ptr<AsyncReadCall> c(static_cast<AsyncReadCall*>(argument));
  if (stat != RPC_SUCCESS && c->reply.status.ok()) {
    CallOutcome o{stat, 0, rdma_oncrpc_error(), {}};
    c->done(StatusOf(o));
  } else if (!c->reply.status.ok()) {
    c->done(c->reply.status);
  } else {
    c->done(*c->result);
  }
}

}  // namespace

bool_t EncodeCompoundCall(XDR* xdrs, CompoundCall* call) {
  for (absl::Span<uint8_t> chunk : call->write_chunks) {
    xdr_rdma_write_chunk offer{static_cast<u_int>(chunk.size()), chunk.data()};
    if (!xdr_rdma_control(xdrs, XDR_RDMA_WRITE_CHUNK, &offer)) return FALSE;
  }
  if (call->reply_chunk != 0) {
    u_int octets = call->reply_chunk;
    if (!xdr_rdma_control(xdrs, XDR_RDMA_REPLY_CHUNK, &octets)) return FALSE;
  }
  // The octets up to each item's length word, the length word itself (the
  // stream recognises a variable-length opaque by it), the item marked as
  // DDP-eligible, then the rest.
  const std::vector<uint8_t>& stream = call->stream;
  u_int at = 0;
  auto put = [&](u_int to) {
    const bool ok =
        to == at ||
        xdr_opaque(xdrs,
                   reinterpret_cast<char*>(const_cast<uint8_t*>(&stream[at])),
                   to - at);
    at = to;
    return ok;
  };
  for (const DdpItem& item : call->items) {
    u_int length = static_cast<u_int>(item.data.size());
    if (item.position < at + 4 || !put(item.position - 4) ||
        !xdr_u_int(xdrs, &length) ||
        !xdr_rdma_control(xdrs, XDR_RDMA_DDP_NEXT, nullptr) ||
        !xdr_opaque(
            xdrs,
            reinterpret_cast<char*>(const_cast<uint8_t*>(item.data.data())),
            length)) {
      return FALSE;
    }
    at = item.position;
  }
  return put(static_cast<u_int>(stream.size())) ? TRUE : FALSE;
}

bool_t DecodeCompoundReply(XDR* xdrs, CompoundReply* reply) {
  reply->shape = {};
  absl::StatusOr<CompoundReplyDecoder> d = CompoundReplyDecoder::Start(
      std::make_unique<XdrReplyStream>(xdrs, &reply->shape), reply->ops);
  if (!d.ok()) {
    reply->status = d.status();
  } else {
    reply->status = reply->read(*d);
    if (reply->status.ok()) reply->status = d->Finish();
    reply->shape.trailing = d->trailing();
  }
  reply->shape.reduced_octets = xdr_getpos(xdrs);
  // An operation's NFS error is a result (FAILED_PRECONDITION, RFC 7530
  // §15.2); anything else means the reply did not decode.
  return reply->status.ok() ||
                 reply->status.code() == absl::StatusCode::kFailedPrecondition
             ? TRUE
             : FALSE;
}

CompoundCall BuildCompound(const std::function<void(CompoundEncoder&)>& build,
                           std::vector<Op>* ops) {
  CompoundCall call;
  CompoundEncoder enc(call.stream, "");
  build(enc);
  *ops = enc.Finish();
  call.items = enc.ddp_items();
  return call;
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(
    absl::string_view uri, const config::TransportConfig& transport,
    uint32_t first_xid) {
  oncrpc::AdapterConfig config;
  config.transport = transport;
  // The routines above choose every chunk: nothing is DDP-eligible unless
  // marked, no write chunk is bound, no reply chunk offered unless asked.
  oncrpc::DdpPolicy policy;
  policy.argument_threshold = 0;
  policy.result_threshold = 0;
  policy.default_reply_octets = 0;
  config.policies[{kProgram, kVersion}] = policy;
  absl::StatusOr<CLIENT*> clnt =
      oncrpc::CreateClient(uri, kProgram, kVersion, config);
  if (!clnt.ok()) return clnt.status();
  // AUTH_SYS root: the export has no_root_squash.
  char machine[] = "rpcrdma-kernel-interop";
  AUTH* auth = authsys_create(machine, 0, 0, 0, nullptr);
  if (auth == nullptr) {
    clnt_destroy(*clnt);
    return absl::InternalError("authsys_create failed");
  }
  (*clnt)->cl_auth = auth;
  (void)clnt_control(*clnt, CLSET_XID, reinterpret_cast<char*>(&first_xid));
  return std::unique_ptr<Client>(new Client(*clnt, auth));
}

Client::~Client() {
  clnt_destroy(clnt_);
  auth_destroy(auth_);
}

namespace {
thread_local CallOutcome last_outcome;
}  // namespace

const CallOutcome& Client::last() const { return last_outcome; }

absl::Status Client::Call(rpcproc_t procedure, xdrproc_t encode,
                          void* arguments, xdrproc_t decode, void* results,
                          const ReplyShape* shape,
                          const absl::Status* decoded) {
  CallOutcome& o = last_outcome;
  o = {};
  o.stat = clnt_call(clnt_, procedure, encode, static_cast<caddr_t>(arguments),
                     decode, static_cast<caddr_t>(results), kTimeout);
  if (shape != nullptr) o.shape = *shape;
  if (o.stat == RPC_SUCCESS) return absl::OkStatus();
  rpc_err e{};
  clnt_geterr(clnt_, &e);
  o.error_number = e.re_errno;
  o.message = rdma_oncrpc_error();
  // A reply our decoder refused: its own words are the most precise.
  if (o.stat == RPC_CANTDECODERES && decoded != nullptr && !decoded->ok()) {
    return *decoded;
  }
  return StatusOf(o);
}

absl::Status Client::Null() {
  ReplyShape shape;
  absl::Status s = Call(kProcNull, AsXdrProc(&xdr_void), nullptr,
                        AsXdrProc(&DecodeNullReply), &shape, &shape, nullptr);
  if (!s.ok() && !shape.trailing.empty()) {
    // NULL has void results (RFC 7530 §16.1).
    return absl::DataLossError(absl::StrCat(
        "NULL reply carries ", shape.trailing.size(), " result octets"));
  }
  return s;
}

template <typename T>
absl::StatusOr<T> Client::Exchange(
    const std::function<void(CompoundEncoder&)>& build, CompoundCall call,
    const std::function<absl::StatusOr<T>(CompoundReplyDecoder&)>& read) {
  std::vector<Op> ops;
  CompoundCall built = BuildCompound(build, &ops);
  call.stream = std::move(built.stream);
  call.items = std::move(built.items);
  std::optional<T> value;
  CompoundReply reply;
  reply.ops = std::move(ops);
  reply.read = [&](CompoundReplyDecoder& d) -> absl::Status {
    absl::StatusOr<T> r = read(d);
    if (!r.ok()) return r.status();
    value = *std::move(r);
    return absl::OkStatus();
  };
  absl::Status s = Call(kProcCompound, AsXdrProc(&EncodeCompoundCall), &call,
                        AsXdrProc(&DecodeCompoundReply), &reply, &reply.shape,
                        &reply.status);
  if (!s.ok()) return s;
  if (!reply.status.ok()) return reply.status;
  return *std::move(value);
}

absl::StatusOr<FileHandle> Client::Lookup(
    const std::vector<std::string>& path) {
  return Exchange<FileHandle>(
      [&](CompoundEncoder& e) {
        e.Putrootfh();
        for (const std::string& c : path) e.Lookup(c);
        e.Getfh();
      },
      {},
      [&](CompoundReplyDecoder& d) -> absl::StatusOr<FileHandle> {
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
  return Exchange<Attributes>(
      [&](CompoundEncoder& e) {
        e.Putfh(fh);
        e.Getattr(attrs);
      },
      {},
      [](CompoundReplyDecoder& d) -> absl::StatusOr<Attributes> {
        absl::Status s = d.Putfh();
        if (!s.ok()) return s;
        return d.Getattr();
      });
}

absl::StatusOr<ReadResult> Client::Read(const FileHandle& fh, uint64_t offset,
                                        absl::Span<uint8_t> into) {
  return ReadIntoChunk(fh, offset, static_cast<uint32_t>(into.size()), into);
}

absl::StatusOr<ReadResult> Client::ReadIntoChunk(const FileHandle& fh,
                                                 uint64_t offset,
                                                 uint32_t count,
                                                 absl::Span<uint8_t> chunk) {
  CompoundCall call;
  call.write_chunks.push_back(chunk);
  return Exchange<ReadResult>(
      [&](CompoundEncoder& e) {
        e.Putfh(fh);
        e.Read(Stateid{}, offset, count);
      },
      std::move(call),
      [chunk](CompoundReplyDecoder& d) { return ReadOne(d, chunk); });
}

void Client::ReadAsync(const FileHandle& fh, uint64_t offset,
                       absl::Span<uint8_t> into,
                       std::function<void(absl::StatusOr<ReadResult>)> done) {
  auto c = std::make_unique<AsyncReadCall>();
  c->call = BuildCompound(
      [&](CompoundEncoder& e) {
        e.Putfh(fh);
        e.Read(Stateid{}, offset, static_cast<uint32_t>(into.size()));
      },
      &c->reply.ops);
  c->call.write_chunks.push_back(into);
  c->into = into;
  c->done = std::move(done);
  AsyncReadCall* raw = c.get();
  c->reply.read = [raw](CompoundReplyDecoder& d) -> absl::Status {
    absl::StatusOr<ReadResult> r = ReadOne(d, raw->into);
    if (!r.ok()) return r.status();
    raw->result = *r;
    return absl::OkStatus();
  };
  if (!clnt_rdma_call_async(clnt_, kProcCompound,
                            AsXdrProc(&EncodeCompoundCall), &c->call,
                            AsXdrProc(&DecodeCompoundReply), &c->reply,
                            kTimeout, &OnAsyncRead, raw)) {
    c->done(absl::InternalError(
        absl::StrCat("clnt_rdma_call_async: ", rdma_oncrpc_error())));
    return;
  }
  (void)c.release();  // OnAsyncRead frees it
}

absl::StatusOr<std::vector<ReadResult>> Client::ReadPieces(
    const FileHandle& fh, const std::vector<ReadPiece>& pieces) {
  CompoundCall call;
  for (const ReadPiece& piece : pieces) call.write_chunks.push_back(piece.into);
  return Exchange<std::vector<ReadResult>>(
      [&](CompoundEncoder& e) {
        e.Putfh(fh);
        for (const ReadPiece& piece : pieces) {
          e.Read(Stateid{}, piece.offset,
                 static_cast<uint32_t>(piece.into.size()));
        }
      },
      std::move(call),
      [&](CompoundReplyDecoder& d) -> absl::StatusOr<std::vector<ReadResult>> {
        absl::Status s = d.Putfh();
        if (!s.ok()) return s;
        std::vector<ReadResult> results;
        for (const ReadPiece& piece : pieces) {
          absl::StatusOr<ReadResult> r = d.Read(true, piece.into);
          if (!r.ok()) return r.status();
          results.push_back(*r);
        }
        return results;
      });
}

absl::StatusOr<WriteResult> Client::Write(const FileHandle& fh, uint64_t offset,
                                          absl::Span<const uint8_t> data,
                                          StableHow stable) {
  return Exchange<WriteResult>(
      [&](CompoundEncoder& e) {
        e.Putfh(fh);
        e.Write(Stateid{}, offset, stable, data);
      },
      {},
      [](CompoundReplyDecoder& d) -> absl::StatusOr<WriteResult> {
        absl::Status s = d.Putfh();
        if (!s.ok()) return s;
        return d.Write();
      });
}

absl::StatusOr<ReaddirResult> Client::Readdir(
    const FileHandle& dir, uint64_t cookie,
    const std::array<uint8_t, 8>& cookieverf, uint32_t maxcount,
    const Bitmap& attrs, std::optional<uint32_t> reply_chunk) {
  CompoundCall call;
  call.reply_chunk = reply_chunk.value_or(maxcount + kReplyOverhead);
  return Exchange<ReaddirResult>(
      [&](CompoundEncoder& e) {
        e.Putfh(dir);
        e.Readdir(cookie, cookieverf, maxcount, maxcount, attrs);
      },
      std::move(call),
      [](CompoundReplyDecoder& d) -> absl::StatusOr<ReaddirResult> {
        absl::Status s = d.Putfh();
        if (!s.ok()) return s;
        return d.Readdir();
      });
}

absl::StatusOr<ChangeInfo> Client::CreateSymlink(const FileHandle& dir,
                                                 absl::string_view name,
                                                 absl::string_view text) {
  return Exchange<ChangeInfo>(
      [&](CompoundEncoder& e) {
        e.Putfh(dir);
        e.CreateSymlink(name, text);
      },
      {},
      [](CompoundReplyDecoder& d) -> absl::StatusOr<ChangeInfo> {
        absl::Status s = d.Putfh();
        if (!s.ok()) return s;
        return d.CreateSymlink();
      });
}

absl::StatusOr<LinkResult> Client::Readlink(const FileHandle& fh,
                                            absl::Span<uint8_t> chunk) {
  const bool offered = !chunk.empty();
  CompoundCall call;
  if (offered) {
    call.write_chunks.push_back(chunk);
  } else {
    // Without a chunk the link text comes inline or through a reply chunk.
    call.reply_chunk = kReplyOverhead + kMaxLinkText;
  }
  return Exchange<LinkResult>(
      [&](CompoundEncoder& e) {
        e.Putfh(fh);
        e.Readlink();
      },
      std::move(call),
      [offered, chunk](CompoundReplyDecoder& d) -> absl::StatusOr<LinkResult> {
        absl::Status s = d.Putfh();
        if (!s.ok()) return s;
        return d.Readlink(offered, chunk);
      });
}

absl::StatusOr<ChangeInfo> Client::Remove(const FileHandle& dir,
                                          absl::string_view name) {
  return Exchange<ChangeInfo>(
      [&](CompoundEncoder& e) {
        e.Putfh(dir);
        e.Remove(name);
      },
      {},
      [](CompoundReplyDecoder& d) -> absl::StatusOr<ChangeInfo> {
        absl::Status s = d.Putfh();
        if (!s.ok()) return s;
        return d.Remove();
      });
}

}  // namespace rpcrdma::test
