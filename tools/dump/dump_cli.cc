#include "tools/dump/dump_cli.h"

#include <istream>
#include <optional>
#include <ostream>
#include <variant>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "tools/dump/dump_format.h"
#include "tools/dump/protobuf_decoder.h"
#include "tools/dump/protobuf_descriptor_set.h"
#include "tools/flags/set_flags.h"
#include "tools/pcap/pcap_reader.h"

#ifndef RPCRDMA_VERSION_STRING
#define RPCRDMA_VERSION_STRING "unknown"
#endif

ABSL_FLAG(bool, pretty, false, "indent the JSON");
ABSL_FLAG(bool, hex, false, "hex mode: each operand is one message");
ABSL_FLAG(bool, help, false, "print the usage text and exit");
ABSL_FLAG(bool, version, false, "print the version and exit");
ABSL_FLAG(std::string, proto_descriptor_set, "",
          "FileDescriptorSet naming the protobuf services to decode");

namespace rpcrdma::dump {
namespace {

constexpr absl::string_view kUsage = R"(Usage:
  rpcrdma-dump [--pretty] [--proto_descriptor_set FILE]
               FILE.pcap | FILE.pcapng | -
  rpcrdma-dump [--pretty] [--proto_descriptor_set FILE] --hex HEX...
  rpcrdma-dump --help | --version

Prints one JSON object per RPC-over-RDMA message (version 1, RFC 8166, or
version 2, draft-cel-nfsv4-rpcrdma-version-two-04), one per line.

Capture mode reads a pcap or pcapng file ("-" for standard input) with
Ethernet (802.1Q tags allowed), Linux cooked (SLL, SLL2) or raw IP framing,
finds RoCEv2 (UDP port 4791, IPv4 or IPv6) and RoCEv1 (ethertype 0x8915)
packets, and reassembles RC SEND messages (SEND_FIRST/MIDDLE/LAST, SEND_ONLY,
with immediate data or with invalidate) per destination address and QP.
Retransmitted packets (a PSN already seen) are dropped. Frames that cannot be
placed in a message (a PSN gap, a SEND_MIDDLE without SEND_FIRST, a damaged
RoCE frame) are reported on standard error as "rpcrdma-dump: frame N: ...".

Hex mode takes each HEX argument as one message; spaces and colons between
digits are ignored. "--hex -" reads one message per line from standard input
(blank lines and lines starting with '#' are ignored).

A message is taken as RPC-over-RDMA when it has at least 8 octets and
rdma_vers (octets 4..7) is 1 or 2; anything else is skipped (in hex mode with
a note on standard error). A message that claims version 1 or 2 but does not
decode prints
  {"frame":N,"error":"<why, naming the field and offset>"}
and the tool goes on.

Keys (numbers are JSON integers):
  frame       capture mode: pcap frame number (1-based) of the message's
              last packet; hex mode: 1-based index of the message
  xid, vers, credits
              rdma_xid, rdma_vers, rdma_credit
  proc        RDMA_MSG, RDMA_NOMSG, RDMA_MSGP, RDMA_DONE, RDMA_ERROR;
              RDMA2_MSG, RDMA2_NOMSG, RDMA2_ERROR, RDMA2_OPTIONAL,
              RDMA2_CONNPROP, RDMA2_REQPROP, RDMA2_RESPROP, RDMA2_UPDPROP
  reads       read list: [{"position","handle","length","offset"}, ...]
  writes      write list: [[{"handle","length","offset"}, ...], ...], one
              array per write chunk
  reply       reply chunk: [{"handle","length","offset"}, ...] or null
              (reads/writes/reply appear for RDMA_MSG, RDMA_NOMSG,
              RDMA_MSGP, RDMA2_MSG and RDMA2_NOMSG)
  align, thresh
              RDMA_MSGP padding alignment and threshold
  err         RDMA_ERROR: ERR_VERS or ERR_CHUNK; RDMA2_ERROR: RDMA2_ERR_VERS,
              RDMA2_ERR_BAD_XDR, RDMA2_ERR_INVALID_PROC,
              RDMA2_ERR_READ_CHUNKS, RDMA2_ERR_WRITE_CHUNKS,
              RDMA2_ERR_SEGMENTS, RDMA2_ERR_WRITE_RESOURCE,
              RDMA2_ERR_REPLY_RESOURCE, RDMA2_ERR_INVALID_OPTION,
              RDMA2_ERR_SYSTEM
  vers_low, vers_high
              supported versions, for ERR_VERS / RDMA2_ERR_VERS
  max_chunks  RDMA2_ERR_READ_CHUNKS, RDMA2_ERR_WRITE_CHUNKS
  max_segments
              RDMA2_ERR_SEGMENTS
  chunk_index RDMA2_ERR_WRITE_RESOURCE
  length_needed
              RDMA2_ERR_WRITE_RESOURCE, RDMA2_ERR_REPLY_RESOURCE
  direction   RDMA2_MSG, RDMA2_NOMSG: CALL or REPLY
  inv_handle  RDMA2_MSG, RDMA2_NOMSG: handle to invalidate, 0 for none
  optdir, opttype, optinfo_length
              RDMA2_OPTIONAL: CALL or REPLY, the option type, octets of
              optinfo
  props       RDMA2_CONNPROP, RDMA2_REQPROP, RDMA2_RESPROP, RDMA2_UPDPROP:
              [{"which","name","value","length"}, ...]; name is RBSIZ, BRS
              or null (unknown property); value is an integer for RBSIZ,
              NONE/INLINE/GENL for BRS (the default when length is 0), and
              absent for unknown properties; length is the value's octets
  nochg       RDMA2_CONNPROP: the properties that will not change, as
              words of a bit mask
  done, rejected
              RDMA2_RESPROP: the requested properties granted / rejected,
              as words of a bit mask
  invalidate  the R_Key in the IETH when the message came in a
              SEND_*_WITH_INVALIDATE
  rpc         {"xid","direction","program"} of the RPC message that follows
              an RDMA_MSG, RDMA_MSGP or RDMA2_MSG header, when at least 8
              octets follow; program only for a CALL of at least 24 octets;
              absent when no RPC message follows. For a call of the Thrift
              bridge (program 0x20007468, bridge/README.md) also
              "procedure" (THRIFT_NULL, THRIFT_CALL, THRIFT_ONEWAY,
              THRIFT_FETCH) and, for THRIFT_CALL and THRIFT_ONEWAY,
              "thrift": {"method","seqid","type"} of the Thrift message;
              in method, as in any text a peer chose, an octet that is not
              part of valid UTF-8 and a control character are printed as
              \xNN (two hex digits) and a backslash as two backslashes.
              With --proto_descriptor_set, for a call of one of its
              protobuf services (protobuf/README.md) and for the reply to
              such a call (matched by XID; a reply sent in a reply chunk
              is not in the capture) also "protobuf", below
  error       why the message did not decode (with frame, alone)

"protobuf" keys:
  service     the service's full name ("pkg.Greeter"), whose program
              number (derived from the name) the call addressed
  procedure   NULL, NEXT, CANCEL (the stream control procedures), or the
              number of a procedure no method of the service has; absent
              for a method's own procedure
  method      the method called, or whose stream a NEXT or CANCEL names
              (when the stream's open was in the capture)
  streaming   server, client or bidi for a streaming method's call
  stream_id, seq
              a NEXT's or CANCEL's arguments (on its reply too); on the
              reply to a streaming method's call, the stream it opened
  timeout_ms, metadata
              a method call's time left and count of metadata pairs; on
              a reply, metadata counts the trailing pairs
  message_length, bulk
              the octets of the serialized message and the count of bulk
              fields (each its own RDMA chunk) of a call's request, a
              unary reply's response or a NEXT's message
  reply_stat  MSG_DENIED; accept_stat, when not SUCCESS: PROG_UNAVAIL,
              PROG_MISMATCH, PROC_UNAVAIL, GARBAGE_ARGS, SYSTEM_ERR
  item        a NEXT's reply: MESSAGE or END
  code, message
              a reply's status code (OK, CANCELLED, ..., UNAUTHENTICATED,
              or the number) and its message when not empty, escaped as
              method is
  error       why the call or reply body did not decode (the keys before
              it were read)

Options (Abseil flags: one or two dashes, --pretty=false or --nopretty to
turn one off; options and operands may be mixed; "--" ends the options):
  --pretty    indent the JSON
  --hex       hex mode
  --proto_descriptor_set FILE
              decode the protobuf adapter's messages of the services in
              FILE, a FileDescriptorSet (protoc --include_imports
              --descriptor_set_out=FILE)
  --help, -h  this text
  --version   the version

Exit status:
  0  the input was read, even if some messages were malformed
  1  the input could not be read (no such file, not a capture, a cut-short
     capture, unsupported link type, a bad hex line on standard input), or
     the descriptor set could not be read, is not a FileDescriptorSet,
     names no service or gives two services one program number
  2  usage error (unknown option, missing or extra argument, bad hex
     argument)
)";

void Print(std::ostream& out, const nlohmann::json& j, bool pretty) {
  out << FormatLine(j, pretty) << '\n';
}

int Usage(std::ostream& err, absl::string_view problem) {
  err << "rpcrdma-dump: " << problem
      << "\nTry 'rpcrdma-dump --help' for more information.\n";
  return kExitUsage;
}

// Formats one hex-mode message; `index` is its 1-based number.
void DumpHexMessage(const std::vector<uint8_t>& message, uint64_t index,
                    bool pretty, ProtobufDecoder* protobuf, std::ostream& out,
                    std::ostream& err) {
  std::optional<nlohmann::json> j =
      FormatMessage(message, MessageContext{index, std::nullopt}, protobuf);
  if (j) {
    Print(out, *j, pretty);
  } else {
    err << "rpcrdma-dump: message " << index
        << ": not RPC-over-RDMA (fewer than 8 octets or rdma_vers not 1 "
           "or 2); skipped\n";
  }
}

int RunHex(const std::vector<std::string>& args, bool pretty,
           ProtobufDecoder* protobuf, std::istream& in, std::ostream& out,
           std::ostream& err) {
  // Check every argument before printing anything.
  std::vector<std::optional<std::vector<uint8_t>>> messages;
  for (const std::string& a : args) {
    if (a == "-") {
      messages.push_back(std::nullopt);
      continue;
    }
    absl::StatusOr<std::vector<uint8_t>> m = ParseHex(a);
    if (!m.ok()) {
      return Usage(err, absl::StrCat("bad hex message '", a,
                                     "': ", m.status().message()));
    }
    messages.push_back(std::move(*m));
  }
  int status = kExitOk;
  uint64_t index = 0;
  for (const auto& m : messages) {
    if (m) {
      DumpHexMessage(*m, ++index, pretty, protobuf, out, err);
      continue;
    }
    std::string line;
    uint64_t line_number = 0;
    while (std::getline(in, line)) {
      ++line_number;
      size_t start = line.find_first_not_of(" \t\r");
      if (start == std::string::npos || line[start] == '#') continue;
      absl::StatusOr<std::vector<uint8_t>> bytes = ParseHex(line);
      if (!bytes.ok()) {
        err << "rpcrdma-dump: standard input line " << line_number << ": "
            << bytes.status().message() << '\n';
        status = kExitUnreadable;
        continue;
      }
      DumpHexMessage(*bytes, ++index, pretty, protobuf, out, err);
    }
    if (in.bad()) {
      err << "rpcrdma-dump: reading standard input failed\n";
      status = kExitUnreadable;
    }
  }
  return status;
}

int RunCapture(const std::string& path, bool pretty, ProtobufDecoder* protobuf,
               std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::unique_ptr<pcap::PcapReader>> reader =
      pcap::PcapReader::Open(path);
  if (!reader.ok()) {
    err << "rpcrdma-dump: " << reader.status().message() << '\n';
    return kExitUnreadable;
  }
  while (true) {
    absl::StatusOr<std::optional<pcap::SendRecord>> record = (*reader)->Next();
    if (!record.ok()) {
      err << "rpcrdma-dump: " << path << ": " << record.status().message()
          << '\n';
      return kExitUnreadable;
    }
    if (!record->has_value()) return kExitOk;
    if (const auto* e = std::get_if<pcap::SendError>(&**record)) {
      err << "rpcrdma-dump: frame " << e->frame << ": " << e->message << '\n';
      continue;
    }
    const auto& m = std::get<pcap::SendMessage>(**record);
    std::optional<nlohmann::json> j = FormatMessage(
        m.payload, MessageContext{m.frame, m.invalidate_rkey}, protobuf);
    if (j) Print(out, *j, pretty);
  }
}

}  // namespace

std::string UsageText() { return std::string(kUsage); }

int RunDump(const std::vector<std::string>& args, std::istream& in,
            std::ostream& out, std::ostream& err) {
  // Every run starts from the defaults. (absl::FlagSaver would restore them
  // afterwards, but it logs every restored flag on standard error.)
  for (absl::Flag<bool>* option :
       {&FLAGS_pretty, &FLAGS_hex, &FLAGS_help, &FLAGS_version}) {
    absl::SetFlag(option, false);
  }
  absl::SetFlag(&FLAGS_proto_descriptor_set, "");
  absl::StatusOr<std::vector<std::string>> operands = tools::SetFlags(args);
  if (!operands.ok()) return Usage(err, operands.status().message());
  if (absl::GetFlag(FLAGS_help)) {
    out << kUsage;
    return kExitOk;
  }
  if (absl::GetFlag(FLAGS_version)) {
    out << "rpcrdma-dump " << RPCRDMA_VERSION_STRING << '\n';
    return kExitOk;
  }
  const bool pretty = absl::GetFlag(FLAGS_pretty);
  const bool hex = absl::GetFlag(FLAGS_hex);
  if (hex && operands->empty()) {
    return Usage(err, "--hex needs at least one message");
  }
  if (!hex && operands->empty()) return Usage(err, "no capture file given");
  if (!hex && operands->size() > 1) {
    return Usage(err, "give exactly one capture file");
  }
  std::optional<ProtobufServices> services;
  std::optional<ProtobufDecoder> protobuf;
  if (const std::string path = absl::GetFlag(FLAGS_proto_descriptor_set);
      !path.empty()) {
    absl::StatusOr<ProtobufServices> read = ReadDescriptorSetFile(path);
    if (!read.ok()) {
      err << "rpcrdma-dump: --proto_descriptor_set " << read.status().message()
          << '\n';
      return kExitUnreadable;
    }
    services = std::move(*read);
    protobuf.emplace(*services);
  }
  ProtobufDecoder* decoder = protobuf ? &*protobuf : nullptr;
  const int status =
      hex ? RunHex(*operands, pretty, decoder, in, out, err)
          : RunCapture((*operands)[0], pretty, decoder, out, err);
  out.flush();
  return status;
}

}  // namespace rpcrdma::dump
