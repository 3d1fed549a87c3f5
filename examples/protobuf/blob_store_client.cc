// The blob store's client (examples/protobuf/README.md): one command
// against a blob_store_server, through the stub protoc-gen-rpcrdma
// generated from blob_store.proto.
//
//   blob_store_client --connect URI put KEY FILE
//   blob_store_client --connect URI get KEY FILE     (FILE "-": stdout)
//   blob_store_client --connect URI delete KEY
//   blob_store_client --connect URI list [PREFIX]
//   blob_store_client --connect URI watch PREFIX [COUNT]
//
// watch prints a line per change, each as it comes ("put KEY SIZE",
// "delete KEY"), after a first "watching PREFIX" once the watch is in
// place; it stops after COUNT changes, or when the server ends the stream.
// An error is printed as "blob_store_client: COMMAND: CODE: message" and
// exits 1.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "blob_store.rpcrdma.pb.h"
#include "rpcrdma/protobuf/channel.h"
#include "rpcrdma/protobuf/client_context.h"
#include "rpcrdma/protobuf/stream.h"

namespace rpcrdma::examples::blobstore {
namespace {

using ::rpcrdma::protobuf::ClientContext;
using ::rpcrdma::protobuf::Status;

// The largest value blob_store_server takes by default: what a Get's
// buffer holds.
constexpr uint32_t kMaxValueBytes = 16 << 20;
// What a reply other than Get's and List's may hold.
constexpr uint32_t kSmallReplyBytes = 64 << 10;
// A List answers at most 1000 keys of at most 1 KiB.
constexpr uint32_t kMaxListReplyBytes = 2 << 20;
// Generous for a 16 MiB value on a slow machine (or a VM under emulation).
constexpr std::chrono::seconds kCallTimeout{120};

// Fetches the value under `key` straight into `buffer` (reused from call
// to call): the call offers it as a write chunk (RFC 8166 §3.4.7), the
// server's RDMA Write puts the value there, and no layer copies it
// (ClientContext::ReceiveBulkInto). GetReply.value is marked DDP_ALWAYS in
// blob_store.proto, so a small value lands there too. `*length` is how
// many octets came.
Status FetchBlob(rdma::BlobStore::Stub& stub, const std::string& key,
                 std::vector<uint8_t>& buffer, size_t* length) {
  buffer.resize(kMaxValueBytes);
  GetRequest request;
  request.set_key(key);
  GetReply reply;
  ClientContext context;
  context.set_timeout(kCallTimeout);
  context.ReceiveBulkInto(GetReply::kValueFieldNumber, absl::MakeSpan(buffer));
  if (Status s = stub.Get(&context, request, &reply); !s.ok()) return s;
  const std::optional<size_t> received =
      context.bulk_received(GetReply::kValueFieldNumber);
  if (!received.has_value()) {
    return absl::InternalError("the value did not arrive in its write chunk");
  }
  *length = *received;
  return absl::OkStatus();
}

Status ReadFile(const std::string& path, std::string* contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  contents->assign(std::istreambuf_iterator<char>(in),
                   std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  return absl::OkStatus();
}

Status WriteFile(const std::string& path, absl::string_view contents) {
  if (path == "-") {
    std::cout.write(contents.data(),
                    static_cast<std::streamsize>(contents.size()));
    std::cout.flush();
    return std::cout ? absl::OkStatus()
                     : absl::DataLossError("cannot write stdout");
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  return out ? absl::OkStatus()
             : absl::DataLossError(absl::StrCat("cannot write ", path));
}

Status Put(protobuf::Channel& channel, rdma::BlobStore::Stub& stub,
           const std::string& key, const std::string& path) {
  PutRequest request;
  request.set_key(key);
  if (Status s = ReadFile(path, request.mutable_value()); !s.ok()) return s;
  PutReply reply;
  ClientContext context;
  context.set_timeout(kCallTimeout);
  // A value of 4 KiB or more is not copied into the call: the server reads
  // it from request.value()'s own memory by RDMA Read. The transport's
  // counters tell which way this one went.
  const uint64_t read_chunk_calls =
      channel.transport().counters().read_chunk_calls;
  if (Status s = stub.Put(&context, request, &reply); !s.ok()) return s;
  const bool as_chunk =
      channel.transport().counters().read_chunk_calls > read_chunk_calls;
  std::printf("put %s %zu octets at revision %llu (value %s)\n", key.c_str(),
              request.value().size(),
              static_cast<unsigned long long>(reply.revision()),
              as_chunk ? "in a read chunk" : "inline");
  return absl::OkStatus();
}

Status Get(rdma::BlobStore::Stub& stub, const std::string& key,
           const std::string& path) {
  std::vector<uint8_t> buffer;
  size_t length = 0;
  if (Status s = FetchBlob(stub, key, buffer, &length); !s.ok()) return s;
  return WriteFile(
      path,
      absl::string_view(reinterpret_cast<const char*>(buffer.data()), length));
}

Status Delete(rdma::BlobStore::Stub& stub, const std::string& key) {
  DeleteRequest request;
  request.set_key(key);
  DeleteReply reply;
  ClientContext context;
  context.set_timeout(kCallTimeout);
  return stub.Delete(&context, request, &reply);
}

Status List(rdma::BlobStore::Stub& stub, const std::string& prefix) {
  ListRequest request;
  request.set_prefix(prefix);
  ListReply reply;
  ClientContext context;
  context.set_timeout(kCallTimeout);
  context.set_max_reply_size(kMaxListReplyBytes);
  if (Status s = stub.List(&context, request, &reply); !s.ok()) return s;
  for (const ListReply::Entry& entry : reply.entries()) {
    std::printf("%s %llu\n", entry.key().c_str(),
                static_cast<unsigned long long>(entry.size()));
  }
  if (reply.truncated()) std::printf("...\n");
  return absl::OkStatus();
}

Status Watch(rdma::BlobStore::Stub& stub, const std::string& prefix,
             uint64_t count) {
  WatchRequest request;
  request.set_prefix(prefix);
  ClientContext context;  // no deadline: a watch lasts
  std::unique_ptr<protobuf::ClientReader<Change>> reader =
      stub.Watch(&context, request);
  Change change;
  uint64_t seen = 0;
  while (reader->Read(&change)) {
    switch (change.kind()) {
      case Change::WATCHING:
        std::printf("watching %s\n", change.key().c_str());
        break;
      case Change::PUT:
        std::printf("put %s %llu\n", change.key().c_str(),
                    static_cast<unsigned long long>(change.size()));
        ++seen;
        break;
      case Change::DELETE:
        std::printf("delete %s\n", change.key().c_str());
        ++seen;
        break;
      default:
        std::printf("unknown change of %s\n", change.key().c_str());
        ++seen;
        break;
    }
    std::fflush(stdout);
    // Leaving the loop destroys the reader, which cancels the stream at
    // the server.
    if (count != 0 && seen == count) return absl::OkStatus();
  }
  return reader->Finish();
}

Status Run(const std::string& uri, const std::vector<std::string>& args) {
  protobuf::ChannelOptions options;
  // Every unary call here sets its own deadline, and a watch has none: it
  // lasts until the server ends it. Without this, the transport's default
  // request deadline (60 s) would bound the calls a stream reads through,
  // and end a watch that saw no change for that long.
  options.transport.mutable_timeouts()->set_request_deadline_ms(0);
  // The reply chunk every call offers, and a stream offers for each
  // message it has asked for: the transport sets that much aside per call
  // (on RDMA hardware, registers it). Put, Delete and each Change are
  // small; Get and List ask for more on their own call.
  options.max_reply_size = kSmallReplyBytes;
  absl::StatusOr<std::shared_ptr<protobuf::Channel>> channel =
      protobuf::Channel::Create(uri, std::move(options));
  if (!channel.ok()) return channel.status();
  rdma::BlobStore::Stub stub(*channel);
  const std::string& command = args[0];
  if (command == "put" && args.size() == 3) {
    return Put(**channel, stub, args[1], args[2]);
  }
  if (command == "get" && args.size() == 3) return Get(stub, args[1], args[2]);
  if (command == "delete" && args.size() == 2) return Delete(stub, args[1]);
  if (command == "list" && args.size() <= 2) {
    return List(stub, args.size() == 2 ? args[1] : "");
  }
  uint64_t count = 0;
  if (command == "watch" && args.size() >= 2 && args.size() <= 3 &&
      (args.size() == 2 || absl::SimpleAtoi(args[2], &count))) {
    return Watch(stub, args[1], count);
  }
  return absl::InvalidArgumentError("unknown command or wrong arguments");
}

}  // namespace
}  // namespace rpcrdma::examples::blobstore

int main(int argc, char** argv) {
  if (argc < 4 || std::string(argv[1]) != "--connect") {
    std::fprintf(stderr,
                 "usage: %s --connect URI put KEY FILE | get KEY FILE | "
                 "delete KEY | list [PREFIX] | watch PREFIX [COUNT]\n",
                 argv[0]);
    return 2;
  }
  const std::vector<std::string> args(argv + 3, argv + argc);
  const absl::Status status = rpcrdma::examples::blobstore::Run(argv[2], args);
  if (!status.ok()) {
    std::fprintf(stderr, "blob_store_client: %s: %s\n", args[0].c_str(),
                 status.ToString().c_str());
    return 1;
  }
  return 0;
}
