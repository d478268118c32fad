#!/usr/bin/env python3
"""Checks that docs/configuration.md describes exactly the keys of the core schema.

The schema (core/common/config/schema.cc) is the only source of a key and its default.
The reference page lists core keys in tables whose rows start `| \\`key\\` | type | default |`,
before its "## Plugin options" heading (plugins declare their own options). Fails (exit 1,
one line per problem) when
  - a schema key has no row in the page;
  - the page has a row for a key the schema does not declare;
  - a row's default is not the schema's default (lists are compared without brackets,
    an empty default may be written as an empty cell);
  - an enum key (KeyType::kEnum) is not typed `enum` or its bounds cell does not name
    each allowed word in backquotes, or a row typed `enum` is not an enum key.

Usage: check_config_doc.py SOURCE_DIR     check the tree
       check_config_doc.py --self-test    check the checker on planted mistakes
"""
import os
import re
import sys

SCHEMA_ROW = re.compile(r'\{"([a-z_][a-z0-9_.]*)",\s*KeyType::(\w+),\s*"((?:[^"\\]|\\.)*)"')
DOC_ROW = re.compile(r"^\|\s*`([a-z_][a-z0-9_.]*)`\s*\|\s*([^|]*)\|\s*([^|]*)\|\s*([^|]*)")
# An enum entry: its allowed words are the entry's last string, after the help text.
ENUM_ROW = re.compile(r'\{"([a-z_][a-z0-9_.]*)",\s*KeyType::kEnum,\s*"[^"]*",\s*[^,]+,\s*[^,]+,'
                      r'\s*(?:"(?:[^"\\]|\\.)*"\s*)+,\s*"([^"]*)"\s*\}')
PLUGIN_SECTION = re.compile(r"^##\s+Plugin options")


def schema_keys(text):
    """key -> default, in the order of the schema table."""
    return {m.group(1): m.group(3) for m in SCHEMA_ROW.finditer(text)}


def enum_keys(text):
    """key -> its allowed words, for the kEnum keys."""
    return {m.group(1): m.group(2).split(",") for m in ENUM_ROW.finditer(text)}


def doc_keys(text):
    """key -> (line number, default cell, type cell, bounds cell) of the core tables."""
    out = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if PLUGIN_SECTION.match(line):
            break
        m = DOC_ROW.match(line)
        if m:
            out[m.group(1)] = (lineno, m.group(3).strip(), m.group(2).strip(), m.group(4).strip())
    return out


def normal_default(cell):
    cell = cell.strip().strip("`")
    if cell.startswith("[") and cell.endswith("]"):
        cell = cell[1:-1]
    return "" if cell in ('""', "(empty)") else cell


def check(schema_text, doc_text, doc_name="docs/configuration.md"):
    schema = schema_keys(schema_text)
    doc = doc_keys(doc_text)
    problems = []
    for key, default in schema.items():
        if key not in doc:
            problems.append(f"{doc_name}: schema key '{key}' (default '{default}') is not described")
        elif normal_default(doc[key][1]) != default:
            problems.append(f"{doc_name}:{doc[key][0]}: '{key}' default is {doc[key][1] or 'empty'}, "
                            f"the schema says '{default}'")
    enums = enum_keys(schema_text)
    for m in SCHEMA_ROW.finditer(schema_text):
        if m.group(2) == "kEnum" and m.group(1) not in enums:
            problems.append(f"schema.cc: '{m.group(1)}': cannot read its allowed words (the entry's last string)")
    for key, (lineno, _, type_cell, bounds) in doc.items():
        if key not in schema:
            problems.append(f"{doc_name}:{lineno}: '{key}' is not a key of the schema")
        elif key in enums:
            missing = [w for w in enums[key] if f"`{w}`" not in bounds]
            if type_cell != "enum" or missing:
                problems.append(f"{doc_name}:{lineno}: '{key}' is an enum of {', '.join(enums[key])}: "
                                f"type must be enum (is {type_cell}) and the bounds must name each word")
        elif type_cell == "enum":
            problems.append(f"{doc_name}:{lineno}: '{key}' is typed enum but is not an enum key of the schema")
    return problems


def self_test():
    schema = '{"a.b", KeyType::kInt, "3", 0, 9, "x"},\n{"c", KeyType::kStringList, "p,q", kNoMin, kNoMax, "y"},\n' \
             '{"d.e", KeyType::kString, "", 0, 9, "z"},\n' \
             '{"h", KeyType::kEnum, "on", kNoMin, kNoMax,\n "help " "text", "on,off"},\n'
    good = "| key | type | default |\n|---|---|---|\n| `a.b` | int | `3` | 0 … 9 | x |\n" \
           "| `c` | list | `[p,q]` | | y |\n| `d.e` | string |  | | z |\n| `h` | enum | `on` | `on` or `off` | w |\n" \
           "## Plugin options\n| `conninfo` | string | `` |\n"
    bad = {
        "missing": good.replace("| `a.b` | int | `3` | 0 … 9 | x |\n", ""),
        "unknown": good + "",
        "default": good.replace("`3`", "`4`"),
        "enum type": good.replace("| `h` | enum |", "| `h` | string |"),
        "enum word": good.replace("`on` or `off`", "`on`"),
        "not enum": good.replace("| `d.e` | string |", "| `d.e` | enum |"),
    }
    bad["unknown"] = good.replace("## Plugin options", "| `f.g` | int | `1` | | w |\n## Plugin options")
    ok = True
    if check(schema, good):
        print("self-test: a clean page was refused:", *check(schema, good), sep="\n  ")
        ok = False
    for name, text in bad.items():
        if not check(schema, text):
            print(f"self-test: the mistake '{name}' was not found")
            ok = False
    print("self-test passed" if ok else "self-test FAILED")
    return 0 if ok else 1


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2:
        print(__doc__)
        return 2
    root = argv[1]
    with open(os.path.join(root, "core/common/config/schema.cc"), encoding="utf-8") as f:
        schema_text = f.read()
    with open(os.path.join(root, "docs/configuration.md"), encoding="utf-8") as f:
        doc_text = f.read()
    problems = check(schema_text, doc_text)
    for p in problems:
        print(p)
    print(f"{len(schema_keys(schema_text))} schema keys, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
