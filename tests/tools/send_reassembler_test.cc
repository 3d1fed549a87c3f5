// RC SEND reassembly (IBA Vol 1 §9.4.1, §9.7.1): packets of a message on
// consecutive PSNs, retransmissions dropped, gaps reported.
#include "tools/pcap/send_reassembler.h"

#include <deque>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace rpcrdma::pcap {
namespace {

class Reassembly : public ::testing::Test {
 protected:
  // Feeds one packet for (192.0.2.2, QP `qp`) and returns what came out.
  std::vector<SendRecord> Feed(uint64_t frame, uint8_t opcode, uint32_t psn,
                               const std::string& payload, uint32_t qp = 0x12,
                               std::optional<uint32_t> ieth = std::nullopt) {
    payloads_.push_back(payload);
    RocePacket p;
    p.src = *IpAddress::Parse("192.0.2.1");
    p.dst = *IpAddress::Parse("192.0.2.2");
    p.opcode = opcode;
    p.dest_qp = qp;
    p.psn = psn;
    p.invalidate_rkey = ieth;
    const std::string& kept = payloads_.back();
    p.payload = absl::Span<const uint8_t>(
        reinterpret_cast<const uint8_t*>(kept.data()), kept.size());
    std::vector<SendRecord> out;
    r_.Add(frame, p, out);
    return out;
  }

  static std::string Text(const SendRecord& r) {
    const auto& m = std::get<SendMessage>(r);
    return std::string(m.payload.begin(), m.payload.end());
  }

  SendReassembler r_;
  std::deque<std::string> payloads_;  // keeps spans valid
};

TEST_F(Reassembly, SendOnlyIsOneMessage) {
  auto out = Feed(3, 0x04, 10, "abcd");
  ASSERT_EQ(out.size(), 1u);
  const auto& m = std::get<SendMessage>(out[0]);
  EXPECT_EQ(m.frame, 3u);
  EXPECT_EQ(m.first_frame, 3u);
  EXPECT_EQ(m.packets, 1u);
  EXPECT_EQ(m.dest_qp, 0x12u);
  EXPECT_EQ(m.src.ToString(), "192.0.2.1");
  EXPECT_EQ(m.dst.ToString(), "192.0.2.2");
  EXPECT_EQ(Text(out[0]), "abcd");
}

TEST_F(Reassembly, FirstMiddleLastJoinAtTheLastFrame) {
  EXPECT_TRUE(Feed(1, 0x00, 100, "ab").empty());
  EXPECT_TRUE(Feed(2, 0x01, 101, "cd").empty());
  EXPECT_TRUE(Feed(3, 0x01, 102, "ef").empty());
  auto out = Feed(4, 0x16, 103, "g", 0x12, 0xabcdef01);
  ASSERT_EQ(out.size(), 1u);
  const auto& m = std::get<SendMessage>(out[0]);
  EXPECT_EQ(Text(out[0]), "abcdefg");
  EXPECT_EQ(m.frame, 4u);
  EXPECT_EQ(m.first_frame, 1u);
  EXPECT_EQ(m.packets, 4u);
  EXPECT_EQ(m.first_psn, 100u);
  EXPECT_EQ(m.last_opcode, 0x16);
  EXPECT_EQ(m.invalidate_rkey, 0xabcdef01u);
}

TEST_F(Reassembly, PsnWrapsAt24Bits) {
  EXPECT_TRUE(Feed(1, 0x00, 0xFFFFFE, "a").empty());
  EXPECT_TRUE(Feed(2, 0x01, 0xFFFFFF, "b").empty());
  auto out = Feed(3, 0x02, 0, "c");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Text(out[0]), "abc");
}

TEST_F(Reassembly, QueuesAreKeptApart) {
  EXPECT_TRUE(Feed(1, 0x00, 5, "a", 0x12).empty());
  ASSERT_EQ(Feed(2, 0x04, 77, "x", 0x13).size(), 1u);  // another QP
  auto out = Feed(3, 0x02, 6, "b", 0x12);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Text(out[0]), "ab");
}

TEST_F(Reassembly, RetransmittedPacketsAreDropped) {
  ASSERT_EQ(Feed(1, 0x04, 7, "one").size(), 1u);
  EXPECT_TRUE(Feed(2, 0x04, 7, "one").empty());  // SEND_ONLY again
  EXPECT_TRUE(Feed(3, 0x00, 8, "ab").empty());
  EXPECT_TRUE(Feed(4, 0x00, 8, "ab").empty());  // FIRST again
  EXPECT_TRUE(Feed(5, 0x01, 9, "cd").empty());
  EXPECT_TRUE(Feed(6, 0x01, 9, "cd").empty());  // MIDDLE again
  auto out = Feed(7, 0x02, 10, "e");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Text(out[0]), "abcde");
  EXPECT_TRUE(Feed(8, 0x02, 10, "e").empty());  // LAST after completion
  EXPECT_TRUE(Feed(9, 0x01, 9, "cd").empty());  // old MIDDLE
  ASSERT_EQ(Feed(10, 0x04, 11, "next").size(), 1u);
}

TEST_F(Reassembly, GapInsideAMessageIsAnErrorForThatFrame) {
  EXPECT_TRUE(Feed(1, 0x00, 20, "ab").empty());
  auto out = Feed(2, 0x02, 22, "cd");  // PSN 21 is missing
  ASSERT_EQ(out.size(), 1u);
  const auto& e = std::get<SendError>(out[0]);
  EXPECT_EQ(e.frame, 2u);
  EXPECT_EQ(e.psn, 22u);
  EXPECT_EQ(e.dest_qp, 0x12u);
  EXPECT_NE(e.message.find("PSN gap"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("21"), std::string::npos) << e.message;
  // The queue is usable again.
  ASSERT_EQ(Feed(3, 0x04, 23, "x").size(), 1u);
}

TEST_F(Reassembly, GapBeforeASendOnlyStillYieldsIt) {
  EXPECT_TRUE(Feed(1, 0x00, 30, "ab").empty());
  auto out = Feed(2, 0x04, 40, "new");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<SendError>(out[0]));
  EXPECT_EQ(Text(out[1]), "new");
}

TEST_F(Reassembly, MiddleOrLastWithoutFirstIsAnError) {
  auto out = Feed(5, 0x01, 50, "zz");
  ASSERT_EQ(out.size(), 1u);
  const auto& e = std::get<SendError>(out[0]);
  EXPECT_EQ(e.frame, 5u);
  EXPECT_NE(e.message.find("SEND_MIDDLE PSN 50 without a SEND_FIRST"),
            std::string::npos)
      << e.message;
  out = Feed(6, 0x02, 51, "zz");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(std::get<SendError>(out[0]).message.find("SEND_LAST"),
            std::string::npos);
}

TEST_F(Reassembly, NewMessageWhileOneIsUnfinished) {
  EXPECT_TRUE(Feed(1, 0x00, 60, "ab").empty());
  auto out = Feed(2, 0x04, 61, "solo");  // the expected PSN, but not MIDDLE
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NE(std::get<SendError>(out[0]).message.find("unfinished"),
            std::string::npos);
  EXPECT_EQ(Text(out[1]), "solo");
}

TEST_F(Reassembly, OtherOpcodesAreIgnored) {
  EXPECT_TRUE(Feed(1, 0x00, 70, "ab").empty());
  EXPECT_TRUE(Feed(2, 0x0A, 71, "write").empty());  // RDMA WRITE ONLY
  EXPECT_TRUE(Feed(3, 0x11, 72, "").empty());       // ACK
  EXPECT_TRUE(Feed(4, 0x64, 73, "ud").empty());     // UD SEND_ONLY
}

TEST_F(Reassembly, FinishReportsUnfinishedMessages) {
  EXPECT_TRUE(Feed(1, 0x00, 80, "ab").empty());
  EXPECT_TRUE(Feed(2, 0x01, 81, "cd").empty());
  std::vector<SendRecord> out;
  r_.Finish(out);
  ASSERT_EQ(out.size(), 1u);
  const auto& e = std::get<SendError>(out[0]);
  EXPECT_EQ(e.frame, 2u);
  EXPECT_NE(e.message.find("begun at frame 1"), std::string::npos);
  out.clear();
  r_.Finish(out);
  EXPECT_TRUE(out.empty());
}

TEST(ReassemblyLimit, MessageLargerThanTheLimitIsDropped) {
  SendReassembler r(ReassemblyOptions{6});
  std::string chunk = "abcd";
  RocePacket p;
  p.dest_qp = 1;
  p.payload = absl::Span<const uint8_t>(
      reinterpret_cast<const uint8_t*>(chunk.data()), chunk.size());
  std::vector<SendRecord> out;
  p.opcode = 0x00;
  p.psn = 1;
  r.Add(1, p, out);
  p.opcode = 0x02;
  p.psn = 2;
  r.Add(2, p, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(std::get<SendError>(out[0]).message.find("exceeds 6 octets"),
            std::string::npos);
}

TEST(PsnInRange, Modulo24Bits) {
  EXPECT_TRUE(PsnInRange(5, 5, 5));
  EXPECT_TRUE(PsnInRange(0, 0xFFFFFE, 1));
  EXPECT_TRUE(PsnInRange(0xFFFFFF, 0xFFFFFE, 1));
  EXPECT_FALSE(PsnInRange(2, 0xFFFFFE, 1));
  EXPECT_FALSE(PsnInRange(4, 5, 9));
}

}  // namespace
}  // namespace rpcrdma::pcap
