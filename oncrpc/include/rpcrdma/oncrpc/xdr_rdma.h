/*
 * The XDR streams under rpcrdma's ONC RPC adapter (clnt_rdma.h,
 * svc_rdma.h): what they do to the XDR routines rpcgen generates, and the
 * private XDR_CONTROL requests that hand-written routines may make of them.
 *
 * Encoding produces the reduced stream of RFC 8166 §3.4: the content of a
 * variable-length opaque (xdr_bytes, xdr_string, an rpcgen `opaque<>` or
 * `string<>`) that is DDP-eligible leaves the stream, its length word
 * stays, its XDR roundup goes, and it becomes a DDP item at that XDR
 * position that points at the caller's memory: a read chunk of a call (when
 * the call does not fit inline), or the next write chunk the call offered
 * for a reply. An opaque is DDP-eligible when it is at least the policy's
 * threshold (rpcrdma/oncrpc/ddp_policy.h), when a routine marked it with
 * XDR_RDMA_DDP_NEXT, or, in the results of a procedure the policy binds to
 * a write chunk, whatever its length (RFC 8267 §4.1: a short NFS READ
 * still fills its write chunk). Nothing else changes: routines are
 * unaware.
 *
 * Decoding a reply puts write-chunk data back, by the rule the encoder
 * follows (RFC 8166 §3.4.7 leaves the mapping to the Upper Layer Binding):
 * the data of the next returned write chunk takes the place of the next
 * variable-length opaque whose length word equals its length and that is
 * DDP-eligible (at least the result threshold, marked, or the result of a
 * procedure the policy gives a write chunk, whose one bulk opaque may be
 * short). A write chunk the reply left empty leaves its opaque inline.
 * When the destination is the memory the chunk was offered in
 * (XDR_RDMA_WRITE_CHUNK with a buffer), nothing is copied.
 */
#ifndef RPCRDMA_ONCRPC_XDR_RDMA_H_
#define RPCRDMA_ONCRPC_XDR_RDMA_H_

#include <rpc/xdr.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * XDR_CONTROL requests. Private: other streams refuse them (return FALSE),
 * so a routine can tell whether it runs over RPC-over-RDMA.
 */
enum {
  /* Encoding a call's arguments: the call offers one more write chunk
   * (RFC 8166 §3.4.7) for a result, in XDR order after those the
   * procedure's policy names. Argument: struct xdr_rdma_write_chunk *. */
  XDR_RDMA_WRITE_CHUNK = 0x52440001,
  /* Encoding a call's arguments: the call offers a reply chunk (RFC 8166
   * §3.5.4) for a reduced reply of up to *(u_int *)arg octets. */
  XDR_RDMA_REPLY_CHUNK = 0x52440002,
  /* Any stream: *(u_int *)arg is set to the stream's DDP threshold (0 when
   * DDP is off for this message). */
  XDR_RDMA_GET_DDP_THRESHOLD = 0x52440003,
  /* Encoding or decoding: the next variable-length opaque is DDP-eligible
   * whatever its length. Argument: ignored (may be NULL). */
  XDR_RDMA_DDP_NEXT = 0x52440004,
  /* Decoding a reply: *(u_int *)arg is set to how many opaques so far took
   * their content from a write chunk (RFC 8166 §3.4.7). Asked before and
   * after an opaque, it tells whether the responder placed that one by
   * DDP or sent it inline (its length is then the opaque's). */
  XDR_RDMA_WRITE_CHUNKS_TAKEN = 0x52440005
};

struct xdr_rdma_write_chunk {
  u_int length; /* octets the responder may write */
  void *buffer; /* where they land; NULL: memory the adapter provides */
};

/* XDR_CONTROL as an expression (libtirpc's macro is a statement): the
 * stream's answer to `request`, FALSE when it has no x_control. */
static inline bool_t xdr_rdma_control(XDR *xdrs, int request, void *arg) {
  return xdrs->x_ops->x_control != NULL &&
         (*xdrs->x_ops->x_control)(xdrs, request, arg);
}

#ifdef __cplusplus
}
#endif

#endif /* RPCRDMA_ONCRPC_XDR_RDMA_H_ */
