#include "tools/pcap/pcap_reader.h"

#include <pcap/pcap.h>

#include "absl/strings/str_cat.h"

namespace rpcrdma::pcap {
namespace {

bool SupportedDlt(int dlt) {
  switch (dlt) {
    case DLT_EN10MB:
    case DLT_LINUX_SLL:
    case DLT_LINUX_SLL2:
    case DLT_RAW:
    case DLT_IPV4:
    case DLT_IPV6:
      return true;
    default:
      return false;
  }
}

std::string DltName(int dlt) {
  const char* name = pcap_datalink_val_to_name(dlt);
  return name != nullptr ? std::string(name) : absl::StrCat(dlt);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PcapReader>> PcapReader::Open(
    const std::string& path, const PcapReaderOptions& options) {
  char err[PCAP_ERRBUF_SIZE] = {};
  pcap_t* p = path == "-" ? pcap_fopen_offline(stdin, err)
                          : pcap_open_offline(path.c_str(), err);
  if (p == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", err));
  }
  int dlt = pcap_datalink(p);
  if (!SupportedDlt(dlt)) {
    pcap_close(p);
    return absl::UnimplementedError(
        absl::StrCat(path, ": link-layer type ", DltName(dlt),
                     " is not supported (Ethernet, Linux cooked v1/v2 and "
                     "raw IP are)"));
  }
  return std::unique_ptr<PcapReader>(new PcapReader(options, p));
}

PcapReader::PcapReader(const PcapReaderOptions& options, pcap_t* pcap)
    : options_(options),
      pcap_(pcap),
      dlt_(pcap_datalink(pcap)),
      reassembler_(options.reassembly) {}

PcapReader::~PcapReader() {
  if (pcap_ != nullptr) pcap_close(pcap_);
}

absl::StatusOr<std::optional<SendRecord>> PcapReader::Next() {
  std::vector<SendRecord> out;
  while (pending_.empty() && !finished_) {
    pcap_pkthdr* h = nullptr;
    const u_char* data = nullptr;
    int rc = pcap_next_ex(pcap_, &h, &data);
    if (rc == PCAP_ERROR_BREAK) {  // end of the file
      finished_ = true;
      reassembler_.Finish(out);
    } else if (rc != 1) {
      finished_ = true;
      return absl::DataLossError(absl::StrCat("reading frame ", frames_ + 1,
                                              ": ", pcap_geterr(pcap_)));
    } else {
      ++frames_;
      absl::Span<const uint8_t> frame(data, h->caplen);
      FrameParse parse = ParseRoceFrame(dlt_, frame, h->len, options_.parse);
      if (parse.kind == FrameKind::kRoce) {
        reassembler_.Add(frames_, parse.packet, out);
      } else if (parse.kind == FrameKind::kMalformed) {
        SendError e;
        e.frame = frames_;
        e.message = std::move(parse.error);
        out.push_back(std::move(e));
      }
    }
    for (SendRecord& r : out) pending_.push_back(std::move(r));
    out.clear();
  }
  if (pending_.empty()) return std::nullopt;
  SendRecord r = std::move(pending_.front());
  pending_.pop_front();
  return r;
}

absl::StatusOr<std::vector<SendRecord>> ReadSendMessages(
    const std::string& path, const PcapReaderOptions& options) {
  absl::StatusOr<std::unique_ptr<PcapReader>> reader =
      PcapReader::Open(path, options);
  if (!reader.ok()) return reader.status();
  std::vector<SendRecord> records;
  while (true) {
    absl::StatusOr<std::optional<SendRecord>> r = (*reader)->Next();
    if (!r.ok()) return r.status();
    if (!r->has_value()) return records;
    records.push_back(std::move(**r));
  }
}

}  // namespace rpcrdma::pcap
