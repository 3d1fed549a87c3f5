// What rpcrdma-dump makes of the protobuf adapter's RPC messages
// (protobuf/README.md §1, §2, §6) given its services: calls named by the
// program number the adapter derives, replies by the XID of their call,
// stream control calls by their stream id and seq, and bodies that do not
// decode named with why, never fatal.
#include <cstdint>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "rpcrdma/protobuf/program.h"
#include "tests/testing/byte_vectors.h"
#include "tools/dump/dump_format.h"
#include "tools/dump/protobuf_decoder.h"
#include "tools/dump/protobuf_descriptor_set.h"
#include "tools/dump/protobuf_services.h"

namespace rpcrdma::dump {
namespace {

using nlohmann::json;
using protobuf::ProgramNumberFor;
using test::Words;

ProtobufServices TestServices() {
  absl::StatusOr<ProtobufServices> services = ProtobufServices::Create(
      {{"pkg.Svc", {{"Get", false, false}, {"Watch", false, true}}}});
  EXPECT_TRUE(services.ok()) << services.status();
  return std::move(*services);
}

// `rpc` behind an RDMA_MSG header without chunks (RFC 8166 §4.2).
std::vector<uint8_t> InMsg(const std::vector<uint8_t>& rpc) {
  std::vector<uint8_t> m = Words({7, 1, 32, 0, 0, 0, 0});
  m.insert(m.end(), rpc.begin(), rpc.end());
  return m;
}

// An RFC 5531 call header with AUTH_NONE, then `args`.
std::vector<uint8_t> Call(uint32_t xid, uint32_t program, uint32_t procedure,
                          std::initializer_list<uint32_t> args,
                          uint32_t version = protobuf::kProgramVersion) {
  std::vector<uint8_t> rpc =
      Words({xid, 0, 2, program, version, procedure, 0, 0, 0, 0});
  std::vector<uint8_t> a = Words(args);
  rpc.insert(rpc.end(), a.begin(), a.end());
  return InMsg(rpc);
}

// An RFC 5531 MSG_ACCEPTED reply with AUTH_NONE and `accept_stat`, then
// `body`.
std::vector<uint8_t> Reply(uint32_t xid, std::initializer_list<uint32_t> body,
                           uint32_t accept_stat = 0) {
  std::vector<uint8_t> rpc = Words({xid, 1, 0, 0, 0, accept_stat});
  std::vector<uint8_t> b = Words(body);
  rpc.insert(rpc.end(), b.begin(), b.end());
  return InMsg(rpc);
}

class DumpProtobuf : public ::testing::Test {
 protected:
  // The "protobuf" object of `message`'s rpc, or null when it has none.
  json Decode(const std::vector<uint8_t>& message) {
    std::optional<json> j =
        FormatMessage(message, {1, std::nullopt}, &decoder_);
    EXPECT_TRUE(j.has_value());
    if (!j || !j->contains("rpc") || !(*j)["rpc"].contains("protobuf")) {
      return nullptr;
    }
    // Every line the tool would print parses back.
    EXPECT_EQ(json::parse(FormatLine(*j, false)), *j);
    return (*j)["rpc"]["protobuf"];
  }

  const uint32_t program_ = ProgramNumberFor("pkg.Svc");
  ProtobufServices services_ = TestServices();
  ProtobufDecoder decoder_{services_};
};

TEST_F(DumpProtobuf, UnaryCallAndItsReplyNameServiceMethodAndStatus) {
  // timeout 250 ms; one metadata pair ("k", "v"); a 3-octet message; two
  // bulk fields (what follows their count is not read).
  EXPECT_EQ(
      Decode(Call(0x51, program_, 1,
                  {250, 1, 1, 0x6b000000, 1, 0x76000000, 3, 0x08960100, 2})),
      json::parse(R"({"service":"pkg.Svc","method":"Get",
                "timeout_ms":250,"metadata":1,"message_length":3,"bulk":2})"));
  // code OK, no message, no trailing metadata, an empty message, no bulk.
  EXPECT_EQ(Decode(Reply(0x51, {0, 0, 0, 0, 0})),
            json::parse(R"({"service":"pkg.Svc","method":"Get","code":"OK",
                "metadata":0,"message_length":0,"bulk":0})"));
  // The call was answered: a second reply of its XID is not labelled.
  EXPECT_EQ(Decode(Reply(0x51, {0, 0, 0, 0, 0})), nullptr);
}

TEST_F(DumpProtobuf, AStreamsOpenNextAndCancelCarryItsIdAndSeq) {
  EXPECT_EQ(Decode(Call(0x61, program_, 2, {0, 0, 0, 0}))["streaming"],
            "server");
  // code OK, no message, no trailing, stream id 0x0000000a0000000b.
  EXPECT_EQ(Decode(Reply(0x61, {0, 0, 0, 0xa, 0xb})),
            json::parse(R"({"service":"pkg.Svc","method":"Watch","code":"OK",
                "metadata":0,"stream_id":42949672971})"));
  // NEXT of that stream, seq 3: named by the stream's method.
  EXPECT_EQ(Decode(Call(0x62, program_, protobuf::kStreamNextProcedure,
                        {0xa, 0xb, 0, 3})),
            json::parse(R"({"service":"pkg.Svc","procedure":"NEXT",
                "method":"Watch","stream_id":42949672971,"seq":3})"));
  // STREAM_END with NOT_FOUND and a message whose octets are not UTF-8.
  EXPECT_EQ(Decode(Reply(0x62, {1, 5, 2, 0xff0a0000, 0})),
            json::parse(R"({"service":"pkg.Svc","procedure":"NEXT",
                "method":"Watch","stream_id":42949672971,"seq":3,
                "item":"END","code":"NOT_FOUND","message":"\\xff\\x0a",
                "metadata":0})"));
  // CANCEL of a stream whose open is not in the capture: no method.
  EXPECT_EQ(
      Decode(Call(0x63, program_, protobuf::kStreamCancelProcedure, {0, 9})),
      json::parse(R"({"service":"pkg.Svc","procedure":"CANCEL",
                "stream_id":9})"));
  // A status code past UNAUTHENTICATED is printed as its number.
  EXPECT_EQ(Decode(Reply(0x63, {99, 0, 0}))["code"], 99);
}

// A client stream's SEND (protobuf/README.md §6) carries the stream's id
// and the message's seq, its HALF_CLOSE the count of messages sent.
TEST_F(DumpProtobuf, AClientStreamsSendAndHalfCloseCarryItsIdSeqAndCount) {
  EXPECT_EQ(Decode(Call(0x71, program_, protobuf::kStreamSendProcedure,
                        {0, 9, 0, 4, 0, 0, 0})),
            json::parse(R"({"service":"pkg.Svc","procedure":"SEND",
                "stream_id":9,"seq":4})"));
  EXPECT_EQ(Decode(Call(0x72, program_, protobuf::kStreamHalfCloseProcedure,
                        {0, 9, 0, 5})),
            json::parse(R"({"service":"pkg.Svc","procedure":"HALF_CLOSE",
                "stream_id":9,"count":5})"));
  EXPECT_EQ(Decode(Reply(0x72, {0, 0, 0}))["code"], "OK");
}

TEST_F(DumpProtobuf, OtherProgramsVersionsAndRepliesAreNotLabelled) {
  EXPECT_EQ(Decode(Call(1, ProgramNumberFor("pkg.Other"), 1, {0})), nullptr);
  EXPECT_EQ(Decode(Call(2, program_, 1, {0}, /*version=*/2)), nullptr);
  EXPECT_EQ(Decode(Reply(3, {0, 0, 0})), nullptr);
  // NULL, and a procedure no method has, still name the service.
  EXPECT_EQ(Decode(Call(4, program_, 0, {})),
            json::parse(R"({"service":"pkg.Svc","procedure":"NULL"})"));
  EXPECT_EQ(Decode(Reply(4, {})),
            json::parse(R"({"service":"pkg.Svc","procedure":"NULL"})"));
  EXPECT_EQ(Decode(Call(5, program_, 3, {})),
            json::parse(R"({"service":"pkg.Svc","procedure":3})"));
  EXPECT_EQ(Decode(Reply(5, {}, /*accept_stat=*/3)),
            json::parse(R"({"service":"pkg.Svc","procedure":3,
                "accept_stat":"PROC_UNAVAIL"})"));
}

TEST_F(DumpProtobuf, BodiesThatDoNotDecodeSayWhyAfterWhatWasRead) {
  // Cut short after the timeout.
  json cut = Decode(Call(0x71, program_, 1, {250}));
  EXPECT_EQ(cut.at("method"), "Get");
  EXPECT_EQ(cut.at("timeout_ms"), 250);
  EXPECT_NE(cut.at("error").get<std::string>().find("metadata count"),
            std::string::npos)
      << cut;
  // More metadata pairs than the adapter allows.
  json many = Decode(Call(0x72, program_, 1, {0, 65}));
  EXPECT_NE(many.at("error").get<std::string>().find("65"), std::string::npos)
      << many;
  // A NEXT reply of a kind neither MESSAGE nor END.
  Decode(Call(0x73, program_, protobuf::kStreamNextProcedure, {0, 1, 0, 0}));
  json kind = Decode(Reply(0x73, {7}));
  EXPECT_NE(kind.at("error").get<std::string>().find("kind 7"),
            std::string::npos)
      << kind;
}

TEST(DumpProtobufServices, TwoServicesOfOneProgramAreRefused) {
  // FNV-1a puts both names at 0x2a0c71cf.
  ASSERT_EQ(ProgramNumberFor("pkg.S29774"), ProgramNumberFor("pkg.S68250"));
  absl::StatusOr<ProtobufServices> s =
      ProtobufServices::Create({{"pkg.S29774", {}}, {"pkg.S68250", {}}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("pkg.S29774 and pkg.S68250"),
            std::string::npos)
      << s.status();
  // The same service twice (two files of a set declaring it) is one.
  s = ProtobufServices::Create({{"pkg.Svc", {}}, {"pkg.Svc", {}}});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->size(), 1u);
}

TEST(DumpProtobufServices, ADescriptorSetThatDoesNotParseIsRefused) {
  EXPECT_EQ(ParseDescriptorSet("\xff\xff\xff").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseDescriptorSet("").status().message(),
            "the descriptor set names no service");
}

}  // namespace
}  // namespace rpcrdma::dump
