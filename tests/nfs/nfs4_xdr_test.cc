// The NFS version 4.0 COMPOUND codec of interop/kernel (RFC 7530, XDR of
// RFC 7531): golden argument bytes written by hand from the XDR
// definitions, the reduced form of DDP-eligible WRITE data (RFC 8166 §3.4.5,
// RFC 8267 §4.1), and decoding of every result kind with each malformed
// class rejected.
#include "interop/kernel/nfs4_xdr.h"

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::test {
namespace {

std::vector<uint8_t> Cat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// The decoder reads a reply in place: reply bytes built inline in a test
// stay alive until the test program ends.
absl::Span<const uint8_t> Body(
    std::initializer_list<std::vector<uint8_t>> parts) {
  static std::deque<std::vector<uint8_t>> kept;
  kept.push_back(Cat(parts));
  return kept.back();
}

// ---- Arguments -------------------------------------------------------------

// RFC 7531 COMPOUND4args { utf8str_cs tag; uint32_t minorversion;
// nfs_argop4 argarray<>; } with PUTROOTFH (24, void), LOOKUP (15,
// component4 objname) and GETFH (10, void).
TEST(Nfs4Encode, Rfc7531_CompoundPutrootfhLookupGetfh) {
  std::vector<uint8_t> stream = Words({0xA1B2C3D4});  // stands for the RPC
                                                      // call header
  CompoundEncoder e(stream, "");
  e.Putrootfh();
  e.Lookup("export");
  e.Getfh();
  std::vector<Op> ops = e.Finish();
  EXPECT_EQ(ops, (std::vector<Op>{Op::kPutrootfh, Op::kLookup, Op::kGetfh}));
  EXPECT_TRUE(e.ddp_items().empty());
  EXPECT_EQ(stream, Cat({Words({0xA1B2C3D4, 0 /* tag length */,
                                0 /* minorversion */, 3 /* argarray count */,
                                24 /* OP_PUTROOTFH */, 15 /* OP_LOOKUP */, 6}),
                         {'e', 'x', 'p', 'o', 'r', 't', 0, 0},
                         Words({10 /* OP_GETFH */})}));
}

TEST(Nfs4Encode, Rfc7531_TagIsUtf8strCsWithRoundup) {
  std::vector<uint8_t> stream;
  CompoundEncoder e(stream, "abc");
  e.Finish();
  EXPECT_EQ(stream,
            Cat({Words({3}), {'a', 'b', 'c', 0}, Words({0 /* minor */, 0})}));
}

// PUTFH (22, nfs_fh4 object) then READ (25): READ4args { stateid4 stateid;
// offset4 offset; count4 count; } with the anonymous stateid (all zero,
// RFC 7530 §9.1.4.3).
TEST(Nfs4Encode, Rfc7531_PutfhReadAnonymousStateid) {
  std::vector<uint8_t> stream;
  CompoundEncoder e(stream, "");
  e.Putfh({0x01, 0x02, 0x03, 0x04, 0x05});
  e.Read(Stateid{}, 0x0000000100000002ull, 65536);
  e.Finish();
  EXPECT_EQ(stream, Cat({Words({0, 0, 2, 22, 5}),
                         {1, 2, 3, 4, 5, 0, 0, 0},
                         Words({25, 0 /* seqid */, 0, 0, 0 /* other */, 1,
                                2 /* offset */, 65536})}));
}

// WRITE4args { stateid4 stateid; offset4 offset; stable_how4 stable;
// opaque data<>; }: reduced, the length word stays and the data is the DDP
// item at the position right after it (RFC 8166 §3.4.5).
TEST(Nfs4Encode, Rfc8267_WriteDataIsReducedAtItsPosition) {
  const std::vector<uint8_t> data = {0xDE, 0xAD, 0xBE, 0xEF, 0x42};
  std::vector<uint8_t> stream = Words({0x11111111, 0x22222222});
  CompoundEncoder e(stream, "");
  e.Putfh({0xAA, 0xBB, 0xCC, 0xDD});
  e.Write(Stateid{}, 4096, StableHow::kFileSync, data);
  e.Finish();
  const std::vector<uint8_t> expected = Cat({Words(
      {0x11111111, 0x22222222, 0, 0, 2, 22, 4, 0xAABBCCDD, 38 /* OP_WRITE */, 0,
       0, 0, 0, 0, 4096, 2 /* FILE_SYNC4 */, 5 /* data length */})});
  EXPECT_EQ(stream, expected);
  ASSERT_EQ(e.ddp_items().size(), 1u);
  EXPECT_EQ(e.ddp_items()[0].position, expected.size());
  EXPECT_EQ(e.ddp_items()[0].position % 4, 0u);
  EXPECT_EQ(e.ddp_items()[0].data.data(), data.data());  // not copied
  EXPECT_EQ(e.ddp_items()[0].data.size(), 5u);
}

// Inserting the item back at its position with XDR roundup gives exactly
// the unreduced encoding.
TEST(Nfs4Encode, Rfc8166_3_4_5_ReducedPlusItemEqualsInlineForm) {
  std::vector<uint8_t> data(1001);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
  std::vector<uint8_t> reduced = Words({7});
  CompoundEncoder r(reduced, "t");
  r.Putfh({1, 2, 3});
  r.Write(Stateid{5, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}, 77,
          StableHow::kUnstable, data);
  r.Getattr(AttrBitmap({kAttrSize}));
  r.Finish();
  std::vector<uint8_t> full = Words({7});
  CompoundEncoder f(full, "t");
  f.Putfh({1, 2, 3});
  f.Write(Stateid{5, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}, 77,
          StableHow::kUnstable, data, /*reduce=*/false);
  f.Getattr(AttrBitmap({kAttrSize}));
  f.Finish();
  EXPECT_TRUE(f.ddp_items().empty());
  ASSERT_EQ(r.ddp_items().size(), 1u);
  std::vector<uint8_t> rebuilt = reduced;
  const size_t pos = r.ddp_items()[0].position;
  rebuilt.insert(rebuilt.begin() + static_cast<std::ptrdiff_t>(pos),
                 data.begin(), data.end());
  rebuilt.insert(rebuilt.begin() + static_cast<std::ptrdiff_t>(pos + 1001), 3,
                 0);
  EXPECT_EQ(rebuilt, full);
  EXPECT_EQ(full.size(), reduced.size() + 1004);
}

// READDIR4args { nfs_cookie4 cookie; verifier4 cookieverf; count4
// dircount; count4 maxcount; bitmap4 attr_request; }.
TEST(Nfs4Encode, Rfc7531_Readdir) {
  std::vector<uint8_t> stream;
  CompoundEncoder e(stream, "");
  e.Readdir(0x0102030405060708ull, {9, 8, 7, 6, 5, 4, 3, 2}, 8192, 32768,
            AttrBitmap({kAttrFileid}));
  e.Finish();
  EXPECT_EQ(stream, Cat({Words({0, 0, 1, 26, 0x01020304, 0x05060708}),
                         {9, 8, 7, 6, 5, 4, 3, 2},
                         Words({8192, 32768, 1, 1u << 20})}));
}

// CREATE4args { createtype4 objtype; component4 objname; fattr4
// createattrs; } with the NF4LNK (5) arm carrying linktext4 linkdata.
TEST(Nfs4Encode, Rfc7531_CreateSymlinkSendsLinkTextInline) {
  std::vector<uint8_t> stream;
  CompoundEncoder e(stream, "");
  e.CreateSymlink("ln", "target");
  e.Finish();
  EXPECT_TRUE(e.ddp_items().empty());
  EXPECT_EQ(stream, Cat({Words({0, 0, 1, 6, 5, 6}),
                         {'t', 'a', 'r', 'g', 'e', 't', 0, 0},
                         Words({2}),
                         {'l', 'n', 0, 0},
                         Words({0 /* attrmask */, 0 /* attr_vals */})}));
}

TEST(Nfs4Encode, Rfc7531_ReadlinkRemoveGetattr) {
  std::vector<uint8_t> stream;
  CompoundEncoder e(stream, "");
  e.Readlink();
  e.Remove("abcd");
  e.Getattr(AttrBitmap({kAttrSize, kAttrMaxread, kAttrMaxwrite, kAttrMode}));
  e.Finish();
  EXPECT_EQ(stream, Cat({Words({0, 0, 3, 27, 28, 4}),
                         {'a', 'b', 'c', 'd'},
                         Words({9, 2, 0xC0000010, 0x00000002})}));
}

TEST(Nfs4Encode, Rfc7530_5_AttrBitmapWords) {
  EXPECT_EQ(AttrBitmap({}), Bitmap{});
  EXPECT_EQ(AttrBitmap({kAttrType}), Bitmap{0x2});
  EXPECT_EQ(AttrBitmap({kAttrNumlinks}), (Bitmap{0, 0x8}));
  EXPECT_EQ(AttrBitmap({kAttrType, kAttrSize, kAttrFileid}),
            Bitmap{0x00100012});
}

// ---- Results ---------------------------------------------------------------

// COMPOUND4res { nfsstat4 status; utf8str_cs tag; nfs_resop4 resarray<>; }
std::vector<uint8_t> ResHeader(uint32_t status, uint32_t count) {
  return Words({status, 0, count});
}

TEST(Nfs4Decode, Rfc7531_LookupWalk) {
  std::vector<uint8_t> body = Cat({ResHeader(0, 3),
                                   Words({24, 0, 15, 0, 10, 0, 6}),
                                   {1, 2, 3, 4, 5, 6, 0, 0}});
  auto d = CompoundReplyDecoder::Start(
      body, {}, {Op::kPutrootfh, Op::kLookup, Op::kGetfh});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->status(), 0u);
  EXPECT_EQ(d->result_count(), 3u);
  EXPECT_TRUE(d->Putrootfh().ok());
  EXPECT_TRUE(d->Lookup().ok());
  auto fh = d->Getfh();
  ASSERT_TRUE(fh.ok()) << fh.status();
  EXPECT_EQ(*fh, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(d->Finish().ok());
}

// RFC 7530 §15.2: evaluation stops at the first failing operation, whose
// status is the COMPOUND's.
TEST(Nfs4Decode, Rfc7530_15_2_StopsAtFirstError) {
  std::vector<uint8_t> body =
      Cat({ResHeader(2, 2), Words({24, 0, 15, 2 /* NFS4ERR_NOENT */})});
  auto d = CompoundReplyDecoder::Start(
      body, {}, {Op::kPutrootfh, Op::kLookup, Op::kGetfh});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->Putrootfh().ok());
  absl::Status s = d->Lookup();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "LOOKUP: NFS4ERR_NOENT (2)");
  EXPECT_EQ(d->Getfh().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(d->Finish().ok());
}

TEST(Nfs4Decode, Rfc7530_15_2_MinorVersMismatchHasNoResults) {
  auto d = CompoundReplyDecoder::Start(Body({ResHeader(10021, 0)}), {},
                                       {Op::kPutrootfh});
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(d.status().message(),
            "COMPOUND: NFS4ERR_MINOR_VERS_MISMATCH (10021) before any "
            "operation");
}

TEST(Nfs4Decode, RejectsInconsistentResultArrays) {
  // More results than operations.
  EXPECT_EQ(
      CompoundReplyDecoder::Start(
          Body({ResHeader(0, 2), Words({24, 0, 24, 0})}), {}, {Op::kPutrootfh})
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  // NFS4_OK but a result missing.
  EXPECT_EQ(CompoundReplyDecoder::Start(Body({ResHeader(0, 1), Words({24, 0})}),
                                        {}, {Op::kPutrootfh, Op::kGetfh})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // A result for another operation than the one sent.
  auto d = CompoundReplyDecoder::Start(Body({ResHeader(0, 1), Words({22, 0})}),
                                       {}, {Op::kPutrootfh});
  ASSERT_TRUE(d.ok());
  absl::Status s = d->Putrootfh();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "nfs_resop4: result for operation 22 where PUTROOTFH (24) was "
            "sent");
  // A failed operation followed by more results.
  auto e = CompoundReplyDecoder::Start(
      Body({ResHeader(2, 2), Words({15, 2, 10, 0})}), {},
      {Op::kLookup, Op::kGetfh});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->Lookup().code(), absl::StatusCode::kInvalidArgument);
  // The COMPOUND status disagrees with the failing operation's.
  auto f = CompoundReplyDecoder::Start(Body({ResHeader(70, 1), Words({15, 2})}),
                                       {}, {Op::kLookup});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->Lookup().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Nfs4Decode, RejectsOversizedTagAndFileHandle) {
  std::vector<uint8_t> tag = Words({0, kMaxTagSize + 1});
  tag.resize(tag.size() + kMaxTagSize + 4, 'x');
  EXPECT_EQ(CompoundReplyDecoder::Start(tag, {}, {Op::kGetfh}).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<uint8_t> body = Cat({ResHeader(0, 1), Words({10, 0, 129})});
  body.resize(body.size() + 132, 0);
  auto d = CompoundReplyDecoder::Start(body, {}, {Op::kGetfh});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->Getfh().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Nfs4Decode, TrailingOctetsAreAnError) {
  auto d = CompoundReplyDecoder::Start(
      Body({ResHeader(0, 1), Words({24, 0, 0})}), {}, {Op::kPutrootfh});
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->Putrootfh().ok());
  absl::Status s = d->Finish();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "COMPOUND4res: 4 octets after the last result (offset 20)");
  EXPECT_EQ(d->trailing(), Words({0}));
}

// READ4resok { bool eof; opaque data<>; }: through the write chunk the
// stream keeps the length word only (RFC 8166 §3.4.6).
TEST(Nfs4Decode, Rfc8166_3_4_6_ReadDataThroughWriteChunk) {
  std::vector<uint8_t> body =
      Cat({ResHeader(0, 2), Words({22, 0, 25, 0, 1 /* eof */, 100})});
  auto d = CompoundReplyDecoder::Start(body, {100}, {Op::kPutfh, Op::kRead});
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(d->Putfh().ok());
  std::vector<uint8_t> into(4096, 0xA5);
  auto r = d->Read(true, absl::MakeSpan(into));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->eof);
  EXPECT_TRUE(r->via_chunk);
  EXPECT_EQ(r->length, 100u);
  // The data is where the chunk's memory was; nothing is copied here.
  EXPECT_EQ(into, std::vector<uint8_t>(4096, 0xA5));
  EXPECT_TRUE(d->Finish().ok());
}

TEST(Nfs4Decode, ReadDataInlineWhenTheChunkWasNotUsed) {
  std::vector<uint8_t> body =
      Cat({ResHeader(0, 1), Words({25, 0, 0, 5}), {1, 2, 3, 4, 5, 0, 0, 0}});
  for (const std::vector<uint32_t>& chunks :
       {std::vector<uint32_t>{}, std::vector<uint32_t>{0}}) {
    auto d = CompoundReplyDecoder::Start(body, chunks, {Op::kRead});
    ASSERT_TRUE(d.ok());
    std::vector<uint8_t> into(5);
    auto r = d->Read(true, absl::MakeSpan(into));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE(r->eof);
    EXPECT_FALSE(r->via_chunk);
    EXPECT_EQ(into, (std::vector<uint8_t>{1, 2, 3, 4, 5}));
    EXPECT_TRUE(d->Finish().ok());
  }
}

TEST(Nfs4Decode, ReadRejectsLengthMismatchesAndRoundupInTheStream) {
  // The chunk and the length word disagree.
  auto a = CompoundReplyDecoder::Start(
      Body({ResHeader(0, 1), Words({25, 0, 0, 100})}), {50}, {Op::kRead});
  ASSERT_TRUE(a.ok());
  std::vector<uint8_t> into(4096);
  EXPECT_EQ(a->Read(true, absl::MakeSpan(into)).status().message(),
            "READ4resok.data: the write chunk holds 50 octets, the length "
            "word says 100");
  // More data than asked for.
  auto b = CompoundReplyDecoder::Start(
      Body({ResHeader(0, 1), Words({25, 0, 0, 100})}), {100}, {Op::kRead});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->Read(true, absl::MakeSpan(into).first(99)).status().code(),
            absl::StatusCode::kInvalidArgument);
  // XDR roundup left inline after data that went through the chunk.
  auto c = CompoundReplyDecoder::Start(
      Body({ResHeader(0, 1), Words({25, 0, 0, 99, 0})}), {99}, {Op::kRead});
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->Read(true, absl::MakeSpan(into).first(100)).ok());
  EXPECT_EQ(c->Finish().code(), absl::StatusCode::kInvalidArgument);
  // A chunk with data that no result accounts for.
  auto e = CompoundReplyDecoder::Start(
      Body({ResHeader(0, 1), Words({25, 0, 0, 0})}), {0, 8}, {Op::kRead});
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(e->Read(true, absl::MakeSpan(into).first(100)).ok());
  EXPECT_EQ(e->Finish().message(),
            "write chunk 1 holds 8 octets no result accounts for");
}

// Every proper prefix of a valid reply is rejected as truncated.
TEST(Nfs4Decode, EveryTruncationIsOutOfRange) {
  const std::vector<uint8_t> body = Cat({ResHeader(0, 3),
                                         Words({22, 0, 25, 0, 1, 5}),
                                         {1, 2, 3, 4, 5, 0, 0, 0},
                                         Words({9, 0, 1, 0x10, 8, 0, 77})});
  const std::vector<Op> ops = {Op::kPutfh, Op::kRead, Op::kGetattr};
  std::vector<uint8_t> into(5);
  {
    auto d = CompoundReplyDecoder::Start(body, {}, ops);
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE(d->Putfh().ok());
    ASSERT_TRUE(d->Read(false, absl::MakeSpan(into)).ok());
    auto a = d->Getattr();
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->size, 77u);
    ASSERT_TRUE(d->Finish().ok());
  }
  for (size_t n = 0; n < body.size(); ++n) {
    auto d = CompoundReplyDecoder::Start(absl::MakeConstSpan(body).first(n), {},
                                         ops);
    absl::Status s = d.status();
    if (s.ok()) s = d->Putfh();
    if (s.ok()) s = d->Read(false, absl::MakeSpan(into)).status();
    if (s.ok()) s = d->Getattr().status();
    EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << n << ": " << s;
  }
}

// fattr4 { bitmap4 attrmask; attrlist4 attr_vals; }: values in increasing
// attribute number (RFC 7530 §5.1).
TEST(Nfs4Decode, Rfc7530_5_GetattrValues) {
  std::vector<uint8_t> body = Cat(
      {ResHeader(0, 1),
       Words({9, 0, 2, 0xC0100012, 0x0000000A, 44, 1 /* NF4REG */, 0,
              1048576 /* size */, 0, 4242 /* fileid */, 0, 262144 /* maxread */,
              0, 262144 /* maxwrite */, 0644 /* mode */, 1 /* numlinks */})});
  auto d = CompoundReplyDecoder::Start(body, {}, {Op::kGetattr});
  ASSERT_TRUE(d.ok());
  auto a = d->Getattr();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->type, FileType::kRegular);
  EXPECT_EQ(a->size, 1048576u);
  EXPECT_EQ(a->fileid, 4242u);
  EXPECT_EQ(a->maxread, 262144u);
  EXPECT_EQ(a->maxwrite, 262144u);
  EXPECT_EQ(a->mode, 0644u);
  EXPECT_EQ(a->numlinks, 1u);
  EXPECT_FALSE(a->change.has_value());
  EXPECT_TRUE(d->Finish().ok());
}

TEST(Nfs4Decode, AttributesRejectUnknownBitsLeftoversAndBadTypes) {
  // FATTR4_FH_EXPIRE_TYPE (2) is not decodable here.
  EXPECT_EQ(DecodeAttributes({0x4}, Words({0})).status().message(),
            "fattr4: attribute 2 is set in the mask but not decodable");
  EXPECT_EQ(DecodeAttributes({0x10}, Words({0, 1, 2})).status().message(),
            "fattr4: 4 octets left after the attributes in the mask");
  EXPECT_EQ(DecodeAttributes({0x2}, Words({8})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeAttributes({0x10}, Words({0})).status().code(),
            absl::StatusCode::kOutOfRange);
  // More bitmap words than the decoder accepts.
  std::vector<uint8_t> body = Cat({ResHeader(0, 1), Words({9, 0, 9})});
  body.resize(body.size() + 40, 0);
  auto d = CompoundReplyDecoder::Start(body, {}, {Op::kGetattr});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->Getattr().status().code(), absl::StatusCode::kInvalidArgument);
}

// READDIR4resok { verifier4 cookieverf; dirlist4 reply; } with dirlist4 {
// entry4 *entries; bool eof; } and entry4 { nfs_cookie4 cookie; component4
// name; fattr4 attrs; entry4 *nextentry; }.
TEST(Nfs4Decode, Rfc7531_ReaddirEntries) {
  std::vector<uint8_t> body = Cat({ResHeader(0, 1),
                                   Words({26, 0}),
                                   {1, 1, 2, 2, 3, 3, 4, 4},
                                   Words({1, 0, 3, 1}),
                                   {'a', 0, 0, 0},
                                   Words({1, 1u << 20, 8, 0, 100}),
                                   Words({1, 0, 7, 5}),
                                   {'b', 'b', 'b', 'b', 'b', 0, 0, 0},
                                   Words({1, 1u << 20, 8, 0, 101}),
                                   Words({0 /* no more */, 1 /* eof */})});
  auto d = CompoundReplyDecoder::Start(body, {}, {Op::kReaddir});
  ASSERT_TRUE(d.ok());
  auto r = d->Readdir();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cookieverf, (std::array<uint8_t, 8>{1, 1, 2, 2, 3, 3, 4, 4}));
  ASSERT_EQ(r->entries.size(), 2u);
  EXPECT_EQ(r->entries[0].cookie, 3u);
  EXPECT_EQ(r->entries[0].name, "a");
  EXPECT_EQ(r->entries[0].attrs.fileid, 100u);
  EXPECT_EQ(r->entries[1].cookie, 7u);
  EXPECT_EQ(r->entries[1].name, "bbbbb");
  EXPECT_EQ(r->entries[1].attrs.fileid, 101u);
  EXPECT_TRUE(r->eof);
  EXPECT_TRUE(d->Finish().ok());
}

TEST(Nfs4Decode, ReaddirRejectsBadBooleansAndLongNames) {
  auto a = CompoundReplyDecoder::Start(
      Body({ResHeader(0, 1), Words({26, 0, 0, 0, 2})}), {}, {Op::kReaddir});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->Readdir().status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<uint8_t> body =
      Cat({ResHeader(0, 1), Words({26, 0, 0, 0, 1, 0, 1, 256})});
  body.resize(body.size() + 256, 'n');
  auto b = CompoundReplyDecoder::Start(body, {}, {Op::kReaddir});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->Readdir().status().code(), absl::StatusCode::kInvalidArgument);
}

// CREATE4resok { change_info4 cinfo; bitmap4 attrset; }, REMOVE4resok {
// change_info4 cinfo; }, WRITE4resok { count4 count; stable_how4
// committed; verifier4 writeverf; }.
TEST(Nfs4Decode, Rfc7531_CreateRemoveWrite) {
  std::vector<uint8_t> body = Cat({ResHeader(0, 3),
                                   Words({6, 0, 1, 0, 10, 0, 11, 1, 0x2}),
                                   Words({28, 0, 0, 0, 11, 0, 12}),
                                   Words({38, 0, 65536, 2}),
                                   {8, 7, 6, 5, 4, 3, 2, 1}});
  auto d = CompoundReplyDecoder::Start(body, {},
                                       {Op::kCreate, Op::kRemove, Op::kWrite});
  ASSERT_TRUE(d.ok());
  auto c = d->CreateSymlink();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->atomic);
  EXPECT_EQ(c->before, 10u);
  EXPECT_EQ(c->after, 11u);
  auto r = d->Remove();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->atomic);
  EXPECT_EQ(r->after, 12u);
  auto w = d->Write();
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->count, 65536u);
  EXPECT_EQ(w->committed, StableHow::kFileSync);
  EXPECT_EQ(w->verifier, (std::array<uint8_t, 8>{8, 7, 6, 5, 4, 3, 2, 1}));
  EXPECT_TRUE(d->Finish().ok());
}

TEST(Nfs4Decode, WriteRejectsBadStableHow) {
  auto d = CompoundReplyDecoder::Start(
      Body({ResHeader(0, 1), Words({38, 0, 1, 3, 0, 0})}), {}, {Op::kWrite});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->Write().status().message(),
            "WRITE4resok.committed: bad stable_how4 3");
}

// READLINK4resok { linktext4 link; }: DDP-eligible (RFC 8267 §4.1).
TEST(Nfs4Decode, Rfc8267_ReadlinkInlineOrThroughChunk) {
  auto a = CompoundReplyDecoder::Start(
      Body({ResHeader(0, 1), Words({27, 0, 3}), {'/', 'x', 'y', 0}}), {},
      {Op::kReadlink});
  ASSERT_TRUE(a.ok());
  auto l = a->Readlink(false);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->text, "/xy");
  EXPECT_FALSE(l->via_chunk);
  EXPECT_TRUE(a->Finish().ok());
  auto b = CompoundReplyDecoder::Start(
      Body({ResHeader(0, 1), Words({27, 0, 3000})}), {3000}, {Op::kReadlink});
  ASSERT_TRUE(b.ok());
  // The text is read from the chunk's memory, where the responder put it.
  std::string chunk(4096, 'c');
  auto m = b->Readlink(
      true, absl::MakeSpan(reinterpret_cast<uint8_t*>(chunk.data()), 4096));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->via_chunk);
  EXPECT_EQ(m->text, std::string(3000, 'c'));
  EXPECT_TRUE(b->Finish().ok());
  auto c = CompoundReplyDecoder::Start(
      Body({ResHeader(0, 1), Words({27, 0, kMaxLinkSize + 1})}), {},
      {Op::kReadlink});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->Readlink(false).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Nfs4Names, StatusAndOperationNames) {
  EXPECT_EQ(StatusName(0), "NFS4_OK");
  EXPECT_EQ(StatusName(10013), "NFS4ERR_GRACE");
  EXPECT_EQ(StatusName(10048), "NFS4ERR_CB_PATH_DOWN");
  EXPECT_EQ(StatusName(12345), "nfsstat4 12345");
  EXPECT_EQ(OpName(Op::kReaddir), "READDIR");
  EXPECT_EQ(OpName(Op::kPutrootfh), "PUTROOTFH");
}

}  // namespace
}  // namespace rpcrdma::test
