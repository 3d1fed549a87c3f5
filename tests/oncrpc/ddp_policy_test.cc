// A program's DDP policy (its Upper Layer Binding, RFC 8166 §6) in code,
// in text format and through the C functions, and the configuration that
// carries it.
#include "rpcrdma/oncrpc/ddp_policy.h"

#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "rpcrdma/oncrpc/config.h"

namespace rpcrdma::oncrpc {
namespace {

// RFC 1813 §3.3 procedure numbers.
constexpr uint32_t kNull = 0, kGetattr = 1, kReadlink = 5, kRead = 6,
                   kWrite = 7, kReaddir = 16, kReaddirplus = 17;

TEST(DdpPolicy, DefaultsLetRepliesOfAnySizeBackThroughAReplyChunk) {
  DdpPolicy policy;
  EXPECT_EQ(policy.argument_threshold, 1024u);
  EXPECT_EQ(policy.result_threshold, 1024u);
  EXPECT_EQ(policy.WriteChunkOctets(3), 0u);
  EXPECT_EQ(policy.MaxReplyOctets(3), 1u << 20);
  // NULLPROC's reply is its header alone (RFC 5531 §12.1).
  EXPECT_EQ(policy.MaxReplyOctets(0), 0u);
}

TEST(DdpPolicy, Rfc8267_4_Nfs3BindingAsLinuxAppliesIt) {
  DdpPolicy nfs3 = DdpPolicy::Nfs3(262144, 32768);
  EXPECT_EQ(nfs3.WriteChunkOctets(kRead), 262144u);
  for (uint32_t proc : {kReadlink, kReaddir, kReaddirplus}) {
    EXPECT_EQ(nfs3.MaxReplyOctets(proc), 32768u) << proc;
    EXPECT_EQ(nfs3.WriteChunkOctets(proc), 0u) << proc;
  }
  // WRITE data is a read chunk by the argument threshold alone.
  EXPECT_EQ(nfs3.Find(kWrite), nullptr);
  EXPECT_EQ(nfs3.argument_threshold, 1024u);
  // Every other reply fits inline (RFC 1813's other results are a few
  // hundred octets at most; RFC 8166 §3.3.2: inline thresholds are at
  // least 1024): no reply chunk, as the Linux client offers none. nfsd
  // uses any reply chunk it is offered, and takes one offered with a READ
  // for the whole reply, data included (interop/kernel/README.md).
  EXPECT_EQ(nfs3.MaxReplyOctets(kGetattr), 0u);
  EXPECT_EQ(nfs3.MaxReplyOctets(kRead), 0u);
  EXPECT_EQ(nfs3.MaxReplyOctets(kWrite), 0u);
  EXPECT_EQ(nfs3.MaxReplyOctets(kNull), 0u);
}

TEST(DdpPolicy, ParsesTextFormat) {
  absl::StatusOr<DdpPolicy> policy =
      DdpPolicy::Parse(R"pb(
                         binding: "nfs3"
                         nfs3_read_size: 1048576
                         argument_threshold: 4096
                         result_threshold: 0
                         default_reply_octets: 65536
                         procedures { procedure: 6 write_chunk_octets: 65536 }
                         procedures { procedure: 40 reply_chunk_octets: 8192 }
                       )pb",
                       "test.textproto");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ(policy->argument_threshold, 4096u);
  EXPECT_EQ(policy->result_threshold, 0u);
  // Its own bindings override the ready one's.
  EXPECT_EQ(policy->WriteChunkOctets(kRead), 65536u);
  EXPECT_EQ(policy->MaxReplyOctets(40), 8192u);
  EXPECT_EQ(policy->MaxReplyOctets(kReaddir), 65536u);  // nfs3's default
  EXPECT_EQ(policy->MaxReplyOctets(kGetattr), 65536u);
}

TEST(DdpPolicy, ErrorsNameTheSourceAndTheLineOrField) {
  auto syntax = DdpPolicy::Parse("argument_threshold: 1\nbogus: 2\n", "p.txt");
  ASSERT_FALSE(syntax.ok());
  EXPECT_TRUE(absl::StartsWith(syntax.status().message(), "p.txt:2:"))
      << syntax.status();
  auto binding = DdpPolicy::Parse("binding: \"nfs4\"", "p.txt");
  EXPECT_EQ(binding.status().message(),
            "p.txt: binding: \"nfs4\" is not a ready binding (known: "
            "\"nfs3\")");
  auto twice = DdpPolicy::Parse(
      "procedures { procedure: 3 } procedures { procedure: 3 }", "p.txt");
  EXPECT_EQ(twice.status().message(),
            "p.txt: procedures[1]: procedure 3 is bound twice");
  auto stray = DdpPolicy::Parse("nfs3_read_size: 4096", "p.txt");
  EXPECT_TRUE(
      absl::StrContains(stray.status().message(), "only with binding \"nfs3\""))
      << stray.status();
  auto missing = DdpPolicy::Load("/nonexistent/policy.textproto");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST(DdpPolicyC, TheCFunctionsBuildTheSamePolicy) {
  rdma_ddp_policy* policy = rdma_ddp_policy_create();
  rdma_ddp_policy_set_argument_threshold(policy, 2048);
  rdma_ddp_policy_set_result_threshold(policy, 512);
  rdma_ddp_policy_set_default_reply(policy, 4096);
  rdma_ddp_policy_set_write_chunk(policy, 3, 100000);
  rdma_ddp_policy_set_reply_chunk(policy, 4, 0);
  EXPECT_EQ(policy->policy.argument_threshold, 2048u);
  EXPECT_EQ(policy->policy.result_threshold, 512u);
  EXPECT_EQ(policy->policy.WriteChunkOctets(3), 100000u);
  EXPECT_EQ(policy->policy.MaxReplyOctets(4), 0u);
  EXPECT_EQ(policy->policy.MaxReplyOctets(5), 4096u);
  rdma_ddp_policy_set_write_chunk(policy, 3, 0);
  EXPECT_EQ(policy->policy.WriteChunkOctets(3), 0u);
  rdma_ddp_policy_destroy(policy);

  rdma_ddp_policy* nfs3 = rdma_ddp_policy_nfs3(65536, 8192);
  EXPECT_EQ(nfs3->policy.WriteChunkOctets(kRead), 65536u);
  rdma_ddp_policy_destroy(nfs3);

  EXPECT_EQ(rdma_ddp_policy_parse("binding: \"x\""), nullptr);
  EXPECT_TRUE(absl::StrContains(rdma_oncrpc_error(), "not a ready binding"))
      << rdma_oncrpc_error();

  const std::string path = ::testing::TempDir() + "/ddp_policy_test.textproto";
  std::ofstream(path) << "binding: \"nfs3\"\n";
  rdma_ddp_policy* loaded = rdma_ddp_policy_load(path.c_str());
  ASSERT_NE(loaded, nullptr) << rdma_oncrpc_error();
  EXPECT_EQ(loaded->policy.WriteChunkOctets(kRead), 1u << 20);
  rdma_ddp_policy_destroy(loaded);
}

TEST(OncRpcConfigC, PoliciesByProgramAndTheTransportFromText) {
  rdma_oncrpc_config* config = rdma_oncrpc_config_create();
  rdma_ddp_policy* nfs3 = rdma_ddp_policy_nfs3(65536, 8192);
  rdma_oncrpc_config_set_ddp_policy(config, 100003, 3, nfs3);
  rdma_ddp_policy_destroy(nfs3);  // copied
  EXPECT_EQ(config->config.PolicyFor(100003, 3).WriteChunkOctets(kRead),
            65536u);
  EXPECT_EQ(config->config.PolicyFor(100003, 4).WriteChunkOctets(kRead), 0u);
  rdma_ddp_policy* everyone = rdma_ddp_policy_create();
  rdma_ddp_policy_set_argument_threshold(everyone, 8192);
  rdma_oncrpc_config_set_ddp_policy(config, 0, 0, everyone);
  rdma_ddp_policy_destroy(everyone);
  EXPECT_EQ(config->config.PolicyFor(7, 1).argument_threshold, 8192u);

  EXPECT_TRUE(rdma_oncrpc_config_parse_transport(
      config, "credits { max_requests: 16 }"))
      << rdma_oncrpc_error();
  EXPECT_EQ(config->config.transport.credits().max_requests(), 16u);
  EXPECT_FALSE(rdma_oncrpc_config_parse_transport(
      config, "credits { max_requests: 0 }"));
  EXPECT_TRUE(absl::StrContains(rdma_oncrpc_error(), "credits.max_requests"))
      << rdma_oncrpc_error();
  // A refused configuration leaves the one before.
  EXPECT_EQ(config->config.transport.credits().max_requests(), 16u);
  EXPECT_FALSE(rdma_oncrpc_config_load_transport(config, "/nonexistent"));
  rdma_oncrpc_config_set_backchannel(config, TRUE);
  EXPECT_TRUE(config->config.backchannel);
  rdma_oncrpc_config_destroy(config);
}

TEST(AdapterConfig, OneTextFileCarriesEverything) {
  absl::StatusOr<AdapterConfig> config =
      AdapterConfig::Parse(R"pb(
                             transport { credits { max_requests: 32 } }
                             default_policy { argument_threshold: 2048 }
                             programs {
                               program: 100003
                               version: 3
                               policy { binding: "nfs3" nfs3_read_size: 262144 }
                             }
                             programs { program: 100005 version: 3 }
                             backchannel: true
                           )pb",
                           "adapter.txt");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->transport.credits().max_requests(), 32u);
  EXPECT_EQ(config->PolicyFor(7, 1).argument_threshold, 2048u);
  EXPECT_EQ(config->PolicyFor(100003, 3).WriteChunkOctets(kRead), 262144u);
  EXPECT_EQ(config->PolicyFor(100005, 3).argument_threshold, 1024u);
  EXPECT_TRUE(config->backchannel);
}

TEST(AdapterConfig, ErrorsNameTheFileAndTheField) {
  EXPECT_TRUE(absl::StartsWith(
      AdapterConfig::Parse("backchannel: true\nbogus: 1", "a.txt")
          .status()
          .message(),
      "a.txt:2:"));
  const absl::Status transport =
      AdapterConfig::Parse("transport { credits { max_requests: 0 } }", "a.txt")
          .status();
  EXPECT_TRUE(absl::StartsWith(transport.message(),
                               "a.txt: transport: credits.max_requests"))
      << transport;
  EXPECT_EQ(AdapterConfig::Parse("programs { program: 9 version: 1 } "
                                 "programs { program: 9 version: 1 }",
                                 "a.txt")
                .status()
                .message(),
            "a.txt: programs[1]: program 9 version 1 has a policy already");
  EXPECT_EQ(AdapterConfig::Parse("programs { version: 1 }", "a.txt")
                .status()
                .message(),
            "a.txt: programs[0]: program: 0 is not a program");
  EXPECT_EQ(AdapterConfig::Parse("default_policy { binding: \"x\" }", "a.txt")
                .status()
                .message(),
            "a.txt: default_policy: binding: \"x\" is not a ready binding "
            "(known: \"nfs3\")");
}

TEST(AdapterConfigC, LoadsTheFile) {
  const std::string path = ::testing::TempDir() + "/adapter_config_test.txt";
  std::ofstream(path) << "programs { program: 100003 version: 3 "
                         "policy { binding: \"nfs3\" } }\n";
  rdma_oncrpc_config* config = rdma_oncrpc_config_load(path.c_str());
  ASSERT_NE(config, nullptr) << rdma_oncrpc_error();
  EXPECT_EQ(config->config.PolicyFor(100003, 3).WriteChunkOctets(kRead),
            1u << 20);
  rdma_oncrpc_config_destroy(config);
  EXPECT_EQ(rdma_oncrpc_config_load("/nonexistent/adapter.txt"), nullptr);
  EXPECT_TRUE(
      absl::StrContains(rdma_oncrpc_error(), "/nonexistent/adapter.txt"))
      << rdma_oncrpc_error();
}

}  // namespace
}  // namespace rpcrdma::oncrpc
