// rpcrdma-dump against octets a peer chose: whatever a capture holds is
// printed, escaped where it is not text, and never stops the tool.
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/byte_vectors.h"
#include "tools/dump/dump_cli.h"
#include "tools/dump/dump_format.h"

namespace rpcrdma::dump {
namespace {

using nlohmann::json;

// A call of the Thrift bridge (bridge/README.md) whose method name is ten
// octets the peer chose: "St", FF FE (never UTF-8), ":e", a backslash, "c",
// then C3 A9 (U+00E9, valid UTF-8).
constexpr char kThriftCallWithBadName[] =
    "00000003 00000001 00000080 00000000"  // xid 3, vers 1, 128, MSG
    " 00000000 00000000 00000000"          // no reads, writes, reply
    " 00000003 00000000 00000002 20007468 00000001 00000001"  // THRIFT_CALL
    " 00000000 00000000 00000000 00000000"  // AUTH_NONE cred, verf
    " 00000c00"                             // max_reply 3072
    " 0000000a 5374fffe 3a655c63 c3a90000"  // the name, 10 octets
    " 0000002a 00000001"                    // seqid 42, T_CALL
    " 00000004 80010001"                    // leading octets
    " 00000000";                            // no bulk items
// How the name is printed.
constexpr char kEscapedName[] = "St\\xff\\xfe:e\\\\c\xc3\xa9";

TEST(DumpHostile, NonUtf8ThriftMethodNameIsEscapedInTheJson) {
  std::optional<json> j =
      FormatMessage(::rpcrdma::test::HexBytes(kThriftCallWithBadName),
                    MessageContext{1, std::nullopt});
  ASSERT_TRUE(j.has_value());
  ASSERT_TRUE(j->contains("rpc")) << j->dump();
  EXPECT_EQ((*j)["rpc"]["thrift"]["method"], kEscapedName);
  for (bool pretty : {false, true}) {
    std::string line;
    ASSERT_NO_THROW(line = FormatLine(*j, pretty));
    EXPECT_EQ(json::parse(line)["rpc"]["thrift"]["method"], kEscapedName);
  }
}

// The tool prints the message and goes on, in both output forms.
TEST(DumpHostile, NonUtf8ThriftMethodNameDoesNotStopTheTool) {
  for (const char* form : {"--nopretty", "--pretty"}) {
    SCOPED_TRACE(form);
    std::istringstream in;
    std::ostringstream out, err;
    const std::vector<std::string> args = {
        form, "--hex", kThriftCallWithBadName,
        "00000004 00000001 00000080 00000003"};
    int status = -1;
    ASSERT_NO_THROW(status = RunDump(args, in, out, err));
    EXPECT_EQ(status, kExitOk) << err.str();
    EXPECT_NE(out.str().find("St\\\\xff\\\\xfe:e\\\\\\\\c\xc3\xa9"),
              std::string::npos)
        << out.str();
    // The message after it is printed too (RDMA_DONE, frame 2).
    EXPECT_NE(out.str().find("RDMA_DONE"), std::string::npos) << out.str();
  }
}

TEST(EscapeOctets, ValidUtf8IsKept) {
  EXPECT_EQ(EscapeOctets("Store:echo"), "Store:echo");
  // U+00E9, U+20AC, U+10348: two, three and four octets.
  EXPECT_EQ(EscapeOctets("\xc3\xa9\xe2\x82\xac\xf0\x90\x8d\x88"),
            "\xc3\xa9\xe2\x82\xac\xf0\x90\x8d\x88");
  EXPECT_EQ(EscapeOctets(""), "");
}

TEST(EscapeOctets, BackslashesAndControlCharactersAreEscaped) {
  EXPECT_EQ(EscapeOctets("a\\b"), "a\\\\b");
  EXPECT_EQ(EscapeOctets(std::string("a\0b\n\x7f", 5)), "a\\x00b\\x0a\\x7f");
}

// RFC 3629 §3-§4: what is not UTF-8 is escaped octet by octet, and what
// follows it is read afresh.
TEST(EscapeOctets, Rfc3629_4_OctetsThatAreNotUtf8AreEscaped) {
  EXPECT_EQ(EscapeOctets("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(EscapeOctets("\xc0\x80"), "\\xc0\\x80");           // overlong NUL
  EXPECT_EQ(EscapeOctets("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");  // overlong
  EXPECT_EQ(EscapeOctets("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // surrogate
  EXPECT_EQ(EscapeOctets("\xf4\x90\x80\x80"),
            "\\xf4\\x90\\x80\\x80");                  // past U+10FFFF
  EXPECT_EQ(EscapeOctets("\xe2\x82"), "\\xe2\\x82");  // cut short
  EXPECT_EQ(EscapeOctets("\x80z"), "\\x80z");         // lone continuation
  EXPECT_EQ(EscapeOctets("\xc3\xc3\xa9"), "\\xc3\xc3\xa9");
}

TEST(EscapeOctets, EveryResultIsValidJsonText) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const std::string escaped = EscapeOctets(all + all.substr(0x80));
  EXPECT_NO_THROW((void)json(escaped).dump());
}

}  // namespace
}  // namespace rpcrdma::dump
