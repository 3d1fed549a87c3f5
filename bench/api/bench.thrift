// The service the API benchmark runs through Apache Thrift, the baseline
// rpcrdma is measured against: a void call and a binary echo.
namespace cpp rpcrdma.bench.thrift

service Bench {
  void ping(),
  binary echo(1: binary data),
}
