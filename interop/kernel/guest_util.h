// What the kernel interop tests (kernel_interop_*_test.cc, NFSv4;
// nfs3_interop_test.cc, NFSv3) share inside the Soft-RoCE VM, where they
// run as root beside the kernel's nfsd: the export's files, svcrdma's
// counters, the guest's own checksums, and printing and differencing the
// Channel's counters.
#ifndef RPCRDMA_INTEROP_KERNEL_GUEST_UTIL_H_
#define RPCRDMA_INTEROP_KERNEL_GUEST_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/types.h"

namespace rpcrdma::test {

// The tmpfs the VM harness exports for `--services nfsd` and `nfsd3`, and
// nfsd's RPC-over-RDMA port (RFC 5666 §12: 20049).
inline constexpr char kExportRoot[] = "/srv/nfs";
inline constexpr char kNfsRdmaPort[] = "20049";
inline constexpr char kSvcRdma[] = "/proc/sys/sunrpc/svc_rdma/";

std::string GuestPath(absl::string_view name);
// rdma://<the VM's address>:20049
std::string NfsUri();
// The verbs fabric, every other setting at its default.
config::TransportConfig VerbsConfig();

std::string ReadText(const std::string& path);
std::vector<uint8_t> ReadBytes(const std::string& path);  // {} on error
bool WriteText(const std::string& path, absl::string_view text);
bool WriteBytes(const std::string& path, absl::Span<const uint8_t> bytes);

// An svcrdma sysctl (a decimal number), or -1 when it cannot be read.
int64_t SvcRdma(absl::string_view name);

// svcrdma's transfer counters (net/sunrpc/xprtrdma/svc_rdma_rw.c): one
// rdma_stat_read per read segment it pulls, one rdma_stat_write per chain
// of RDMA Writes it builds for a write or reply chunk segment, one
// rdma_stat_recv per message received.
struct KernelStats {
  int64_t read = 0;
  int64_t write = 0;
  int64_t recv = 0;

  static KernelStats Now();
  KernelStats operator-(const KernelStats& o) const {
    return {read - o.read, write - o.write, recv - o.recv};
  }
};

// `sha256sum` of a guest file: the checksum the guest computes itself.
std::string Sha256OfFile(const std::string& path);
// `sha256sum` of octets we hold, fed through a pipe: the same tool and the
// same output format as for the guest's files.
std::string Sha256Of(absl::Span<const uint8_t> bytes);
// The guest's checksum of `path` equals that of `bytes` (gtest
// expectations); both are real SHA-256 digests (64 hex digits), so a
// missing tool cannot pass.
void ExpectSameSha256(absl::Span<const uint8_t> bytes, const std::string& path);

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed);
// Seeded from the clock: every run moves different data.
uint64_t ClockSeed();

void LogInfo(absl::string_view what, const ConnectionInfo& i);
void LogCounters(absl::string_view what, const Counters& c);
// Counter differences, field by field (every field of kCounterFields).
Counters Delta(const Counters& after, const Counters& before);

}  // namespace rpcrdma::test

#endif  // RPCRDMA_INTEROP_KERNEL_GUEST_UTIL_H_
