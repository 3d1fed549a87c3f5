// The NFSv4 steps of ctest kernel.interop (kernel_interop_test.cc: main and
// steps 1-3; kernel_interop_chunks_test.cc: 4-5b;
// kernel_interop_connection_test.cc: 6-8) share this: what the export
// holds, and the main client, made once.
#ifndef RPCRDMA_INTEROP_KERNEL_KERNEL_INTEROP_FIXTURE_H_
#define RPCRDMA_INTEROP_KERNEL_KERNEL_INTEROP_FIXTURE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "interop/kernel/guest_util.h"
#include "interop/kernel/nfs4_client.h"

namespace rpcrdma::test {

constexpr size_t kSmallFile = 1 << 20;  // step 2
constexpr size_t kLargeFile = 4 << 20;  // steps 2 and 8
constexpr size_t kWriteSize = 1 << 20;  // step 3
constexpr int kDirEntries = 500;        // step 4: ~24 KB of READDIR reply
constexpr uint32_t kReaddirMaxcount = 32768;
constexpr size_t kLinkTextSize = 3000;         // step 5
constexpr size_t kInlineWriteSize = 6001;      // step 6 (odd: XDR roundup)
constexpr uint32_t kRaisedMaxReqSize = 8192;   // step 6
constexpr size_t kConcurrentReadSize = 16384;  // step 8

std::string DirEntryName(int i);
// Step 5's symbolic link text: kLinkTextSize octets.
std::string LinkText();
// Fills the export with what the steps read: two files of random bytes, two
// empty files to WRITE into, and a directory whose READDIR reply cannot go
// inline.
void FillExport();

// A client of its own on a connection with `transport` (default: the verbs
// fabric, private data on, inline thresholds 4096).
absl::StatusOr<std::unique_ptr<Client>> Connect(
    const config::TransportConfig& transport, uint32_t first_xid);

// The main connection (the default configuration) shared by the steps,
// opened once the export answers.
class KernelInterop : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override { ASSERT_NE(client_, nullptr); }

  static Channel& channel() { return client_->channel(); }
  static FileHandle MustLookup(const std::vector<std::string>& path);
  // READs `size` octets of `fh` in pieces of at most the server's maxread,
  // each through its own write chunk straight into the returned buffer.
  static std::vector<uint8_t> ReadWhole(const FileHandle& fh, size_t size,
                                        uint64_t maxread, int* reads);

  static Client* client_;
};

}  // namespace rpcrdma::test

#endif  // RPCRDMA_INTEROP_KERNEL_KERNEL_INTEROP_FIXTURE_H_
