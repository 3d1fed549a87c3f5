"""rpcrdma_proto_library: protoc's C++ classes and protoc-gen-rpcrdma's
stubs and services for .proto files, as one cc_library (the Bazel side of
CMake's rpcrdma_protobuf_generate)."""

def rpcrdma_proto_library(name, srcs, proto_root = "", deps = [], **kwargs):
    """Generates NAME.pb.{h,cc} and NAME.rpcrdma.pb.{h,cc} for `srcs`.

    Args:
      name: the cc_library; NAME_pb holds protoc's own classes.
      srcs: .proto files of this package, all under `proto_root`.
      proto_root: the folder (relative to this package) protoc imports
        from; users include "path/from/root/NAME.rpcrdma.pb.h".
      deps: cc_library targets of the imported protos' classes (protobuf's
        own well-known types come with //bazel/system:protobuf, and
        "rpcrdma/protobuf/options.proto" with this rule).
      **kwargs: passed to both cc_library rules (testonly, visibility).
    """
    package = native.package_name()
    root = package + ("/" + proto_root if proto_root else "")
    prefix = proto_root + "/" if proto_root else ""
    bases = []
    for src in srcs:
        if not src.startswith(prefix) or not src.endswith(".proto"):
            fail("%s is not a .proto under %s" % (src, root))
        bases.append(prefix + src[len(prefix):-len(".proto")])
    pb = [b + ext for b in bases for ext in [".pb.h", ".pb.cc"]]
    ours = [b + ext for b in bases for ext in [".rpcrdma.pb.h", ".rpcrdma.pb.cc"]]
    options = "//protobuf:include/rpcrdma/protobuf/options.proto"
    native.genrule(
        name = name + "_gen",
        # options.proto for its imports only: protoc -I finds it.
        srcs = srcs + [options],
        outs = pb + ours,
        tools = ["//protobuf:protoc-gen-rpcrdma"],
        cmd = ("protoc -I%s -Iprotobuf/include --plugin=protoc-gen-rpcrdma=$(location //protobuf:protoc-gen-rpcrdma) " +
               "--cpp_out=$(GENDIR)/%s --rpcrdma_out=$(GENDIR)/%s %s") % (
            root,
            root,
            root,
            " ".join(["$(location %s)" % src for src in srcs]),
        ),
    )
    strip = "/" + root
    native.cc_library(
        name = name + "_pb",
        srcs = [f for f in pb if f.endswith(".cc")],
        hdrs = [f for f in pb if f.endswith(".h")],
        # protoc's own output is not ours to keep warning-free.
        copts = ["-w"],
        strip_include_prefix = strip,
        deps = deps + [
            "//bazel/system:protobuf",
            "//protobuf:options_cc_proto",
        ],
        **kwargs
    )
    native.cc_library(
        name = name,
        srcs = [f for f in ours if f.endswith(".cc")],
        hdrs = [f for f in ours if f.endswith(".h")],
        strip_include_prefix = strip,
        deps = [":" + name + "_pb", "//protobuf"],
        **kwargs
    )
