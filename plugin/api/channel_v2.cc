// A Channel's operations of version two (rpcrdma/version_two.h,
// draft-cel-nfsv4-rpcrdma-version-two-04): each starts on the connection
// under the lock and waits for the Server's answer, which the loop (or
// another caller's thread) reads.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/api/channel_core.h"
#include "plugin/wire/v2.h"

namespace rpcrdma::api_internal {

void ChannelCore::SetVersionTwo(VersionTwoOptions options) {
  driver_.version_two() = VersionTwoUser(
      std::make_shared<const VersionTwoOptions>(std::move(options)));
}

template <typename Answer, typename Operation>
absl::StatusOr<Answer> ChannelCore::AwaitVersionTwo(Operation start,
                                                    Deadline deadline) {
  {
    std::lock_guard<std::mutex> lock(driver_.mu());
    // The loop reads the answer (channel_core.h: not parked).
    if (Up()) parked_for_blocking_calls_ = false;
  }
  return driver_.AwaitVersionTwo<Answer>(std::move(start), deadline,
                                         "channel: no answer from the server");
}

absl::Status ChannelCore::RequestPeerReceiveSize(uint32_t octets,
                                                 Deadline deadline) {
  absl::StatusOr<engine::PropertiesAnswered> answer =
      AwaitVersionTwo<engine::PropertiesAnswered>(
          [&](Connection& c) {
            return driver_.version_two().Request(
                c, {TransportProperty{wire::kPropIdRbsiz,
                                      wire::MakeRbsizProperty(octets).data}});
          },
          deadline);
  if (!answer.ok()) return answer.status();
  absl::StatusOr<PropertyAnswer> result =
      VersionTwoUser::RequestResult(*answer);
  if (!result.ok()) return result.status();
  if (result->done.empty() || !result->done[0]) {
    return absl::FailedPreconditionError(absl::StrCat(
        "channel: the server declined a receive buffer size of ", octets,
        " octets (RDMA2_RESPROP did not grant it, draft-04 §5.3.3); it "
        "now states ",
        connection_info().peer_receive_buffer_size, " octets"));
  }
  return absl::OkStatus();
}

absl::Status ChannelCore::UpdateReceiveSize(uint32_t octets,
                                            Deadline deadline) {
  return UpdateProperties(
      {TransportProperty{wire::kPropIdRbsiz,
                         wire::MakeRbsizProperty(octets).data}},
      deadline);
}

// UpdateProperties, RequestPeerProperties and SendOptional over the
// AwaitVersionTwo above.
template class VersionTwoOperations<ChannelCore>;

}  // namespace rpcrdma::api_internal
