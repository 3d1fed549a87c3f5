// The marshaling decisions of the engine as tables: each row one call or
// reply, the form RFC 8166 §3.5 asks for and the sizes the plan computed.
// Thresholds are 1024 octets unless a row says otherwise; an empty
// RDMA_MSG header is 28 octets, a read segment adds 24, a one-segment write
// chunk 24 and a one-segment reply chunk 20 (§4.3), version two 8 more
// (draft-04 §6.2.2).
#include "plugin/engine/marshal_plan.h"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/wire/v1.h"
#include "plugin/wire/v2.h"

namespace rpcrdma::engine {
namespace {

constexpr uint32_t kV2 = 2;

// Each row's test is named after the row.
template <typename Row>
std::string RowName(const ::testing::TestParamInfo<Row>& row) {
  return row.param.name;
}

struct CallRow {
  const char* name;
  CallPlanInput in;
  CallForm form;
  bool reply_chunk;
  size_t header_size;
  std::string refusal = {};
};

// gtest prints a row by its name, not its bytes.
void PrintTo(const CallRow& row, std::ostream* os) { *os << row.name; }

class PlanCallTable : public ::testing::TestWithParam<CallRow> {};

TEST_P(PlanCallTable, ChoosesTheForm) {
  const CallRow& row = GetParam();
  const CallPlan plan = PlanCall(row.in);
  EXPECT_EQ(plan.form, row.form);
  EXPECT_EQ(plan.offers_reply_chunk, row.reply_chunk);
  EXPECT_EQ(plan.header_size, row.header_size);
  EXPECT_EQ(plan.refusal.message(), row.refusal);
}

const CallRow kCallRows[] = {
    {"Rfc8166_3_5_1_CallOfExactlyTheThresholdGoesInline",
     {.reduced_size = 996, .max_reply_size = 100},
     CallForm::kInline,
     false,
     28},
    {"Rfc8166_3_5_3_CallOneOctetOverTheThresholdIsALongCall",
     {.reduced_size = 996, .max_reply_size = 100, .send_threshold = 1023},
     CallForm::kLongCall,
     false,
     52},
    {"Rfc8166_3_5_1_InlineCallCountsTheRoundupOfItsArguments",
     {.reduced_size = 992, .argument_sizes = {3}, .max_reply_size = 100},
     CallForm::kInline,
     false,
     28},
    {"Rfc8166_3_4_5_ArgumentsGoAsReadChunksWhenTheReducedCallFits",
     {.reduced_size = 100, .argument_sizes = {2000}, .max_reply_size = 100},
     CallForm::kReadChunks,
     false,
     52},
    {"Rfc8166_3_4_5_ReducedCallOfExactlyTheThresholdWithReadChunks",
     {.reduced_size = 972, .argument_sizes = {2000}, .max_reply_size = 100},
     CallForm::kReadChunks,
     false,
     52},
    {"Rfc8166_3_5_3_ReducedCallOneOctetOverTheThresholdIsALongCall",
     {.reduced_size = 972,
      .argument_sizes = {2000},
      .max_reply_size = 100,
      .send_threshold = 1023},
     CallForm::kLongCall,
     false,
     52},
    {"Rfc8166_3_4_5_EachArgumentSegmentIsOneReadSegment",
     {.reduced_size = 100,
      .argument_sizes = {2500, 800},
      .max_reply_size = 100,
      .max_segment_size = 1000},
     CallForm::kReadChunks,
     false,
     28 + 4 * 24},
    {"Rfc8166_3_4_5_EmptyArgumentsNeedNoReadChunkSoTheCallIsLong",
     {.reduced_size = 1000, .argument_sizes = {0, 0}, .max_reply_size = 100},
     CallForm::kLongCall,
     false,
     52},
    {"Rfc8166_3_5_3_TooManyReadSegmentsBecomeALongCall",
     {.reduced_size = 60,
      .argument_sizes = {200, 200, 200, 200, 200, 200, 200, 200, 200},
      .max_reply_size = 100},
     CallForm::kLongCall,
     false,
     52},
    {"Rfc8166_3_5_3_LongCallUsesPositionZeroReadChunkSegments",
     {.reduced_size = 2500, .max_reply_size = 100, .max_segment_size = 1000},
     CallForm::kLongCall,
     false,
     28 + 3 * 24},
    {"Rfc8166_3_5_4_ReplyOfExactlyTheReceiveThresholdNeedsNoReplyChunk",
     {.reduced_size = 100, .max_reply_size = 996},
     CallForm::kInline,
     false,
     28},
    {"Rfc8166_3_5_4_ReplyOneOctetOverTheReceiveThresholdGetsAReplyChunk",
     {.reduced_size = 100, .max_reply_size = 997},
     CallForm::kInline,
     true,
     48},
    {"Rfc8166_3_5_4_ReplyHeaderEchoesTheWriteListWhenSizingTheReply",
     {.reduced_size = 100, .result_sizes = {16}, .max_reply_size = 972},
     CallForm::kInline,
     false,
     52},
    {"Rfc8166_3_5_4_WriteListAndReplyChunkTogether",
     {.reduced_size = 100, .result_sizes = {16}, .max_reply_size = 973},
     CallForm::kInline,
     true,
     72},
    {"Rfc8166_3_5_4_ZeroMaxReplySizeOffersNoReplyChunk",
     {.reduced_size = 100},
     CallForm::kInline,
     false,
     28},
    {"Rfc8166_3_4_7_WriteChunkPerResultInTheInlineHeader",
     {.reduced_size = 100, .result_sizes = {64, 64}, .max_reply_size = 100},
     CallForm::kInline,
     false,
     28 + 2 * 24},
    // Version two's header is 8 octets longer (draft-04 §6.2.2): the
    // version-one boundaries move by 8.
    {"Rfc8166_3_5_1_VersionTwoCallOfTheVersionOneLimitIsALongCall",
     {.version = kV2, .reduced_size = 996, .max_reply_size = 100},
     CallForm::kLongCall,
     false,
     60},
    {"Rfc8166_3_5_1_VersionTwoCallOfExactlyTheThresholdGoesInline",
     {.version = kV2, .reduced_size = 988, .max_reply_size = 100},
     CallForm::kInline,
     false,
     36},
    {"Rfc8166_3_5_4_VersionTwoReplyOfTheVersionOneLimitGetsAReplyChunk",
     {.version = kV2, .reduced_size = 100, .max_reply_size = 996},
     CallForm::kInline,
     true,
     56},
    {"Rfc8166_3_5_4_VersionTwoReplyOfExactlyTheThresholdNeedsNoReplyChunk",
     {.version = kV2, .reduced_size = 100, .max_reply_size = 988},
     CallForm::kInline,
     false,
     36},
    {"Rfc8166_3_4_7_TooManyWriteSegmentsRefuseTheCall",
     {.reduced_size = 100,
      .result_sizes = {64, 64, 64, 64, 64, 64, 64, 64, 64},
      .max_reply_size = 100},
     CallForm::kRefused,
     false,
     0,
     "the call's write and reply chunks need 9 segments in its transport "
     "header; at most 8 are allowed"},
    {"Rfc8166_3_5_3_LongCallOverTheHeaderSegmentsIsRefused",
     {.reduced_size = 2000, .max_reply_size = 2000, .max_header_segments = 1},
     CallForm::kRefused,
     true,
     48,
     "the call needs 2 segments in its transport header; at most 1 are "
     "allowed"},
    {"Rfc8166_3_5_3_LongCallHeaderOverTheSendThresholdIsRefused",
     {.reduced_size = 100, .max_reply_size = 8, .send_threshold = 40},
     CallForm::kRefused,
     false,
     52,
     "transport header of 52 octets exceeds the send threshold of 40"},
    {"Rfc8166_3_5_3_ZeroSendThresholdRefusesEveryCall",
     {.reduced_size = 0, .send_threshold = 0},
     CallForm::kRefused,
     false,
     52,
     "transport header of 52 octets exceeds the send threshold of 0"},
};

INSTANTIATE_TEST_SUITE_P(Rows, PlanCallTable, ::testing::ValuesIn(kCallRows),
                         RowName<CallRow>);

struct ReplyRow {
  const char* name;
  ReplyPlanInput in;
  ReplyForm form;
  size_t results_in_write_list;
  uint64_t stream_size;
  size_t header_size;
  NoRoom no_room = NoRoom::kNone;
  uint64_t length_needed = 0;
  size_t chunk_index = 0;
};

void PrintTo(const ReplyRow& row, std::ostream* os) { *os << row.name; }

class PlanReplyTable : public ::testing::TestWithParam<ReplyRow> {};

TEST_P(PlanReplyTable, ChoosesTheForm) {
  const ReplyRow& row = GetParam();
  const ReplyPlan plan = PlanReply(row.in);
  EXPECT_EQ(plan.form, row.form);
  EXPECT_EQ(plan.results_in_write_list, row.results_in_write_list);
  EXPECT_EQ(plan.stream_size, row.stream_size);
  EXPECT_EQ(plan.header_size, row.header_size);
  EXPECT_EQ(plan.no_room, row.no_room);
  EXPECT_EQ(plan.length_needed, row.length_needed);
  EXPECT_EQ(plan.chunk_index, row.chunk_index);
}

const OfferedChunk kBigReplyChunk{8192, 1};

const ReplyRow kReplyRows[] = {
    {"Rfc8166_3_5_1_ReplyOfExactlyTheThresholdGoesInline",
     {.reduced_size = 996},
     ReplyForm::kInline,
     0,
     996,
     28},
    {"Rfc8166_3_5_4_ReplyOneOctetOverTheThresholdUsesTheReplyChunk",
     {.reduced_size = 996,
      .reply_chunk = kBigReplyChunk,
      .send_threshold = 1023},
     ReplyForm::kReplyChunk,
     0,
     996,
     48},
    {"Rfc8166_4_5_2_LongReplyWithoutAReplyChunkIsErrChunk",
     {.reduced_size = 996, .send_threshold = 1023},
     ReplyForm::kErrChunk,
     0,
     996,
     28,
     NoRoom::kReplyTooLarge,
     996},
    {"Rfc8166_3_5_4_ReplyOfExactlyTheReplyChunkUsesIt",
     {.reduced_size = 2000, .reply_chunk = OfferedChunk{2000, 1}},
     ReplyForm::kReplyChunk,
     0,
     2000,
     48},
    {"Rfc8166_4_5_2_ReplyLargerThanTheReplyChunkIsErrChunk",
     {.reduced_size = 2004, .reply_chunk = OfferedChunk{2000, 1}},
     ReplyForm::kErrChunk,
     0,
     2004,
     28,
     NoRoom::kReplyTooLarge,
     2004},
    {"Rfc8166_3_4_7_ResultGoesIntoItsWriteChunkAndTheRestInline",
     {.reduced_size = 100,
      .result_sizes = {4000},
      .write_chunks = {{4000, 1}},
      .reply_chunk = kBigReplyChunk},
     ReplyForm::kInline,
     1,
     100,
     52},
    {"Rfc8166_3_5_4_ResultWithoutWriteChunkGoesInTheReplyChunk",
     {.reduced_size = 100,
      .result_sizes = {4000},
      .reply_chunk = kBigReplyChunk},
     ReplyForm::kReplyChunk,
     0,
     4100,
     48},
    {"Rfc8166_3_4_7_ResultsBeyondTheWriteListGoInlineWithRoundup",
     {.reduced_size = 100, .result_sizes = {16, 6}, .write_chunks = {{16, 1}}},
     ReplyForm::kInline,
     1,
     108,
     52},
    {"Rfc8166_4_5_2_ResultLargerThanItsWriteChunkIsErrChunk",
     {.reduced_size = 100,
      .result_sizes = {10, 500},
      .write_chunks = {{10, 1}, {400, 1}},
      .reply_chunk = kBigReplyChunk},
     ReplyForm::kErrChunk,
     2,
     100,
     0,
     NoRoom::kWriteChunkTooSmall,
     500,
     1},
    {"Rfc8166_3_4_7_ResultOfExactlyItsWriteChunkFits",
     {.reduced_size = 100, .result_sizes = {400}, .write_chunks = {{400, 1}}},
     ReplyForm::kInline,
     1,
     100,
     52},
    {"Rfc8166_3_4_7_UnusedWriteChunkIsReturnedInTheHeader",
     {.reduced_size = 972, .write_chunks = {{400, 1}}},
     ReplyForm::kInline,
     0,
     972,
     52},
    {"Rfc8166_3_5_4_UnusedWriteChunkStillCountsAgainstTheThreshold",
     {.reduced_size = 976,
      .write_chunks = {{400, 1}},
      .reply_chunk = kBigReplyChunk},
     ReplyForm::kReplyChunk,
     0,
     976,
     72},
    {"Rfc8166_4_5_2_ReplyChunkHeaderOverTheThresholdIsErrChunk",
     {.reduced_size = 100,
      .reply_chunk = OfferedChunk{200, 3},
      .send_threshold = 60},
     ReplyForm::kErrChunk,
     0,
     100,
     28 + 4 + 3 * 16,
     NoRoom::kHeaderTooLarge,
     100},
    // Version two's header is 8 octets longer (draft-04 §6.2.2).
    {"Rfc8166_3_5_4_VersionTwoReplyOfTheVersionOneLimitUsesTheReplyChunk",
     {.version = kV2, .reduced_size = 996, .reply_chunk = kBigReplyChunk},
     ReplyForm::kReplyChunk,
     0,
     996,
     56},
    {"Rfc8166_3_5_1_VersionTwoReplyOfExactlyTheThresholdGoesInline",
     {.version = kV2, .reduced_size = 988, .reply_chunk = kBigReplyChunk},
     ReplyForm::kInline,
     0,
     988,
     36},
    {"Rfc8166_4_5_2_VersionTwoReplyOfTheVersionOneLimitWithoutChunkIsErrChunk",
     {.version = kV2, .reduced_size = 996},
     ReplyForm::kErrChunk,
     0,
     996,
     36,
     NoRoom::kReplyTooLarge,
     996},
    {"Rfc8166_3_5_1_EmptyReplyGoesInline", {}, ReplyForm::kInline, 0, 0, 28},
    {"Rfc8166_3_4_7_EmptyResultUsesItsWriteChunk",
     {.reduced_size = 100, .result_sizes = {0}, .write_chunks = {{400, 1}}},
     ReplyForm::kInline,
     1,
     100,
     52},
};

INSTANTIATE_TEST_SUITE_P(Rows, PlanReplyTable, ::testing::ValuesIn(kReplyRows),
                         RowName<ReplyRow>);

// The computed size is what the encoders write, so the plan never needs to
// encode a header to measure it.
TEST(ChunkedHeaderSize, Rfc8166_4_3_MatchesTheEncodedHeader) {
  const wire::Segment s{1, 2, 3};
  const wire::ChunkLists lists{
      {{0, s}, {8, s}}, {{s}, {s, s, s}}, wire::WriteChunk{s, s}};
  const wire::V1Header msg{7, wire::kRpcRdmaVersion1, 1, wire::V1Msg{lists}};
  const wire::V1Header nomsg{7, wire::kRpcRdmaVersion1, 1,
                             wire::V1NoMsg{lists}};
  const size_t writes[] = {1, 3};
  EXPECT_EQ(ChunkedHeaderSize(1, 2, writes, 2), wire::V1EncodedSize(msg));
  EXPECT_EQ(ChunkedHeaderSize(1, 2, writes, 2), wire::V1EncodedSize(nomsg));
  EXPECT_EQ(ChunkedHeaderSize(1, 0, {}, std::nullopt),
            wire::V1EncodedSize(
                wire::V1Header{7, wire::kRpcRdmaVersion1, 1, wire::V1Msg{}}));
  wire::V2Header v2;
  v2.body = wire::V2Msg{{wire::MsgDirection::kCall, 0, lists}};
  EXPECT_EQ(ChunkedHeaderSize(kV2, 2, writes, 2), wire::V2EncodedSize(v2));
}

}  // namespace
}  // namespace rpcrdma::engine
