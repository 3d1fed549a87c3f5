// A capture of every RPC-over-RDMA version two message form
// (draft-cel-nfsv4-rpcrdma-version-two-04 §6.2): each procedure, each error
// code, every chunk form, property sets with known, unknown and default
// values, multi-word subsets. The oracles (rpcgen's decoders from the
// draft's own XDR, the Wireshark Lua dissector) read it and must agree with
// our codec and rpcrdma-dump on every field.
#ifndef RPCRDMA_INTEROP_XDR_V2_V2_CORPUS_H_
#define RPCRDMA_INTEROP_XDR_V2_V2_CORPUS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "plugin/capture/pcap_writer.h"
#include "plugin/wire/v1.h"
#include "plugin/wire/v2.h"

namespace rpcrdma::test {

struct V2CorpusMessage {
  std::string name;
  pcap::Direction direction = pcap::Direction::kToResponder;
  wire::V2Header header;
  std::vector<uint8_t> rpc;  // the RPC message after an RDMA2_MSG header
  std::optional<uint32_t> invalidate;  // sent With Invalidate (§3)

  std::vector<uint8_t> Encode() const;  // header, then `rpc`
};

std::vector<V2CorpusMessage> V2Corpus();

// A version one RDMA_MSG for the capture's last frame: version two readers
// must leave it to version one's.
wire::V1Header V1Neighbour();
std::vector<uint8_t> V1NeighbourRpc();

// One RC SEND per corpus message (each fits in one 4096-octet packet), in
// corpus order, then the version one neighbour: frame N is message N-1.
absl::Status WriteV2CorpusPcap(const std::string& path,
                               const std::vector<V2CorpusMessage>& corpus);

}  // namespace rpcrdma::test

#endif  // RPCRDMA_INTEROP_XDR_V2_V2_CORPUS_H_
