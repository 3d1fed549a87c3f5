// Reads a pcap or pcapng capture and yields the RC SEND messages in it,
// reassembled, with the RoCE framing stripped.
#ifndef RPCRDMA_TOOLS_PCAP_PCAP_READER_H_
#define RPCRDMA_TOOLS_PCAP_PCAP_READER_H_

#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "plugin/capture/roce.h"
#include "tools/pcap/send_reassembler.h"

typedef struct pcap pcap_t;

namespace rpcrdma::pcap {

struct PcapReaderOptions {
  ParseOptions parse;
  ReassemblyOptions reassembly;
};

class PcapReader {
 public:
  // Opens a pcap or pcapng file; "-" reads standard input. Fails for an
  // unreadable file or a link-layer type the reader does not handle
  // (Ethernet, Linux cooked v1/v2 and raw IP are handled).
  static absl::StatusOr<std::unique_ptr<PcapReader>> Open(
      const std::string& path, const PcapReaderOptions& options = {});
  ~PcapReader();
  PcapReader(const PcapReader&) = delete;
  PcapReader& operator=(const PcapReader&) = delete;

  // The next complete message or error record in frame order; nullopt at
  // the end of the capture. Frames that are not RoCE, and RoCE packets that
  // are not RC SENDs, are passed over silently. A RoCE frame that cannot be
  // parsed yields a SendError for it. An error status means the file itself
  // could not be read further (for example it was cut short).
  absl::StatusOr<std::optional<SendRecord>> Next();

  int dlt() const { return dlt_; }
  uint64_t frames_read() const { return frames_; }

 private:
  PcapReader(const PcapReaderOptions& options, pcap_t* pcap);

  PcapReaderOptions options_;
  pcap_t* pcap_ = nullptr;
  int dlt_ = 0;
  uint64_t frames_ = 0;
  bool finished_ = false;
  SendReassembler reassembler_;
  std::deque<SendRecord> pending_;
};

// Reads a whole capture.
absl::StatusOr<std::vector<SendRecord>> ReadSendMessages(
    const std::string& path, const PcapReaderOptions& options = {});

}  // namespace rpcrdma::pcap

#endif  // RPCRDMA_TOOLS_PCAP_PCAP_READER_H_
