#!/usr/bin/env python3
"""The size rules of docs/CONTRIBUTING.md, checked: no source file over --max-file lines, no
function body over --max-function lines.

  scripts/check_sizes.py [--max-file 600] [--max-function 80] [--files-only] PATH...

PATH is a file or a folder (its .h, .cc, .cu, .cuh files, recursively). A function is a
brace-balanced body whose header ends like a function's (`) {`, `) const {`, a constructor's
initializer list, `-> T {`), outside any other function body: a lambda or local class inside a
function counts toward that function. Its length runs from the line of its opening brace to
the line of its closing one. Comments, string and character literals (raw strings too) are
blanked first, so braces in them do not count. Prints one line per file or function over its
limit (`path:line: function NAME is N lines`) and exits 1 when there is any; a declarative
table (a function that only lists entries) is an accepted exception the reader judges.
"""

import argparse
import os
import re
import sys

SOURCE_ENDINGS = (".h", ".cc", ".cu", ".cuh")
CONTROL = re.compile(r"(^|[^\w])(if|for|while|switch|catch|do|else|try)\s*(\(|$)")
TYPE_HEAD = re.compile(r"(^|[\s;])(namespace|class|struct|union|enum)\b[^()]*$")
FUNCTION_END = re.compile(
    r"\)\s*(const|volatile|noexcept(\s*\([^()]*\))?|override|final|mutable|&&?|->[^;{}]*|\s)*$")
INIT_LIST = re.compile(r"\)\s*(noexcept\s*)?:\s*[^;]*[)}]\s*$")


def blank_literals(text):
    """Comments and literals replaced by spaces (newlines kept, so line numbers hold)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^()\\\s]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator: 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "#" and (i == 0 or text[i - 1] == "\n"):  # a preprocessor line (and its continuations)
            j = i
            while True:
                k = text.find("\n", j)
                if k < 0:
                    j = n
                    break
                if text[k - 1] != "\\":
                    j = k
                    break
                j = k + 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_name(header):
    m = re.search(r"([~\w:<>]+)\s*\([^()]*(\([^()]*\)[^()]*)*\)[^()]*$", header)
    if m:
        return m.group(1)
    return header.strip().split("\n")[-1][:60]


def functions(text):
    """(name, first line, length) of every top-level function body in `text`."""
    code = blank_literals(text)
    found = []
    stack = []  # "scope" (namespace / class / extern), "function", "other"
    header = []  # the text since the last statement boundary at scope level
    line = 1
    start_line = 0
    name = ""
    depth_in_function = 0
    for c in code:
        if c == "\n":
            line += 1
        if depth_in_function:
            if c == "{":
                depth_in_function += 1
            elif c == "}":
                depth_in_function -= 1
                if depth_in_function == 0:
                    found.append((name, start_line, line - start_line + 1))
                    header = []
            continue
        if c == "{":
            h = "".join(header)
            tail = h[-400:]
            if TYPE_HEAD.search(tail) or re.search(r'extern\s*$', tail):
                stack.append("scope")
                header = []
            elif not CONTROL.search(tail.split(";")[-1]) and (FUNCTION_END.search(tail) or INIT_LIST.search(tail)):
                depth_in_function = 1
                start_line = line
                name = function_name(tail)
            else:
                stack.append("other")
                header.append(c)
            continue
        if c == "}":
            kind = stack.pop() if stack else "scope"
            if kind == "other":
                header.append(c)
            else:
                header = []
            continue
        if c == ";" and (not stack or stack[-1] == "scope"):
            header = []
            continue
        header.append(c)
    return found


def source_files(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not d.startswith(("build", ".")))
            for f in sorted(files):
                if f.endswith(SOURCE_ENDINGS):
                    yield os.path.join(root, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--max-file", type=int, default=600)
    ap.add_argument("--max-function", type=int, default=80)
    ap.add_argument("--files-only", action="store_true", help="check only the files' lengths")
    args = ap.parse_args()
    over = 0
    for path in source_files(args.paths):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.count("\n")
        if lines > args.max_file:
            print(f"{path}:1: file is {lines} lines (limit {args.max_file})")
            over += 1
        if args.files_only:
            continue
        for name, first, length in functions(text):
            if length > args.max_function:
                print(f"{path}:{first}: function {name} is {length} lines (limit {args.max_function})")
                over += 1
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
