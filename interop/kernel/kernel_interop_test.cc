// Our requester against the Linux kernel's own RPC-over-RDMA server: nfsd
// with svcrdma listening on rdma 20049, inside the Soft-RoCE VM (ctest
// kernel.interop, labels `vm` and `kernel`; run by kernel-guest.sh as root
// in the guest). The NFS version 4.0 client (nfs4_client.h) makes its
// COMPOUNDs with clnt_call() on a CLIENT of the ONC RPC adapter
// (clnt_rdma_create), over the verbs fabric.
//
// The test fills the exported tmpfs itself (the files' content is random,
// so nothing here can pass by accident), and checks every transfer from
// both ends: the Channel's counters under the CLIENT (ChannelOf) and the
// bytes that arrived on one side, svcrdma's own counters
// (/proc/sys/sunrpc/svc_rdma/rdma_stat_read and rdma_stat_write: one per
// RDMA Read segment pulled and one per RDMA Write work request chain
// posted) and the files in the guest on the other.
//
// Steps (TESTs, run in this order; this file has main and steps 1-3):
//   1.  NULL, inline.
//   2.  READ of a 1 MiB and a 4 MiB file through write chunks; 2b an odd
//       length at EOF and three write chunks in one call; 2c a write chunk
//       too small for the READ.
//   3.  WRITE of 1 MiB through read chunks (the server pulls with RDMA
//       Read).
//   4.  READDIR of a large directory through a reply chunk (RDMA_NOMSG);
//       4b a reply chunk too small (ERR_CHUNK).
//   5.  A long call: RDMA_NOMSG with a position-zero read chunk; 5b
//       READLINK offered a write chunk.
//   6.  RFC 8797 private data on and off; 6b the server and our Receive
//       Size.
//   7.  A version-two probe answered with ERR_VERS.
//   8.  Many READs in flight within the kernel's credit grant.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "interop/kernel/guest_util.h"
#include "interop/kernel/kernel_interop_fixture.h"
#include "interop/kernel/nfs4_client.h"
#include "tests/testing/rdma_vm.h"

namespace rpcrdma::test {

std::string DirEntryName(int i) { return absl::StrFormat("entry-%05d", i); }

std::string LinkText() {
  std::string text = "/";
  for (int i = 0; text.size() < kLinkTextSize; ++i) {
    absl::StrAppend(&text, absl::StrFormat("component-%04d/", i));
  }
  text.resize(kLinkTextSize);
  return text;
}

void FillExport() {
  const uint64_t seed = ClockSeed();
  ASSERT_TRUE(WriteBytes(GuestPath("data1m"), RandomBytes(kSmallFile, seed)));
  ASSERT_TRUE(
      WriteBytes(GuestPath("data4m"), RandomBytes(kLargeFile, seed + 1)));
  ASSERT_TRUE(WriteBytes(GuestPath("written"), {}));
  ASSERT_TRUE(WriteBytes(GuestPath("inline-written"), {}));
  ASSERT_EQ(chmod(GuestPath("written").c_str(), 0666), 0);
  ASSERT_EQ(chmod(GuestPath("inline-written").c_str(), 0666), 0);
  ASSERT_EQ(mkdir(GuestPath("dir").c_str(), 0777), 0) << std::strerror(errno);
  for (int i = 0; i < kDirEntries; ++i) {
    ASSERT_TRUE(
        WriteBytes(GuestPath(absl::StrCat("dir/", DirEntryName(i))), {}));
  }
}

absl::StatusOr<std::unique_ptr<Client>> Connect(
    const config::TransportConfig& transport, uint32_t first_xid) {
  return Client::Connect(NfsUri(), transport, first_xid);
}

Client* KernelInterop::client_ = nullptr;

void KernelInterop::SetUpTestSuite() {
  config::TransportConfig c = VerbsConfig();
  // The shared connection's messages, for Wireshark (kernel.wireshark).
  if (const char* capture = std::getenv("RPCRDMA_KERNEL_CAPTURE")) {
    c.set_capture_path(capture);
  }
  auto client = Connect(c, 0x4b000000);
  ASSERT_TRUE(client.ok()) << client.status();
  client_ = client->release();
}

void KernelInterop::TearDownTestSuite() {
  delete client_;
  client_ = nullptr;
}

FileHandle KernelInterop::MustLookup(const std::vector<std::string>& path) {
  absl::StatusOr<FileHandle> fh = client_->Lookup(path);
  EXPECT_TRUE(fh.ok()) << fh.status();
  return fh.ok() ? *fh : FileHandle{};
}

std::vector<uint8_t> KernelInterop::ReadWhole(const FileHandle& fh, size_t size,
                                              uint64_t maxread, int* reads) {
  std::vector<uint8_t> buf(size, 0xA5);
  *reads = 0;
  for (size_t at = 0; at < size;) {
    const size_t n = std::min<size_t>(maxread, size - at);
    absl::StatusOr<ReadResult> r =
        client_->Read(fh, at, absl::MakeSpan(buf).subspan(at, n));
    ++*reads;
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) break;
    EXPECT_TRUE(r->via_chunk) << "READ at " << at << " came inline";
    EXPECT_EQ(r->length, n);
    EXPECT_EQ(r->eof, at + n == size);
    // The reduced reply carries no file data.
    EXPECT_LT(client_->last().shape.reduced_octets, 128u);
    at += n;
  }
  return buf;
}

namespace {

// Step 1: NULL to the NFS program (RFC 7530 §16.1) goes inline and comes
// back inline with an empty result.
TEST_F(KernelInterop, Step1_NullIsInline) {
  const Counters before = channel().counters();
  const KernelStats k0 = KernelStats::Now();
  ASSERT_TRUE(client_->Null().ok());
  const Counters d = Delta(channel().counters(), before);
  const KernelStats k = KernelStats::Now() - k0;
  EXPECT_EQ(d.calls, 1u);
  EXPECT_EQ(d.inline_calls, 1u);
  EXPECT_EQ(d.replies, 1u);
  EXPECT_EQ(d.read_chunk_calls + d.write_chunks + d.reply_chunks +
                d.long_calls + d.long_replies,
            0u);
  // Accepted reply header only (RFC 5531 §9, AUTH_NONE verifier).
  EXPECT_EQ(client_->last().shape.reduced_octets, 24u);
  EXPECT_EQ(k.read, 0);
  EXPECT_EQ(k.write, 0);
  EXPECT_EQ(k.recv, 1);
}

// Step 2: READ data is DDP-eligible (RFC 8267 §4.1): each READ offers a
// write chunk over its slice of our buffer and the kernel RDMA Writes the
// file data there; the reply itself stays a few dozen octets.
TEST_F(KernelInterop, Step2_ReadThroughWriteChunks) {
  for (const auto& [name, size] :
       {std::pair<std::string, size_t>{"data1m", kSmallFile},
        std::pair<std::string, size_t>{"data4m", kLargeFile}}) {
    SCOPED_TRACE(name);
    const FileHandle fh = MustLookup({name});
    ASSERT_FALSE(fh.empty());
    absl::StatusOr<Attributes> a = client_->Getattr(
        fh, AttrBitmap({kAttrType, kAttrSize, kAttrMaxread, kAttrMaxwrite}));
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->type, FileType::kRegular);
    EXPECT_EQ(a->size, size);
    ASSERT_TRUE(a->maxread.has_value());
    std::printf("%s: size %lu, server maxread %lu maxwrite %lu\n", name.c_str(),
                static_cast<unsigned long>(*a->size),
                static_cast<unsigned long>(*a->maxread),
                static_cast<unsigned long>(a->maxwrite.value_or(0)));
    const uint64_t maxread = std::min<uint64_t>(*a->maxread, 1 << 20);

    const Counters before = channel().counters();
    const KernelStats k0 = KernelStats::Now();
    int reads = 0;
    std::vector<uint8_t> buf = ReadWhole(fh, size, maxread, &reads);
    const Counters d = Delta(channel().counters(), before);
    const KernelStats k = KernelStats::Now() - k0;
    LogCounters(name, channel().counters());
    std::printf("%s: %d READs; svcrdma reads %ld writes %ld\n", name.c_str(),
                reads, static_cast<long>(k.read), static_cast<long>(k.write));

    EXPECT_EQ(reads, static_cast<int>((size + maxread - 1) / maxread));
    EXPECT_EQ(d.calls, static_cast<uint64_t>(reads));
    EXPECT_EQ(d.write_chunks, static_cast<uint64_t>(reads));
    EXPECT_EQ(d.inline_calls, static_cast<uint64_t>(reads));
    EXPECT_EQ(
        d.read_chunk_calls + d.reply_chunks + d.long_calls + d.long_replies,
        0u);
    // svcrdma answers every READ with Send With Invalidate of its write
    // chunk's handle: it honours our R bit although its own private data
    // clears R, where RFC 8797 §4.1 allows remote invalidation only when
    // both peers set it. The engine takes each invalidation as done.
    EXPECT_EQ(d.remote_invalidations, static_cast<uint64_t>(reads));
    // The kernel's side: one RDMA Write chain per READ (one segment each),
    // nothing pulled.
    EXPECT_EQ(k.write, reads);
    EXPECT_EQ(k.read, 0);
    // Byte-exact: against the file itself and by the guest's checksum.
    EXPECT_TRUE(buf == ReadBytes(GuestPath(name)))
        << "READ data differs from the guest's file";
    ExpectSameSha256(buf, GuestPath(name));
  }
}

// Step 2, continued: a READ that ends at EOF with an odd length (no XDR
// roundup in the chunk or the stream, RFC 8166 §3.4.6; the decoder rejects
// stray octets), and one COMPOUND with three READs, whose data go into
// three write chunks in order (RFC 8166 §3.4.7).
TEST_F(KernelInterop, Step2b_OddLengthAndSeveralWriteChunks) {
  const FileHandle fh = MustLookup({"data1m"});
  ASSERT_FALSE(fh.empty());
  const std::vector<uint8_t> file = ReadBytes(GuestPath("data1m"));
  ASSERT_EQ(file.size(), kSmallFile);

  std::vector<uint8_t> tail(2000, 0xA5);
  const KernelStats k0 = KernelStats::Now();
  absl::StatusOr<ReadResult> r =
      client_->Read(fh, kSmallFile - 1001, absl::MakeSpan(tail));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->eof);
  EXPECT_TRUE(r->via_chunk);
  EXPECT_EQ(r->length, 1001u);
  EXPECT_TRUE(std::equal(tail.begin(), tail.begin() + 1001, file.end() - 1001));
  EXPECT_EQ(tail[1001], 0xA5) << "octets written past the data";
  EXPECT_EQ((KernelStats::Now() - k0).write, 1);

  std::vector<uint8_t> a(4096), b(65536), c(1003);
  const Counters before = channel().counters();
  const KernelStats k1 = KernelStats::Now();
  absl::StatusOr<std::vector<ReadResult>> rs =
      client_->ReadPieces(fh, {{8192, absl::MakeSpan(a)},
                               {300000, absl::MakeSpan(b)},
                               {777, absl::MakeSpan(c)}});
  ASSERT_TRUE(rs.ok()) << rs.status();
  const Counters d = Delta(channel().counters(), before);
  const KernelStats k = KernelStats::Now() - k1;
  ASSERT_EQ(rs->size(), 3u);
  for (const ReadResult& x : *rs) {
    EXPECT_TRUE(x.via_chunk);
    EXPECT_FALSE(x.eof);
  }
  // Each READ's data took its own chunk, in order.
  EXPECT_EQ(client_->last().shape.chunk_lengths,
            (std::vector<uint32_t>{4096, 65536, 1003}));
  EXPECT_TRUE(std::equal(a.begin(), a.end(), file.begin() + 8192));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), file.begin() + 300000));
  EXPECT_TRUE(std::equal(c.begin(), c.end(), file.begin() + 777));
  EXPECT_EQ(d.calls, 1u);
  EXPECT_EQ(d.write_chunks, 3u);
  EXPECT_EQ(k.write, 3);
  // Three handles in one call: no single one the kernel could invalidate.
  EXPECT_EQ(d.remote_invalidations, 0u);
}

// A READ whose write chunk is smaller than the data it asks for: svcrdma
// cannot place the payload, writes nothing and nfsd fails the READ with
// NFS4ERR_FBIG (its mapping of -E2BIG) in an ordinary RPC reply, not with
// RDMA_ERROR ERR_CHUNK. clnt_call succeeds (the reply decodes), the READ's
// status is the error, the unused chunk is revoked and nothing past it is
// touched.
TEST_F(KernelInterop, Step2c_WriteChunkTooSmallForTheRead) {
  const FileHandle fh = MustLookup({"data1m"});
  ASSERT_FALSE(fh.empty());
  std::vector<uint8_t> chunk(4096 + 64, 0x5A);
  const Counters before = channel().counters();
  const KernelStats k0 = KernelStats::Now();
  absl::StatusOr<ReadResult> r =
      client_->ReadIntoChunk(fh, 0, 8192, absl::MakeSpan(chunk).first(4096));
  const Counters d = Delta(channel().counters(), before);
  const KernelStats k = KernelStats::Now() - k0;
  std::printf("READ of 8192 into a 4096-octet write chunk: %s\n",
              r.status().ToString().c_str());
  EXPECT_EQ(client_->last().stat, RPC_SUCCESS) << client_->last().message;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), "READ: NFS4ERR_FBIG (27)");
  EXPECT_TRUE(client_->last().shape.chunk_lengths.empty());
  EXPECT_EQ(d.write_chunks, 1u);
  EXPECT_EQ(d.replies, 1u);
  EXPECT_EQ(d.errors_received, 0u);
  EXPECT_EQ(k.write, 0);
  EXPECT_TRUE(std::all_of(chunk.begin(), chunk.end(),
                          [](uint8_t x) { return x == 0x5A; }));
}

// Step 3: WRITE data is DDP-eligible: too large to go inline, it is exposed
// as a read chunk at its XDR position (RFC 8166 §3.4.5) and the kernel
// pulls it with RDMA Read.
TEST_F(KernelInterop, Step3_WriteThroughReadChunks) {
  const FileHandle fh = MustLookup({"written"});
  ASSERT_FALSE(fh.empty());
  absl::StatusOr<Attributes> a =
      client_->Getattr(fh, AttrBitmap({kAttrMaxwrite}));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(a->maxwrite.has_value());
  const uint64_t maxwrite = std::min<uint64_t>(*a->maxwrite, 1 << 20);
  const std::vector<uint8_t> data = RandomBytes(
      kWriteSize, static_cast<uint64_t>(std::random_device{}()) << 1);

  const Counters before = channel().counters();
  const KernelStats k0 = KernelStats::Now();
  int writes = 0;
  for (size_t at = 0; at < data.size(); ++writes) {
    const size_t n = std::min<size_t>(maxwrite, data.size() - at);
    absl::StatusOr<WriteResult> w = client_->Write(
        fh, at, absl::MakeConstSpan(data).subspan(at, n), StableHow::kFileSync);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(w->count, n);
    EXPECT_EQ(w->committed, StableHow::kFileSync);
    at += n;
  }
  const Counters d = Delta(channel().counters(), before);
  const KernelStats k = KernelStats::Now() - k0;
  LogCounters("write", channel().counters());
  std::printf("write: %d WRITEs of up to %lu; svcrdma reads %ld writes %ld\n",
              writes, static_cast<unsigned long>(maxwrite),
              static_cast<long>(k.read), static_cast<long>(k.write));
  EXPECT_EQ(writes, static_cast<int>((kWriteSize + maxwrite - 1) / maxwrite));
  EXPECT_EQ(d.calls, static_cast<uint64_t>(writes));
  EXPECT_EQ(d.read_chunk_calls, static_cast<uint64_t>(writes));
  EXPECT_EQ(d.read_chunks, static_cast<uint64_t>(writes));
  EXPECT_EQ(d.inline_calls + d.write_chunks + d.reply_chunks + d.long_calls +
                d.long_replies,
            0u);
  // The kernel pulled one read segment per WRITE and wrote nothing.
  EXPECT_EQ(k.read, writes);
  EXPECT_EQ(k.write, 0);
  EXPECT_TRUE(data == ReadBytes(GuestPath("written")))
      << "the guest's file differs from the data written";
  ExpectSameSha256(data, GuestPath("written"));
}

// Runs first: the export is filled and answers before any step starts.
class ExportEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "runs as root inside the VM";
    const std::string ports = ReadText("/proc/fs/nfsd/portlist");
    std::printf("nfsd listeners: %s", ports.c_str());
    ASSERT_NE(ports.find("rdma 20049"), std::string::npos)
        << "nfsd has no RPC-over-RDMA listener (run with SERVICES nfsd)";
    FillExport();
    // No SETCLIENTID/OPEN state is ever used, so nothing needs recovery:
    // end the grace period, during which nfsd refuses I/O with the
    // anonymous stateid (NFS4ERR_GRACE).
    WriteText("/proc/fs/nfsd/v4_end_grace", "Y\n");
    // Wait until the export answers (nfsd's export caches are filled by
    // the harness; a miss would be NFS4ERR_DELAY or a denial).
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(30);
    absl::Status last;
    for (;;) {
      auto client = Connect(VerbsConfig(), 0x4a000000);
      if (client.ok()) {
        last = (*client)->Null();
        if (last.ok()) last = (*client)->Lookup({"data1m"}).status();
        if (last.ok()) break;
      } else {
        last = client.status();
      }
      ASSERT_LT(std::chrono::steady_clock::now(), deadline)
          << "the export does not answer: " << last;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
};

}  // namespace
}  // namespace rpcrdma::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (rpcrdma::test::ProbeVerbsDevice().empty()) return 1;
  ::testing::AddGlobalTestEnvironment(new rpcrdma::test::ExportEnvironment);
  std::fflush(stdout);
  return RUN_ALL_TESTS();
}
