#!/usr/bin/env python3
"""Checks that the tree's references to documents stay inside the tree and resolve.

Fails (exit 1, one line per problem: file:line: why) when a tracked file
  - points at the contract documents that used to live outside the repository
    (the old shared spec folder, the old user-surface file);
  - names a `*.md` file that is neither a tracked path from the repository root nor
    one relative to the citing file's folder;
  - cites `docs/X.md §N` (also `§N–M`, `§N, §M`) where docs/X.md has no heading for
    section N (`## §N ...`, `### §N.M ...` or `## N. ...`);
  - cites `docs/architecture.md rule N` / `rules N–M` where the document has no
    `### Rule N` heading;
  - in a `*.md` file, names a path of the tree (`core/…`, `plugins/…`, `tests/…`, `bench/…`,
    `scripts/…`, `etc/…`, `fuzz/…`, `cmake/…`, `docs/…`) that is neither a tracked file nor
    a folder holding one. `{a,b}` alternatives and `*` patterns are expanded; a path with a
    placeholder (`plugins/<name>/`) or behind another folder (`/etc/lcc/…`,
    `<prefix>/etc/…`) is not a path of the tree and is not checked;
  - README.md's "What is where" table leaves out a folder of `core/` or a plugin of
    `plugins/`.

Usage: check_doc_refs.py SOURCE_DIR        check the tree
       check_doc_refs.py --self-test       check the checker on planted mistakes
"""
import fnmatch
import os
import re
import subprocess
import sys

# Spelled in pieces so that this file does not trip its own check.
FORBIDDEN = ["../" + "shared", "/work/" + "shared", "shared/" + "spec", "shared/" + "seeds",
             "surface" + ".md", "spec/" + "protocol.md"]

MD_REF = re.compile(r"(?<![\w./-])((?:\.{1,2}/)*[A-Za-z0-9_][\w./-]*\.md)(?![\w-])")
SECTION_CITE = re.compile(r"(?<![\w./-])((?:\.{1,2}/)*[\w./-]*\.md)((?:\s*(?:,|and)?\s*§\d+(?:\.\d+)*(?:\s*[–-]\s*\d+(?:\.\d+)*)?)+)")
SECTION_NUM = re.compile(r"§(\d+(?:\.\d+)*)(?:\s*[–-]\s*(\d+(?:\.\d+)*))?")
RULE_CITE = re.compile(r"(?<![\w./-])((?:\.{1,2}/)*[\w./-]*architecture\.md)\s+rules?\s+(\d+(?:\s*(?:[–,-]|and)\s*\d+)*)")
HEADING_SECTION = re.compile(r"^#{1,6}\s+§?(\d+(?:\.\d+)*)[.\s]")
HEADING_RULE = re.compile(r"^#{1,6}\s+Rule\s+(\d+)\b")
TREE_PATH = re.compile(r"(?<![\w./<>$}-])((?:core|plugins|tests|bench|scripts|etc|fuzz|cmake|docs)/[\w./*{},<>-]*)")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"], check=True, capture_output=True).stdout
        files = [f for f in out.decode("utf-8", "replace").split("\0") if f]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x not in (".git", "build") and not x.startswith("build-")]
        for n in names:
            files.append(os.path.relpath(os.path.join(d, n), root))
    return files


def read_text(path):
    try:
        with open(path, "rb") as f:
            data = f.read(2_000_000)
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def resolve(ref, citing, known):
    """The tracked path `ref` names, seen from the file `citing`, or None."""
    candidates = [os.path.normpath(ref.lstrip("/")), os.path.normpath(os.path.join(os.path.dirname(citing), ref))]
    for c in candidates:
        if c in known:
            return c
    return None


def anchors(text):
    sections, rules = set(), set()
    for line in text.splitlines():
        m = HEADING_SECTION.match(line)
        if m:
            sections.add(m.group(1))
        m = HEADING_RULE.match(line)
        if m:
            rules.add(int(m.group(1)))
    return sections, rules


def expand_sections(cites):
    """'§1–2, §3.1' -> ['1', '2', '3.1']."""
    out = []
    for m in SECTION_NUM.finditer(cites):
        a, b = m.group(1), m.group(2)
        if b and "." not in a and "." not in b and int(a) <= int(b):
            out += [str(n) for n in range(int(a), int(b) + 1)]
        else:
            out += [a] + ([b] if b else [])
    return out


def expand_rules(text):
    out = []
    for m in re.finditer(r"(\d+)(?:\s*[–-]\s*(\d+))?", text):
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) else a
        out += list(range(a, max(a, b) + 1))
    return out


def tree_path_problems(line, known, folders):
    """The paths of the tree that `line` names and that do not exist."""
    out = []
    for m in TREE_PATH.finditer(line):
        path = m.group(1).rstrip(".,:;)")
        if "<" in path or ">" in path:
            continue  # a placeholder
        alternatives = [path]
        brace = re.search(r"\{([^}]*)\}", path)
        if brace:
            alternatives = [path[:brace.start()] + a + path[brace.end():] for a in brace.group(1).split(",")]
        for a in alternatives:
            a = a.rstrip("/")
            exists = any(fnmatch.fnmatchcase(k, a) for k in known) if "*" in a else a in known or a in folders
            if not exists:
                out.append(a)
    return out


def check(files, contents):
    """files: tracked paths; contents: path -> text (None for binary). Returns problems."""
    known = set(files)
    folders = {os.path.dirname(f) for f in files}
    for f in list(folders):
        while f:
            f = os.path.dirname(f)
            folders.add(f)
    doc_anchors = {}

    def anchors_of(path):
        if path not in doc_anchors:
            doc_anchors[path] = anchors(contents.get(path) or "")
        return doc_anchors[path]

    problems = []
    for path in files:
        text = contents.get(path)
        if text is None:
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            where = f"{path}:{lineno}"
            for bad in FORBIDDEN:
                if bad in line:
                    problems.append(f"{where}: refers to '{bad}', which is outside the repository")
            for m in MD_REF.finditer(line):
                ref = m.group(1)
                if ref.startswith("http") or "://" in line[max(0, m.start() - 60):m.start()]:
                    continue  # part of a URL
                if line[max(0, m.start() - 40):m.start()].rstrip("/").endswith("}") or "}share/" in line:
                    continue  # an install path built from a variable (${prefix}share/doc/...)
                if resolve(ref, path, known) is None:
                    problems.append(f"{where}: '{ref}' is not a file of this repository")
            if path.endswith(".md"):
                for missing in tree_path_problems(line, known, folders):
                    problems.append(f"{where}: '{missing}' is not a file or folder of this repository")
            for m in SECTION_CITE.finditer(line):
                target = resolve(m.group(1), path, known)
                if target is None or not target.startswith("docs/"):
                    continue
                sections, _ = anchors_of(target)
                for n in expand_sections(m.group(2)):
                    if n not in sections:
                        problems.append(f"{where}: {target} has no section §{n}")
            for m in RULE_CITE.finditer(line):
                target = resolve(m.group(1), path, known)
                if target is None:
                    continue
                _, rules = anchors_of(target)
                for n in expand_rules(m.group(2)):
                    if n not in rules:
                        problems.append(f"{where}: {target} has no rule {n}")
    return problems


def layout_problems(files, readme):
    """Folders of core/ and plugins/ that README.md's "What is where" table leaves out."""
    table = readme.split("## What is where", 1)[1] if "## What is where" in readme else ""
    table = table.split("\n## ", 1)[0]
    problems = []
    core = sorted({f.split("/")[1] for f in files if f.startswith("core/") and f.count("/") >= 2})
    for d in core:
        if not re.search(r"`core/" + re.escape(d) + r"[/`]", table):
            problems.append(f"README.md: \"What is where\" does not name core/{d}")
    plugins = sorted({f.split("/")[1] for f in files if f.startswith("plugins/") and f.count("/") >= 2})
    for p in plugins:
        if not re.search(r"(?<![\w-])" + re.escape(p) + r"(?![\w-])", table):
            problems.append(f"README.md: \"What is where\" does not name the plugin {p}")
    return problems


def self_test():
    docs = {
        "docs/protocol.md": "# P\n## §0 Conventions\n## §1 One\n### §1.2 Set\n## §2 Codes\n",
        "docs/architecture.md": "# A\n### Rule 1 — one\n### Rule 3 — three\n",
        "docs/other.md": "# O\n## 1. First\n## 2. Second\n",
        "core/x/README.md": "see README.md here\n",
        "core/x/a.cc": "",
        "core/x/a.h": "",
    }
    good = {
        "a.cc": "// docs/protocol.md §1.2 and docs/protocol.md §1–2, docs/architecture.md rule 3\n"
                "// docs/other.md §2 core/x/README.md docs/architecture.md rules 1, 3\n",
        "n.md": "core/x/a.{h,cc}, core/x/*.cc, core/x/, (core/x). plugins/<name>/x /etc/lcc/lcc.yaml "
                "<prefix>/etc/lcc/a ${prefix}/etc/b\n",
    }
    bad = {
        "b.cc": "// docs/protocol.md §3\n",
        "c.cc": "// docs/architecture.md rules 1–3\n",
        "d.md": "see docs/missing.md\n",
        "e.md": "see the spec in ../" + "shared/spec/x.txt\n",
        "f.md": "see " + "surface" + ".md\n",
        "g.md": "see performance-limits.md §3\n",
        "h.cc": "// docs/protocol.md §1, §4\n",
        "i.md": "docs/other.md §3\n",
        "j.md": "see core/x/b.cc\n",
        "k.md": "the files core/x/a.{h,cc,txt}\n",
        "l.md": "all of core/y/*.cc\n",
        "m.md": "in core/z/.\n",
    }
    ok = True
    files = list(docs) + list(good)
    problems = check(files, {**docs, **good})
    if problems:
        print("self-test: a clean tree was refused:", *problems, sep="\n  ")
        ok = False
    for name, text in bad.items():
        files = list(docs) + [name]
        if not check(files, {**docs, name: text}):
            print(f"self-test: the mistake in {name!r} was not found: {text.strip()}")
            ok = False
    layout = ["core/a/x.cc", "core/b/y.cc", "plugins/p-one/z.cc", "core/CMakeLists.txt"]
    readme = "## What is where\n| `core/a`, `core/b/` | x |\n| `plugins/` | p-one |\n## Next\n"
    if layout_problems(layout, readme):
        print("self-test: a complete README table was refused:", layout_problems(layout, readme))
        ok = False
    if len(layout_problems(layout + ["core/c/w.cc", "plugins/p-two/v.cc"], readme)) != 2:
        print("self-test: a folder and a plugin missing from README's table were not both found")
        ok = False
    print("self-test passed" if ok else "self-test FAILED")
    return 0 if ok else 1


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2:
        print(__doc__)
        return 2
    root = os.path.abspath(argv[1])
    me = os.path.relpath(os.path.abspath(__file__), root)  # the one file that names the mistakes
    files = [f for f in tracked_files(root) if f != me and os.path.isfile(os.path.join(root, f))]
    contents = {f: read_text(os.path.join(root, f)) for f in files}
    problems = check(files, contents)
    if contents.get("README.md"):
        problems += layout_problems(files, contents["README.md"])
    for p in problems:
        print(p)
    print(f"{len(files)} files checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
