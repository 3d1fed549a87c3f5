// The Thrift bridge from an installed rpcrdma: a TRdmaServerSocket and a
// TRdmaSocket on the software fabric exchanging one Thrift message each
// way through TBinaryProtocol. Exits 0 when the reply is the expected one.
#include <rpcrdma/config.h>
#include <rpcrdma/thrift/rdma_server_socket.h>
#include <rpcrdma/thrift/rdma_socket.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>

using apache::thrift::protocol::TBinaryProtocol;
using apache::thrift::protocol::TMessageType;

int main() {
  auto server = std::make_shared<rpcrdma::thrift::TRdmaServerSocket>(
      "soft+unix://@rpcrdma-thrift-consumer-" + std::to_string(getpid()));
  server->listen();
  // The server side: read the call's string, answer it with a "!" added.
  std::thread serving([server] {
    auto transport = server->accept();
    TBinaryProtocol protocol(transport);
    std::string name;
    TMessageType type;
    int32_t seqid = 0;
    std::string text;
    protocol.readMessageBegin(name, type, seqid);
    protocol.readString(text);
    protocol.readMessageEnd();
    transport->readEnd();
    protocol.writeMessageBegin(name, apache::thrift::protocol::T_REPLY, seqid);
    protocol.writeString(text + "!");
    protocol.writeMessageEnd();
    transport->writeEnd();
    transport->flush();
  });
  // The transport's configuration, every field at its default
  // (<rpcrdma/config.h>).
  auto socket = std::make_shared<rpcrdma::thrift::TRdmaSocket>(
      server->uri(), rpcrdma::DefaultConfig());
  socket->open();
  TBinaryProtocol protocol(socket);
  protocol.writeMessageBegin("greet", apache::thrift::protocol::T_CALL, 7);
  protocol.writeString(std::string("hello"));
  protocol.writeMessageEnd();
  socket->flush();
  std::string name;
  TMessageType type;
  int32_t seqid = 0;
  std::string text;
  protocol.readMessageBegin(name, type, seqid);
  protocol.readString(text);
  protocol.readMessageEnd();
  serving.join();
  if (name != "greet" || seqid != 7 || text != "hello!") {
    std::fprintf(stderr, "thrift reply: %s %d '%s'\n", name.c_str(), seqid,
                 text.c_str());
    return 1;
  }
  std::printf("thrift over %s: ok\n", server->uri().c_str());
  return 0;
}
