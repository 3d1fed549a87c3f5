// The Thrift bridge's test service: every Thrift type, containers, nested
// structs, typedefs, enums, declared exceptions, oneway calls, a second
// service for TMultiplexedProtocol and a callback service the client
// serves (RFC 8167 backward calls).
namespace cpp rpcrdma.test

    typedef i64 Timestamp typedef binary Blob typedef map<string, list<i32>>
        Index

    enum Color {
      RED = 1,
      GREEN = 2,
      BLUE = 42,
    }

struct Inner {
  1 : i32 id, 2 : optional string label, 3 : Blob payload,
}

struct Everything {
  1 : bool flag,
      2 : i8 tiny,
          3 : i16 small,
              4 : i32 medium,
                  5 : i64 large,
                      6 : double real,
                          7 : string text,
                              8 : binary data,
                                  9 : Color color,
                                      10 : Timestamp stamp,
                                           11 : list<i32>
                                                    numbers,
                                                12 : set<string>
                                                         tags,
                                                     13 : map<i32, string>
                                                              names,
                                                          14 : list<Inner>
                                                                   inners,
                                                               15
      : map<string, Inner>
            by_name,
        16 : Index index,
             17 : optional Inner maybe,
                  18 : list<binary>
                           blobs,
                       19 : required i32 must,
                            20 : set<Color>
                                     colors,
                                 21 : map<binary, binary>
                                          binary_map,
                                      22 : list<list<map<string, set<i64>>>>
                                               nested,
}

struct Nest {
  1 : optional Nest& child, 2 : i32 depth,
}

exception NotFound{
  1 : string key,
  2 : i32 code,
}

exception Invalid{
  1 : string why,
}

service Store{
    void ping(),
    Everything roundTrip(1
                         : Everything value),
    Blob echo(1
              : Blob data),
    // Sizes of several binaries and returns as many as asked.
    list<i64>
        sizes(1
              : list<Blob>
                  blobs),
    list<Blob>
        make(1
             : list<i32> sizes, 2
             : i8 fill),
    Blob get(1
             : string key) throws(1
                                  : NotFound missing, 2
                                  : Invalid bad),
    void put(1
             : string key, 2
             : Blob value) throws(1
                                  : Invalid bad),
    i32 depth(1
              : Nest nest),
    // Sleeps on the server before it answers (or, oneway, before it records).
    i64 slow(1
             : i32 millis, 2
             : i64 token),
    oneway void note(1
                     : string what, 2
                     : i32 millis, 3
                     : Blob attachment),
    // Counts the oneway notes the handler has finished.
    i32 notes(),
    // Asks the server to call the client's Watcher service back.
    i32 callBack(1
                 : string key, 2
                 : i32 times, 3
                 : Blob data, 4
                 : bool after),
    string fail(1
                : string message),
}

service Admin{
    string version(),
    i32 add(1
            : i32 a, 2
            : i32 b),
}

service Watcher {
  i64 changed(1
              : string key, 2
              : i32 n, 3
              : Blob data),
      oneway void poke(1
                       : string key),
}
