// The rpcrdma-dump JSON contract, checked against messages written out
// octet by octet from the XDR in RFC 8166 §4.2 / RFC 5666 §4 (version one)
// and draft-cel-nfsv4-rpcrdma-version-two-04 §6.2 (version two).
#include "tools/dump/dump_format.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/wire/v1.h"
#include "plugin/wire/v2.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::dump {
namespace {

using nlohmann::json;

std::vector<uint8_t> Bytes(const std::string& hex) {
  return ::rpcrdma::test::HexBytes(hex);
}

json Format(const std::string& hex, uint64_t frame = 7,
            std::optional<uint32_t> invalidate = std::nullopt) {
  std::optional<json> j = FormatMessage(Bytes(hex), {frame, invalidate});
  EXPECT_TRUE(j.has_value()) << hex;
  return j.value_or(json());
}

// --- Version one ---------------------------------------------------------

TEST(DumpFormatV1, Rfc8166_4_2_RdmaMsgInlineCallWithRpc) {
  json got = Format(
      "00000001 00000001 00000010 00000000"  // xid 1, vers 1, credits 16, MSG
      " 00000000 00000000 00000000"          // no reads, writes, reply
      " 00000001 00000000 00000002 000186a3 00000003 00000000"  // RPC call
      " 00000000 00000000 00000000 00000000");
  EXPECT_EQ(got, json::parse(R"({"frame":7,"xid":1,"vers":1,"credits":16,
      "proc":"RDMA_MSG","reads":[],"writes":[],"reply":null,
      "rpc":{"xid":1,"direction":"CALL","program":100003}})"));
}

// A call of the Thrift bridge (bridge/README.md): the procedure and the
// Thrift method and sequence id it carries; its bulk item in a read chunk.
TEST(DumpFormatV1, ThriftBridgeCallShowsMethodAndSeqid) {
  json got = Format(
      "00000003 00000001 00000080 00000000"  // xid 3, vers 1, 128, MSG
      // one read segment at position 84: the bulk item
      " 00000001 00000054 00000abc 00010000 00000000 00001000 00000000"
      " 00000000 00000000"  // no writes, reply
      " 00000003 00000000 00000002 20007468 00000001 00000001"  // THRIFT_CALL
      " 00000000 00000000 00000000 00000000"  // AUTH_NONE cred, verf
      " 00000c00"                             // max_reply 3072
      " 0000000a 53746f72 653a6563 686f0000"  // name "Store:echo"
      " 0000002a 00000001"                    // seqid 42, T_CALL
      " 00000004 80010001"                    // leading octets
      " 00000001 00010000"                    // one bulk item, 65536 (read)
      " 00000000");                           // nothing follows it
  EXPECT_EQ(got["rpc"], json::parse(R"({"xid":3,"direction":"CALL",
      "program":536900712,"procedure":"THRIFT_CALL",
      "thrift":{"method":"Store:echo","seqid":42,"type":"CALL"}})"));
}

TEST(DumpFormatV1, Rfc8166_4_2_RdmaNoMsgWithAllThreeLists) {
  json got = Format(
      "00000002 00000001 00000001 00000001"
      // read list: position 0, handle, length 4096, offset 2^32
      " 00000001 00000000 11223344 00001000 00000001 00000000 00000000"
      // write list: one chunk of two segments
      " 00000001 00000002 000000aa 00000200 00000000 00000010"
      " 000000bb 00000400 00000000 00000020 00000000"
      // reply chunk: one segment with the largest offset
      " 00000001 00000001 000000cc 00001000 ffffffff ffffffff");
  EXPECT_EQ(got, json::parse(R"({"frame":7,"xid":2,"vers":1,"credits":1,
      "proc":"RDMA_NOMSG",
      "reads":[{"position":0,"handle":287454020,"length":4096,
                "offset":4294967296}],
      "writes":[[{"handle":170,"length":512,"offset":16},
                 {"handle":187,"length":1024,"offset":32}]],
      "reply":[{"handle":204,"length":4096,
                "offset":18446744073709551615}]})"));
  // No RPC message follows an RDMA_NOMSG header.
  EXPECT_FALSE(got.contains("rpc"));
}

TEST(DumpFormatV1, Rfc5666_4_2_RdmaMsgpWithReplyAfterIt) {
  json got = Format(
      "00000003 00000001 00000002 00000002 00000040 00001000"  // align, thresh
      " 00000000 00000000 00000000"
      " 00000003 00000001 00000000 00000000 00000000 00000000");  // RPC reply
  EXPECT_EQ(got, json::parse(R"({"frame":7,"xid":3,"vers":1,"credits":2,
      "proc":"RDMA_MSGP","align":64,"thresh":4096,"reads":[],"writes":[],
      "reply":null,"rpc":{"xid":3,"direction":"REPLY"}})"));
}

TEST(DumpFormatV1, Rfc5666_4_RdmaDone) {
  EXPECT_EQ(Format("00000004 00000001 00000000 00000003"),
            json::parse(R"({"frame":7,"xid":4,"vers":1,"credits":0,
                "proc":"RDMA_DONE"})"));
}

TEST(DumpFormatV1, Rfc8166_4_2_ErrVersCarriesTheRange) {
  EXPECT_EQ(Format("00000005 00000001 00000000 00000004 00000001 00000001 "
                   "00000002"),
            json::parse(R"({"frame":7,"xid":5,"vers":1,"credits":0,
                "proc":"RDMA_ERROR","err":"ERR_VERS","vers_low":1,
                "vers_high":2})"));
}

TEST(DumpFormatV1, Rfc8166_4_2_ErrChunk) {
  EXPECT_EQ(Format("00000006 00000001 00000000 00000004 00000002"),
            json::parse(R"({"frame":7,"xid":6,"vers":1,"credits":0,
                "proc":"RDMA_ERROR","err":"ERR_CHUNK"})"));
}

TEST(DumpFormatV1, RpcKeyNeedsEightOctetsAndProgramNeeds24) {
  const std::string header =
      "00000008 00000001 00000001 00000000 00000000 00000000 00000000";
  EXPECT_FALSE(Format(header).contains("rpc"));
  EXPECT_FALSE(Format(header + " 00000008").contains("rpc"));
  // A call of 20 octets: xid and direction, no program.
  EXPECT_EQ(Format(header + " 00000008 00000000 00000002 000186a3 00000003")
                .at("rpc"),
            json::parse(R"({"xid":8,"direction":"CALL"})"));
  // An msg_type that is neither CALL nor REPLY is no RPC message.
  EXPECT_FALSE(Format(header + " 00000008 00000005").contains("rpc"));
}

TEST(DumpFormatV1, InvalidateKeyFromTheIeth) {
  json got = Format("00000004 00000001 00000000 00000003", 3, 0xabcdef01);
  EXPECT_EQ(got.at("invalidate"), 0xabcdef01u);
  EXPECT_FALSE(
      Format("00000004 00000001 00000000 00000003").contains("invalidate"));
}

TEST(DumpFormatV1, NumbersAreJsonIntegers) {
  json got = Format(
      "ffffffff 00000001 ffffffff 00000001 00000001 ffffffff ffffffff"
      " ffffffff ffffffff ffffffff 00000000 00000000 00000000");
  EXPECT_TRUE(got.at("xid").is_number_unsigned());
  EXPECT_EQ(got.at("xid"), 4294967295u);
  EXPECT_EQ(got.at("credits"), 4294967295u);
  const json& seg = got.at("reads").at(0);
  EXPECT_EQ(seg.at("position"), 4294967295u);
  EXPECT_EQ(seg.at("offset"), 18446744073709551615u);
  EXPECT_NE(FormatLine(got, false).find("\"offset\":18446744073709551615}"),
            std::string::npos);
}

TEST(DumpFormatV1, ReceiverLimitsDoNotApplyToADump) {
  wire::V1Header h{0x30, 1, 1, wire::V1NoMsg{}};
  auto& reads = std::get<wire::V1NoMsg>(h.body).chunks.reads;
  for (uint32_t i = 0; i < 300; ++i) {
    reads.push_back(wire::ReadSegment{0, wire::Segment{i, 1, i}});
  }
  std::optional<json> got = FormatMessage(wire::EncodeV1(h), {1, {}});
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(got->contains("reads")) << got->dump();
  EXPECT_EQ(got->at("reads").size(), 300u);
  EXPECT_EQ(got->at("reads").at(299).at("handle"), 299);
}

// --- Malformed and foreign messages --------------------------------------

TEST(DumpFormatErrors, HostileCountIsAnErrorNotAnAllocation) {
  // A write chunk claiming 2^32 - 1 segments in a 28-octet message.
  std::optional<json> got = FormatMessage(
      Bytes("00000031 00000001 00000001 00000001 00000000 00000001 ffffffff"),
      {4, {}});
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->contains("error"));
}

TEST(DumpFormatErrors, Rfc8166_4_MalformedVersionOneGivesTheDecodeError) {
  // The read list says an entry follows, then the message ends.
  const std::vector<uint8_t> m =
      Bytes("00000009 00000001 00000001 00000000 00000001 00000000");
  std::optional<json> got = FormatMessage(m, {12, std::nullopt});
  ASSERT_TRUE(got.has_value());
  auto decoded = wire::DecodeV1(m);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(*got, (json{{"frame", 12},
                        {"error", std::string(decoded.status().message())}}));
  EXPECT_NE(got->at("error").get<std::string>().find("truncated"),
            std::string::npos);
}

TEST(DumpFormatErrors, Rfc8166_4_2_UnknownProcWithVersionOneIsAnError) {
  std::optional<json> got =
      FormatMessage(Bytes("0000000a 00000001 00000001 00000007"), {1, {}});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->size(), 2u);
  EXPECT_EQ(got->at("frame"), 1);
  EXPECT_FALSE(got->at("error").get<std::string>().empty());
}

TEST(DumpFormatErrors, ShortHeaderThatClaimsVersionOneIsAnError) {
  std::optional<json> got =
      FormatMessage(Bytes("0000000b 00000001 00000001"), {2, {}});
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->contains("error"));
}

TEST(DumpFormatErrors, Draft04_6_2_UnknownVersionTwoProcIsAnError) {
  std::optional<json> got =
      FormatMessage(Bytes("0000000c 00000002 00000001 00000003"), {3, {}});
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->contains("error"));
}

TEST(DumpFormatErrors, NotRpcOverRdmaIsSkipped) {
  // rdma_vers 0, 3 and 0x01000000 (a little-endian 1) are not RPC-over-RDMA.
  EXPECT_FALSE(
      FormatMessage(Bytes("00000001 00000000 00000001 00000000"), {1, {}}));
  EXPECT_FALSE(
      FormatMessage(Bytes("00000001 00000003 00000001 00000000"), {1, {}}));
  EXPECT_FALSE(
      FormatMessage(Bytes("00000001 01000000 00000001 00000000"), {1, {}}));
  // Fewer than 8 octets cannot carry rdma_vers.
  EXPECT_FALSE(FormatMessage(Bytes("00000001 000000"), {1, {}}));
  EXPECT_FALSE(FormatMessage({}, {1, {}}));
  EXPECT_FALSE(IsRpcRdmaCandidate(Bytes("00000001 00000003")));
  EXPECT_TRUE(IsRpcRdmaCandidate(Bytes("00000001 00000001")));
  EXPECT_TRUE(IsRpcRdmaCandidate(Bytes("00000001 00000002")));
}

// --- Version two ---------------------------------------------------------

TEST(DumpFormatV2, Draft04_6_2_Rdma2MsgCallWithWriteChunkAndRpc) {
  json got = Format(
      "00000020 00000002 00000008 00000000"  // xid, vers 2, credits, MSG
      " 00000000 00000000"                   // direction CALL, inv_handle 0
      " 00000000"                            // no reads
      " 00000001 00000001 00000077 00000064 00000000 00001000 00000000"
      " 00000000"  // no reply chunk
      " 00000020 00000000 00000002 000186a3 00000004 00000001");
  EXPECT_EQ(got, json::parse(R"({"frame":7,"xid":32,"vers":2,"credits":8,
      "proc":"RDMA2_MSG","direction":"CALL","inv_handle":0,"reads":[],
      "writes":[[{"handle":119,"length":100,"offset":4096}]],"reply":null,
      "rpc":{"xid":32,"direction":"CALL","program":100003}})"));
}

TEST(DumpFormatV2, Draft04_6_2_3_Rdma2NoMsgReplyWithInvHandle) {
  json got = Format(
      "00000021 00000002 00000008 00000001 00000001 deadbeef"
      " 00000000 00000000 00000001 00000001 00000005 00000006 00000000"
      " 00000007");
  EXPECT_EQ(got, json::parse(R"({"frame":7,"xid":33,"vers":2,"credits":8,
      "proc":"RDMA2_NOMSG","direction":"REPLY","inv_handle":3735928559,
      "reads":[],"writes":[],
      "reply":[{"handle":5,"length":6,"offset":7}]})"));
}

TEST(DumpFormatV2, Draft04_6_2_4_ErrorArms) {
  const std::string head = "00000022 00000002 00000000 00000004 ";
  EXPECT_EQ(Format(head + "00000001 00000001 00000002"),
            json::parse(R"({"frame":7,"xid":34,"vers":2,"credits":0,
                "proc":"RDMA2_ERROR","err":"RDMA2_ERR_VERS","vers_low":1,
                "vers_high":2})"));
  EXPECT_EQ(Format(head + "00000002"),
            json::parse(R"({"frame":7,"xid":34,"vers":2,"credits":0,
                "proc":"RDMA2_ERROR","err":"RDMA2_ERR_BAD_XDR"})"));
  EXPECT_EQ(Format(head + "00000004 00000008"),
            json::parse(R"({"frame":7,"xid":34,"vers":2,"credits":0,
                "proc":"RDMA2_ERROR","err":"RDMA2_ERR_READ_CHUNKS",
                "max_chunks":8})"));
  EXPECT_EQ(Format(head + "00000005 00000003").at("max_chunks"), 3);
  EXPECT_EQ(Format(head + "00000005 00000003").at("err"),
            "RDMA2_ERR_WRITE_CHUNKS");
  EXPECT_EQ(Format(head + "00000006 00000010"),
            json::parse(R"({"frame":7,"xid":34,"vers":2,"credits":0,
                "proc":"RDMA2_ERROR","err":"RDMA2_ERR_SEGMENTS",
                "max_segments":16})"));
  EXPECT_EQ(Format(head + "00000007 00000002 00010000"),
            json::parse(R"({"frame":7,"xid":34,"vers":2,"credits":0,
                "proc":"RDMA2_ERROR","err":"RDMA2_ERR_WRITE_RESOURCE",
                "chunk_index":2,"length_needed":65536})"));
  EXPECT_EQ(Format(head + "00000008 00002328"),
            json::parse(R"({"frame":7,"xid":34,"vers":2,"credits":0,
                "proc":"RDMA2_ERROR","err":"RDMA2_ERR_REPLY_RESOURCE",
                "length_needed":9000})"));
  EXPECT_EQ(Format(head + "0000000a").at("err"), "RDMA2_ERR_SYSTEM");
}

TEST(DumpFormatV2, Draft04_6_2_Rdma2Optional) {
  EXPECT_EQ(Format("00000023 00000002 00000001 00000005 00000001 00001234"
                   " 00000005 01020304 05000000"),
            json::parse(R"({"frame":7,"xid":35,"vers":2,"credits":1,
                "proc":"RDMA2_OPTIONAL","optdir":"REPLY","opttype":4660,
                "optinfo_length":5})"));
}

TEST(DumpFormatV2, Draft04_5_2_ConnPropWithKnownAndUnknownProperties) {
  json got = Format(
      "00000024 00000002 00000001 00000006"
      " 00000003"                    // three properties
      " 00000001 00000004 00002000"  // RBSIZ 8192
      " 00000002 00000004 00000002"  // BRS GENL
      " 00000063 00000003 aabbcc00"  // unknown id 99, 3 octets
      " 00000001 00000003");         // nochg: one word
  EXPECT_EQ(got, json::parse(R"({"frame":7,"xid":36,"vers":2,"credits":1,
      "proc":"RDMA2_CONNPROP",
      "props":[{"which":1,"name":"RBSIZ","value":8192,"length":4},
               {"which":2,"name":"BRS","value":"GENL","length":4},
               {"which":99,"name":null,"length":3}],
      "nochg":[3]})"));
}

TEST(DumpFormatV2, Draft04_5_1_1_ZeroLengthValueIsTheDefault) {
  EXPECT_EQ(Format("00000025 00000002 00000001 00000007"
                   " 00000001 00000002 00000000"),
            json::parse(R"({"frame":7,"xid":37,"vers":2,"credits":1,
                "proc":"RDMA2_REQPROP",
                "props":[{"which":2,"name":"BRS","value":"INLINE",
                          "length":0}]})"));
  EXPECT_EQ(Format("00000026 00000002 00000001 00000009"
                   " 00000001 00000001 00000000"),
            json::parse(R"({"frame":7,"xid":38,"vers":2,"credits":1,
                "proc":"RDMA2_UPDPROP",
                "props":[{"which":1,"name":"RBSIZ","value":4096,
                          "length":0}]})"));
}

TEST(DumpFormatV2, Draft04_5_ResPropLists) {
  EXPECT_EQ(Format("00000027 00000002 00000001 00000008"
                   " 00000001 00000001"           // done: [1]
                   " 00000002 00000002 80000000"  // rejected: [2, 2^31]
                   " 00000001 00000002 00000004 00000000"),  // BRS NONE
            json::parse(R"({"frame":7,"xid":39,"vers":2,"credits":1,
                "proc":"RDMA2_RESPROP","done":[1],
                "rejected":[2,2147483648],
                "props":[{"which":2,"name":"BRS","value":"NONE",
                          "length":4}]})"));
}

// --- Output and hex input ------------------------------------------------

TEST(DumpFormatLine, KeysInReadableOrder) {
  json j = Format(
      "00000005 00000001 00000000 00000004 00000001 00000001 "
      "00000002");
  EXPECT_EQ(FormatLine(j, false),
            R"({"frame":7,"xid":5,"vers":1,"credits":0,"proc":"RDMA_ERROR",)"
            R"("err":"ERR_VERS","vers_low":1,"vers_high":2})");
  json m = Format(
      "00000002 00000001 00000001 00000001"
      " 00000001 00000000 11223344 00001000 00000001 00000000 00000000"
      " 00000000 00000000");
  EXPECT_EQ(FormatLine(m, false),
            R"({"frame":7,"xid":2,"vers":1,"credits":1,"proc":"RDMA_NOMSG",)"
            R"("reads":[{"position":0,"handle":287454020,"length":4096,)"
            R"("offset":4294967296}],"writes":[],"reply":null})");
  const std::string pretty = FormatLine(j, true);
  EXPECT_NE(pretty.find('\n'), std::string::npos);
  EXPECT_EQ(json::parse(pretty), j);
}

TEST(DumpFormatHex, SeparatorsAndPrefix) {
  auto a = ParseHex("00 01:0a0B\tff\n");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, (std::vector<uint8_t>{0x00, 0x01, 0x0a, 0x0b, 0xff}));
  auto b = ParseHex("  0x0102");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (std::vector<uint8_t>{1, 2}));
  auto empty = ParseHex("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(DumpFormatHex, BadDigitOrOddCountFails) {
  EXPECT_FALSE(ParseHex("0g").ok());
  EXPECT_FALSE(ParseHex("012").ok());
  EXPECT_FALSE(ParseHex("01-02").ok());
  EXPECT_NE(std::string(ParseHex("01 zz").status().message()).find("'z'"),
            std::string::npos);
}

}  // namespace
}  // namespace rpcrdma::dump
