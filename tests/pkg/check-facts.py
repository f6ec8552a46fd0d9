#!/usr/bin/env python3
"""check-facts.py - facts that stand in several places agree.

    check-facts.py SRCDIR

(under make check SRCDIR comes from MCP_SRCDIR).  A function's signature
stands in the public header and in its manual page's SYNOPSIS; a
setter's range stands in the code that enforces it (the RANGE_SETTER and
CLIENT_RANGE lines of api/server.c and api/client.c), in the header's
comment and in the manual page.  The header is the source: this check
fails, naming the function and the place, when

  - a SYNOPSIS gives a function a return type or parameter types other
    than the header's declaration;
  - the range a setter's code enforces differs from the one its header
    comment states ("(LO..HI" at the start of the comment of that
    declaration), or from the one its manual page states ("LO to HI" in
    the paragraph of that function), where they state one;
  - the version the header defines (MCP_VERSION_MAJOR, _MINOR, _PATCH,
    MCP_VERSION_STRING) differs from the package's (AC_INIT in
    configure.ac), from debian/changelog's upstream version, or from the
    string mcp_strerror(3) quotes;
  - an mcp_server_set_* function is declared outside the header's one
    "Server configuration" section.

Prints TAP (tests/lib/tap.py): one test point per kind of fact, its
disagreements as the diagnostic.  Standard library only.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import tap  # noqa: E402

HEADERS = ("api/mcp/mcp.h", "api/mcp/client.h")


def norm_type(t):
    """A C type as text, without names and spacing differences."""
    t = re.sub(r"\bMCP_EXTERN\b", "", t)
    t = re.sub(r"\s*\*\s*", " *", t)
    return " ".join(t.split()).replace(" *", "*")


def param_type(p):
    """The type of one parameter declaration ("const char *name")."""
    p = p.strip()
    if p in ("void", "..."):
        return p
    if "(" in p:  # a function pointer parameter: keep it whole, names dropped
        return norm_type(re.sub(r"\(\s*\*\s*\w+\s*\)", "(*)", p))
    m = re.match(r"(.*?)(\w+)\s*(\[\s*\w*\s*\])?$", p)
    if not m:
        return norm_type(p)
    base = m.group(1)
    if not base.strip():  # a type with no name ("int")
        return norm_type(p)
    return norm_type(base + ("*" if m.group(3) else ""))


def split_params(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    if cur.strip():
        out.append(cur)
    return out


def header_decls(src):
    """name -> (return type, [parameter types], comment before it)."""
    decls = {}
    for h in HEADERS:
        text = open(os.path.join(src, h)).read()
        for m in re.finditer(r"((?:/\*(?:[^*]|\*(?!/))*\*/\s*)?)MCP_EXTERN\s+([^;{]*?)\b(\w+)\s*\((.*?)\)\s*(?:MCP_\w+\([^)]*\)\s*)*;",
                             text, flags=re.S):
            comment, ret, name, params = m.group(1), m.group(2), m.group(3), m.group(4)
            decls[name] = (norm_type(ret), [param_type(p) for p in split_params(params)],
                           " ".join(comment.split()))
    return decls


def man_synopses(src):
    """name -> (page, return type, [parameter types]) from every SYNOPSIS."""
    out = {}
    mandir = os.path.join(src, "man")
    for page in sorted(os.listdir(mandir)):
        if not page.endswith(".3"):
            continue
        lines = open(os.path.join(mandir, page)).read().splitlines()
        in_syn, ret = False, None
        i = 0
        while i < len(lines):
            ln = lines[i]
            if ln.startswith(".Sh "):
                in_syn = ln == ".Sh SYNOPSIS"
            elif in_syn and ln.startswith(".Ft "):
                ret = norm_type(ln[4:].strip().strip('"'))
            elif in_syn and ln.startswith(".Fn "):
                args = re.findall(r'"([^"]*)"|(\S+)', ln[4:])
                words = [a or b for a, b in args]
                out[words[0]] = (page, ret, [param_type(p) for p in words[1:]] or ["void"])
                ret = None
            elif in_syn and ln.startswith(".Fo "):
                name = ln[4:].strip()
                params = []
                i += 1
                while i < len(lines) and not lines[i].startswith(".Fc"):
                    if lines[i].startswith(".Fa "):
                        params.append(param_type(lines[i][4:].strip().strip('"')))
                    i += 1
                out[name] = (page, ret, params or ["void"])
                ret = None
            i += 1
    return out


def code_ranges(src):
    """setter -> (lo, hi) from the range-setter macros of the code."""
    out = {}
    for f in ("api/server.c", "api/client.c"):
        text = open(os.path.join(src, f)).read()
        for m in re.finditer(r"^(?:RANGE_SETTER|CLIENT_RANGE)\((\w+),\s*\w+,\s*[\w ]+,\s*([^,]+),\s*(.+)\)\s*$",
                             text, flags=re.M):
            out[m.group(1)] = (m.group(2).strip(), m.group(3).strip())
    return out


def value(expr):
    """The number a range bound in the code or the text stands for."""
    e = re.sub(r"\s*(ms|us|bytes|s)$", "", expr.strip())
    e = re.sub(r"\((?:size_t|int64_t)\)\s*", "", e)
    e = re.sub(r"INT64_C\((\d+)\)", r"\1", e)
    m = re.fullmatch(r"(\d+)\s*<<\s*(\d+)", e.strip("() "))
    if m:
        return int(m.group(1)) << int(m.group(2))
    m = re.fullmatch(r"2\^(\d+)", e)
    if m:
        return 1 << int(m.group(1))
    m = re.fullmatch(r"(\d+)\s*(GiB|MiB|KiB)", e)
    if m:
        return int(m.group(1)) << {"KiB": 10, "MiB": 20, "GiB": 30}[m.group(2)]
    try:
        return int(e.replace(",", ""))
    except ValueError:
        return None


def man_paragraphs(src):
    """name -> the text of the man page item (.It Fn name ...) about it."""
    out = {}
    mandir = os.path.join(src, "man")
    for page in sorted(os.listdir(mandir)):
        if not page.endswith(".3"):
            continue
        text = open(os.path.join(mandir, page)).read()
        for m in re.finditer(r"^\.It Fn (\w+)\n(.*?)(?=^\.It |^\.El)", text, flags=re.M | re.S):
            out.setdefault(m.group(1), (page, " ".join(m.group(2).split())))
    return out


def version_problems(src):
    """The version stands in the header, configure.ac, debian/changelog and
    mcp_strerror.3; all must agree with the header's."""
    out = []
    with open(os.path.join(src, "api/mcp/mcp.h")) as f:
        h = f.read()
    parts = []
    for part in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(rf"#define MCP_VERSION_{part} (\d+)\b", h)
        if not m:
            return [f"api/mcp/mcp.h: no MCP_VERSION_{part}"]
        parts.append(m.group(1))
    want = ".".join(parts)
    m = re.search(r'#define MCP_VERSION_STRING "([^"]*)"', h)
    if not m or m.group(1) != want:
        out.append(f"api/mcp/mcp.h: MCP_VERSION_STRING is {m.group(1) if m else None!r}, "
                   f"the numbers say {want}")
    with open(os.path.join(src, "configure.ac")) as f:
        m = re.search(r"AC_INIT\(\[[^]]*\],\s*\[([^]]*)\]", f.read())
    if not m or m.group(1) != want:
        out.append(f"configure.ac: AC_INIT says {m.group(1) if m else None!r}, the header {want}")
    # The release tarball carries no debian/ directory (distributions bring
    # their own); the changelog is checked in the git tree only.
    changelog = os.path.join(src, "debian/changelog")
    m = None
    if os.path.exists(changelog):
        with open(changelog) as f:
            m = re.match(r"\S+ \(([^)-]+)", f.readline())
    if os.path.exists(changelog) and (not m or m.group(1) != want):
        out.append(f"debian/changelog: the newest entry is {m.group(1) if m else None!r}, "
                   f"the header {want}")
    with open(os.path.join(src, "man/mcp_strerror.3")) as f:
        m = re.search(r'\.Dv MCP_VERSION_STRING\n\.Pq Qq ([^\n]+)', f.read())
    if not m or m.group(1) != want:
        out.append(f"man/mcp_strerror.3: quotes MCP_VERSION_STRING as "
                   f"{m.group(1) if m else None!r}, the header {want}")
    return out


def setter_problems(src):
    """Every mcp_server_set_* declaration of mcp.h is in the section that
    starts with the "Server configuration" banner."""
    with open(os.path.join(src, "api/mcp/mcp.h")) as f:
        h = f.read()
    start = h.find("/* Server configuration")
    if start < 0:
        return ["api/mcp/mcp.h: no \"Server configuration\" section"]
    nxt = h.find("/* =====", h.find("*/", h.find("/* =====", start)) + 2)
    end = nxt if nxt >= 0 else len(h)
    out = []
    for m in re.finditer(r"MCP_EXTERN\s+int\s+(mcp_server_set_\w+)\s*\(", h):
        if not start <= m.start() < end:
            line = h.count("\n", 0, m.start()) + 1
            out.append(f"api/mcp/mcp.h:{line}: {m.group(1)} is declared outside the "
                       f"\"Server configuration\" section")
    return out


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MCP_SRCDIR")
    if not src:
        print("usage: check-facts.py SRCDIR", file=sys.stderr)
        return 2
    decls = header_decls(src)
    points = tap.Points()
    problems = []
    checked = 0
    for name, (page, ret, params) in sorted(man_synopses(src).items()):
        if name not in decls:
            continue  # check-man.sh says which names are not API
        hret, hparams, _ = decls[name]
        checked += 1
        if ret is not None and ret != hret:
            problems.append(f"{page}: {name} returns {ret!r}; the header says {hret!r}")
        if params != hparams:
            problems.append(f"{page}: {name}({', '.join(params)}); the header says "
                            f"({', '.join(hparams)})")
    points.check(f"{checked} manual SYNOPSIS lines agree with the header",
                 checked > 0 and not problems, "\n".join(problems) or "no synopsis compared")
    paras = man_paragraphs(src)
    ranges = 0
    problems = []
    for name, (lo, hi) in sorted(code_ranges(src).items()):
        want = (value(lo), value(hi))
        comment = decls.get(name, (None, None, ""))[2]
        m = re.search(r"\(([\d,]+(?:\s*(?:KiB|MiB|GiB))?|[\d]+)\.\.([^;)]+?)[;)]", comment)
        if m:
            ranges += 1
            got = (value(m.group(1)), value(m.group(2)))
            if got != want:
                problems.append(f"api/mcp/*.h: {name}: the comment says {m.group(1)}..{m.group(2)}, "
                                f"the code enforces {lo}..{hi}")
        if name in paras:
            page, text = paras[name]
            m = re.search(r"\b(2\^\d+|[\d,]+(?: (?:KiB|MiB|GiB))?) to (2\^\d+|[\d,]+(?: (?:KiB|MiB|GiB))?)", text)
            if m:
                ranges += 1
                got = (value(m.group(1)), value(m.group(2)))
                if got != want:
                    problems.append(f"{page}: {name}: the page says {m.group(1)} to {m.group(2)}, "
                                    f"the code enforces {lo}..{hi}")
    points.check(f"{ranges} stated setter ranges agree with the code",
                 ranges > 0 and not problems, "\n".join(problems) or "no range compared")
    places = 4 if os.path.exists(os.path.join(src, "debian/changelog")) else 3
    problems = version_problems(src)
    points.check(f"the version agrees in {places} places", not problems, "\n".join(problems))
    problems = setter_problems(src)
    points.check("every mcp_server_set_* is in the 'Server configuration' section",
                 not problems, "\n".join(problems))
    return points.finish()

if __name__ == "__main__":
    sys.exit(main())
