-- SPDX-License-Identifier: BSD-3-Clause
--
-- Wireshark dissector for the georeduce wire protocol, version 1 (docs/PROTOCOL.md), and for
-- the sealed frames of protected links (section 14). Written from that text: the 54-byte
-- header by name, the contributor set as a list of worker ids, the payload's elements in
-- every dtype (fp32, fp16, bf16, mxint8, mxfp8, mxfp4 with their block scales), and the
-- stateless validation of section 6 with the reference decoder's reason for the first rule
-- a packet breaks (`georeduce.reason`, expert info "malformed"). A sealed frame shows its
-- clear seal header; the packet inside is encrypted and shown as such.
--
-- Loading: copy into a Wireshark Lua plugin folder (`tshark -G folders`, "Personal Lua
-- Plugins" or "Global Lua Plugins"; `meson install` does so), or for one run:
--   tshark -X lua_script:tools/wireshark/georeduce.lua -r capture.pcap
-- UDP ports: the gateways' ranges are a preference (georeduce.ports, default 17400-17415,
-- the default base and count of section 9); workers listen on ports their tables give,
-- which the heuristic dissector (on by default, georeduce.heuristic) finds by the magic.

-- Bits of a byte without a bit library (Lua 5.2's bit32 is gone from 5.4).
local function has(byte, mask) return math.floor(byte / mask) % 2 == 1 end

local p = Proto("georeduce", "georeduce gradient aggregation protocol")

local HDR_LEN = 54
local SEAL_HDR_LEN = 32
local SEAL_TAG_LEN = 16
local UDP_PAYLOAD_MAX = 8972
local CSET_BLOCK = 32
local CSET_BLOCKS_MAX = 16
local NODE_NONE = 0xffff
local NACK_RANGE_MAX = 32
local MX_BLOCK = 32

local T_CONTRIB, T_RESULT, T_ACK, T_NACK_CONTRIB, T_NACK_RESULT = 1, 2, 3, 4, 5
local T_PROBE, T_PROBE_REPLY, T_MCAST, T_NACK_MCAST = 6, 7, 8, 9

local types = {
	[1] = "CONTRIB", [2] = "RESULT", [3] = "ACK", [4] = "NACK_CONTRIB",
	[5] = "NACK_RESULT", [6] = "PROBE", [7] = "PROBE_REPLY", [8] = "MCAST",
	[9] = "NACK_MCAST",
}
local dtypes = {
	[0] = "none", [1] = "fp32", [2] = "fp16", [3] = "bf16",
	[4] = "mxint8", [5] = "mxfp8", [6] = "mxfp4",
}
local aeads = { [1] = "AES-128-GCM", [2] = "AES-256-GCM" }
local F_RETX, F_ECHO = 0x01, 0x02

-- Header fields (docs/PROTOCOL.md section 3).
local f = {
	magic = ProtoField.uint16("georeduce.magic", "Magic", base.HEX),
	version = ProtoField.uint8("georeduce.version", "Version", base.DEC),
	type = ProtoField.uint8("georeduce.type", "Type", base.DEC, types),
	flags = ProtoField.uint8("georeduce.flags", "Flags", base.HEX),
	flag_retx = ProtoField.bool("georeduce.flags.retx", "RETX", 8, nil, F_RETX,
		"a retransmission"),
	flag_echo = ProtoField.bool("georeduce.flags.echo", "ECHO", 8, nil, F_ECHO,
		"tsecr echoes the tsval of the packet answered"),
	flag_rsvd = ProtoField.uint8("georeduce.flags.reserved", "Reserved flags", base.HEX,
		nil, 0xfc),
	dtype = ProtoField.uint8("georeduce.dtype", "Dtype", base.DEC, dtypes),
	cset_blocks = ProtoField.uint8("georeduce.cset_blocks", "Contributor set blocks",
		base.DEC),
	rsvd = ProtoField.bytes("georeduce.reserved", "Reserved"),
	job = ProtoField.uint32("georeduce.job", "Job", base.DEC),
	epoch = ProtoField.uint32("georeduce.epoch", "Epoch", base.DEC),
	tree = ProtoField.uint16("georeduce.tree", "Tree", base.DEC),
	stream = ProtoField.uint16("georeduce.stream", "Stream", base.DEC),
	sender = ProtoField.uint16("georeduce.sender", "Sender", base.DEC),
	origin = ProtoField.uint16("georeduce.origin", "Origin", base.DEC),
	contrib = ProtoField.uint16("georeduce.contrib", "Contributions", base.DEC),
	round = ProtoField.uint32("georeduce.round", "Round", base.DEC),
	chunk = ProtoField.uint32("georeduce.chunk", "Chunk", base.DEC),
	count = ProtoField.uint16("georeduce.count", "Count", base.DEC),
	tsval = ProtoField.uint32("georeduce.tsval", "Timestamp value (us)", base.DEC),
	tsecr = ProtoField.uint32("georeduce.tsecr", "Timestamp echo reply (us)", base.DEC),
	-- Contributor set (section 4).
	cset = ProtoField.bytes("georeduce.cset", "Contributor set"),
	cset_id = ProtoField.uint16("georeduce.cset.id", "Contributor", base.DEC),
	cset_n = ProtoField.uint16("georeduce.cset.count", "Contributors in the set", base.DEC),
	-- Payload.
	payload = ProtoField.bytes("georeduce.payload", "Payload"),
	value = ProtoField.float("georeduce.value", "Element"),
	mx_block = ProtoField.uint32("georeduce.mx.block", "MX block", base.DEC),
	mx_scale = ProtoField.uint8("georeduce.mx.scale", "MX scale (E8M0)", base.HEX),
	probe_payload = ProtoField.bytes("georeduce.probe_payload", "Probe payload"),
	-- Validation (section 6): the first rule broken, by the reference decoder's name.
	reason = ProtoField.string("georeduce.reason", "Malformed: reason"),
	-- Sealed frame (section 14.2).
	seal_magic = ProtoField.uint16("georeduce.seal.magic", "Seal magic", base.HEX),
	seal_version = ProtoField.uint8("georeduce.seal.version", "Seal version", base.DEC),
	seal_aead = ProtoField.uint8("georeduce.seal.aead", "AEAD", base.DEC, aeads),
	seal_job = ProtoField.uint32("georeduce.seal.job", "Job", base.DEC),
	seal_key_id = ProtoField.uint32("georeduce.seal.key_id", "Key id", base.DEC),
	seal_sender = ProtoField.uint16("georeduce.seal.sender", "Sender", base.DEC),
	seal_lane = ProtoField.uint16("georeduce.seal.lane", "Lane", base.DEC),
	seal_seq = ProtoField.uint64("georeduce.seal.seq", "Sequence number", base.DEC),
	seal_rsvd = ProtoField.bytes("georeduce.seal.reserved", "Reserved"),
	seal_nonce = ProtoField.bytes("georeduce.seal.nonce", "Nonce (IV)"),
	seal_ct = ProtoField.bytes("georeduce.seal.ciphertext", "Encrypted georeduce packet"),
	seal_ct_len = ProtoField.uint16("georeduce.seal.length", "Encrypted packet length",
		base.DEC),
	seal_tag = ProtoField.bytes("georeduce.seal.tag", "GCM tag"),
	sealed = ProtoField.bool("georeduce.sealed", "Sealed"),
}
local fl = {}
for _, v in pairs(f) do fl[#fl + 1] = v end
p.fields = fl

local e_malformed = ProtoExpert.new("georeduce.malformed", "Malformed georeduce packet",
	expert.group.MALFORMED, expert.severity.ERROR)
local e_encrypted = ProtoExpert.new("georeduce.encrypted",
	"Sealed frame: the georeduce packet inside is encrypted",
	expert.group.SECURITY, expert.severity.NOTE)
p.experts = { e_malformed, e_encrypted }

p.prefs.ports = Pref.range("Gateway UDP ports", "17400-17415",
	"UDP ports decoded as georeduce: the gateways' port ranges [base, base + count) " ..
	"of the job tables (default base 17400, count 16)", 65535)
p.prefs.heuristic = Pref.bool("Find georeduce on any UDP port", true,
	"Decode UDP payloads that start with the georeduce magic (\"GR\", or \"GS\" for a " ..
	"sealed frame) and version 1 on any port, such as the workers' ports")
p.prefs.max_elements = Pref.uint("Elements shown per packet", 256,
	"Payload elements (and MX blocks) listed in the tree per packet; 0: all")

-- Element decoders: exact values as Lua numbers (doubles), docs/PROTOCOL.md section 4.
local NAN = 0 / 0
local INF = math.huge
local function pow2(e) return 2.0 ^ e end

local function fp16_value(h)
	local s = h >= 0x8000 and -1 or 1
	local e = math.floor(h / 0x400) % 32
	local m = h % 0x400
	if e == 31 then return m == 0 and s * INF or NAN end
	if e == 0 then return s * m * pow2(-24) end
	return s * (1 + m / 1024) * pow2(e - 15)
end

local function bf16_value(h)
	local s = h >= 0x8000 and -1 or 1
	local e = math.floor(h / 128) % 256
	local m = h % 128
	if e == 255 then return m == 0 and s * INF or NAN end
	if e == 0 then return s * m * pow2(-133) end
	return s * (1 + m / 128) * pow2(e - 127)
end

local function e4m3_value(b)
	local s = b >= 0x80 and -1 or 1
	local e = math.floor(b / 8) % 16
	local m = b % 8
	if e == 15 and m == 7 then return NAN end
	if e == 0 then return s * m * pow2(-9) end
	return s * (1 + m / 8) * pow2(e - 7)
end

local function e2m1_value(n)
	local s = n >= 8 and -1 or 1
	local e = math.floor(n / 2) % 4
	local m = n % 2
	if e == 0 then return s * m * 0.5 end
	return s * (1 + m / 2) * pow2(e - 1)
end

local function int8_value(b)
	if b >= 0x80 then b = b - 256 end
	return b / 64
end

local function elem_size(dtype)
	if dtype == 1 then return 4 elseif dtype == 2 or dtype == 3 then return 2 end
	return nil
end

-- Payload bytes of `count` elements (section 3), nil when count is not whole MX blocks.
local function payload_bytes(dtype, count)
	local es = elem_size(dtype)
	if es then return count * es end
	if count % MX_BLOCK ~= 0 then return nil end
	if dtype == 4 or dtype == 5 then return math.floor(count / MX_BLOCK) * 33 end
	if dtype == 6 then return math.floor(count / MX_BLOCK) * 17 end
	return nil
end

local function is_data(t) return t == T_CONTRIB or t == T_RESULT or t == T_MCAST end
local function is_range(t)
	return t == T_ACK or t == T_NACK_CONTRIB or t == T_NACK_RESULT or t == T_NACK_MCAST
end
-- MCAST and NACK_MCAST name a multicast stream where the others name a tree.
local function is_stream(t) return t == T_MCAST or t == T_NACK_MCAST end
local function is_probe(t) return t == T_PROBE or t == T_PROBE_REPLY end

local function popcount8(b)
	local n = 0
	while b > 0 do
		n = n + b % 2
		b = math.floor(b / 2)
	end
	return n
end

-- The stateless rules of section 6 in the reference decoder's order; returns the reason
-- of the first one broken, or nil. `len` is the UDP payload's length, `tvb` its bytes
-- (at least HDR_LEN of them captured, the set too when it is checked).
local function validate(tvb, len)
	if len < HDR_LEN then return "truncated" end
	if tvb(0, 2):uint() ~= 0x4752 then return "bad_magic" end
	if tvb(2, 1):uint() ~= 1 then return "bad_version" end
	local t = tvb(3, 1):uint()
	if not types[t] then return "bad_type" end
	local fl_ = tvb(4, 1):uint()
	if fl_ >= 4 then return "bad_flags" end
	if has(fl_, F_RETX) and t ~= T_CONTRIB and t ~= T_RESULT and t ~= T_MCAST then
		return "bad_flags"
	end
	local echo = has(fl_, F_ECHO)
	if not echo and (t == T_ACK or t == T_PROBE_REPLY) then return "bad_flags" end
	if t == T_MCAST and has(fl_, F_ECHO) then return "bad_flags" end
	if tvb(7, 1):uint() ~= 0 or tvb(34, 2):uint() ~= 0 then return "reserved_nonzero" end
	for i = 44, 53 do
		if tvb(i, 1):uint() ~= 0 then return "reserved_nonzero" end
	end
	if not echo and tvb(40, 4):uint() ~= 0 then return "reserved_nonzero" end
	local dtype = tvb(5, 1):uint()
	if is_data(t) then
		if dtype < 1 or dtype > 6 then return "bad_dtype" end
	elseif dtype ~= 0 then
		return "bad_dtype"
	end
	local k = tvb(6, 1):uint()
	if t == T_CONTRIB or t == T_RESULT then
		if k > CSET_BLOCKS_MAX then return "bad_cset_len" end
	elseif k ~= 0 then
		return "bad_cset_len"
	end
	local sender, origin = tvb(18, 2):uint(), tvb(20, 2):uint()
	if sender == 0 or origin == 0 then return "bad_node_id" end
	if not is_probe(t) and (sender == NODE_NONE or origin == NODE_NONE) then
		return "bad_node_id"
	end
	local contrib = tvb(22, 2):uint()
	if t == T_CONTRIB or t == T_RESULT then
		if contrib < 1 or (k > 0 and contrib >= 256 * k) then return "bad_contrib" end
	elseif t == T_MCAST then
		if contrib ~= 1 then return "bad_contrib" end
	elseif contrib ~= 0 then
		return "bad_contrib"
	end
	local count, chunk = tvb(32, 2):uint(), tvb(28, 4):uint()
	if is_data(t) then
		if count < 1 or not payload_bytes(dtype, count) then return "bad_count" end
	elseif is_range(t) then
		if count < 1 or chunk + count > 4294967296 then return "bad_count" end
		if t ~= T_ACK and count > NACK_RANGE_MAX then return "bad_count" end
	elseif count ~= 0 then
		return "bad_count"
	end
	local implied = HDR_LEN
	if is_data(t) then implied = HDR_LEN + CSET_BLOCK * k + payload_bytes(dtype, count) end
	if implied > UDP_PAYLOAD_MAX or len > UDP_PAYLOAD_MAX then return "oversize" end
	if is_probe(t) then
		-- 54 bytes and up: whatever follows the header is the probe's payload.
	elseif len ~= implied then
		return "bad_length"
	end
	if k > 0 and (t == T_CONTRIB or t == T_RESULT) then
		if tvb:len() < HDR_LEN + CSET_BLOCK * k then return nil end -- not captured
		if has(tvb(HDR_LEN, 1):uint(), 1) then return "bad_cset" end
		local n = 0
		for i = 0, CSET_BLOCK * k - 1 do n = n + popcount8(tvb(HDR_LEN + i, 1):uint()) end
		if n ~= contrib then return "bad_cset" end
	end
	return nil
end

local function malformed(tree, pinfo, tvb, reason, what)
	tree:add(f.reason, reason):set_generated()
	tree:add_tvb_expert_info(e_malformed, tvb, "Malformed georeduce packet: " .. reason ..
		(what and (" (" .. what .. ")") or ""))
	pinfo.cols.info:append(" [malformed: " .. reason .. "]")
end

local function fmt_value(v)
	if v ~= v then return "NaN" end
	if v == INF then return "inf" elseif v == -INF then return "-inf" end
	return string.format("%.9g", v)
end

local function limit()
	local m = p.prefs.max_elements
	if m == 0 then return math.huge end
	return m
end

local function dissect_cset(tvb, tree, k)
	local bytes = CSET_BLOCK * k
	local st = tree:add(f.cset, tvb(HDR_LEN, bytes))
	local ids = {}
	for i = 0, bytes - 1 do
		local b = tvb(HDR_LEN + i, 1):uint()
		for j = 0, 7 do
			if has(b, 2 ^ j) then
				local id = i * 8 + j
				ids[#ids + 1] = id
				st:add(f.cset_id, tvb(HDR_LEN + i, 1), id)
			end
		end
	end
	st:add(f.cset_n, #ids):set_generated()
	st:set_text(string.format("Contributor set (%d bytes): %s", bytes,
		#ids > 0 and table.concat(ids, ", ") or "empty"))
	return ids
end

local function dissect_payload(tvb, tree, off, dtype, count)
	local len = tvb:len() - off
	local want = payload_bytes(dtype, count)
	if len <= 0 or not want then return end
	local pt = tree:add(f.payload, tvb(off, math.min(len, want)))
	pt:set_text(string.format("Payload: %d %s elements, %d bytes", count, dtypes[dtype], want))
	local max = limit()
	local es = elem_size(dtype)
	if es then
		local n = math.min(count, math.floor(len / es), max)
		for i = 0, n - 1 do
			local r = tvb(off + i * es, es)
			local v
			if dtype == 1 then v = r:le_float()
			elseif dtype == 2 then v = fp16_value(r:le_uint())
			else v = bf16_value(r:le_uint()) end
			pt:add(f.value, r, v):set_text(string.format("[%d] %s", i, fmt_value(v)))
		end
		return
	end
	-- MX: elements of every block first, then one scale byte per block (section 4).
	local blocks = math.floor(count / MX_BLOCK)
	local eb = dtype == 6 and 16 or 32
	local scales = off + blocks * eb
	for b = 0, blocks - 1 do
		if b * MX_BLOCK >= max or scales + b >= tvb:len() then break end
		local sr = tvb(scales + b, 1)
		local e = sr:uint()
		local x = e == 255 and NAN or pow2(e - 127)
		local bt = pt:add(f.mx_block, tvb(off + b * eb, eb), b)
		bt:set_text(string.format("Block %d: scale 0x%02x (%s)", b, e,
			e == 255 and "NaN" or ("2^" .. (e - 127))))
		bt:add(f.mx_scale, sr)
		for i = 0, math.min(MX_BLOCK, max - b * MX_BLOCK) - 1 do
			local bo = off + b * eb + (dtype == 6 and math.floor(i / 2) or i)
			local r = tvb(bo, 1)
			local code, p_
			if dtype == 6 then
				code = r:uint()
				code = (i % 2 == 0) and code % 16 or math.floor(code / 16)
				p_ = e2m1_value(code)
			else
				code = r:uint()
				p_ = dtype == 4 and int8_value(code) or e4m3_value(code)
			end
			local v = x * p_
			if v ~= v or math.abs(v) >= pow2(128) then
				-- NaN scale or element; a product reaching 2^128 is an fp32 infinity.
				if v == v then v = v > 0 and INF or -INF else v = NAN end
			end
			bt:add(f.value, r, v):set_text(string.format("[%d] 0x%x: %s", b * MX_BLOCK + i,
				code, fmt_value(v)))
		end
	end
end

local function dissect_sealed(tvb, pinfo, tree)
	local len = tvb:reported_len()
	pinfo.cols.protocol = "georeduce"
	local t = tree:add(p, tvb(), "georeduce sealed frame")
	t:add(f.sealed, true):set_generated()
	if tvb:len() < SEAL_HDR_LEN then
		if tvb:len() >= 2 then t:add(f.seal_magic, tvb(0, 2)) end
		pinfo.cols.info = "Sealed frame"
		malformed(t, pinfo, tvb(), "bad_seal", "shorter than the seal header")
		return
	end
	local ver, aead = tvb(2, 1):uint(), tvb(3, 1):uint()
	t:add(f.seal_magic, tvb(0, 2))
	t:add(f.seal_version, tvb(2, 1))
	t:add(f.seal_aead, tvb(3, 1))
	t:add(f.seal_job, tvb(4, 4))
	t:add(f.seal_key_id, tvb(8, 4))
	t:add(f.seal_sender, tvb(12, 2))
	t:add(f.seal_lane, tvb(14, 2))
	t:add(f.seal_seq, tvb(16, 8))
	t:add(f.seal_nonce, tvb(12, 12)):set_generated()
	t:add(f.seal_rsvd, tvb(24, 8))
	local ct_len = len - SEAL_HDR_LEN - SEAL_TAG_LEN
	local seq = tvb(16, 8):uint64()
	pinfo.cols.info = string.format("Sealed job %d sender %d lane %d seq %s key %d",
		tvb(4, 4):uint(), tvb(12, 2):uint(), tvb(14, 2):uint(), tostring(seq),
		tvb(8, 4):uint())
	if ct_len > 0 and tvb:len() > SEAL_HDR_LEN then
		local cap = math.min(ct_len, tvb:len() - SEAL_HDR_LEN)
		t:add(f.seal_ct, tvb(SEAL_HDR_LEN, cap))
		t:add(f.seal_ct_len, ct_len):set_generated()
		t:add_proto_expert_info(e_encrypted, string.format(
			"Encrypted with %s under key %d: %d bytes of georeduce packet",
			aeads[aead] or "an unknown AEAD", tvb(8, 4):uint(), ct_len))
		if tvb:len() >= len then t:add(f.seal_tag, tvb(len - SEAL_TAG_LEN, SEAL_TAG_LEN)) end
	end
	pinfo.cols.info:append(string.format(" (encrypted, %d bytes)", math.max(ct_len, 0)))
	-- Rule 1 of section 14.3.
	local why
	if len < SEAL_HDR_LEN + HDR_LEN + SEAL_TAG_LEN then
		why = "shorter than seal header, georeduce header and tag"
	elseif len > UDP_PAYLOAD_MAX then why = "longer than 8972 bytes"
	elseif ver ~= 1 then why = "version " .. ver
	elseif not aeads[aead] then why = "unknown AEAD " .. aead
	elseif tvb(24, 4):uint() ~= 0 or tvb(28, 4):uint() ~= 0 then why = "reserved bytes"
	elseif tvb(14, 2):uint() > 63 then why = "lane above 63"
	elseif seq == UInt64(0) then why = "sequence number 0" end
	if why then malformed(t, pinfo, tvb(), "bad_seal", why) end
end

local function dissect_plain(tvb, pinfo, tree)
	local len = tvb:reported_len()
	local cap = tvb:len()
	pinfo.cols.protocol = "georeduce"
	local t = tree:add(p, tvb())
	if len < HDR_LEN or cap < HDR_LEN then
		-- As much of the header as there is.
		local names = { { 0, 2, f.magic }, { 2, 1, f.version }, { 3, 1, f.type },
			{ 4, 1, f.flags }, { 5, 1, f.dtype }, { 6, 1, f.cset_blocks } }
		for _, n in ipairs(names) do
			if n[1] + n[2] <= cap then t:add(n[3], tvb(n[1], n[2])) end
		end
		pinfo.cols.info = "georeduce"
		if cap >= 4 and types[tvb(3, 1):uint()] then
			pinfo.cols.info = types[tvb(3, 1):uint()]
		end
		if len < HDR_LEN then
			malformed(t, pinfo, tvb(), "truncated",
				string.format("%d bytes, the header is %d", len, HDR_LEN))
		else
			t:append_text(" [header not captured]")
		end
		return
	end
	local ty = tvb(3, 1):uint()
	local flags = tvb(4, 1):uint()
	local dtype = tvb(5, 1):uint()
	local k = tvb(6, 1):uint()
	t:add(f.magic, tvb(0, 2))
	t:add(f.version, tvb(2, 1))
	t:add(f.type, tvb(3, 1))
	local ft = t:add(f.flags, tvb(4, 1))
	ft:add(f.flag_retx, tvb(4, 1))
	ft:add(f.flag_echo, tvb(4, 1))
	if flags >= 4 then ft:add(f.flag_rsvd, tvb(4, 1)) end
	local names = {}
	if has(flags, F_RETX) then names[#names + 1] = "RETX" end
	if has(flags, F_ECHO) then names[#names + 1] = "ECHO" end
	if flags >= 4 then names[#names + 1] = string.format("reserved 0x%02x", flags - flags % 4) end
	ft:append_text(#names > 0 and (" (" .. table.concat(names, ", ") .. ")") or " (none)")
	t:add(f.dtype, tvb(5, 1))
	t:add(f.cset_blocks, tvb(6, 1))
	t:add(f.rsvd, tvb(7, 1))
	t:add(f.job, tvb(8, 4))
	t:add(f.epoch, tvb(12, 4))
	t:add(is_stream(ty) and f.stream or f.tree, tvb(16, 2))
	t:add(f.sender, tvb(18, 2))
	t:add(f.origin, tvb(20, 2))
	t:add(f.contrib, tvb(22, 2))
	t:add(f.round, tvb(24, 4))
	t:add(f.chunk, tvb(28, 4))
	t:add(f.count, tvb(32, 2))
	t:add(f.rsvd, tvb(34, 2))
	t:add(f.tsval, tvb(36, 4))
	t:add(f.tsecr, tvb(40, 4))
	t:add(f.rsvd, tvb(44, 10))

	local name = types[ty] or string.format("type %d", ty)
	local chunk, count = tvb(28, 4):uint(), tvb(32, 2):uint()
	local info = string.format("%s job %d epoch %d %s %d round %d", name, tvb(8, 4):uint(),
		tvb(12, 4):uint(), is_stream(ty) and "stream" or "tree", tvb(16, 2):uint(),
		tvb(24, 4):uint())
	if is_range(ty) and count ~= 1 then
		info = info .. string.format(" chunks %d-%d", chunk, chunk + count - 1)
	else
		info = info .. string.format(" chunk %d", chunk)
	end
	info = info .. string.format(" sender %d origin %d", tvb(18, 2):uint(), tvb(20, 2):uint())
	if #names > 0 then info = info .. " [" .. table.concat(names, ",") .. "]" end
	pinfo.cols.info = info
	t:append_text(", " .. name)

	local reason = validate(tvb, len)
	local off = HDR_LEN
	if (ty == T_CONTRIB or ty == T_RESULT) and k > 0 and k <= CSET_BLOCKS_MAX and
		cap >= HDR_LEN + CSET_BLOCK * k then
		local ids = dissect_cset(tvb, t, k)
		off = HDR_LEN + CSET_BLOCK * k
		if reason == nil then
			info = info .. " {" .. table.concat(ids, ",") .. "}"
			pinfo.cols.info = info
		end
	end
	if is_data(ty) and dtypes[dtype] and dtype ~= 0 then
		dissect_payload(tvb, t, off, dtype, count)
	elseif is_probe(ty) and cap > HDR_LEN then
		t:add(f.probe_payload, tvb(HDR_LEN))
	end
	if reason then malformed(t, pinfo, tvb(), reason) end
end

function p.dissector(tvb, pinfo, tree)
	local cap = tvb:len()
	if cap >= 2 and tvb(0, 2):uint() == 0x4753 then
		dissect_sealed(tvb, pinfo, tree)
	else
		dissect_plain(tvb, pinfo, tree)
	end
	return tvb:reported_len()
end

-- Registration: the gateway port ranges of the preference, and the magic on any port.
local udp_port = DissectorTable.get("udp.port")
local registered = ""
local function register_ports()
	if registered ~= "" then udp_port:remove(registered, p) end
	registered = tostring(p.prefs.ports)
	if registered ~= "" then udp_port:add(registered, p) end
end
register_ports()
function p.prefs_changed() register_ports() end

local function heuristic(tvb, pinfo, tree)
	if not p.prefs.heuristic or tvb:len() < 3 then return false end
	local magic = tvb(0, 2):uint()
	if (magic ~= 0x4752 and magic ~= 0x4753) or tvb(2, 1):uint() ~= 1 then return false end
	p.dissector(tvb, pinfo, tree)
	return true
end
p:register_heuristic("udp", heuristic)
