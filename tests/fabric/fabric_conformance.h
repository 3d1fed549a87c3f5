// The fabric conformance suite: behaviour every Fabric implementation must
// show, written once and instantiated per provider (the soft fabric over
// Unix-domain sockets and TCP; verbs can be added with the same names).
//
// Tests drive both ends from one thread: the interface is non-blocking and
// WaitFor() polls every event_fd with poll(2) until a condition holds or a
// timeout expires, so a hung provider fails a test instead of hanging it.
#ifndef RPCRDMA_TESTS_FABRIC_FABRIC_CONFORMANCE_H_
#define RPCRDMA_TESTS_FABRIC_FABRIC_CONFORMANCE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/fabric/fabric.h"

namespace rpcrdma::test {

struct FabricFactory {
  std::string name;
  std::function<std::unique_ptr<fabric::Fabric>()> make_client;
  std::function<std::unique_ptr<fabric::Fabric>()> make_server;
  // A fresh address to listen on.
  std::function<std::string()> listen_address;
};

// One end of a connection and everything it has reported so far.
struct Side {
  std::unique_ptr<fabric::Endpoint> endpoint;
  std::vector<fabric::Completion> completions;
  std::vector<fabric::ConnectionEvent> events;

  // Collects whatever the endpoint has ready.
  void Drain();
  bool HasEvent(fabric::ConnectionEventType type) const;
  // The completions of `wr_id` so far.
  std::vector<fabric::Completion> CompletionsOf(uint64_t wr_id) const;
};

// Memory with its registration.
struct Memory {
  std::vector<uint8_t> bytes;
  std::unique_ptr<fabric::Registration> registration;
  fabric::LocalBuffer Slice(size_t offset, size_t length) const {
    return fabric::LocalBuffer{registration.get(), offset, length};
  }
};

constexpr std::chrono::milliseconds kTimeout{10000};

// Polls the endpoints' (and listener's) event_fds until `done` holds;
// false on timeout.
bool WaitFor(const std::function<bool()>& done, std::vector<Side*> sides,
             fabric::Listener* listener = nullptr,
             std::chrono::milliseconds timeout = kTimeout);

// Polls `listener` (and drains `sides`) until a connect request arrives;
// null on timeout.
std::unique_ptr<fabric::ConnectRequest> NextConnectRequest(
    fabric::Listener& listener, std::vector<Side*> sides = {});

// Fills `bytes` with a pattern that depends on `seed` and the position.
void FillPattern(absl::Span<uint8_t> bytes, uint32_t seed);

class FabricConformanceTest : public ::testing::TestWithParam<FabricFactory> {
 protected:
  void SetUp() override;

  // Connects a client to the listener and accepts it; the server uses
  // `server_options` when given, else `options`.
  void Connect(Side& client, Side& server,
               std::vector<uint8_t> connect_data = {},
               std::vector<uint8_t> accept_data = {},
               const fabric::EndpointOptions& options = {},
               std::optional<fabric::EndpointOptions> server_options = {});
  Memory Register(Side& side, size_t size, uint32_t seed = 0);
  // Binds a window and waits for its kBindWindow completion.
  fabric::RemoteRegion Bind(Side& side, const fabric::LocalBuffer& buffer,
                            uint32_t access, uint64_t wr_id);
  // Waits until `wr_id` has completed on `side` and returns its status.
  fabric::WorkStatus WaitCompletion(Side& side, uint64_t wr_id,
                                    std::vector<Side*> others);
  // Both sides report kDisconnected.
  void ExpectBroken(Side& a, Side& b);
  // Connects, binds a window of `access` rights on the server, and has the
  // client read (or write) the region `aim` makes of it; expects
  // kRemoteAccessError and a broken connection with everything flushed.
  void ExpectAccessViolation(
      uint32_t access, bool read,
      const std::function<fabric::RemoteRegion(fabric::RemoteRegion)>& aim,
      bool invalidate_first = false);

  std::unique_ptr<fabric::Fabric> client_fabric_;
  std::unique_ptr<fabric::Fabric> server_fabric_;
  std::unique_ptr<fabric::Listener> listener_;
};

void PrintTo(const FabricFactory& factory, std::ostream* os);
std::string FactoryName(const ::testing::TestParamInfo<FabricFactory>& info);

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_FABRIC_FABRIC_CONFORMANCE_H_
