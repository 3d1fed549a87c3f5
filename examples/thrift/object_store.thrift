// The Thrift bridge's example (docs/thrift.md): an object store holding
// large blobs, whose clients watch prefixes and are told of changes
// through callbacks over the same connection (RFC 8167).
namespace cpp rpcrdma.examples.store

struct ObjectInfo {
  1: string name,
  2: i64 size,
  3: i64 version,
}

exception NoSuchObject {
  1: string name,
}

service ObjectStore {
  // Stores `data` under `name`; watchers of a prefix of `name` are told.
  ObjectInfo put(1: string name, 2: binary data),
  binary get(1: string name) throws (1: NoSuchObject missing),
  list<ObjectInfo> listObjects(1: string prefix),
  // Changes to objects under `prefix` are pushed to this connection's
  // ObjectWatcher from now on.
  void watch(1: string prefix),
}

// Served by the client, called by the server.
service ObjectWatcher {
  void changed(1: ObjectInfo info),
}
