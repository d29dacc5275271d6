#!/usr/bin/env python3
"""Issue 18's hostile cases, each run through the release CLI: exit code,
panic, hang (60 s), peak RSS, and whether the damage was named.

  cargo build --release -p swaptrace && python3 fuzz/hostile.py [SWAPTRACE]

Prints a Markdown table. A case is "silent wrong" when a command exits 0
on damaged input without a warning on stderr."""
import json, os, struct, subprocess, sys, tempfile, zlib

EXE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/swaptrace")
SAMPLE = os.path.abspath("examples/sample.swt")
rows = []


def run(args, stdin=None):
    """(exit code, stderr, peak RSS KiB, seconds); exit None on a hang."""
    cmd = ["/usr/bin/time", "-f", "@@%M %e", EXE] + args
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=60, input=stdin)
    except subprocess.TimeoutExpired:
        return None, "", 0, 60.0
    err = p.stderr.decode(errors="replace")
    tail = err.rsplit("@@", 1)
    rss, secs = tail[1].split() if len(tail) == 2 else ("0", "0")
    return p.returncode, tail[0], int(rss), float(secs)


def records(path):
    p = subprocess.run([EXE, "info", path, "--json"], capture_output=True)
    return sum(json.loads(p.stdout)["records"].values()) if p.returncode == 0 else -1


def recovers(path, want):
    """An expect: `info --json` reads exactly `want` records."""
    return lambda c, e: records(path) == want


def case(name, args, damaged=True, expect=None):
    code, err, rss, secs = run(args)
    panic = "panicked" in err or code == 101 or (code is not None and code < 0)
    hang = code is None
    err = "\n".join(l for l in err.splitlines() if not l.startswith("Command exited"))
    lines = err.strip().splitlines()
    named_lines = [l for l in lines if "error" in l or "warning" in l or "note:" in l]
    said = (named_lines or lines or [""])[0][:200]
    named = "warning" in err or "error" in err or "note:" in err
    silent = damaged and code == 0 and not named
    ok = not (panic or hang or silent) and (expect is None or expect(code, err))
    rows.append((name, " ".join(args[:1]), code, panic, hang, rss, silent, ok, said))


def chunks(data):
    """Offsets of the real chunks (magic and a good CRC)."""
    out, i = [], data.find(b"CHNK")
    while i >= 0:
        if i + 28 <= len(data):
            stored = struct.unpack_from("<I", data, i + 16)[0]
            crc = struct.unpack_from("<I", data, i + 24)[0]
            body = data[i + 4 : i + 24] + data[i + 28 : i + 28 + stored]
            if zlib.crc32(body) == crc:
                out.append(i)
        i = data.find(b"CHNK", i + 1)
    return out


def chunk(kind, codec, count, raw_len, seq, payload):
    h = bytearray(28)
    h[0:4] = b"CHNK"
    h[4], h[5] = kind, codec
    struct.pack_into("<IIII", h, 8, count, raw_len, len(payload), seq)
    struct.pack_into("<I", h, 24, zlib.crc32(bytes(h[4:24]) + payload))
    return bytes(h) + payload


def jsonl(path, lines):
    with open(path, "w") as f:
        for l in lines:
            f.write(json.dumps(l) + "\n")


def main():
    d = tempfile.mkdtemp(prefix="swaptrace-hostile-")
    P = lambda n: os.path.join(d, n)
    # A version 2 copy of the sample (chunk sequence numbers, 28-byte headers).
    run(["export", SAMPLE, "-o", P("sample.jsonl")])
    run(["import", P("sample.jsonl"), "-o", P("sample.swt")])
    data = open(P("sample.swt"), "rb").read()
    at = chunks(data)
    assert len(at) >= 4, f"{len(at)} chunks in {P('sample.swt')}"
    total = records(P("sample.swt"))
    hdr = {"type": "header", "format_version": 2, "page_size": 4096}

    # 1, 3: far offsets and huge folios, through import then replay.
    for off in [1 << 25, 1 << 30, 1 << 63, (1 << 64) - 1]:
        t = P(f"off{off}.jsonl")
        e = {"dev": 0, "offset": off}
        jsonl(t, [hdr,
                  {"kind": "swap_out", "ts": 1, "tid": 1, "mm": 1, "vaddr": 4096, "entry": e, "nr": 1, "how": "io"},
                  {"kind": "swap_fault", "ts": 2, "dur_ns": 1, "tid": 1, "mm": 1, "addr": 4096, "entry": e,
                   "major": True, "pages_read": 1, "zero_reads": 0, "zswap_loads": 0}])
        run(["import", t, "-o", t + ".swt"])
        # A far offset is legal (a large device): bounded memory is the point.
        case(f"1: swap offset {off}", ["replay", t + ".swt", "--policy", "cluster"], False)
    t = P("nr.jsonl")
    jsonl(t, [hdr, {"kind": "swap_out", "ts": 1, "tid": 1, "mm": 1, "vaddr": 4096,
                    "entry": {"dev": 0, "offset": (1 << 64) - 8}, "nr": 4294967295, "how": "io"},
              {"kind": "swap_fault", "ts": 2, "dur_ns": 1, "tid": 1, "mm": 1, "addr": 4096,
               "entry": {"dev": 0, "offset": 5}, "major": True, "pages_read": 1, "zero_reads": 0, "zswap_loads": 0}])
    run(["import", t, "-o", t + ".swt"])
    case("3: swap_out nr 2^32-1, offset wraps", ["replay", t + ".swt", "--policy", "cluster"])

    # 4: decompression bombs (64 MiB of 4-byte records each).
    try:
        import zstandard
        z = zstandard.ZstdCompressor(level=19).compress(bytes([6, 2, 0, 0]) * (16 << 20))
    except ImportError:
        z = subprocess.run(["zstd", "-19", "-c"], input=bytes([6, 2, 0, 0]) * (16 << 20),
                           capture_output=True, check=True).stdout
    for n in [1, 3]:
        bad = data[: at[1]] + chunk(1, 1, 16 << 20, 64 << 20, 1, z) * n + data[at[1]:]
        open(P(f"bomb{n}.swt"), "wb").write(bad)
        for cmd in ["info", "replay"]:
            case(f"4: {n} zstd bomb(s) of 64 MiB", [cmd, P(f"bomb{n}.swt")], True,
                 recovers(P(f"bomb{n}.swt"), total))
    # 5: chunk magic floods.
    for n in [100_000, 262_144]:
        open(P(f"flood{n}.swt"), "wb").write(data[: at[0]] + b"CHNK" * n)
        case(f"5: header + CHNK x {n}", ["info", P(f"flood{n}.swt")])
    # 6: a flipped bit in a chunk's length field; 7: a duplicated chunk.
    count = lambda i: struct.unpack_from("<I", data, at[i] + 8)[0]
    for i in [0, 1]:
        bad = bytearray(data)
        bad[at[i] + 16 + 2] ^= 0x04
        f = P(f"len{i}.swt")
        open(f, "wb").write(bad)
        for cmd in ["info", "replay"]:
            # Every other chunk is recovered.
            case(f"6: flipped bit in chunk {i}'s length", [cmd, f], True, recovers(f, total - count(i)))
    bad = data[: at[2]] + data[at[1] : at[2]] + data[at[2]:]
    open(P("dup.swt"), "wb").write(bad)
    for cmd in ["info", "replay"]:
        case("7: chunk 1 duplicated", [cmd, P("dup.swt")], True, recovers(P("dup.swt"), total))
    bad = bytearray(data)
    bad[20] ^= 0xFF
    open(P("hdr.swt"), "wb").write(bad)
    case("6: damaged header", ["info", P("hdr.swt")], True, recovers(P("hdr.swt"), total))
    # 10: cut exactly at a chunk boundary (no footer).
    open(P("cut.swt"), "wb").write(data[: at[-1]])
    for cmd in [["info"], ["replay"], ["export", "-o", P("cut.jsonl")], ["hist", "--metric", "pages-read"]]:
        case("10: cut at the last chunk boundary", cmd[:1] + [P("cut.swt")] + cmd[1:])
    case("10: compare against a cut trace", ["compare", SAMPLE, P("cut.swt")])
    # 8: outputs.
    src = P("s.swt")
    open(src, "wb").write(data)
    ok_refused = lambda c, e: c != 0
    case("8: export s.swt -o s.swt", ["export", src, "-o", src], False, ok_refused)
    run(["export", src, "-o", P("in.jsonl")])
    case("8: import in.jsonl -o in.jsonl", ["import", P("in.jsonl"), "-o", P("in.jsonl")], False, ok_refused)
    case("8: import over an existing trace", ["import", P("in.jsonl"), "-o", src], False, ok_refused)
    os.symlink("/etc/swaptrace-hostile-victim", P("link.swt"))
    case("8: output through a symlink", ["synth", "-o", P("link.swt"), "--force"], False,
         lambda c, e: c != 0 and not os.path.exists("/etc/swaptrace-hostile-victim"))
    # 11, 12: synth limits and CLI gaps.
    for args in [["--faults", "1000000000000"], ["--pages", "18446744073709551615"],
                 ["--memory-pages", "18446744073709551615"], ["--memory-pages", "0"]]:
        case(f"11/12: synth {' '.join(args)}", ["synth", "-o", P("x.swt"), "--force"] + args, False, ok_refused)
    case("12: replay --memory-pages 0", ["replay", SAMPLE, "--memory-pages", "0"], False, ok_refused)
    case("12: compare --metric nosuch", ["compare", SAMPLE, SAMPLE, "--metric", "nosuch"], False, ok_refused)

    print("| case | command | exit | panic | hang | peak RSS | silent wrong | ok | what it said (first warning or error) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, cmd, code, panic, hang, rss, silent, ok, said in rows:
        said = said.replace("|", "\\|").replace(d, "…")
        print(f"| {name} | {cmd} | {code} | {int(panic)} | {int(hang)} | {rss / 1024:.1f} MiB | {int(silent)} | {'yes' if ok else 'NO'} | {said} |")
    bad = [r for r in rows if not r[7]]
    print(f"\n{len(rows)} cases, {sum(r[3] for r in rows)} panics, {sum(r[4] for r in rows)} hangs, "
          f"peak RSS {max(r[5] for r in rows) / 1024:.1f} MiB, {sum(r[6] for r in rows)} silent, {len(bad)} not ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
