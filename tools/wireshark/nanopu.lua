-- Wireshark/tshark dissector for the nanoPU transport header: IPv4 protocol
-- 0x99, 30 bytes, every field big-endian (the layout is documented in
-- crates/wire/src/nanotransport.rs and docs/wire-format.md).
--
-- Use it for one run:
--     tshark -r trace.pcap -X lua_script:tools/wireshark/nanopu.lua
--     wireshark -X lua_script:tools/wireshark/nanopu.lua trace.pcap
-- or copy this file into the personal Lua plugin folder (`tshark -G folders`
-- prints it, e.g. ~/.local/lib/wireshark/plugins) to have it always loaded.
--
-- Filter fields: nanopu.flags (and nanopu.flags.data, .ack, .nack, .pull,
-- .chop, .grant, .reserved), nanopu.src_context, nanopu.dst_context,
-- nanopu.msg_len, nanopu.pkt_offset, nanopu.pull_offset, nanopu.tx_msg_id,
-- nanopu.buf_ptr, nanopu.buf_size_class, nanopu.priority,
-- nanopu.grant_offset, nanopu.padding; nanopu.packets (packets in the
-- message, computed from msg_len and the MTU payload preference); the
-- payload goes to the "data" dissector (data.data, data.len).

-- Loaded twice (from the plugin folder and with -X lua_script), the second
-- copy would fail on the duplicate protocol name; keep the first one. Each
-- script runs in its own environment, so the mark goes in _G itself.
if rawget(_G, "nanopu_dissector_loaded") then
    return
end
rawset(_G, "nanopu_dissector_loaded", true)

local PROTOCOL = 0x99
local HEADER_LEN = 30

local nanopu = Proto("nanopu", "nanoPU transport")

-- Flag bits, in the order the Info column lists them.
local FLAGS = {
    { bit = 0x01, name = "DATA",  abbr = "data",  descr = "Carries message data" },
    { bit = 0x02, name = "ACK",   abbr = "ack",   descr = "Acknowledges a data packet" },
    { bit = 0x04, name = "NACK",  abbr = "nack",  descr = "Negative acknowledgement: data arrived trimmed (NDP)" },
    { bit = 0x08, name = "PULL",  abbr = "pull",  descr = "Grants credit up to pull_offset (NDP pull)" },
    { bit = 0x10, name = "CHOP",  abbr = "chop",  descr = "Payload trimmed by a congested switch (NDP)" },
    { bit = 0x20, name = "GRANT", abbr = "grant", descr = "Grants credit up to grant_offset (Homa)" },
}
local RESERVED_FLAGS = 0xc0

local f = {
    flags = ProtoField.uint8("nanopu.flags", "Flags", base.HEX),
    flags_reserved = ProtoField.uint8("nanopu.flags.reserved", "Reserved", base.HEX, nil, RESERVED_FLAGS),
    src_context = ProtoField.uint16("nanopu.src_context", "Source context", base.DEC),
    dst_context = ProtoField.uint16("nanopu.dst_context", "Destination context", base.DEC),
    msg_len = ProtoField.uint16("nanopu.msg_len", "Message length", base.DEC),
    pkt_offset = ProtoField.uint16("nanopu.pkt_offset", "Packet offset", base.DEC),
    pull_offset = ProtoField.uint16("nanopu.pull_offset", "Pull offset", base.DEC),
    tx_msg_id = ProtoField.uint16("nanopu.tx_msg_id", "TX message id", base.DEC),
    buf_ptr = ProtoField.uint16("nanopu.buf_ptr", "Buffer pointer", base.DEC),
    buf_size_class = ProtoField.uint8("nanopu.buf_size_class", "Buffer size class", base.DEC),
    priority = ProtoField.uint8("nanopu.priority", "Priority", base.DEC),
    grant_offset = ProtoField.uint16("nanopu.grant_offset", "Grant offset", base.DEC),
    padding = ProtoField.bytes("nanopu.padding", "Padding"),
    packets = ProtoField.uint16("nanopu.packets", "Packets in message", base.DEC),
}
for _, fl in ipairs(FLAGS) do
    f["flag_" .. fl.abbr] = ProtoField.bool("nanopu.flags." .. fl.abbr, fl.name, 8, nil, fl.bit, fl.descr)
end

local field_list = {}
for _, field in pairs(f) do
    field_list[#field_list + 1] = field
end
nanopu.fields = field_list

local ef_short = ProtoExpert.new("nanopu.short", "Shorter than the 30-byte nanoPU transport header",
    expert.group.MALFORMED, expert.severity.ERROR)
local ef_reserved = ProtoExpert.new("nanopu.flags.reserved_set", "Reserved flag bits set",
    expert.group.PROTOCOL, expert.severity.WARN)
local ef_padding = ProtoExpert.new("nanopu.padding_nonzero", "Non-zero padding",
    expert.group.PROTOCOL, expert.severity.NOTE)
nanopu.experts = { ef_short, ef_reserved, ef_padding }

nanopu.prefs.mtu_payload = Pref.uint("MTU payload bytes", 1024,
    "Payload bytes per packet (the NIC's mtu_payload_bytes), used to show a packet as index/count")

local data_dissector = Dissector.get("data")

-- "DATA", "ACK|PULL", ...; "0x00" when no flag is set.
local function flag_names(bits)
    local names = {}
    for _, fl in ipairs(FLAGS) do
        if bit32.band(bits, fl.bit) ~= 0 then
            names[#names + 1] = fl.name
        end
    end
    if bit32.band(bits, RESERVED_FLAGS) ~= 0 then
        names[#names + 1] = string.format("0x%02x", bit32.band(bits, RESERVED_FLAGS))
    end
    if #names == 0 then
        return "0x00"
    end
    return table.concat(names, "|")
end

function nanopu.dissector(tvb, pinfo, tree)
    local len = tvb:len()
    pinfo.cols.protocol:set("nanoPU")
    local subtree = tree:add(nanopu, tvb:range(0, math.min(len, HEADER_LEN)))
    if len < HEADER_LEN then
        subtree:add_proto_expert_info(ef_short)
        pinfo.cols.info:set(string.format("[truncated nanoPU header: %d of %d bytes]", len, HEADER_LEN))
        return len
    end

    local bits = tvb:range(0, 1):uint()
    local src_context = tvb:range(1, 2):uint()
    local dst_context = tvb:range(3, 2):uint()
    local msg_len = tvb:range(5, 2):uint()
    local pkt_offset = tvb:range(7, 2):uint()
    local pull_offset = tvb:range(9, 2):uint()
    local tx_msg_id = tvb:range(11, 2):uint()
    local priority = tvb:range(16, 1):uint()
    local grant_offset = tvb:range(17, 2):uint()

    local mtu = nanopu.prefs.mtu_payload
    local packets = 1
    if mtu > 0 and msg_len > 0 then
        packets = math.floor((msg_len + mtu - 1) / mtu)
    end

    local names = flag_names(bits)
    local flags_item = subtree:add(f.flags, tvb:range(0, 1))
    flags_item:append_text(" (" .. names .. ")")
    for _, fl in ipairs(FLAGS) do
        flags_item:add(f["flag_" .. fl.abbr], tvb:range(0, 1))
    end
    flags_item:add(f.flags_reserved, tvb:range(0, 1))
    if bit32.band(bits, RESERVED_FLAGS) ~= 0 then
        flags_item:add_proto_expert_info(ef_reserved)
    end
    subtree:add(f.src_context, tvb:range(1, 2))
    subtree:add(f.dst_context, tvb:range(3, 2))
    subtree:add(f.msg_len, tvb:range(5, 2))
    subtree:add(f.pkt_offset, tvb:range(7, 2))
    local packets_item = subtree:add(f.packets, packets)
    packets_item:set_generated()
    subtree:add(f.pull_offset, tvb:range(9, 2))
    subtree:add(f.tx_msg_id, tvb:range(11, 2))
    subtree:add(f.buf_ptr, tvb:range(13, 2))
    subtree:add(f.buf_size_class, tvb:range(15, 1))
    subtree:add(f.priority, tvb:range(16, 1))
    subtree:add(f.grant_offset, tvb:range(17, 2))
    local padding = tvb:range(19, HEADER_LEN - 19)
    local padding_item = subtree:add(f.padding, padding)
    for i = 0, padding:len() - 1 do
        if padding:range(i, 1):uint() ~= 0 then
            padding_item:add_proto_expert_info(ef_padding)
            break
        end
    end

    local payload_len = len - HEADER_LEN
    subtree:append_text(string.format(", %s, ctx %d\226\134\146%d, msg %d, pkt %d/%d",
        names, src_context, dst_context, tx_msg_id, pkt_offset, packets))

    -- Info: "DATA ctx 1→0 msg 3 pkt 0/2 len 1500", "ACK|PULL ctx 0→1 msg 3 pkt 1/2 pull 5".
    local info = string.format("%s ctx %d\226\134\146%d msg %d pkt %d/%d",
        names, src_context, dst_context, tx_msg_id, pkt_offset, packets)
    if bit32.band(bits, 0x01) ~= 0 then
        info = info .. string.format(" len %d", msg_len)
    end
    if bit32.band(bits, 0x08) ~= 0 then
        info = info .. string.format(" pull %d", pull_offset)
    end
    if bit32.band(bits, 0x20) ~= 0 then
        info = info .. string.format(" grant %d", grant_offset)
    end
    if priority ~= 0 or bit32.band(bits, 0x20) ~= 0 then
        info = info .. string.format(" prio %d", priority)
    end
    pinfo.cols.info:set(info)

    if payload_len > 0 then
        data_dissector:call(tvb:range(HEADER_LEN):tvb(), pinfo, tree)
    end
    return len
end

DissectorTable.get("ip.proto"):add(PROTOCOL, nanopu)
