#!/usr/bin/env python3
"""The shape of the code, for reviews of its structure: the classes with the
most data members (and how many .cc files define their member functions)
and the longest functions, over the library's own sources.

    python3 scripts/shape-report.py [--top N] [DIR...]

DIRs default to the library and its adapters (plugin, oncrpc, bridge,
protobuf, tools). Tests, benchmarks, examples and interop are left out:
their length is not what a maintainer of the library holds. Universal
Ctags (Debian's universal-ctags) finds the definitions; a function's length
is its definition's line span, braces and comments included.
"""
import argparse
import collections
import json
import os
import subprocess
import sys

DEFAULT_DIRS = ["plugin", "oncrpc", "bridge", "protobuf", "tools"]


def tags(dirs):
    out = subprocess.run(
        ["ctags", "--output-format=json", "--fields=+neKZ", "--languages=C++",
         "--kinds-C++=+m", "--extras=-F", "-R", "-f", "-"] + dirs,
        check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        tag = json.loads(line)
        if tag.get("_type") == "tag":
            yield tag


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument("dirs", nargs="*", default=DEFAULT_DIRS)
    args = parser.parse_args()
    dirs = [d for d in args.dirs if os.path.isdir(d)]
    if not dirs:
        sys.exit("shape-report: none of the directories exists here")

    members = collections.Counter()
    member_files = collections.defaultdict(set)
    functions = []
    for tag in tags(dirs):
        kind, scope = tag.get("kind"), tag.get("scope", "")
        path = tag["path"]
        if kind == "member" and tag.get("scopeKind") in ("class", "struct"):
            members[scope] += 1
        elif kind == "function" and "end" in tag:
            if scope and path.endswith(".cc"):
                member_files[scope].add(path)
            name = f"{scope}::{tag['name']}" if scope else tag["name"]
            functions.append((tag["end"] - tag["line"] + 1, name,
                              f"{path}:{tag['line']}"))

    print(f"Classes with the most data members ({', '.join(dirs)}):")
    print("| class | data members | .cc files defining its functions |")
    print("|---|---|---|")
    for scope, count in members.most_common(args.top):
        print(f"| `{scope}` | {count} | {len(member_files.get(scope, ()))} |")
    print()
    print("Longest functions:")
    print("| function | lines | where |")
    print("|---|---|---|")
    for length, name, where in sorted(functions, reverse=True)[:args.top]:
        print(f"| `{name}` | {length} | {where} |")
    over = sum(1 for f in functions if f[0] > 80)
    print()
    print(f"{over} of {len(functions)} functions are longer than 80 lines.")


if __name__ == "__main__":
    main()
