// Tests for the ONC RPC message header codec (RFC 5531 §8-§9, Appendix A).
// Golden vectors are written out octet by octet from the RFC's XDR.
#include "rpcrdma/rpc_msg.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::oncrpc {
namespace {

using ::rpcrdma::test::AppendWord;
using ::rpcrdma::test::Words;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

// RFC 5531 §9: NULL procedure (0) of NFS (100003) version 3, AUTH_NONE
// credential and verifier.
const std::vector<uint8_t> kNullCall = {
    0x00, 0x00, 0x00, 0x2a,  // xid 42
    0x00, 0x00, 0x00, 0x00,  // msg_type CALL
    0x00, 0x00, 0x00, 0x02,  // rpcvers 2
    0x00, 0x01, 0x86, 0xa3,  // prog 100003
    0x00, 0x00, 0x00, 0x03,  // vers 3
    0x00, 0x00, 0x00, 0x00,  // proc 0
    0x00, 0x00, 0x00, 0x00,  // cred.flavor AUTH_NONE
    0x00, 0x00, 0x00, 0x00,  // cred.body length 0
    0x00, 0x00, 0x00, 0x00,  // verf.flavor AUTH_NONE
    0x00, 0x00, 0x00, 0x00,  // verf.body length 0
};

// RFC 5531 Appendix A: authsys_parms with a 9-octet machinename (3 octets of
// padding) and two gids.
const std::vector<uint8_t> kAuthSysBody = {
    0x5d, 0x8a, 0x1c, 0x20,  // stamp
    0x00, 0x00, 0x00, 0x09,  // machinename length 9
    'n',  'f',  's',  'c',   //
    'l',  'i',  'e',  'n',   //
    't',  0x00, 0x00, 0x00,  // 3 octets of padding
    0x00, 0x00, 0x03, 0xe8,  // uid 1000
    0x00, 0x00, 0x00, 0x64,  // gid 100
    0x00, 0x00, 0x00, 0x02,  // gids count 2
    0x00, 0x00, 0x00, 0x64,  // gids[0] 100
    0x00, 0x00, 0x00, 0x0a,  // gids[1] 10
};

AuthSysParams SampleAuthSysParams() {
  return AuthSysParams{0x5d8a1c20, "nfsclient", 1000, 100, {100, 10}};
}

// RFC 5531 §9: GETATTR (1) of NFS version 3 with that AUTH_SYS credential,
// followed by four octets of procedure arguments.
std::vector<uint8_t> AuthSysCall() {
  std::vector<uint8_t> m = {
      0x0b, 0xad, 0xca, 0xfe,  // xid
      0x00, 0x00, 0x00, 0x00,  // msg_type CALL
      0x00, 0x00, 0x00, 0x02,  // rpcvers 2
      0x00, 0x01, 0x86, 0xa3,  // prog 100003
      0x00, 0x00, 0x00, 0x03,  // vers 3
      0x00, 0x00, 0x00, 0x01,  // proc 1
      0x00, 0x00, 0x00, 0x01,  // cred.flavor AUTH_SYS
      0x00, 0x00, 0x00, 0x28,  // cred.body length 40
  };
  std::copy(kAuthSysBody.begin(), kAuthSysBody.end(), std::back_inserter(m));
  const uint8_t tail[] = {
      0x00, 0x00, 0x00, 0x00,  // verf.flavor AUTH_NONE
      0x00, 0x00, 0x00, 0x00,  // verf.body length 0
      0xde, 0xad, 0xbe, 0xef,  // the procedure's arguments
  };
  std::copy(std::begin(tail), std::end(tail), std::back_inserter(m));
  return m;
}
constexpr size_t kAuthSysCallHeaderLength = 80;

CallHeader AuthSysCallHeader() {
  return CallHeader{0x0badcafe, 100003, 3, 1, OpaqueAuth{1, kAuthSysBody},
                    AuthNone()};
}

// RFC 5531 §9 replies to xid 0x0badcafe.
const std::vector<uint8_t> kSuccessReply = {
    0x0b, 0xad, 0xca, 0xfe,  // xid
    0x00, 0x00, 0x00, 0x01,  // msg_type REPLY
    0x00, 0x00, 0x00, 0x00,  // reply_stat MSG_ACCEPTED
    0x00, 0x00, 0x00, 0x00,  // verf.flavor AUTH_NONE
    0x00, 0x00, 0x00, 0x00,  // verf.body length 0
    0x00, 0x00, 0x00, 0x00,  // accept_stat SUCCESS
    0x00, 0x00, 0x00, 0x00,  // results (an NFS3_OK status)
};
const std::vector<uint8_t> kProgMismatchReply = {
    0x0b, 0xad, 0xca, 0xfe,  // xid
    0x00, 0x00, 0x00, 0x01,  // msg_type REPLY
    0x00, 0x00, 0x00, 0x00,  // reply_stat MSG_ACCEPTED
    0x00, 0x00, 0x00, 0x00,  // verf.flavor AUTH_NONE
    0x00, 0x00, 0x00, 0x00,  // verf.body length 0
    0x00, 0x00, 0x00, 0x02,  // accept_stat PROG_MISMATCH
    0x00, 0x00, 0x00, 0x02,  // mismatch_info.low 2
    0x00, 0x00, 0x00, 0x03,  // mismatch_info.high 3
};
const std::vector<uint8_t> kRpcMismatchReply = {
    0x0b, 0xad, 0xca, 0xfe,  // xid
    0x00, 0x00, 0x00, 0x01,  // msg_type REPLY
    0x00, 0x00, 0x00, 0x01,  // reply_stat MSG_DENIED
    0x00, 0x00, 0x00, 0x00,  // reject_stat RPC_MISMATCH
    0x00, 0x00, 0x00, 0x02,  // mismatch_info.low 2
    0x00, 0x00, 0x00, 0x02,  // mismatch_info.high 2
};
const std::vector<uint8_t> kAuthErrorReply = {
    0x0b, 0xad, 0xca, 0xfe,  // xid
    0x00, 0x00, 0x00, 0x01,  // msg_type REPLY
    0x00, 0x00, 0x00, 0x01,  // reply_stat MSG_DENIED
    0x00, 0x00, 0x00, 0x01,  // reject_stat AUTH_ERROR
    0x00, 0x00, 0x00, 0x05,  // auth_stat AUTH_TOOWEAK
};

// Where each field of a header starts, in order.
struct Field {
  size_t offset;
  const char* name;
};

// Every prefix shorter than `header_length` must fail with OUT_OF_RANGE
// naming the field that the prefix ends in, at the offset where it starts.
void ExpectEveryPrefixTruncated(
    const std::vector<uint8_t>& message, size_t header_length,
    const std::vector<Field>& fields,
    const std::function<absl::Status(absl::Span<const uint8_t>)>& decode) {
  for (size_t n = 0; n < header_length; ++n) {
    const Field* field = &fields.front();
    for (const Field& f : fields) {
      if (f.offset <= n) field = &f;
    }
    absl::Status s = decode(absl::MakeConstSpan(message).first(n));
    EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << n << ": " << s;
    EXPECT_THAT(Message(s),
                HasSubstr(absl::StrCat("truncated at ", field->name,
                                       " (offset ", field->offset, ")")))
        << n << " octets";
  }
}

absl::Status DecodeCallStatus(absl::Span<const uint8_t> m) {
  return DecodeCallHeader(m).status();
}
absl::Status DecodeReplyStatus(absl::Span<const uint8_t> m) {
  return DecodeReplyHeader(m).status();
}

// --- Calls ------------------------------------------------------------------

TEST(RpcMsgCall, Rfc5531_9_NullCallWithAuthNoneGolden) {
  const CallHeader header{42, 100003, 3, 0, AuthNone(), AuthNone()};
  std::vector<uint8_t> out;
  ASSERT_TRUE(EncodeCallHeader(header, out).ok());
  EXPECT_THAT(out, ElementsAreArray(kNullCall));

  auto decoded = DecodeCallHeader(kNullCall);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->header, header);
  EXPECT_EQ(decoded->body_offset, 40u);
}

TEST(RpcMsgCall, Rfc5531_AppendixA_AuthSysCallGolden) {
  auto cred = AuthSys(SampleAuthSysParams());
  ASSERT_TRUE(cred.ok()) << cred.status();
  EXPECT_EQ(cred->flavor, 1u);
  EXPECT_THAT(cred->body, ElementsAreArray(kAuthSysBody));

  const std::vector<uint8_t> golden = AuthSysCall();
  std::vector<uint8_t> out;
  ASSERT_TRUE(EncodeCallHeader(AuthSysCallHeader(), out).ok());
  EXPECT_THAT(out, ElementsAreArray(golden.data(), kAuthSysCallHeaderLength));

  auto decoded = DecodeCallHeader(golden);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->header, AuthSysCallHeader());
  EXPECT_EQ(decoded->body_offset, kAuthSysCallHeaderLength);
  auto params = DecodeAuthSys(decoded->header.credential);
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(*params, SampleAuthSysParams());
}

TEST(RpcMsgCall, Rfc5531_9_EncodeAppendsAfterExistingOctets) {
  std::vector<uint8_t> out = {0xaa, 0xbb};
  ASSERT_TRUE(
      EncodeCallHeader({42, 100003, 3, 0, AuthNone(), AuthNone()}, out).ok());
  ASSERT_EQ(out.size(), 2 + kNullCall.size());
  EXPECT_EQ(out[0], 0xaa);
  EXPECT_EQ(out[1], 0xbb);
  EXPECT_TRUE(std::equal(kNullCall.begin(), kNullCall.end(), out.begin() + 2));
}

TEST(RpcMsgCall, Rfc5531_8_2_AuthBodiesRoundTripWithPadding) {
  for (size_t cred_len : {0, 1, 2, 3, 4, 5, 6, 7, 8, 399, 400}) {
    std::vector<uint8_t> cred(cred_len);
    for (size_t i = 0; i < cred_len; ++i) {
      cred[i] = static_cast<uint8_t>(i * 7 + 1);
    }
    const size_t verf_len = 400 - cred_len;
    const CallHeader header{
        0xffffffff,
        0x40000000,
        7,
        0x12345678,
        OpaqueAuth{6, cred},  // RPCSEC_GSS
        OpaqueAuth{390003, std::vector<uint8_t>(verf_len, 0x5a)}};
    std::vector<uint8_t> out;
    ASSERT_TRUE(EncodeCallHeader(header, out).ok());
    const size_t padded = (cred_len + 3) / 4 * 4 + (verf_len + 3) / 4 * 4;
    ASSERT_EQ(out.size(), 40 + padded) << cred_len;
    // Padding after the credential body is zero (RFC 4506 §4.10).
    for (size_t i = 32 + cred_len; i < 32 + (cred_len + 3) / 4 * 4; ++i) {
      EXPECT_EQ(out[i], 0) << cred_len << " at " << i;
    }
    AppendWord(out, 0x01020304);  // arguments
    auto decoded = DecodeCallHeader(out);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->header, header);
    EXPECT_EQ(decoded->body_offset, out.size() - 4);
  }
}

TEST(RpcMsgCall, Rfc5531_9_TruncatedAtEveryFieldBoundaryIsOutOfRange) {
  ExpectEveryPrefixTruncated(AuthSysCall(), kAuthSysCallHeaderLength,
                             {{0, "xid"},
                              {4, "msg_type"},
                              {8, "rpcvers"},
                              {12, "prog"},
                              {16, "vers"},
                              {20, "proc"},
                              {24, "cred.flavor"},
                              {28, "cred.body"},
                              {72, "verf.flavor"},
                              {76, "verf.body"}},
                             DecodeCallStatus);
}

TEST(RpcMsgCall, Rfc5531_9_RejectsMessageThatIsNotACall) {
  for (uint32_t mtype : {1u, 2u, 0xffffffffu}) {
    std::vector<uint8_t> m = kNullCall;
    StoreBigEndian32(m.data() + 4, mtype);
    absl::Status s = DecodeCallHeader(m).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << mtype;
    EXPECT_EQ(Message(s), absl::StrCat("bad msg_type ", mtype,
                                       " at offset 4: expected CALL (0)"));
  }
}

TEST(RpcMsgCall, Rfc5531_9_RejectsRpcVersion3) {
  for (uint32_t vers : {0u, 1u, 3u}) {
    std::vector<uint8_t> m = kNullCall;
    StoreBigEndian32(m.data() + 8, vers);
    absl::Status s = DecodeCallHeader(m).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << vers;
    EXPECT_EQ(Message(s),
              absl::StrCat("bad rpcvers ", vers,
                           " at offset 8: RFC 5531 §9 defines only version 2"));
  }
}

// A call whose credential has `cred_len` octets and whose verifier has
// `verf_len`, with the bodies present in full.
std::vector<uint8_t> CallWithAuthLengths(uint32_t cred_len, uint32_t verf_len) {
  std::vector<uint8_t> m = Words({1, 0, 2, 100003, 3, 0, 1, cred_len});
  m.resize(m.size() + (cred_len + 3) / 4 * 4, 0x11);
  AppendWord(m, 0);
  AppendWord(m, verf_len);
  m.resize(m.size() + (verf_len + 3) / 4 * 4, 0x22);
  return m;
}

TEST(RpcMsgCall, Rfc5531_8_2_RejectsAuthBodyOf401) {
  ASSERT_TRUE(DecodeCallHeader(CallWithAuthLengths(400, 400)).ok());

  absl::Status s = DecodeCallHeader(CallWithAuthLengths(401, 0)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s),
            "length 401 of cred.body (offset 28) exceeds the limit of 400");

  s = DecodeCallHeader(CallWithAuthLengths(0, 401)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s),
            "length 401 of verf.body (offset 36) exceeds the limit of 400");
}

TEST(RpcMsgCall, Rfc5531_8_2_HugeAuthLengthIsRejectedBeforeUse) {
  std::vector<uint8_t> m = Words({1, 0, 2, 100003, 3, 0, 1, 0xffffffff});
  absl::Status s = DecodeCallHeader(m).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("length 4294967295 of cred.body"));
}

TEST(RpcMsgCall, Rfc5531_9_AuthBodyLongerThanWhatIsLeftIsOutOfRange) {
  // cred.body says 100 octets; only 20 follow.
  std::vector<uint8_t> m = Words({1, 0, 2, 100003, 3, 0, 1, 100});
  m.resize(m.size() + 20, 0);
  absl::Status s = DecodeCallHeader(m).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(Message(s),
            "truncated at cred.body (offset 28): length 100 needs 100 octets, "
            "20 remain");
}

TEST(RpcMsgCall, Rfc5531_8_2_EncodeRejectsAuthBodyOf401) {
  std::vector<uint8_t> out = {0x01};
  CallHeader header{
      1, 2, 3, 4, OpaqueAuth{1, std::vector<uint8_t>(401)}, AuthNone()};
  absl::Status s = EncodeCallHeader(header, out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s),
            "cred.body is 401 octets; RFC 5531 §8.2 allows at most 400");
  header.credential = AuthNone();
  header.verifier.body.resize(401);
  s = EncodeCallHeader(header, out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("verf.body is 401 octets"));
  EXPECT_THAT(out, ElementsAreArray({0x01}));  // untouched
}

// --- AUTH_SYS ----------------------------------------------------------------

TEST(AuthSys, Rfc5531_AppendixA_MachineNameOf255RoundTripsAnd256IsRejected) {
  AuthSysParams params = SampleAuthSysParams();
  params.machine_name.assign(255, 'm');
  auto auth = AuthSys(params);
  ASSERT_TRUE(auth.ok()) << auth.status();
  EXPECT_EQ(auth->body.size(), 4 + 4 + 256 + 4 + 4 + 4 + 8u);
  auto back = DecodeAuthSys(*auth);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, params);

  params.machine_name.push_back('m');
  absl::Status s = AuthSys(params).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s),
            "AUTH_SYS machinename is 256 octets; RFC 5531 Appendix A allows "
            "at most 255");

  // The same on the wire: machinename length 256 with 256 octets present.
  OpaqueAuth wire{1, Words({0, 256})};
  wire.body.resize(wire.body.size() + 256, 'm');
  for (uint32_t w : {1000u, 100u, 0u}) AppendWord(wire.body, w);
  s = DecodeAuthSys(wire).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s),
            "AUTH_SYS body: length 256 of machinename (offset 4) exceeds the "
            "limit of 255");
}

TEST(AuthSys, Rfc5531_AppendixA_SixteenGidsRoundTripAndSeventeenAreRejected) {
  AuthSysParams params = SampleAuthSysParams();
  params.gids.clear();
  for (uint32_t g = 0; g < 16; ++g) params.gids.push_back(g * 1000 + 1);
  auto auth = AuthSys(params);
  ASSERT_TRUE(auth.ok()) << auth.status();
  auto back = DecodeAuthSys(*auth);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, params);

  params.gids.push_back(7);
  absl::Status s = AuthSys(params).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s),
            "AUTH_SYS has 17 gids; RFC 5531 Appendix A allows at most 16");

  // On the wire: a count of 17 with 17 gids present.
  OpaqueAuth wire{1, Words({0, 0, 0, 0, 17})};
  for (uint32_t g = 0; g < 17; ++g) AppendWord(wire.body, g);
  s = DecodeAuthSys(wire).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s),
            "AUTH_SYS body: length 17 of gids (offset 16) exceeds the limit "
            "of 16");
}

TEST(AuthSys, Rfc5531_AppendixA_TruncatedBodyIsOutOfRange) {
  // A prefix ending inside the gids array fails on the count's check.
  const std::vector<Field> fields = {
      {0, "stamp"}, {4, "machinename"}, {20, "uid"}, {24, "gid"}, {28, "gids"}};
  for (size_t n = 0; n < kAuthSysBody.size(); ++n) {
    OpaqueAuth auth{1, std::vector<uint8_t>(kAuthSysBody.begin(),
                                            kAuthSysBody.begin() + n)};
    absl::Status s = DecodeAuthSys(auth).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << n << ": " << s;
    const Field* field = &fields.front();
    for (const Field& f : fields) {
      if (f.offset <= n) field = &f;
    }
    EXPECT_THAT(Message(s), HasSubstr(absl::StrCat("AUTH_SYS body: truncated "
                                                   "at ",
                                                   field->name, " (offset ",
                                                   field->offset, ")")))
        << n;
  }
}

TEST(AuthSys, Rfc5531_AppendixA_GidsCountLargerThanWhatIsLeftIsOutOfRange) {
  OpaqueAuth auth{1, Words({0, 0, 0, 0, 16, 1, 2})};
  absl::Status s = DecodeAuthSys(auth).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(Message(s),
            "AUTH_SYS body: truncated at gids (offset 16): 16 gids need 64 "
            "octets, 8 remain");
}

TEST(AuthSys, Rfc5531_AppendixA_OctetsAfterGidsAreRejected) {
  OpaqueAuth auth{1, kAuthSysBody};
  AppendWord(auth.body, 0);
  absl::Status s = DecodeAuthSys(auth).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s),
            "AUTH_SYS body: 4 octets follow gids (offset 40) inside the "
            "credential body");
}

TEST(AuthSys, Rfc5531_8_2_DecodeRejectsOtherFlavors) {
  OpaqueAuth auth{0, kAuthSysBody};
  absl::Status s = DecodeAuthSys(auth).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s), "auth flavor 0 is not AUTH_SYS (1)");
  EXPECT_EQ(AuthNone(), (OpaqueAuth{0, {}}));
}

TEST(AuthSys, Rfc4506_4_11_PaddingContentIsNotChecked) {
  OpaqueAuth auth{1, kAuthSysBody};
  auth.body[17] = 0xff;  // first padding octet after "nfsclient"
  auto params = DecodeAuthSys(auth);
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(*params, SampleAuthSysParams());
}

// --- Replies -----------------------------------------------------------------

ReplyHeader Accepted(AcceptStat stat) {
  ReplyHeader h;
  h.xid = 0x0badcafe;
  h.reply_stat = ReplyStat::kAccepted;
  h.verifier = AuthNone();
  h.accept_stat = stat;
  return h;
}

ReplyHeader Denied(RejectStat stat) {
  ReplyHeader h;
  h.xid = 0x0badcafe;
  h.reply_stat = ReplyStat::kDenied;
  h.reject_stat = stat;
  return h;
}

void ExpectReplyGolden(const ReplyHeader& header,
                       const std::vector<uint8_t>& golden,
                       size_t header_length) {
  std::vector<uint8_t> out;
  ASSERT_TRUE(EncodeReplyHeader(header, out).ok());
  EXPECT_THAT(out, ElementsAreArray(golden.data(), header_length));
  auto decoded = DecodeReplyHeader(golden);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->header, header);
  EXPECT_EQ(decoded->body_offset, header_length);
}

TEST(RpcMsgReply, Rfc5531_9_AcceptedSuccessGolden) {
  const ReplyHeader header = Accepted(AcceptStat::kSuccess);
  ExpectReplyGolden(header, kSuccessReply, 24);
  EXPECT_TRUE(ReplyStatus(header).ok());
}

TEST(RpcMsgReply, Rfc5531_9_ProgMismatchGolden) {
  ReplyHeader header = Accepted(AcceptStat::kProgMismatch);
  header.mismatch_low = 2;
  header.mismatch_high = 3;
  ExpectReplyGolden(header, kProgMismatchReply, 32);
  absl::Status s = ReplyStatus(header);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Message(s), "PROG_MISMATCH 2..3");
}

TEST(RpcMsgReply, Rfc5531_9_RpcMismatchDeniedGolden) {
  ReplyHeader header = Denied(RejectStat::kRpcMismatch);
  header.mismatch_low = 2;
  header.mismatch_high = 2;
  ExpectReplyGolden(header, kRpcMismatchReply, 24);
  absl::Status s = ReplyStatus(header);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Message(s), "RPC_MISMATCH 2..2");
}

TEST(RpcMsgReply, Rfc5531_9_AuthErrorDeniedGolden) {
  ReplyHeader header = Denied(RejectStat::kAuthError);
  header.auth_stat = 5;
  ExpectReplyGolden(header, kAuthErrorReply, 20);
  absl::Status s = ReplyStatus(header);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(Message(s), "AUTH_ERROR AUTH_TOOWEAK (5)");
}

TEST(RpcMsgReply, Rfc5531_9_EveryArmRoundTrips) {
  std::vector<ReplyHeader> headers;
  for (uint32_t a = 0; a <= 5; ++a) {
    ReplyHeader h = Accepted(static_cast<AcceptStat>(a));
    h.verifier = OpaqueAuth{6, {1, 2, 3, 4, 5}};  // padded to 8
    if (h.accept_stat == AcceptStat::kProgMismatch) {
      h.mismatch_low = 1;
      h.mismatch_high = 0xffffffff;
    }
    headers.push_back(h);
  }
  ReplyHeader rpc = Denied(RejectStat::kRpcMismatch);
  rpc.mismatch_low = 2;
  rpc.mismatch_high = 4;
  headers.push_back(rpc);
  for (uint32_t stat : {0u, 1u, 13u, 14u, 0xffffffffu}) {
    ReplyHeader auth = Denied(RejectStat::kAuthError);
    auth.auth_stat = stat;
    headers.push_back(auth);
  }
  for (const ReplyHeader& h : headers) {
    std::vector<uint8_t> out;
    ASSERT_TRUE(EncodeReplyHeader(h, out).ok());
    const size_t header_length = out.size();
    AppendWord(out, 0x99);  // results or trailing data
    auto decoded = DecodeReplyHeader(out);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->header, h);
    EXPECT_EQ(decoded->body_offset, header_length);
  }
}

TEST(RpcMsgReply, Rfc5531_9_TruncatedAtEveryFieldBoundaryIsOutOfRange) {
  const std::vector<Field> accepted = {{0, "xid"},
                                       {4, "msg_type"},
                                       {8, "reply_stat"},
                                       {12, "verf.flavor"},
                                       {16, "verf.body"},
                                       {20, "accept_stat"},
                                       {24, "mismatch_info.low"},
                                       {28, "mismatch_info.high"}};
  ExpectEveryPrefixTruncated(kSuccessReply, 24, accepted, DecodeReplyStatus);
  ExpectEveryPrefixTruncated(kProgMismatchReply, 32, accepted,
                             DecodeReplyStatus);
  ExpectEveryPrefixTruncated(kRpcMismatchReply, 24,
                             {{0, "xid"},
                              {4, "msg_type"},
                              {8, "reply_stat"},
                              {12, "reject_stat"},
                              {16, "mismatch_info.low"},
                              {20, "mismatch_info.high"}},
                             DecodeReplyStatus);
  ExpectEveryPrefixTruncated(kAuthErrorReply, 20,
                             {{0, "xid"},
                              {4, "msg_type"},
                              {8, "reply_stat"},
                              {12, "reject_stat"},
                              {16, "auth_stat"}},
                             DecodeReplyStatus);
}

TEST(RpcMsgReply, Rfc5531_9_RejectsMessageThatIsNotAReply) {
  absl::Status s = DecodeReplyHeader(kNullCall).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s), "bad msg_type 0 at offset 4: expected REPLY (1)");
  std::vector<uint8_t> m = kSuccessReply;
  m[7] = 2;
  EXPECT_EQ(DecodeReplyHeader(m).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RpcMsgReply, Rfc5531_9_RejectsUnknownReplyStat) {
  std::vector<uint8_t> m = kSuccessReply;
  m[11] = 2;
  absl::Status s = DecodeReplyHeader(m).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s),
            "bad reply_stat 2 at offset 8: expected MSG_ACCEPTED (0) or "
            "MSG_DENIED (1)");
}

TEST(RpcMsgReply, Rfc5531_9_RejectsUnknownAcceptStat) {
  std::vector<uint8_t> m = kSuccessReply;
  m[23] = 6;
  absl::Status s = DecodeReplyHeader(m).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s),
            "bad accept_stat 6 at offset 20: RFC 5531 §9 defines SUCCESS (0) "
            "to SYSTEM_ERR (5)");
}

TEST(RpcMsgReply, Rfc5531_9_RejectsUnknownRejectStat) {
  std::vector<uint8_t> m = kAuthErrorReply;
  m[15] = 2;
  absl::Status s = DecodeReplyHeader(m).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s),
            "bad reject_stat 2 at offset 12: expected RPC_MISMATCH (0) or "
            "AUTH_ERROR (1)");
}

TEST(RpcMsgReply, Rfc5531_8_2_VerifierOf401OrLongerThanWhatIsLeftIsRejected) {
  std::vector<uint8_t> m = Words({1, 1, 0, 0, 401});
  m.resize(m.size() + 404 + 4, 0);
  absl::Status s = DecodeReplyHeader(m).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s),
            "length 401 of verf.body (offset 16) exceeds the limit of 400");

  m = Words({1, 1, 0, 0, 8, 0});
  s = DecodeReplyHeader(m).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(Message(s),
            "truncated at verf.body (offset 16): length 8 needs 8 octets, 4 "
            "remain");
}

TEST(RpcMsgReply, EncodeRejectsValuesOutsideRfc5531) {
  std::vector<uint8_t> out;
  ReplyHeader h = Accepted(AcceptStat::kSuccess);
  h.reply_stat = static_cast<ReplyStat>(2);
  EXPECT_EQ(Message(EncodeReplyHeader(h, out)), "unknown reply_stat 2");
  h = Accepted(static_cast<AcceptStat>(6));
  EXPECT_EQ(Message(EncodeReplyHeader(h, out)), "unknown accept_stat 6");
  h = Denied(static_cast<RejectStat>(2));
  EXPECT_EQ(Message(EncodeReplyHeader(h, out)), "unknown reject_stat 2");
  h = Accepted(AcceptStat::kSuccess);
  h.verifier.body.resize(401);
  absl::Status s = EncodeReplyHeader(h, out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s),
            "verf.body is 401 octets; RFC 5531 §8.2 allows at most 400");
  EXPECT_TRUE(out.empty());
}

// --- ReplyStatus
// ---------------------------------------------------------------

TEST(ReplyStatus, Rfc5531_9_AcceptStatMapsToStatusCodes) {
  struct Case {
    AcceptStat stat;
    absl::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {AcceptStat::kProgUnavail, absl::StatusCode::kUnimplemented,
       "PROG_UNAVAIL"},
      {AcceptStat::kProcUnavail, absl::StatusCode::kUnimplemented,
       "PROC_UNAVAIL"},
      {AcceptStat::kGarbageArgs, absl::StatusCode::kInvalidArgument,
       "GARBAGE_ARGS"},
      {AcceptStat::kSystemErr, absl::StatusCode::kInternal, "SYSTEM_ERR"},
  };
  for (const Case& c : cases) {
    absl::Status s = ReplyStatus(Accepted(c.stat));
    EXPECT_EQ(s.code(), c.code) << c.message;
    EXPECT_EQ(Message(s), c.message);
  }
  ReplyHeader prog = Accepted(AcceptStat::kProgMismatch);
  prog.mismatch_low = 3;
  prog.mismatch_high = 4;
  EXPECT_EQ(Message(ReplyStatus(prog)), "PROG_MISMATCH 3..4");
}

TEST(ReplyStatus, Rfc5531_9_AuthErrorNamesEveryAuthStat) {
  const char* names[] = {
      "AUTH_OK",
      "AUTH_BADCRED",
      "AUTH_REJECTEDCRED",
      "AUTH_BADVERF",
      "AUTH_REJECTEDVERF",
      "AUTH_TOOWEAK",
      "AUTH_INVALIDRESP",
      "AUTH_FAILED",
      "AUTH_KERB_GENERIC",
      "AUTH_TIMEEXPIRE",
      "AUTH_TKT_FILE",
      "AUTH_DECODE",
      "AUTH_NET_ADDR",
      "RPCSEC_GSS_CREDPROBLEM",
      "RPCSEC_GSS_CTXPROBLEM",
  };
  ReplyHeader h = Denied(RejectStat::kAuthError);
  for (uint32_t i = 0; i < std::size(names); ++i) {
    h.auth_stat = i;
    absl::Status s = ReplyStatus(h);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(Message(s), absl::StrCat("AUTH_ERROR ", names[i], " (", i, ")"));
  }
  h.auth_stat = 1;
  EXPECT_EQ(Message(ReplyStatus(h)), "AUTH_ERROR AUTH_BADCRED (1)");
  h.auth_stat = 15;
  EXPECT_EQ(Message(ReplyStatus(h)), "AUTH_ERROR unknown auth_stat (15)");
  h.auth_stat = 0xffffffff;
  EXPECT_EQ(Message(ReplyStatus(h)),
            "AUTH_ERROR unknown auth_stat (4294967295)");
}

TEST(ReplyStatus, ValuesOutsideRfc5531AreUnknown) {
  ReplyHeader h = Accepted(AcceptStat::kSuccess);
  h.reply_stat = static_cast<ReplyStat>(9);
  EXPECT_EQ(ReplyStatus(h).code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(Message(ReplyStatus(h)), "unknown reply_stat 9");
  EXPECT_EQ(Message(ReplyStatus(Accepted(static_cast<AcceptStat>(6)))),
            "unknown accept_stat 6");
  EXPECT_EQ(Message(ReplyStatus(Denied(static_cast<RejectStat>(2)))),
            "unknown reject_stat 2");
}

}  // namespace
}  // namespace rpcrdma::oncrpc
