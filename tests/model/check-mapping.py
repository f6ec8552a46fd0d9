#!/usr/bin/env python3
"""check-mapping.py - tests/model/MAPPING.md still points at the code.

    check-mapping.py SRCDIR

(under make check SRCDIR comes from MCP_SRCDIR).  MAPPING.md maps each
step of the SPIN model to the C code that does it, by file, function and
line numbers; the code moves under it.  This check reads the tables of
MAPPING.md and fails, naming the row, when

  - a file a reference names does not exist, or is named without its
    directory;
  - the function it names is not defined in that file;
  - a line it cites lies outside that function (between the line that
    names the function in its definition and its closing brace);
  - a line number in the code column belongs to no function;
  - a model file named in the left column does not exist in
    tests/model/, or a name (an identifier) in backquotes there occurs in
    none of the model's files.

The form of a reference (MAPPING.md's header says the same), in the
right column of a table row:

  `dir/file.c` `function` LINES  a path from the top of the source tree
                                 (a directory is required), a function
                                 defined there, and optionally LINES;
  `function` LINES               with no path: a function of the file
                                 named last before it in the same cell;
  LINES                          a line `N` or a range `N-M`, outside
                                 backquotes: it belongs to the function
                                 of the reference last named before it
                                 in the same cell.

Any other text in backquotes is prose.  A function is found as C code of
this project is written: its name followed by "(" on a line that starts
at column 0 (after its return type, if on the same line), a body whose
"{" and "}" stand at column 0, and no ";" before the "{" (a prototype).

Prints TAP (tests/lib/tap.py): one test point per table row (named by
its section and its model step), the failures of a row as its
diagnostic, then a summary.  Standard library only.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import tap  # noqa: E402

MAPPING = "tests/model/MAPPING.md"
MODEL_DIR = "tests/model"

IDENT = re.compile(r"[A-Za-z_]\w*$")
PATH = re.compile(r"[\w.+-]+(?:/[\w.+-]+)+\.[ch]$")
# A cell split into backquoted pieces and the text between them.
PIECE = re.compile(r"`([^`]*)`|([^`]+)")
LINES = re.compile(r"(?<![\w.-])(\d+)(?:-(\d+))?(?![\w.])")


def split_row(line):
    """The cells of a Markdown table row (no escaped pipes in this table
    except inside backquotes)."""
    cells, cur, in_code = [], "", False
    for ch in line.strip().strip("|"):
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append(cur.strip())
            cur = ""
            continue
        cur += ch
    cells.append(cur.strip())
    return cells


def table_rows(text):
    """(line number, section, model cell, code cell) of every table row."""
    rows, section = [], ""
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            section = line.lstrip("#").strip()
            continue
        if not line.startswith("|"):
            continue
        cells = split_row(line)
        if len(cells) != 2 or cells[0] == "model" or set(cells[0]) <= set("-: "):
            continue
        rows.append((n, section, cells[0], cells[1]))
    return rows


class Source:
    """The functions of one C file: name -> (first line, last line)."""

    def __init__(self, path):
        with open(path, encoding="utf-8", errors="replace") as f:
            self.lines = f.read().split("\n")
        self.cache = {}

    def function(self, name):
        if name in self.cache:
            return self.cache[name]
        found = None
        head = re.compile(r"^(?:[A-Za-z_].*[\s*(])?" + re.escape(name) + r"\s*\(")
        for i, line in enumerate(self.lines):
            if not line or line[0] in " \t#/*{}" or not head.match(line):
                continue
            # A definition: "{" at column 0 before any ";" (a prototype's end).
            j = i
            while j < len(self.lines) and not self.lines[j].startswith("{"):
                if ";" in self.lines[j]:
                    break
                j += 1
            if j >= len(self.lines) or not self.lines[j].startswith("{"):
                continue
            k = j + 1
            while k < len(self.lines) and not self.lines[k].startswith("}"):
                k += 1
            if k < len(self.lines):
                found = (i + 1, k + 1)
                break
        self.cache[name] = found
        return found


class Checker:
    def __init__(self, src):
        self.src = src
        self.sources = {}
        self.references = 0
        self.lines_checked = 0
        words = set()
        model = os.path.join(src, MODEL_DIR)
        self.model_files = sorted(f for f in os.listdir(model) if f.endswith(".pml"))
        for f in self.model_files:
            with open(os.path.join(model, f), encoding="utf-8") as fh:
                words.update(re.findall(r"[A-Za-z_]\w*", fh.read()))
        self.model_words = words

    def source(self, rel):
        if rel not in self.sources:
            path = os.path.join(self.src, rel)
            self.sources[rel] = Source(path) if os.path.isfile(path) else None
        return self.sources[rel]

    def code_cell(self, cell):
        """The failures of one code cell (a list of strings)."""
        problems = []
        pieces = [(m.group(1), m.group(2)) for m in PIECE.finditer(cell)]
        path = None      # the file named last in this cell
        current = None   # (path, function, (first, last)) or None
        i = 0
        while i < len(pieces):
            code, text = pieces[i]
            if code is not None:
                if PATH.match(code):
                    path = code
                    src = self.source(code)
                    if src is None:
                        problems.append(f"`{code}`: no such file")
                    nxt = pieces[i + 1] if i + 1 < len(pieces) else (None, None)
                    nxt2 = pieces[i + 2] if i + 2 < len(pieces) else (None, None)
                    # `path` `function`: the two backquoted pieces are
                    # separated by blanks only.
                    if (nxt[1] is not None and not nxt[1].strip() and nxt2[0] is not None
                            and IDENT.match(nxt2[0])):
                        current = self.resolve(code, nxt2[0], problems)
                        i += 3
                        continue
                    current = None
                    i += 1
                    continue
                if re.match(r"[\w.+-]+\.[ch]$", code):
                    problems.append(f"`{code}`: a file without its directory (write the path "
                                    "from the top of the source tree)")
                    i += 1
                    continue
                if IDENT.match(code) and i + 1 < len(pieces) and pieces[i + 1][1] is not None \
                        and re.match(r"\s+\d", pieces[i + 1][1]):
                    # A short reference: a function of the file named last.
                    if path is None:
                        problems.append(f"`{code}` cites lines but no file was named before it")
                        current = None
                    else:
                        current = self.resolve(path, code, problems)
                i += 1
                continue
            for m in LINES.finditer(text):
                lo = int(m.group(1))
                hi = int(m.group(2)) if m.group(2) else lo
                if current is None:
                    problems.append(f"line(s) {m.group(0)}: no function named before them "
                                    "in this cell")
                    continue
                rel, name, span = current
                if span is None:
                    continue  # already reported: the function is missing
                self.lines_checked += 1
                if hi < lo or lo < span[0] or hi > span[1]:
                    problems.append(f"`{rel}` `{name}` {m.group(0)}: outside the function "
                                    f"(lines {span[0]}-{span[1]})")
            i += 1
        return problems

    def resolve(self, rel, name, problems):
        self.references += 1
        src = self.source(rel)
        if src is None:
            return (rel, name, None)
        span = src.function(name)
        if span is None:
            problems.append(f"`{rel}` `{name}`: no definition of {name} in {rel}")
        return (rel, name, span)

    def model_cell(self, cell):
        problems = []
        for m in PIECE.finditer(cell):
            code = m.group(1)
            if code is None:
                continue
            if code.endswith(".pml"):
                if code not in self.model_files:
                    problems.append(f"`{code}`: no such file in {MODEL_DIR}/")
            elif IDENT.match(code) and code not in self.model_words:
                problems.append(f"`{code}`: occurs in none of the model's files")
        return problems


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MCP_SRCDIR")
    if not src:
        print("usage: check-mapping.py SRCDIR", file=sys.stderr)
        return 2
    path = os.path.join(src, MAPPING)
    points = tap.Points()
    if not os.path.isfile(path):
        points.check(f"{MAPPING} exists", False, f"no file {path}")
        return points.finish()
    with open(path, encoding="utf-8") as f:
        text = f.read()
    checker = Checker(src)
    rows = table_rows(text)
    failed = 0
    for n, section, model, code in rows:
        problems = checker.model_cell(model) + checker.code_cell(code)
        failed += bool(problems)
        name = f"{MAPPING}:{n} [{section}] {model}"
        points.check(name, not problems,
                     "\n".join(f"{MAPPING}:{n}: {p}" for p in problems))
    points.check(f"{MAPPING} has table rows", len(rows) > 0, "no table row found")
    tap.diag(f"{len(rows)} rows, {checker.references} function references, "
             f"{checker.lines_checked} line citations checked; {failed} row(s) failed")
    return points.finish()


if __name__ == "__main__":
    sys.exit(main())
