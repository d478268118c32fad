#!/usr/bin/env python3
"""Fails when a plugin includes anything of the core but core/include/lcc.

Every #include line of every source under PLUGINS/<name>/ must be one of:
  - a public header, "lcc/..." or <lcc/...>, that exists under CORE/include;
  - a quoted file of the plugin itself (next to the including file, or in the
    plugin's folder);
  - an angle include of an outside library that does not name a core folder.
".." in a path is refused (it would reach the core through the source tree).
Prints one line per violation and a summary; exit status 1 when there is any.
"""
import argparse
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SUFFIXES = {".h", ".hpp", ".cc", ".cpp", ".c", ".in"}


def violation(path, plugin_dir, core, quote, name):
    if ".." in pathlib.PurePosixPath(name).parts:
        return "reaches outside the plugin with '..'"
    if name.startswith("lcc/"):
        if (core / "include" / name).is_file():
            return None
        return "is not a header of core/include/lcc"
    if quote == '"':
        if (path.parent / name).is_file() or (plugin_dir / name).is_file():
            return None
        if (core / name).exists():
            return "is a core internal (plugins include only lcc/)"
        return "is neither the plugin's own file nor a header of core/include/lcc"
    if (core / name).exists():
        return "is a core internal (plugins include only lcc/)"
    return None


def check(plugins, core):
    problems = []
    for plugin_dir in sorted(p for p in plugins.iterdir() if p.is_dir()):
        for path in sorted(plugin_dir.rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                why = violation(path, plugin_dir, core, m.group(1), m.group(2))
                if why:
                    problems.append(f"{path}:{number}: {m.group(2)} {why}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plugins", required=True, type=pathlib.Path)
    ap.add_argument("--core", required=True, type=pathlib.Path)
    args = ap.parse_args()
    problems = check(args.plugins, args.core)
    for p in problems:
        print(p)
    print(f"{len(problems)} include lines outside lcc/ in {args.plugins}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
