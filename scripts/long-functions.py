#!/usr/bin/env python3
"""Lists the functions of the workspace's Rust sources longer than a limit.

    python3 scripts/long-functions.py [LIMIT] [--tests]

LIMIT is in lines, from the `fn` line to its closing brace (default 145). Without
--tests, files under tests/ and benches/ and `#[cfg(test)] mod` blocks are left out.
Comments, strings and character literals are skipped when braces are counted.
"""
import os
import re
import sys

FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+\"[^\"]*\"\s+)?fn\s+(\w+)")


def code_lines(text):
    """The text with comments, strings and char literals blanked, line by line."""
    out, i, n = [], 0, len(text)
    buf = []
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            while i < n and text[i] != "\n":
                i += 1
        elif c == "/" and nxt == "*":
            depth = 1
            i += 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth += 1
                    i += 2
                elif text.startswith("*/", i):
                    depth -= 1
                    i += 2
                else:
                    if text[i] == "\n":
                        buf.append("\n")
                    i += 1
        elif c == "r" and nxt in "#\"" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            j = i + 1
            hashes = 0
            while j < n and text[j] == "#":
                hashes += 1
                j += 1
            if j >= n or text[j] != '"':
                buf.append(c)
                i += 1
                continue
            end = text.find('"' + "#" * hashes, j + 1)
            end = n if end < 0 else end
            buf.append("\n" * text.count("\n", i, end))
            i = end + 1 + hashes
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\n":
                    buf.append("\n")
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif c == "'" and i + 2 < n and text[i + 2] == "'":
            i += 3
        elif c == "'" and nxt == "\\":
            i += 2
            while i < n and text[i] != "'":
                i += 1
            i += 1
        else:
            buf.append(c)
            i += 1
    return "".join(buf).split("\n")


def functions(path, with_tests):
    with open(path, encoding="utf-8") as f:
        lines = code_lines(f.read())
    found = []
    skip_until = -1
    for k, line in enumerate(lines):
        if k <= skip_until:
            continue
        if not with_tests and line.strip() == "#[cfg(test)]":
            nxt = next((l for l in lines[k + 1:] if l.strip()), "")
            if re.match(r"\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", nxt):
                skip_until = block_end(lines, k + 1)
                continue
        m = FN.match(line)
        if not m:
            continue
        end = block_end(lines, k)
        if end is not None:
            found.append((m.group(7), k + 1, end - k + 1))
    return found


def block_end(lines, start):
    """The line of the brace closing the first block opened at or after `start`
    (None if a `;` ends the item first)."""
    depth = 0
    opened = False
    for k in range(start, len(lines)):
        for ch in lines[k]:
            if ch == "{":
                depth += 1
                opened = True
            elif ch == "}":
                depth -= 1
                if opened and depth == 0:
                    return k
            elif ch == ";" and not opened and depth == 0:
                return None
    return None


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    with_tests = "--tests" in sys.argv
    limit = int(args[0]) if args else 145
    rows = []
    for root, dirs, files in os.walk("."):
        dirs[:] = [d for d in dirs if d not in ("target", ".git") and not d.startswith("t-")]
        parts = root.split(os.sep)
        if not with_tests and ("tests" in parts or "benches" in parts):
            continue
        for name in files:
            if name.endswith(".rs"):
                path = os.path.join(root, name)[2:]
                for fn, line, length in functions(path, with_tests):
                    if length > limit:
                        rows.append((length, path, line, fn))
    for length, path, line, fn in sorted(rows, reverse=True):
        print(f"{length:5} {path}:{line} {fn}")


if __name__ == "__main__":
    main()
