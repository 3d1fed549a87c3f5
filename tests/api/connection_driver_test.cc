// ConnectionDriver (plugin/api/connection_driver.h): the one order in which
// a round's outcomes reach the user, for a Channel and a Server alike.
#include "plugin/api/connection_driver.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rpcrdma::api_internal {
namespace {

using ::testing::ElementsAre;

// An owner that records where its handlers run and needs nothing else.
class RecordingOwner final
    : public ConnectionDriver::Owner,
      public std::enable_shared_from_this<RecordingOwner> {
 public:
  explicit RecordingOwner(std::vector<std::string>& events) : events_(events) {}

  std::weak_ptr<Owner> WeakOwner() override { return weak_from_this(); }
  std::optional<Clock::time_point> Drive(Clock::time_point, bool,
                                         DriverOutcomes&) override {
    return std::nullopt;
  }
  void OnUpcall(engine::Action&, DriverOutcomes&) override {}
  void UpdateInterest() override {}
  void RunHandler(HandlerJob&) override { events_.push_back("handler"); }
  absl::Status Refuses(Use) const override { return absl::OkStatus(); }

 private:
  std::vector<std::string>& events_;
};

// Completions first (their credits and replies are already back: a callback
// or a waiting thread must not wait behind a handler the loop runs inline),
// then incoming calls, version two's jobs, and the owner's notices last (a
// Server's kClosed after every call that arrived reached its handler).
TEST(ConnectionDriverTest,
     OutcomesRunCompletionsThenHandlersThenJobsThenNotices) {
  std::vector<std::string> events;
  auto owner = std::make_shared<RecordingOwner>(events);
  ConnectionDriver driver(*owner, /*loop=*/nullptr);
  DriverOutcomes o;
  // Filled in the opposite order to the one expected.
  o.notices.push_back([&events] { events.push_back("notice"); });
  o.jobs.push_back([&events] { events.push_back("version two job"); });
  o.calls.push_back(HandlerJob{});
  o.completions.emplace_back(
      [&events](absl::StatusOr<Reply>) { events.push_back("completion"); },
      absl::CancelledError("ended"));
  driver.RunOutcomes(o);
  EXPECT_THAT(events, ElementsAre("completion", "handler", "version two job",
                                  "notice"));
}

}  // namespace
}  // namespace rpcrdma::api_internal
