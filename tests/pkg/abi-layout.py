#!/usr/bin/env python3
"""abi-layout.py - the public structs, enums and constants keep their layout.

    abi-layout.py SRCDIR              compare with the recorded list
    abi-layout.py --record SRCDIR     rewrite the recorded list

check-abi.sh runs the first form.  The functions of the ABI are checked
there (header, libmcp.sym, libmcp.so, debian/libmcp0.symbols); what a
program compiles into itself is checked here: the size and alignment of
every struct of api/mcp/mcp.h and api/mcp/client.h and the offset of each
member, the value of every enumerator, and the value of every integer
#define (MCP_VERSION_* apart, which change with each release).

The layout is printed by a C program generated from the headers, compiled
with $CC (default cc) and run, and compared with
tests/pkg/abi-layout.<machine>.txt (x86_64 today; on another machine the
check is skipped, exit 77, until a list is recorded there).  The rules of
doc/packaging.md, "The binary interface":

  - a recorded member keeps its offset, a recorded enumerator or constant
    its value, a recorded struct its alignment;
  - a struct grows only when its first member is `size_t struct_size`
    (the library reads a caller's struct up to the size the caller says),
    and only at its end: a new member starts at or after the recorded size,
    not in the old padding, which old callers never set;
  - nothing recorded disappears.

A change that breaks these fails as "breaks the ABI".  An addition the
rules allow (a new struct, member at the end, enumerator, constant) also
fails, as "not recorded", until the list is rewritten with --record and
committed with the change, so that every change of the ABI shows in a
diff of the list.  Standard library only.
"""
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

HEADERS = ("api/mcp/mcp.h", "api/mcp/client.h")
ME = "abi-layout.py"


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def parse(src):
    """Returns (structs, enums, defines): structs maps a name to its member
    names in order; enums lists enumerator names; defines lists the names
    of integer macros."""
    structs, enums, defines = {}, [], []
    for h in HEADERS:
        with open(os.path.join(src, h)) as f:
            raw = f.read()
        text = strip_comments(raw)
        for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", text, re.S):
            members = []
            for decl in m.group(2).split(";"):
                decl = " ".join(decl.split())
                if not decl:
                    continue
                if "(" in decl:  # a function pointer member: (*name)(...)
                    fp = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
                    members.append(fp.group(1))
                    continue
                # "int64_t min_length, max_length" or "const char *const *options"
                first, *rest = decl.split(",")
                members.append(re.search(r"(\w+)\s*(\[[^]]*\])?$", first.strip()).group(1))
                for r in rest:
                    members.append(re.search(r"(\w+)\s*(\[[^]]*\])?$", r.strip()).group(1))
            structs[m.group(3)] = members
        for m in re.finditer(r"typedef\s+enum\s+\w*\s*\{(.*?)\}\s*\w+\s*;", text, re.S):
            for e in m.group(1).split(","):
                e = e.strip()
                if e:
                    enums.append(re.match(r"(\w+)", e).group(1))
        for m in re.finditer(r"^#define\s+(MCP_\w+)\s+(.+)$", strip_comments(raw), re.M):
            name, val = m.group(1), m.group(2).strip()
            if name.startswith("MCP_VERSION_") or "(" in name:
                continue
            if re.fullmatch(r"\(?\s*-?\s*(0x[0-9a-fA-F]+|\d+)u?\s*\)?", val):
                defines.append(name)
    return structs, enums, defines


def layout(src, cc):
    structs, enums, defines = parse(src)
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include <mcp/mcp.h>",
             "#include <mcp/client.h>", "int main(void)", "{"]
    for s, members in sorted(structs.items()):
        lines.append(f'\tprintf("struct {s} size %zu align %zu\\n", sizeof({s}), _Alignof({s}));')
        for mem in members:
            lines.append(f'\tprintf("member {s}.{mem} offset %zu\\n", offsetof({s}, {mem}));')
    for e in enums:
        lines.append(f'\tprintf("enum {e} %lld\\n", (long long){e});')
    for d in defines:
        lines.append(f'\tprintf("define {d} %lld\\n", (long long)({d}));')
    lines += ["\treturn 0;", "}"]
    tmp = tempfile.mkdtemp(prefix="abi-layout.")
    try:
        c = os.path.join(tmp, "layout.c")
        exe = os.path.join(tmp, "layout")
        with open(c, "w") as f:
            f.write("\n".join(lines) + "\n")
        cmd = cc.split() + ["-std=c11", "-I", os.path.join(src, "api"), c, "-o", exe]
        cflags = subprocess.run(["pkg-config", "--cflags", "json-c"], capture_output=True,
                                text=True)
        if cflags.returncode == 0:
            cmd[1:1] = cflags.stdout.split()
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{ME}: cannot compile the layout program:\n{r.stderr}", file=sys.stderr)
            sys.exit(1)
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    finally:
        shutil.rmtree(tmp)
    return out.splitlines(), structs


def compare(recorded, now, structs):
    """Returns (breaks, unrecorded): lists of messages."""
    rec = {l.rsplit(" ", 1)[0] if not l.startswith("struct ") else l.split(" size ")[0]: l
           for l in recorded}
    cur = {l.rsplit(" ", 1)[0] if not l.startswith("struct ") else l.split(" size ")[0]: l
           for l in now}
    breaks, unrecorded = [], []
    for key, line in rec.items():
        if key not in cur:
            breaks.append(f"{key} is recorded but gone")
            continue
        got = cur[key]
        if got == line:
            continue
        if key.startswith("struct "):
            name = key.split()[1]
            rs, ra = re.search(r"size (\d+) align (\d+)", line).groups()
            gs, ga = re.search(r"size (\d+) align (\d+)", got).groups()
            if ra != ga:
                breaks.append(f"{key}: alignment {ra} became {ga}")
            grew = int(gs) > int(rs)
            sized = structs.get(name, [None])[0] == "struct_size"
            if int(gs) < int(rs) or (grew and not sized):
                breaks.append(f"{key}: size {rs} became {gs}" +
                              ("" if sized else " (only a struct that starts with "
                                                "size_t struct_size may grow)"))
            elif grew:
                unrecorded.append(f"{key}: grew from {rs} to {gs} bytes")
        else:
            breaks.append(f"{key}: recorded {line.rsplit(' ', 1)[1]}, now {got.rsplit(' ', 1)[1]}")
    for key, line in cur.items():
        if key in rec:
            continue
        if key.startswith("member "):
            s = key.split()[1].split(".")[0]
            old = rec.get(f"struct {s}")
            off = int(line.rsplit(" ", 1)[1])
            if old is not None:
                # A caller built against the recorded header passes
                # struct_size = the recorded size; the library reads that
                # many bytes, padding included, which that caller never set.
                rsize = int(re.search(r"size (\d+)", old).group(1))
                if structs.get(s, [None])[0] != "struct_size":
                    breaks.append(f"{key}: new member of a struct without size_t struct_size")
                    continue
                if off < rsize:
                    breaks.append(f"{key}: new member at offset {off}, inside the recorded "
                                  f"{rsize} bytes (add members after the end only)")
                    continue
        unrecorded.append(f"{line}: new")
    return breaks, unrecorded


def main(argv):
    record = False
    if argv and argv[0] == "--record":
        record = True
        argv = argv[1:]
    src = argv[0] if argv else os.environ.get("MCP_SRCDIR")
    if not src:
        print(f"usage: {ME} [--record] SRCDIR", file=sys.stderr)
        return 2
    machine = platform.machine()
    listfile = os.path.join(src, "tests", "pkg", f"abi-layout.{machine}.txt")
    cc = os.environ.get("CC") or "cc"
    if shutil.which(cc.split()[0]) is None:
        print(f"{ME}: SKIP: no C compiler ({cc})")
        return 77
    now, structs = layout(src, cc)
    if record:
        with open(listfile, "w") as f:
            f.write(f"# The public layout of libmcp on {machine}: written by "
                    f"tests/pkg/abi-layout.py --record,\n# checked by check-abi.sh. "
                    f"See doc/packaging.md, \"The binary interface\".\n")
            f.write("\n".join(now) + "\n")
        print(f"{ME}: recorded {len(now)} lines in {listfile}")
        return 0
    if not os.path.exists(listfile):
        print(f"{ME}: SKIP: no recorded layout for {machine} ({listfile})")
        return 77
    with open(listfile) as f:
        recorded = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#")]
    breaks, unrecorded = compare(recorded, now, structs)
    for b in breaks:
        print(f"{ME}: {b}: breaks the ABI", file=sys.stderr)
    for u in unrecorded:
        print(f"{ME}: {u}: not recorded (allowed growth: run tests/pkg/abi-layout.py "
              f"--record SRCDIR and commit the list)", file=sys.stderr)
    nstructs = sum(1 for l in now if l.startswith("struct "))
    print(f"{ME}: {nstructs} structs, {len(now) - nstructs} members, enumerators and "
          f"constants compared with {os.path.basename(listfile)}: "
          f"{len(breaks)} breaks, {len(unrecorded)} unrecorded")
    return 1 if breaks or unrecorded else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
