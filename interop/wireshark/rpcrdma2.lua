-- Wireshark dissector for RPC-over-RDMA version two
-- (draft-cel-nfsv4-rpcrdma-version-two-04 §6.2), which Wireshark lacks.
-- It claims the payload of an InfiniBand / RoCE SEND whose rdma_vers is 2
-- and whose rdma_proc is a version two procedure, decodes every header
-- field and property (§5), and hands the RPC message that follows an
-- RDMA2_MSG header to Wireshark's RPC dissector. Version one stays with
-- Wireshark's own "rpcordma" dissector.
--
-- Load it for one run:   tshark -X lua_script:rpcrdma2.lua -r capture.pcap
-- or for good: copy it into Wireshark's personal plugins folder (shown in
-- Help > About Wireshark > Folders > Personal Lua Plugins).
-- Display filter: rpcrdma2 (fields rpcrdma2.*).

local p = Proto("rpcrdma2", "RPC-over-RDMA Version Two")

local procs = {
  [0] = "RDMA2_MSG", [1] = "RDMA2_NOMSG", [4] = "RDMA2_ERROR",
  [5] = "RDMA2_OPTIONAL", [6] = "RDMA2_CONNPROP", [7] = "RDMA2_REQPROP",
  [8] = "RDMA2_RESPROP", [9] = "RDMA2_UPDPROP",
}
local errcodes = {
  [1] = "RDMA2_ERR_VERS", [2] = "RDMA2_ERR_BAD_XDR",
  [3] = "RDMA2_ERR_INVALID_PROC", [4] = "RDMA2_ERR_READ_CHUNKS",
  [5] = "RDMA2_ERR_WRITE_CHUNKS", [6] = "RDMA2_ERR_SEGMENTS",
  [7] = "RDMA2_ERR_WRITE_RESOURCE", [8] = "RDMA2_ERR_REPLY_RESOURCE",
  [9] = "RDMA2_ERR_INVALID_OPTION", [10] = "RDMA2_ERR_SYSTEM",
}
local directions = { [0] = "CALL", [1] = "REPLY" }
local propids = { [1] = "RBSIZ", [2] = "BRS" }
local bkreqsup = { [0] = "NONE", [1] = "INLINE", [2] = "GENL" }
-- §5.2 Table 1: the value a zero-length property stands for (§5.1.1).
local RBSIZ_DEFAULT = 4096
local BRS_DEFAULT = 1

local f = {
  xid = ProtoField.uint32("rpcrdma2.xid", "XID", base.HEX),
  vers = ProtoField.uint32("rpcrdma2.vers", "Version", base.DEC),
  credits = ProtoField.uint32("rpcrdma2.credits", "Credits", base.DEC),
  proc = ProtoField.uint32("rpcrdma2.proc", "Procedure", base.DEC, procs),
  direction = ProtoField.uint32("rpcrdma2.direction", "Direction", base.DEC,
                                directions),
  inv_handle = ProtoField.uint32("rpcrdma2.inv_handle", "Invalidate handle",
                                 base.HEX),
  reads = ProtoField.uint32("rpcrdma2.reads", "Read segments", base.DEC),
  read_position = ProtoField.uint32("rpcrdma2.read.position", "Position",
                                    base.DEC),
  read_handle = ProtoField.uint32("rpcrdma2.read.handle", "Handle", base.HEX),
  read_length = ProtoField.uint32("rpcrdma2.read.length", "Length", base.DEC),
  read_offset = ProtoField.uint64("rpcrdma2.read.offset", "Offset", base.HEX),
  writes = ProtoField.uint32("rpcrdma2.writes", "Write chunks", base.DEC),
  write_segments = ProtoField.uint32("rpcrdma2.write.segments", "Segments",
                                     base.DEC),
  write_handle = ProtoField.uint32("rpcrdma2.write.handle", "Handle",
                                   base.HEX),
  write_length = ProtoField.uint32("rpcrdma2.write.length", "Length",
                                   base.DEC),
  write_offset = ProtoField.uint64("rpcrdma2.write.offset", "Offset",
                                   base.HEX),
  reply_segments = ProtoField.uint32("rpcrdma2.reply.segments",
                                     "Reply chunk segments", base.DEC),
  reply_handle = ProtoField.uint32("rpcrdma2.reply.handle", "Handle",
                                   base.HEX),
  reply_length = ProtoField.uint32("rpcrdma2.reply.length", "Length",
                                   base.DEC),
  reply_offset = ProtoField.uint64("rpcrdma2.reply.offset", "Offset",
                                   base.HEX),
  err = ProtoField.uint32("rpcrdma2.err", "Error", base.DEC, errcodes),
  vers_low = ProtoField.uint32("rpcrdma2.vers_low", "Lowest version",
                               base.DEC),
  vers_high = ProtoField.uint32("rpcrdma2.vers_high", "Highest version",
                                base.DEC),
  max_chunks = ProtoField.uint32("rpcrdma2.max_chunks", "Maximum chunks",
                                 base.DEC),
  max_segments = ProtoField.uint32("rpcrdma2.max_segments",
                                   "Maximum segments", base.DEC),
  chunk_index = ProtoField.uint32("rpcrdma2.chunk_index", "Chunk index",
                                  base.DEC),
  length_needed = ProtoField.uint32("rpcrdma2.length_needed",
                                    "Length needed", base.DEC),
  optdir = ProtoField.uint32("rpcrdma2.optdir", "Optional direction",
                             base.DEC, directions),
  opttype = ProtoField.uint32("rpcrdma2.opttype", "Optional type", base.HEX),
  optinfo_length = ProtoField.uint32("rpcrdma2.optinfo_length",
                                     "Optional info length", base.DEC),
  optinfo = ProtoField.bytes("rpcrdma2.optinfo", "Optional info"),
  props = ProtoField.uint32("rpcrdma2.props", "Properties", base.DEC),
  prop_which = ProtoField.uint32("rpcrdma2.prop.which", "Property",
                                 base.DEC, propids),
  prop_length = ProtoField.uint32("rpcrdma2.prop.length", "Value length",
                                  base.DEC),
  prop_rbsiz = ProtoField.uint32("rpcrdma2.prop.rbsiz",
                                 "Receive buffer size", base.DEC),
  prop_brs = ProtoField.uint32("rpcrdma2.prop.brs",
                               "Backward request support", base.DEC,
                               bkreqsup),
  prop_data = ProtoField.bytes("rpcrdma2.prop.data", "Value"),
  -- Subtrees (no value of their own).
  read_list = ProtoField.none("rpcrdma2.read_list", "Read list"),
  read_segment = ProtoField.none("rpcrdma2.read_segment", "Read segment"),
  write_list = ProtoField.none("rpcrdma2.write_list", "Write list"),
  write_chunk = ProtoField.none("rpcrdma2.write_chunk", "Write chunk"),
  reply_chunk = ProtoField.none("rpcrdma2.reply_chunk", "Reply chunk"),
  segment = ProtoField.none("rpcrdma2.segment", "Segment"),
  propset = ProtoField.none("rpcrdma2.propset", "Property set"),
  property = ProtoField.none("rpcrdma2.property", "Property"),
  subset = ProtoField.none("rpcrdma2.subset", "Property subset"),
  nochg = ProtoField.uint32("rpcrdma2.nochg", "No-change word", base.HEX),
  done = ProtoField.uint32("rpcrdma2.done", "Done word", base.HEX),
  rejected = ProtoField.uint32("rpcrdma2.rejected", "Rejected word",
                               base.HEX),
}
p.fields = f

local ef = {
  truncated = ProtoExpert.new("rpcrdma2.truncated", "Header cut short",
                              expert.group.MALFORMED, expert.severity.ERROR),
  bad_value = ProtoExpert.new("rpcrdma2.bad_value",
                              "Property value of the wrong length",
                              expert.group.MALFORMED, expert.severity.WARN),
}
p.experts = { ef.truncated, ef.bad_value }

-- Reads XDR items from a buffer, failing (error) when it runs out; the
-- dissector catches that and reports a truncated header.
local Reader = {}
Reader.__index = Reader

local function new_reader(tvb)
  return setmetatable({ tvb = tvb, pos = 0 }, Reader)
end

function Reader:need(n)
  if self.pos + n > self.tvb:len() then error("truncated", 0) end
end

-- The next `n` octets (all that remain when `n` is nil), for a subtree.
function Reader:span(n)
  self:need(n or 1)
  if n then return self.tvb(self.pos, n) end
  return self.tvb(self.pos)
end

function Reader:add_u32(tree, field)
  self:need(4)
  local range = self.tvb(self.pos, 4)
  self.pos = self.pos + 4
  local value = range:uint()
  if tree then tree:add(field, range) end
  return value, range
end

function Reader:add_u64(tree, field)
  self:need(8)
  local range = self.tvb(self.pos, 8)
  self.pos = self.pos + 8
  tree:add(field, range)
end

-- opaque<>: a length word, the octets, zero padding to four (RFC 4506 §4.10).
function Reader:opaque(tree, length_field, data_field)
  local length = self:add_u32(tree, length_field)
  local padded = length + (4 - length % 4) % 4
  self:need(padded)
  local range = nil
  if length > 0 then
    range = self.tvb(self.pos, length)
    if data_field then tree:add(data_field, range) end
  end
  self.pos = self.pos + padded
  return length, range
end

local function segment(r, tree, handle, length, offset)
  local t = tree:add(f.segment, r:span(16))
  r:add_u32(t, handle)
  r:add_u32(t, length)
  r:add_u64(t, offset)
end

-- A write chunk (rpcrdma2_write_chunk): a counted array of segments.
local function write_chunk(r, tree, chunk_field, count_field, handle, length,
                           offset)
  local t = tree:add(chunk_field, r:span())
  local n = r:add_u32(t, count_field)
  for _ = 1, n do
    segment(r, t, handle, length, offset)
  end
end

local function chunk_lists(r, tree)
  r:add_u32(tree, f.direction)
  r:add_u32(tree, f.inv_handle)
  local reads = tree:add(f.read_list, r:span())
  local nreads = 0
  -- XDR optional-data lists (RFC 4506 §4.19): a discriminant before each
  -- entry, zero at the end.
  while r:add_u32(nil) ~= 0 do
    local t = reads:add(f.read_segment, r:span(20))
    r:add_u32(t, f.read_position)
    r:add_u32(t, f.read_handle)
    r:add_u32(t, f.read_length)
    r:add_u64(t, f.read_offset)
    nreads = nreads + 1
  end
  reads:add(f.reads, nreads):set_generated()
  local writes = tree:add(f.write_list, r:span())
  local nwrites = 0
  while r:add_u32(nil) ~= 0 do
    write_chunk(r, writes, f.write_chunk, f.write_segments, f.write_handle,
                f.write_length, f.write_offset)
    nwrites = nwrites + 1
  end
  writes:add(f.writes, nwrites):set_generated()
  if r:add_u32(nil) ~= 0 then
    write_chunk(r, tree, f.reply_chunk, f.reply_segments, f.reply_handle,
                f.reply_length, f.reply_offset)
  end
end

-- rpcrdma2_propset: the known properties' values shown decoded (§5.2).
local function propset(r, tree, label)
  local t = tree:add(f.propset, r:span()):set_text(label)
  local n = r:add_u32(t, f.props)
  for _ = 1, n do
    local pt = t:add(f.property, r:span())
    local which = r:add_u32(pt, f.prop_which)
    local length, range = r:opaque(pt, f.prop_length, f.prop_data)
    local value_field = which == 1 and f.prop_rbsiz
        or which == 2 and f.prop_brs or nil
    local note = ""
    if value_field then
      if length == 0 then
        local default = which == 1 and RBSIZ_DEFAULT or BRS_DEFAULT
        pt:add(value_field, default):set_generated()
        note = " (the default)"
      elseif length == 4 then
        pt:add(value_field, range)
      else
        pt:add_proto_expert_info(ef.bad_value)
      end
    end
    pt:set_text(string.format("Property %s, %d octets%s",
                              propids[which] or tostring(which), length, note))
  end
end

local function subset(r, tree, label, field)
  local t = tree:add(f.subset, r:span()):set_text(label)
  local n = r:add_u32(nil)
  for _ = 1, n do r:add_u32(t, field) end
end

local function error_body(r, tree)
  local code = r:add_u32(tree, f.err)
  if code == 1 then
    r:add_u32(tree, f.vers_low)
    r:add_u32(tree, f.vers_high)
  elseif code == 4 or code == 5 then
    r:add_u32(tree, f.max_chunks)
  elseif code == 6 then
    r:add_u32(tree, f.max_segments)
  elseif code == 7 then
    r:add_u32(tree, f.chunk_index)
    r:add_u32(tree, f.length_needed)
  elseif code == 8 then
    r:add_u32(tree, f.length_needed)
  end
end

local bodies = {
  [0] = chunk_lists,
  [1] = chunk_lists,
  [4] = error_body,
  [5] = function(r, tree)
    r:add_u32(tree, f.optdir)
    r:add_u32(tree, f.opttype)
    r:opaque(tree, f.optinfo_length, f.optinfo)
  end,
  [6] = function(r, tree)
    propset(r, tree, "Start")
    subset(r, tree, "No-change subset", f.nochg)
  end,
  [7] = function(r, tree) propset(r, tree, "Want") end,
  [8] = function(r, tree)
    subset(r, tree, "Done subset", f.done)
    subset(r, tree, "Rejected subset", f.rejected)
    propset(r, tree, "Other")
  end,
  [9] = function(r, tree) propset(r, tree, "Now") end,
}

local rpc = Dissector.get("rpc")

function p.dissector(tvb, pinfo, tree)
  local r = new_reader(tvb)
  local t = tree:add(p, tvb())
  local ok, problem = pcall(function()
    local xid = r:add_u32(t, f.xid)
    r:add_u32(t, f.vers)
    r:add_u32(t, f.credits)
    local proc = r:add_u32(t, f.proc)
    bodies[proc](r, t)
    t:set_len(r.pos)
    t:append_text(string.format(", %s, XID 0x%08x", procs[proc], xid))
    pinfo.cols.protocol = "RPCoRDMA2"
    pinfo.cols.info = string.format("%s XID 0x%08x", procs[proc], xid)
  end)
  if not ok then
    if problem ~= "truncated" then error(problem, 0) end
    t:add_proto_expert_info(ef.truncated)
    return tvb:len()
  end
  if tvb(12, 4):uint() == 0 and r.pos < tvb:len() then
    rpc:call(tvb(r.pos):tvb(), pinfo, tree)
  end
  return tvb:len()
end

-- rdma_vers 2 and a version two procedure: nothing else is claimed.
local function heuristic(tvb, pinfo, tree)
  if tvb:len() < 16 then return false end
  if tvb(4, 4):uint() ~= 2 or procs[tvb(12, 4):uint()] == nil then
    return false
  end
  p.dissector(tvb, pinfo, tree)
  return true
end

p:register_heuristic("infiniband.payload", heuristic)
