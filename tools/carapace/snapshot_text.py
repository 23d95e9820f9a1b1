# SPDX-License-Identifier: MIT
"""A parsed snapshot for people (inspect_text) and for programs (inspect_json):
sections, config, each vCPU's registers and CFI/FWFT/SUSP/STA/PMU state in
words, the devices' states, the virtio devices (VIRTIO sections), the memory
runs, the disks' content (DISK sections)."""

import json

from .snapshot import cstr, mac_text
from .snapshot_format import (VIO_FAULTS, VIO_LINK_UP, VIO_STATUS, CFI_POLICIES, DISK_BLOCK_SECTORS,
    DISK_SECTOR, ENVCFG_LPE, ENVCFG_SSE, FEATURES, FS_STATES, F_DISKS, F_LIVE, GPR_NAMES,
    HSM_STATES, HVIP_BITS, PAGE_SIZE, VERSION_DISK, VERSION_DISK_ID, known_flags, PLIC_CONTEXTS, PMU_COUNTERS, PMU_CYCLE,
    PMU_FW_FIRST, PMU_INSTRET, SATP_MODES, SSTATUS_FS, SSTATUS_FS_SHIFT, SSTATUS_KNOWN, SSTATUS_SPELP,
    SSTATUS_SPIE, SSTATUS_SPP, STA_OFF, STA_SIZE, UART_RX_FIFO, VCPU, VERSION,
    pmu_event_words)
from .units import human_size


# --- words for people ----------------------------------------------------------------


def on_off(value, locked):
    return ("on" if value else "off") + (" (locked)" if locked else "")


def cfi_words(v):
    """A vCPU's CFI state in words, as carapace-ctl cfi says it."""
    parts = [f"shadow stack {on_off(v['ss_value'], v['ss_locked'])}"]
    if v["ss_value"] or v["ssp"]:
        parts.append(f"ssp={v['ssp']:#x}")
    parts.append(f"landing pads {on_off(v['lp_value'], v['lp_locked'])}")
    parts.append(f"ELP={'expected' if v['sstatus'] & SSTATUS_SPELP else 'none'}")
    parts.append(f"senvcfg.LPE={int(bool(v['senvcfg'] & ENVCFG_LPE))} "
                 f"SSE={int(bool(v['senvcfg'] & ENVCFG_SSE))}")
    return ", ".join(parts)


def sstatus_words(value):
    words = [f"SPP={'S' if value & SSTATUS_SPP else 'U'}",
             f"SPIE={int(bool(value & SSTATUS_SPIE))}",
             f"SPELP={int(bool(value & SSTATUS_SPELP))}",
             f"FS={FS_STATES[(value & SSTATUS_FS) >> SSTATUS_FS_SHIFT]}"]
    if value & ~SSTATUS_KNOWN:
        words.append(f"other bits {value & ~SSTATUS_KNOWN:#x}")
    return " ".join(words)


def hvip_words(value):
    words = [name for bit, name in HVIP_BITS if value & bit]
    other = value & ~sum(bit for bit, _ in HVIP_BITS)
    if other:
        words.append(f"other bits {other:#x}")
    return " ".join(words) or "none"


def vsatp_words(value):
    mode = value >> 60
    return (f"{SATP_MODES.get(mode, f'mode {mode}')}, asid {(value >> 44) & 0xFFFF}, "
            f"root {(value & ((1 << 44) - 1)) << 12:#x}")


def features_words(value):
    return [name for bit, name in FEATURES if value & bit]


def bits_list(mask):
    return [i for i in range(32) if mask >> i & 1]


def sources_text(mask):
    return " ".join(str(i) for i in bits_list(mask)) or "none"


def uart_queue(s):
    queued = min((s["rx_head"] - s["rx_tail"]) & 0xFFFFFFFF, UART_RX_FIFO)
    return bytes(s["rx"][(s["rx_tail"] + i) % UART_RX_FIFO] for i in range(queued))


def guid_text(raw):
    """16 bytes as a GUID-style string: the bytes in stream order, in hex,
    grouped 4-2-2-2-6 (no field is byte-swapped)."""
    h = bytes(raw).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def printable(data):
    return "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in data)


def hsm_words(v):
    state = HSM_STATES[v["hsm_state"]] if v["hsm_state"] < len(HSM_STATES) \
        else f"hsm state {v['hsm_state']}"
    extra = []
    if v["waiting"]:
        extra.append("waiting (WFI or retentive suspend)")
    if v["resume_nonret"]:
        extra.append(f"non-retentive resume pending at {v['resume_addr']:#x} "
                     f"(opaque {v['resume_opaque']:#x})")
    if v["system_suspend"]:
        extra.append("system suspend (SBI SUSP: the whole VM sleeps)")
    return state + "".join(f", {x}" for x in extra)


def fwft_words(v):
    """The vCPU's memory FWFT features in words (MISALIGNED_EXC_DELEG is held
    inverted: misaligned_emulate 1 is the value 0, the hypervisor emulates)."""
    deleg = "off (the hypervisor emulates misaligned accesses)" if v["misaligned_emulate"] else "on"
    return (f"misaligned exception delegation {deleg}"
            f"{' (locked)' if v['misaligned_locked'] else ''}"
            f", PTE A/D hardware updating {on_off(v['pte_ad_value'], v['pte_ad_locked'])}")


def sta_words(v):
    sta = v["sta_shmem"]
    return "none" if sta == STA_OFF else f"{STA_SIZE} bytes at {sta:#x}"


def pmu_kind(i):
    return {PMU_CYCLE: "cycle", PMU_INSTRET: "instret"}.get(
        i, "firmware" if PMU_FW_FIRST <= i < PMU_COUNTERS else "none")


def pmu_counters(v):
    """The configured counters: [{counter, kind, event_idx, event, started, value}]."""
    return [{"counter": i, "kind": pmu_kind(i), "event_idx": v["pmu_event_idx"][i],
             "event": pmu_event_words(v["pmu_event_idx"][i]),
             "started": bool(v["pmu_started"] >> i & 1), "value": v["pmu_value"][i]}
            for i in range(PMU_COUNTERS) if v["pmu_configured"] >> i & 1]


def pmu_words(v):
    counters = pmu_counters(v)
    if not counters:
        return ["  PMU: no counter configured"]
    started = [c["counter"] for c in counters if c["started"]]
    out = [f"  PMU: counters configured {' '.join(str(c['counter']) for c in counters)}, "
           f"started {' '.join(map(str, started)) or 'none'}"]
    for c in counters:
        out.append(f"    counter {c['counter']} ({c['kind']}): {c['event']} "
                   f"(event {c['event_idx']:#x}), {'started' if c['started'] else 'stopped'}, "
                   f"value {c['value']:#x}")
    return out


def config_json(c):
    return {"name": cstr(c["name"]), "ram_gpa": c["ram_gpa"], "ram_size": c["ram_size"],
            "nr_vcpus": c["nr_vcpus"], "cfi_policy": c["cfi_policy"],
            "cfi": CFI_POLICIES[c["cfi_policy"]] if c["cfi_policy"] < 4 else None,
            "features": c["features"], "feature_names": features_words(c["features"]),
            "boot_count": c["boot_count"], "debug_ext": c["debug_ext"],
            "vs_sv": c["vs_sv"], "guest_time": c["guest_time"],
            "timebase_hz": c["timebase_hz"], "kernel_image": cstr(c["kernel_image"]),
            "initrd_image": cstr(c["initrd_image"]), "bootargs": cstr(c["bootargs"])}


def identities(words):
    """The identities whose bits are set in an IMSIC file's eip or eie words."""
    return [64 * w + i for w, word in enumerate(words) for i in range(64) if word >> i & 1]


def imsic_words(v):
    """A vCPU's IMSIC file in words (an AIA VM's; None for a PLIC VM's)."""
    if not v["imsic_nr_ids"]:
        return None
    pend, enab = identities(v["imsic_eip"]), identities(v["imsic_eie"])
    return (f"IMSIC: {v['imsic_nr_ids']} identities, delivery "
            f"{'on' if v['imsic_eidelivery'] else 'off'}, threshold {v['imsic_eithreshold']}, "
            f"pending {' '.join(map(str, pend)) or 'none'}, enabled "
            f"{' '.join(map(str, enab)) or 'none'}; vsiselect {v['vsiselect']:#x}")


def dbtr_triggers(v):
    """A vCPU's installed SBI DBTR triggers: [{index, state, tdata1..3}]."""
    return [{"index": i, "state": v["dbtr_state"][i], "tdata1": v["dbtr_tdata1"][i],
             "tdata2": v["dbtr_tdata2"][i], "tdata3": v["dbtr_tdata3"][i]}
            for i in range(len(v["dbtr_state"])) if v["dbtr_state"][i]]


def dbtr_words(v):
    """A vCPU's SBI DBTR state in words (None if it never used DBTR)."""
    trig = dbtr_triggers(v)
    if not v["dbtr_shmem_on"] and not trig:
        return None
    shmem = f"shared memory {v['dbtr_shmem']:#x}" if v["dbtr_shmem_on"] else "no shared memory"
    words = ", ".join(f"{t['index']}: tdata1={t['tdata1']:#x} tdata2={t['tdata2']:#x}"
                      for t in trig)
    return f"DBTR: {shmem}; triggers {words or 'none'}"


def vcpu_json(v):
    out = {k: v[k] for k, _, _, _ in VCPU.fields}
    out["instance"] = v["instance"]
    out["record_version"] = v.get("record_version", VERSION)
    out["fwft"] = {"misaligned_deleg": not v["misaligned_emulate"], "misaligned_locked": bool(v["misaligned_locked"]),
                   "pte_ad": bool(v["pte_ad_value"]), "pte_ad_locked": bool(v["pte_ad_locked"]),
                   "text": fwft_words(v)}
    out["system_suspend"] = bool(v["system_suspend"])
    out["sta"] = {"shmem": None if v["sta_shmem"] == STA_OFF else v["sta_shmem"],
                  "text": sta_words(v)}
    out["pmu"] = {"configured": bits_list(v["pmu_configured"]),
                  "started": bits_list(v["pmu_started"]), "counters": pmu_counters(v)}
    out["hsm"] = HSM_STATES[v["hsm_state"]] if v["hsm_state"] < 3 else None
    out["imsic"] = {"nr_ids": v["imsic_nr_ids"], "eidelivery": v["imsic_eidelivery"],
                    "eithreshold": v["imsic_eithreshold"], "vsiselect": v["vsiselect"],
                    "pending": identities(v["imsic_eip"]),
                    "enabled": identities(v["imsic_eie"])}
    out["dbtr"] = {"shmem": v["dbtr_shmem"] if v["dbtr_shmem_on"] else None,
                   "triggers": dbtr_triggers(v)}
    out["cfi"] = {"shadow_stack": bool(v["ss_value"]), "ss_locked": bool(v["ss_locked"]),
                  "ssp": v["ssp"], "landing_pads": bool(v["lp_value"]),
                  "lp_locked": bool(v["lp_locked"]), "elp": bool(v["sstatus"] & SSTATUS_SPELP),
                  "senvcfg_lpe": bool(v["senvcfg"] & ENVCFG_LPE),
                  "senvcfg_sse": bool(v["senvcfg"] & ENVCFG_SSE), "text": cfi_words(v)}
    return out


def device_fields(d):
    """A device's state as flat {field: value} (value: int or str), for JSON and diff."""
    s = d["fields"]
    if s is None:
        return {"state": d["state"].hex()}
    if d["name"] == "uart16550":
        out = {k: s[k] for k in ("ier", "lcr", "mcr", "scr", "fcr", "dll", "dlm",
                                 "thre_pending", "irq_level", "rx_head", "rx_tail")}
        out["rx_queue"] = uart_queue(s).hex()
        return out
    if d["name"] == "vmgenid":
        return {"id": guid_text(s["id"]), "level": s["level"]}
    if d["name"] == "aplic":
        out = {k: s[k] for k in ("domaincfg", "pending", "enabled", "level", "genmsi")}
        out.update({f"sourcecfg[{i}]": v for i, v in enumerate(s["sourcecfg"])})
        out.update({f"target[{i}]": v for i, v in enumerate(s["target"])})
        return out
    out = {f"priority[{i}]": p for i, p in enumerate(s["priority"])}
    out.update({k: s[k] for k in ("level", "pending", "claimed")})
    out.update({f"enable[{c}]": e for c, e in enumerate(s["enable"])})
    out.update({f"threshold[{c}]": t for c, t in enumerate(s["threshold"])})
    return out


def device_json(d):
    out = {"index": d["index"], "name": d["name"], "state_size": d["state_size"],
           "state": device_fields(d)}
    s = d["fields"]
    if s is not None and d["name"] == "uart16550":
        out["rx_queued"] = len(uart_queue(s))
    elif s is not None and d["name"] == "plic":
        out["pending_sources"] = bits_list(s["pending"])
        out["enabled_sources"] = [bits_list(e) for e in s["enable"]]
        out["claimed_sources"] = bits_list(s["claimed"])
    elif s is not None and d["name"] == "vmgenid":
        out["generation_id"] = guid_text(s["id"])
        out["notification_pending"] = bool(s["level"])
    return out


def virtio_fields(v):
    """A virtio device's state as flat fields (arrays by element, names and
    the MAC as text); {} if it was not decoded."""
    s = v["fields"]
    if s is None:
        return {}
    out = {}
    for k, value in s.items():
        if k in ("serial", "switch_name"):
            out[k] = cstr(value)
        elif k == "mac":
            out[k] = mac_text(value)
        elif isinstance(value, list):
            out.update({f"{k}[{i}]": x for i, x in enumerate(value)})
        else:
            out[k] = value
    return out


def status_words(status):
    words = [w.upper() for w, bit in VIO_STATUS.items() if status & bit]
    return " ".join(words) or "0 (reset)"


def virtio_json(v):
    out = {"slot": v["slot"], "name": v["name"], "state_size": v["state_size"],
           "state": virtio_fields(v)}
    s = v["fields"]
    if s is not None:
        out["status_words"] = status_words(s["status"])
        out["queues"] = [{"ready": bool(s["q_ready"][q]), "size": s["q_size"][q],
                          "next_avail": s["q_next_avail"][q], "next_used": s["q_next_used"][q],
                          "fault": VIO_FAULTS[s["q_fault"][q]] if s["q_fault"][q] < len(VIO_FAULTS)
                          else s["q_fault"][q]}
                         for q in range(len(s["q_ready"]))]
    return out


def virtio_text(v, disks_included=False):
    s = v["fields"]
    head = f"virtio {v['slot']} {v['name']} ({v['state_size']} bytes of state)"
    if s is None:
        return ["", f"{head}: not decoded"]
    out = ["", f"{head}:",
           f"  status {s['status']:#x} ({status_words(s['status'])}), features offered "
           f"{s['device_features']:#x}, accepted {s['driver_features']:#x}",
           f"  interrupt status {s['interrupt_status']:#x}, config generation "
           f"{s['config_generation']}"]
    for q in range(len(s["q_ready"])):
        if not (s["q_ready"][q] or s["q_size"][q] or s["q_desc"][q]):
            continue
        fault = s["q_fault"][q]
        out.append(f"  queue {q}: {'ready' if s['q_ready'][q] else 'not ready'}, size "
                   f"{s['q_size'][q]}, desc {s['q_desc'][q]:#x} avail {s['q_avail'][q]:#x} used "
                   f"{s['q_used'][q]:#x}, next avail {s['q_next_avail'][q]} used "
                   f"{s['q_next_used'][q]}" +
                   (f", fault {VIO_FAULTS[fault] if fault < len(VIO_FAULTS) else fault}"
                    if fault else ""))
    if v["name"] == "virtio_blk":
        where = "in the snapshot: DISK sections" if disks_included and not s["read_only"] \
            else "not in the snapshot"
        out.append(f"  disk: {s['capacity']} sectors{', read-only' if s['read_only'] else ''}, "
                   f"SEG_MAX {s['seg_max']}, serial {cstr(s['serial'])!r}, host device "
                   f"00:{s['pci_dev']:02x}.0 (its content is {where})")
        out.append(f"  requests {s['requests']}, bytes {s['bytes']}, errors {s['errors']}")
    else:
        out.append(f"  NIC {mac_text(s['mac'])} on switch {cstr(s['switch_name'])!r}, link "
                   f"{'up' if s['link'] & VIO_LINK_UP else 'down (taken off its switch)'}")
        out.append(f"  tx {s['tx_requests']} frames {s['tx_bytes']} bytes, rx {s['rx_requests']} "
                   f"frames {s['rx_bytes']} bytes, drops {s['tx_drops']}/{s['rx_drops']}; "
                   f"spoofed {s['port_tx_spoofed']}")
    return out


def memory_summary(snap):
    cfg = snap.config
    ram_pages = cfg["ram_size"] // PAGE_SIZE if cfg else None
    pages = snap.memory_pages
    return {"runs": [{"gpa": r["gpa"], "pages": r["pages"]} for r in snap.runs],
            "run_count": len(snap.runs), "pages": pages, "bytes": pages * PAGE_SIZE,
            "ram_pages": ram_pages,
            "zero_pages_elided": ram_pages - pages if ram_pages is not None else None,
            "zero_pages_stored": sum(r["zero_pages"] for r in snap.runs)}


def disk_identity(snap, slot):
    """Disk @slot's DISK_ID (version 6, without the disks' content): its
    sampled blocks and their CRC32Cs, or None."""
    ids = [i for i in snap.disk_ids if i["slot"] == slot]
    if not ids:
        return None
    return {"sectors": ids[0]["sectors"], "samples": [dict(x) for x in ids[0]["samples"]]}


def disk_summary(snap):
    """The disks' content (DISK sections): whether the stream holds it and,
    per disk, its runs; a block no run holds is zero.  Without the content
    (version 6), each disk's identity (DISK_ID)."""
    disks = []
    for d in snap.disks:
        runs = [r for r in snap.disk_runs if r["slot"] == d["slot"]]
        sectors = sum(r["sectors"] for r in runs)
        cap = d["capacity"]
        blocks = -(-cap // DISK_BLOCK_SECTORS) if cap is not None else None
        held = snap.disks_included and not d["read_only"]
        disks.append({"slot": d["slot"], "capacity": cap, "read_only": d["read_only"],
                      "content_included": held, "runs": len(runs), "sectors": sectors,
                      "bytes": sectors * DISK_SECTOR, "blocks": blocks,
                      "zero_blocks_elided": blocks - len(runs) if blocks is not None and
                      held and len(runs) <= blocks else None,
                      "zero_runs_stored": sum(1 for r in runs if r["zero"]),
                      "identity": disk_identity(snap, d["slot"])})
    stray = [r for r in snap.disk_runs if r["slot"] not in {d["slot"] for d in snap.disks}]
    total = sum(r["sectors"] for r in snap.disk_runs) * DISK_SECTOR
    return {"included": snap.disks_included, "disks": disks,
            "runs": [{"slot": r["slot"], "sector": r["sector"], "sectors": r["sectors"],
                      "zero": r["zero"]} for r in snap.disk_runs],
            "run_count": len(snap.disk_runs), "bytes": total, "stray_runs": len(stray)}


def disks_text(snap, max_runs):
    """The disks' part of inspect: what the stream holds of their content."""
    m = disk_summary(snap)
    version = snap.version or 0
    if not m["disks"] and not m["run_count"]:
        return ["", "disks: none" + (" (the header says the disks are in: it has none)"
                                     if m["included"] else "")]
    if not m["included"]:
        why = ("taken without them: --no-disks" if version >= VERSION_DISK else
               f"version {version} has no disk content")
        out = ["", f"disks: content not in the snapshot ({why}); each stays in its image"
                   + ("; a restore checks each image against its identity (DISK_ID)"
                      if version >= VERSION_DISK_ID else
                      " (no identity before version 6: a restore checks only the size)")]
    else:
        out = ["", f"disks: content in the snapshot (flag DISKS): {len(m['disks'])} disk(s), "
                   f"{m['run_count']} run(s), {m['bytes']} bytes ({human_size(m['bytes'])}); "
                   "a block no run holds is zero (a read-only disk's content is its image's)"]
    for d in m["disks"]:
        cap = (f"{d['capacity']} sectors ({human_size(d['capacity'] * DISK_SECTOR)})"
               if d["capacity"] is not None else "capacity unknown")
        line = f"  disk {d['slot']} (slot {d['slot']}): {cap}"
        if d["read_only"] and m["included"]:
            line += ", read-only: its content is its image's (not in the snapshot)"
        elif m["included"]:
            line += f": {d['runs']} run(s), {d['bytes']} bytes stored"
            if d["zero_blocks_elided"] is not None:
                line += f", {d['zero_blocks_elided']} of {d['blocks']} blocks zero (elided)"
        out.append(line)
        if d["identity"]:
            samples = d["identity"]["samples"]
            out.append(f"    identity (DISK_ID): {len(samples)} sampled block(s) of "
                       f"{d['identity']['sectors']} sectors: " +
                       ", ".join(f"{x['block']}:{x['crc32c']:08x}" for x in samples[:4]) +
                       (f", ... {samples[-1]['block']}:{samples[-1]['crc32c']:08x}"
                        if len(samples) > 4 else "") + " (block:crc32c)")
        if d["zero_runs_stored"]:
            out.append(f"    {d['zero_runs_stored']} stored run(s) are all zero (a writer may "
                       "elide them)")
        runs = [r for r in m["runs"] if r["slot"] == d["slot"]]
        for r in runs[:max_runs]:
            out.append(f"    sectors {r['sector']}..{r['sector'] + r['sectors'] - 1}  "
                       f"({r['sectors']} sectors)")
        if len(runs) > max_runs:
            out.append(f"    ... {len(runs) - max_runs} more run(s) (--json lists all)")
    if m["stray_runs"]:
        out.append(f"  {m['stray_runs']} run(s) of no disk (instances no VIRTIO disk has)")
    return out


def flags_text(h):
    words = [name for bit, name in ((F_LIVE, "live"), (F_DISKS, "disks"))
             if h["flags"] & bit & known_flags(h["version"])]
    text = ", ".join(words) or "none"
    unknown = h["flags"] & ~known_flags(h["version"])
    if unknown:
        text += f", unknown {unknown:#x}"
    return text


def compression_text(snap):
    if not snap.size:
        return "empty stream"
    return f"{100.0 * snap.file_size / snap.size:.1f} % of the stream"


def inspect_json(snap):
    h = snap.header
    return {
        "file": snap.name, "bytes": snap.size, "valid": snap.valid,
        "compressed": snap.compressed, "file_bytes": snap.file_size,
        "problems": [p.as_json() for p in snap.problems],
        "header": None if h is None else {
            "magic": h["magic"].decode("latin-1"), "version": h["version"],
            "header_size": h["header_size"], "flags": h["flags"], "live": snap.live,
            "disks": snap.disks_included, "reserved": h["reserved"]},
        "sections": [s.as_json() for s in snap.sections],
        "config": config_json(snap.config) if snap.config else None,
        "vcpus": [vcpu_json(v) for v in snap.vcpus],
        "devices": [device_json(d) for d in snap.devices],
        "virtio": [virtio_json(v) for v in snap.virtio],
        "memory": memory_summary(snap),
        "disks": disk_summary(snap),
        "end": snap.end,
    }


def columns(items, per_line, indent="    "):
    return [indent + "  ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]


def inspect_text(snap, max_runs=64):
    """The contents of a (possibly invalid) Snapshot, for people."""
    out = []
    h = snap.header
    if h is None:
        out.append(f"{snap.name}: {snap.size} bytes, no complete header")
    else:
        out.append(f"{snap.name}: Carapace snapshot, version {h['version']}, {snap.size} bytes "
                   f"({human_size(snap.size)}), flags: {flags_text(h)}")
    if snap.compressed:
        out.append(f"  gzip-compressed file: {snap.file_size} bytes "
                   f"({human_size(snap.file_size)}, {compression_text(snap)}); offsets below "
                   "are in the expanded stream")
    if snap.sections:
        out.append("")
        out.append(f"sections ({len(snap.sections)}):")
        out.append(f"  {'OFFSET':>10}  {'SECTION':<22}  {'LENGTH':>8}  CRC32C")
        for s in snap.sections:
            if s.crc_actual is None:
                crc = f"{s.crc:#010x} (not read)"
            elif s.crc_ok:
                crc = f"{s.crc:#010x} ok"
            else:
                crc = f"{s.crc:#010x} BAD (payload has {s.crc_actual:#010x})"
            out.append(f"  {s.offset:>10}  {s.label:<22}  {s.length:>8}  {crc}")
    c = snap.config
    if c:
        policy = CFI_POLICIES[c["cfi_policy"]] if c["cfi_policy"] < 4 \
            else f"policy {c['cfi_policy']}"
        hz = c["timebase_hz"]
        seconds = f" ({c['guest_time'] / hz:.6f} s at {hz} Hz)" if hz else f" (timebase {hz})"
        out += ["", f"config: vm {cstr(c['name'])}",
                f"  RAM {human_size(c['ram_size'])} ({c['ram_size']:#x} bytes) at "
                f"{c['ram_gpa']:#x}, {c['nr_vcpus']} vCPU(s), CFI policy {policy}",
                f"  features: {' '.join(features_words(c['features'])) or 'none'} "
                f"({c['features']:#x}), debug extension: {'on' if c['debug_ext'] else 'off'}, "
                f"boot count {c['boot_count']}",
                f"  guest time {c['guest_time']}{seconds}",
                f"  kernel image {cstr(c['kernel_image']) or '(none)'}, initrd image "
                f"{cstr(c['initrd_image']) or '(none)'}",
                f"  bootargs {json.dumps(cstr(c['bootargs']), ensure_ascii=False)}"]
    for v in snap.vcpus:
        out += ["", f"vcpu {v['instance']}: {hsm_words(v)}, pc={v['pc']:#x}",
                f"  CFI: {cfi_words(v)}",
                f"  FWFT: {fwft_words(v)}",
                f"  STA shared memory: {sta_words(v)}"]
        out += pmu_words(v)
        if imsic_words(v):
            out.append(f"  {imsic_words(v)}")
        if dbtr_words(v):
            out.append(f"  {dbtr_words(v)}")
        if v.get("record_version", VERSION) == 1:
            out.append("  (a version 1 record: FWFT PTE A/D as its writer ran the guest, no "
                       "STA, no PMU, no system suspend)")
        out += [f"  sstatus={v['sstatus']:#x} ({sstatus_words(v['sstatus'])}), "
                f"hvip={v['hvip']:#x} ({hvip_words(v['hvip'])})",
                f"  vsstatus={v['vsstatus']:#x} vsie={v['vsie']:#x} vstvec={v['vstvec']:#x} "
                f"vsscratch={v['vsscratch']:#x}",
                f"  vsepc={v['vsepc']:#x} vscause={v['vscause']:#x} vstval={v['vstval']:#x}",
                f"  vsatp={v['vsatp']:#x} ({vsatp_words(v['vsatp'])})",
                f"  vstimecmp={v['vstimecmp']:#x} scounteren={v['scounteren']:#x} "
                f"senvcfg={v['senvcfg']:#x} ssp={v['ssp']:#x}",
                "  registers:"]
        out += columns([f"x{i}/{GPR_NAMES[i]}={v['gpr'][i]:#x}" for i in range(32)], 4)
        out.append(f"  floating point: fcsr={v['fcsr']:#x}")
        out += columns([f"f{i}={v['f'][i]:#x}" for i in range(32)], 4)
    for d in snap.devices:
        s = d["fields"]
        head = f"device {d['index']} {d['name']} ({d['state_size']} bytes of state)"
        if s is None:
            out += ["", f"{head}: not decoded"]
        elif d["name"] == "uart16550":
            queue = uart_queue(s)
            out += ["", f"{head}:",
                    f"  ier={s['ier']:#04x} lcr={s['lcr']:#04x} mcr={s['mcr']:#04x} "
                    f"scr={s['scr']:#04x} fcr={s['fcr']:#04x} divisor="
                    f"{s['dlm'] << 8 | s['dll']:#06x} (dll {s['dll']:#04x}, dlm {s['dlm']:#04x})",
                    f"  THR-empty interrupt pending: {'yes' if s['thre_pending'] else 'no'}, "
                    f"interrupt line: {'high' if s['irq_level'] else 'low'}",
                    f"  RX FIFO: {len(queue)} byte(s) queued (head {s['rx_head']}, tail "
                    f"{s['rx_tail']})" + (":" if queue else "")]
            for i in range(0, len(queue), 16):
                chunk = queue[i:i + 16]
                out.append(f"    {chunk.hex(' '):<47}  |{printable(chunk)}|")
        elif d["name"] == "aplic":
            active = [i for i in range(1, 32) if s["sourcecfg"][i] & 7]
            out += ["", f"{head}:",
                    f"  domain interrupts {'enabled' if s['domaincfg'] & 0x100 else 'disabled'}"
                    f" (IE); pending sources: {sources_text(s['pending'])}; enabled: "
                    f"{sources_text(s['enabled'])}; lines high: {sources_text(s['level'])}"]
            for i in active:
                t = s["target"][i]
                out.append(f"  source {i}: mode {s['sourcecfg'][i] & 7}, to hart {t >> 18} "
                           f"identity {t & 0x7ff}")
        elif d["name"] == "vmgenid":
            pending = ("yes (interrupt line high: the guest has not read this ID yet)"
                       if s["level"] else "no (interrupt line low)")
            out += ["", f"{head}:",
                    f"  generation ID {guid_text(s['id'])}",
                    f"  notification pending: {pending}",
                    "  (a restore replaces the ID with a fresh one and raises the line)"]
        else:
            nr = c["nr_vcpus"] if c else PLIC_CONTEXTS
            contexts = [i for i in range(PLIC_CONTEXTS)
                        if i < nr or s["enable"][i] or s["threshold"][i]]
            prios = [f"{i}={p}" for i, p in enumerate(s["priority"]) if p]
            out += ["", f"{head}:",
                    f"  pending sources: {sources_text(s['pending'])}; claimed (in service): "
                    f"{sources_text(s['claimed'])}; lines high: {sources_text(s['level'])}",
                    f"  priorities: {' '.join(prios) or 'all 0'}"]
            for ctx in contexts:
                out.append(f"  context {ctx} (vcpu {ctx}): enabled sources "
                           f"{sources_text(s['enable'][ctx])}, threshold {s['threshold'][ctx]}")
    for v in snap.virtio:
        out += virtio_text(v, snap.disks_included)
    if snap.runs or snap.complete:
        m = memory_summary(snap)
        out += ["", f"memory: {m['run_count']} run(s), {m['pages']} page(s) stored "
                    f"({human_size(m['bytes'])})"
                + (f", {m['zero_pages_elided']} zero page(s) elided, of {m['ram_pages']} "
                   f"pages of RAM" if m["ram_pages"] is not None else "")]
        if m["zero_pages_stored"]:
            out.append(f"  {m['zero_pages_stored']} stored page(s) are all zero "
                       "(a writer may elide them)")
        for r in snap.runs[:max_runs]:
            end = r["gpa"] + r["pages"] * PAGE_SIZE - 1
            out.append(f"  {r['gpa']:#x}..{end:#x}  {r['pages']} page(s)")
        if len(snap.runs) > max_runs:
            out.append(f"  ... {len(snap.runs) - max_runs} more run(s) (--json lists all)")
    if snap.disks or snap.disk_runs or snap.disks_included:
        out += disks_text(snap, max_runs)
    if snap.end:
        out += ["", f"end: {snap.end['sections']} sections, {snap.end['memory_pages']} memory "
                    "pages"]
    out.append("")
    if snap.problems:
        out.append(f"INVALID: {len(snap.problems)} problem(s):")
        out += [f"  {p}" for p in snap.problems]
    else:
        out.append("valid")
    return "\n".join(out)


