// rpcrdma-dump over a capture of the adapter's own traffic (the capture tap
// of a Channel over soft+unix): given the test protos' descriptor set, it
// names each call's service and method, and a stream's id and seq, from
// the open's reply through its NEXT calls to the end (protobuf/README.md
// §1, §2, §6).
#include <unistd.h>

#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/protobuf/echo_service.h"
#include "tools/dump/dump_cli.h"

namespace rpcrdma::test {
namespace {

using nlohmann::json;

// `file` and what it imports, imports first, as protoc --include_imports
// writes them.
void AddWithImports(const google::protobuf::FileDescriptor* file,
                    std::set<std::string>& added,
                    google::protobuf::FileDescriptorSet& set) {
  if (!added.insert(file->name()).second) return;
  for (int i = 0; i < file->dependency_count(); ++i) {
    AddWithImports(file->dependency(i), added, set);
  }
  file->CopyTo(set.add_file());
}

std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "rpcrdma-protobuf-dump-", getpid(),
                      "-", name);
}

// A descriptor set of the files declaring `messages`' types.
std::string WriteDescriptorSet(
    const std::string& name,
    const std::vector<const google::protobuf::Descriptor*>& messages) {
  google::protobuf::FileDescriptorSet set;
  std::set<std::string> added;
  for (const google::protobuf::Descriptor* m : messages) {
    AddWithImports(m->file(), added, set);
  }
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary) << set.SerializeAsString();
  return path;
}

struct DumpResult {
  int status = 0;
  std::vector<json> protobuf;  // each line's rpc.protobuf, in order
  size_t lines = 0;
  std::string err;
};

DumpResult Dump(const std::vector<std::string>& args) {
  std::istringstream in;
  std::ostringstream out, err;
  DumpResult r;
  r.status = dump::RunDump(args, in, out, err);
  r.err = err.str();
  for (absl::string_view line : absl::StrSplit(out.str(), '\n')) {
    if (line.empty()) continue;
    ++r.lines;
    json j = json::parse(line);
    if (j.contains("rpc") && j["rpc"].contains("protobuf")) {
      r.protobuf.push_back(j["rpc"]["protobuf"]);
    }
  }
  return r;
}

class ProtobufDump : public ::testing::Test {
 protected:
  // One Echo call with a bulk field, one Adder call, and a Ticker stream of
  // three messages, captured at the client.
  static void SetUpTestSuite() {
    capture_ = new std::string(TempPath("capture.pcap"));
    std::unique_ptr<TestServer> server = StartTestServer(TestUri("unix"));
    ASSERT_NE(server, nullptr);
    protobuf::ChannelOptions options = TestChannelOptions();
    options.transport.set_capture_path(*capture_);
    absl::StatusOr<std::shared_ptr<protobuf::Channel>> channel =
        protobuf::Channel::Create(server->server->uri(), options);
    ASSERT_TRUE(channel.ok()) << channel.status();
    {
      rpcrdma_test::rdma::Echo::Stub echo(*channel);
      rpcrdma_test::EchoRequest request;
      request.set_payload(std::string(8192, 'p'));  // a bulk field
      rpcrdma_test::EchoRequest response;
      protobuf::ClientContext context;
      ASSERT_TRUE(echo.Echo(&context, request, &response).ok());
    }
    {
      rpcrdma_test::rdma::Adder::Stub adder(*channel);
      rpcrdma_test::AddRequest request;
      request.set_a(2);
      request.set_b(3);
      rpcrdma_test::AddReply reply;
      protobuf::ClientContext context;
      ASSERT_TRUE(adder.Add(&context, request, &reply).ok());
    }
    {
      rpcrdma_test::rdma::Ticker::Stub ticker(*channel);
      rpcrdma_test::WatchRequest request;
      request.set_count(3);
      protobuf::ClientContext context;
      auto reader = ticker.Watch(&context, request);
      rpcrdma_test::Tick tick;
      int read = 0;
      while (reader->Read(&tick)) ++read;
      ASSERT_EQ(read, 3);
      ASSERT_TRUE(reader->Finish().ok());
    }
    channel->reset();  // closes the capture
    descriptors_ = new std::string(
        WriteDescriptorSet("all.pb", {rpcrdma_test::EchoRequest::descriptor(),
                                      rpcrdma_test::Tick::descriptor()}));
  }
  static void TearDownTestSuite() {
    for (std::string* path : {capture_, descriptors_}) {
      if (path != nullptr) unlink(path->c_str());
      delete path;
    }
  }

  static std::string* capture_;
  static std::string* descriptors_;
};

std::string* ProtobufDump::capture_ = nullptr;
std::string* ProtobufDump::descriptors_ = nullptr;

// "service method" or "service procedure" of a protobuf object.
std::string Names(const json& p) {
  std::string s = p.at("service").get<std::string>();
  if (p.contains("procedure")) {
    absl::StrAppend(&s, " ", p["procedure"].get<std::string>());
  }
  if (p.contains("method")) {
    absl::StrAppend(&s, " ", p["method"].get<std::string>());
  }
  return s;
}

TEST_F(ProtobufDump, UnaryCallsAreNamedWithTheirRepliesStatus) {
  DumpResult r = Dump({"--proto_descriptor_set", *descriptors_, *capture_});
  ASSERT_EQ(r.status, dump::kExitOk) << r.err;
  std::vector<json> echo, add;
  for (const json& p : r.protobuf) {
    EXPECT_FALSE(p.contains("error")) << p;
    if (Names(p) == "rpcrdma_test.Echo Echo") echo.push_back(p);
    if (Names(p) == "rpcrdma_test.Adder Add") add.push_back(p);
  }
  // Echo's reply, larger than the inline threshold, went in the reply
  // chunk the call offered: its octets were written by RDMA Write, which
  // the capture does not record, so only the call is named.
  ASSERT_EQ(echo.size(), 1u);
  EXPECT_EQ(echo[0].at("bulk"), 1);  // the payload, as a read chunk
  EXPECT_EQ(echo[0].at("message_length"), 0);
  EXPECT_EQ(echo[0].at("metadata"), 0);
  EXPECT_FALSE(echo[0].contains("code"));
  ASSERT_EQ(add.size(), 2u);  // the call and its reply
  EXPECT_EQ(add[0].at("bulk"), 0);
  EXPECT_EQ(add[0].at("message_length"), 4);  // a = 2, b = 3
  EXPECT_FALSE(add[0].contains("code"));
  EXPECT_EQ(add[1].at("code"), "OK");
  EXPECT_EQ(add[1].at("message_length"), 2);  // sum = 5
}

TEST_F(ProtobufDump, AStreamIsFollowedFromItsOpenToItsEnd) {
  DumpResult r = Dump({"--proto_descriptor_set", *descriptors_, *capture_});
  ASSERT_EQ(r.status, dump::kExitOk) << r.err;
  std::vector<json> opens;
  std::map<uint64_t, json> next_replies;  // by seq
  std::set<uint64_t> next_calls;
  for (const json& p : r.protobuf) {
    if (p.at("service") != "rpcrdma_test.Ticker") continue;
    EXPECT_FALSE(p.contains("error")) << p;
    if (!p.contains("procedure")) {
      EXPECT_EQ(p.at("method"), "Watch") << p;
      opens.push_back(p);
      continue;
    }
    ASSERT_EQ(p.at("procedure"), "NEXT") << p;
    // The open's reply came before: the NEXT names the stream's method.
    EXPECT_EQ(p.at("method"), "Watch") << p;
    ASSERT_EQ(opens.size(), 2u) << p;
    EXPECT_EQ(p.at("stream_id"), opens[1].at("stream_id")) << p;
    const uint64_t seq = p.at("seq").get<uint64_t>();
    if (p.contains("item")) {
      next_replies[seq] = p;
    } else {
      next_calls.insert(seq);
    }
  }
  ASSERT_EQ(opens.size(), 2u);  // the call and its reply
  EXPECT_EQ(opens[0].at("streaming"), "server");
  EXPECT_FALSE(opens[0].contains("stream_id"));
  EXPECT_EQ(opens[1].at("code"), "OK");
  EXPECT_TRUE(opens[1].contains("stream_id"));
  for (uint64_t seq : {0u, 1u, 2u, 3u}) {
    EXPECT_TRUE(next_calls.count(seq)) << seq;
    ASSERT_TRUE(next_replies.count(seq)) << seq;
  }
  for (uint64_t seq : {0u, 1u, 2u}) {
    EXPECT_EQ(next_replies[seq].at("item"), "MESSAGE") << seq;
    EXPECT_EQ(next_replies[seq].at("bulk"), 0) << seq;
  }
  EXPECT_EQ(next_replies[3].at("item"), "END");
  EXPECT_EQ(next_replies[3].at("code"), "OK");
  EXPECT_EQ(next_replies[3].at("metadata"), 1);  // "ticks"
}

// A program the descriptor set does not name stays as it was, and so does
// every program without the option.
TEST_F(ProtobufDump, OnlyTheServicesOfTheDescriptorSetAreDecoded) {
  // stream.proto declares Ticker only; Echo and Adder are echo.proto's.
  const std::string ticker_only =
      WriteDescriptorSet("ticker.pb", {rpcrdma_test::Tick::descriptor()});
  DumpResult r = Dump({"--proto_descriptor_set", ticker_only, *capture_});
  unlink(ticker_only.c_str());
  ASSERT_EQ(r.status, dump::kExitOk) << r.err;
  ASSERT_FALSE(r.protobuf.empty());
  for (const json& p : r.protobuf) {
    EXPECT_EQ(p.at("service"), "rpcrdma_test.Ticker") << p;
  }
  DumpResult plain = Dump({*capture_});
  ASSERT_EQ(plain.status, dump::kExitOk) << plain.err;
  EXPECT_EQ(plain.lines, r.lines);
  EXPECT_TRUE(plain.protobuf.empty());
}

TEST_F(ProtobufDump, AMalformedDescriptorSetIsRefusedWithItsName) {
  const std::string bad = TempPath("bad.pb");
  std::ofstream(bad, std::ios::binary) << "service Echo { rpc Echo(A) }";
  DumpResult r = Dump({"--proto_descriptor_set", bad, *capture_});
  EXPECT_EQ(r.status, dump::kExitUnreadable);
  EXPECT_EQ(r.lines, 0u);
  EXPECT_NE(r.err.find(absl::StrCat(bad,
                                    ": not a serialized "
                                    "FileDescriptorSet")),
            std::string::npos)
      << r.err;
  // An empty file is an empty set: no service to decode is a mistake too.
  std::ofstream(bad, std::ios::binary | std::ios::trunc).flush();
  r = Dump({"--proto_descriptor_set", bad, *capture_});
  EXPECT_EQ(r.status, dump::kExitUnreadable);
  EXPECT_NE(r.err.find("names no service"), std::string::npos) << r.err;
  unlink(bad.c_str());
  r = Dump({"--proto_descriptor_set", bad, *capture_});
  EXPECT_EQ(r.status, dump::kExitUnreadable);
  EXPECT_NE(r.err.find(absl::StrCat(bad, ": cannot open")), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace rpcrdma::test
