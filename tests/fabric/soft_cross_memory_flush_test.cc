// Cross-memory attach must not outlive the operation it serves. An RDMA
// Read or Write that completed as flushed (the connection went away first)
// has given its memory back to the caller, who may reuse it at once, as
// after a flush on a real queue pair, where nothing is placed into or
// taken from memory once the queue pair is in the error state. Found by
// the soak test (tests/soak): replies corrupted on soft+unix only.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/fabric/fabric.h"
#include "plugin/fabric/soft/soft_fabric.h"
#include "tests/testing/process_tag.h"

namespace rpcrdma::fabric {
namespace {

void Drain(Endpoint& endpoint, std::vector<Completion>& completions) {
  Completion batch[8];
  size_t n;
  while ((n = endpoint.PollCompletions(absl::MakeSpan(batch))) > 0) {
    completions.insert(completions.end(), batch, batch + n);
  }
  while (endpoint.PollConnectionEvent().has_value()) {
  }
}

class SoftCrossMemory : public ::testing::Test {
 protected:
  // Connects a client and a server over a Unix socket with cross-memory
  // attach; the test is skipped when the host refuses it.
  void SetUp() override {
    fabric_ = MakeSoftFabric();
    const std::string name =
        std::string("unix:@rpcrdma-cma-flush-") +
        ::rpcrdma::test::ProcessTag() + "-" +
        ::testing::UnitTest::GetInstance()->current_test_info()->name();
    auto listener = fabric_->Listen(name);
    ASSERT_TRUE(listener.ok()) << listener.status();
    listener_ = std::move(*listener);
    auto client = fabric_->Connect(listener_->address(), {}, {});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
    std::unique_ptr<ConnectRequest> request;
    for (int i = 0; i < 20000 && request == nullptr; ++i) {
      auto r = listener_->PollConnectRequest();
      if (r.ok() && *r != nullptr) request = std::move(*r);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    ASSERT_NE(request, nullptr);
    auto server = request->Accept({}, {});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    for (int i = 0; i < 20000 && !SoftUsesCrossMemory(*client_); ++i) {
      Drain(*client_, at_client_);
      Drain(*server_, at_server_);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    if (!SoftUsesCrossMemory(*client_)) {
      GTEST_SKIP() << "cross-memory attach refused here (ptrace scope)";
    }
  }

  // The client goes away before the server has looked at its request; its
  // one operation completes as flushed.
  void DisconnectClientExpectingFlush() {
    client_->Disconnect();
    Drain(*client_, at_client_);
    ASSERT_EQ(at_client_.size(), 1u);
    EXPECT_EQ(at_client_[0].wr_id, 1u);
    EXPECT_EQ(at_client_[0].status, WorkStatus::kFlushed);
  }

  void LetServerRun() {
    for (int i = 0; i < 50; ++i) {
      Drain(*server_, at_server_);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  std::unique_ptr<Fabric> fabric_;
  std::unique_ptr<Listener> listener_;
  std::unique_ptr<Endpoint> client_;
  std::unique_ptr<Endpoint> server_;
  std::vector<Completion> at_client_;
  std::vector<Completion> at_server_;
};

TEST_F(SoftCrossMemory, FlushedReadLeavesItsDestinationAlone) {
  std::vector<uint8_t> source(65536, 0xAB);
  std::vector<uint8_t> destination(65536, 0);
  auto source_reg = server_->Register(absl::MakeSpan(source));
  auto destination_reg = client_->Register(absl::MakeSpan(destination));
  ASSERT_TRUE(source_reg.ok() && destination_reg.ok());
  auto window = server_->BindWindow(
      7, LocalBuffer{source_reg->get(), 0, source.size()}, kRemoteRead);
  ASSERT_TRUE(window.ok()) << window.status();
  const LocalBuffer into{destination_reg->get(), 0, destination.size()};
  ASSERT_TRUE(
      client_->PostRdmaRead(1, absl::MakeConstSpan(&into, 1), *window).ok());
  // The READ_REQ_CMA is on its way.
  DisconnectClientExpectingFlush();
  std::fill(destination.begin(), destination.end(), 0x11);  // reused

  LetServerRun();
  EXPECT_EQ(std::count(destination.begin(), destination.end(), 0xAB), 0)
      << "the server copied into memory the client had got back";
}

TEST_F(SoftCrossMemory, FlushedWriteLeavesItsSourceAlone) {
  std::vector<uint8_t> source(65536, 0xAB);
  std::vector<uint8_t> destination(65536, 0);
  auto source_reg = client_->Register(absl::MakeSpan(source));
  auto destination_reg = server_->Register(absl::MakeSpan(destination));
  ASSERT_TRUE(source_reg.ok() && destination_reg.ok());
  auto window = server_->BindWindow(
      7, LocalBuffer{destination_reg->get(), 0, destination.size()},
      kRemoteWrite);
  ASSERT_TRUE(window.ok()) << window.status();
  const LocalBuffer from{source_reg->get(), 0, source.size()};
  ASSERT_TRUE(
      client_->PostRdmaWrite(1, absl::MakeConstSpan(&from, 1), *window).ok());
  // The WRITE_CMA is on its way.
  DisconnectClientExpectingFlush();
  std::fill(source.begin(), source.end(), 0x11);  // reused

  LetServerRun();
  EXPECT_EQ(std::count(destination.begin(), destination.end(), 0x11), 0)
      << "the server copied out of memory the client had got back";
}

}  // namespace
}  // namespace rpcrdma::fabric
