#!/usr/bin/env python3
"""List non-test Rust functions by length (lines from `fn` to its closing brace).

Usage: scripts/fn-lengths.py [--min N] [--over N] [ROOT]
  --min N   list functions of at least N lines (default 150)
  --over N  exit 1 when any function is longer than N lines (a CI check; default: no check)
  ROOT      the workspace root (default: this script's parent directory)

Scans crates/*/src/**/*.rs. Skips `#[cfg(test)]` items (a test module or function: the item
after the attribute, to its matching brace) and `#[test]` functions. Braces inside string,
char and raw-string literals and comments are ignored (a small lexer, not a parser: a `{` in a
macro's token stream counts like any other). Output: `LINES  FILE:LINE  NAME`, longest first.
"""

import argparse
import pathlib
import re
import sys

FN_RE = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def strip(src: str) -> str:
    """The source with comments and string/char literal contents blanked (newlines kept)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:i + 20]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'r(#*)"', src[i:])
            end = '"' + m.group(1)
            j = src.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('"' + re.sub(r"[^\n]", " ", src[i + 1:j - 1]) + '"')
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
            out.append('"' + re.sub(r"[^\n]", " ", src[i + 1:j - 1]) + '"')
            i = j
        elif c == "'":
            # a char literal ('x', '\n', '\u{..}') or a lifetime ('a)
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", src[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching(s: str, open_at: int) -> int:
    """Index of the brace closing the one at `open_at`."""
    depth = 0
    for j in range(open_at, len(s)):
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(s) - 1


def item_end(s: str, start: int) -> int:
    """End of the item starting at `start`: its matching `}` or the first `;` before a `{`."""
    j = start
    while j < len(s) and s[j] not in "{;":
        j += 1
    if j < len(s) and s[j] == "{":
        return matching(s, j)
    return j


def functions(path: pathlib.Path):
    src = path.read_text(encoding="utf-8")
    s = strip(src)
    skip = []  # (start, end) of test-only items
    for m in re.finditer(r"#\[\s*(cfg\s*\(\s*test\s*\)|test)\s*\]", s):
        skip.append((m.start(), item_end(s, m.end())))
    line_of = lambda k: s.count("\n", 0, k) + 1
    for m in FN_RE.finditer(s):
        if any(a <= m.start() <= b for a, b in skip):
            continue
        # the body: the first `{` after the signature, unless a `;` (a declaration) comes first
        j, depth = m.end(), 0
        while j < len(s):
            if s[j] in "(<[":
                depth += 1
            elif s[j] in ")>]" and not (s[j] == ">" and s[j - 1] in "-="):
                depth -= 1
            elif s[j] == ";" and depth <= 0:
                j = -1
                break
            elif s[j] == "{" and depth <= 0:
                break
            j += 1
        if j < 0 or j >= len(s):
            continue
        end = matching(s, j)
        first, last = line_of(m.start()), line_of(end)
        yield last - first + 1, first, m.group(1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--min", type=int, default=150)
    ap.add_argument("--over", type=int, default=None)
    ap.add_argument("root", nargs="?", default=str(pathlib.Path(__file__).resolve().parent.parent))
    a = ap.parse_args()
    root = pathlib.Path(a.root)
    rows = []
    for p in sorted(root.glob("crates/*/src/**/*.rs")):
        for lines, line, name in functions(p):
            rows.append((lines, f"{p.relative_to(root)}:{line}", name))
    rows.sort(key=lambda r: (-r[0], r[1]))
    for lines, where, name in rows:
        if lines >= a.min:
            print(f"{lines:5}  {where}  {name}")
    if a.over is not None:
        bad = [r for r in rows if r[0] > a.over]
        if bad:
            print(f"{len(bad)} non-test function(s) over {a.over} lines", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
