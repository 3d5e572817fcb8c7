"""Every relative link of the user's pages resolves: README.md, docs/**/*.md and
plugins/**/README.md. A link's file (or folder) exists, and an anchor into a Markdown page
(`page.md#anchor`, or `#anchor` within the page) names one of its headings as GitHub
renders it: the heading's text lowercased, every character but letters, digits, `_`,
hyphens and spaces dropped, spaces turned to hyphens, and a repeated heading suffixed -1,
-2, ... in page order. Links with a scheme (https:, mailto:) are not followed; code blocks
and code spans hold no links."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_INLINE_LINK = re.compile(r"\]\(\s*(<[^>\n]*>|[^)\s]*)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>\n]*>|\S+)", re.MULTILINE)
_HTML_ANCHOR = re.compile(r"<a\s[^>]*\b(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def pages(root: Path) -> list[Path]:
    """The pages whose links are checked."""
    found = [root / "README.md", *root.glob("docs/**/*.md"), *root.glob("plugins/**/README.md")]
    return sorted({p for p in found if p.is_file()})


def prose_lines(text: str) -> list[str]:
    """The page's lines with fenced code blocks blanked (a line kept for each, so that line
    numbers stay the page's)."""
    lines = text.split("\n")
    fence = ""
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip(fence[0] + " \t"):
                fence = ""
            lines[i] = ""
        elif m:
            fence = m.group(1)
            lines[i] = ""
    return lines


def heading_text(raw: str) -> str:
    """A heading's text as rendered: code spans, links and emphasis reduced to their text."""
    parts: list[str] = []
    for i, part in enumerate(re.split(r"(`+.+?`+)", raw)):
        if i % 2:  # a code span: its text as it is
            parts.append(part.strip("`").strip())
            continue
        part = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", part)
        part = re.sub(r"<[^>]+>", "", part)
        parts.append(re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", part))
    return "".join(parts).strip()


def slug(raw: str) -> str:
    """GitHub's anchor of a heading, before the suffix of a repeated one."""
    text = heading_text(raw).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a page offers: its headings' (repeats suffixed -1, -2, ...) and the
    names of its HTML anchors."""
    lines = prose_lines(text)
    found: set[str] = set()
    repeats: dict[str, int] = {}
    for i, line in enumerate(lines):
        m = _ATX.match(line)
        if m:
            raw = m.group(2) or ""
        elif i > 0 and _SETEXT.match(line) and _is_paragraph(lines[i - 1]) and (i < 2 or not lines[i - 2].strip()):
            raw = lines[i - 1]
        else:
            continue
        base = slug(raw)
        if base in repeats:
            repeats[base] += 1
            found.add(f"{base}-{repeats[base]}")
        else:
            repeats[base] = 0
            found.add(base)
    found.update(_HTML_ANCHOR.findall(text))
    return found


def _is_paragraph(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not re.match(r"([-*+>|#]|\d+[.)])", stripped)


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of each inline link, image and reference definition outside
    code."""
    lines = prose_lines(text)
    found: list[tuple[int, str]] = []
    # A code span may cross a line break but not a paragraph: strip them paragraph by paragraph.
    start = 0
    for end in [*(i for i, line in enumerate(lines) if not line.strip()), len(lines)]:
        block = "\n".join(lines[start:end])
        block = _CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), block)
        for pattern in (_INLINE_LINK, _REFERENCE):
            for m in pattern.finditer(block):
                target = m.group(1).strip("<>")
                found.append((start + block.count("\n", 0, m.start()) + 1, target))
        start = end + 1
    return sorted(found)


def broken_links(root: Path) -> list[str]:
    """'page:line: target: why' for each relative link of the pages that does not resolve."""
    problems: list[str] = []
    offered: dict[Path, set[str]] = {}

    def anchors_of(page: Path) -> set[str]:
        if page not in offered:
            offered[page] = anchors(page.read_text(encoding="utf-8"))
        return offered[page]

    for page in pages(root):
        for line, target in links(page.read_text(encoding="utf-8")):
            if not target or _SCHEME.match(target):
                continue
            path, _, anchor = target.partition("#")
            path = unquote(path)
            if not path:
                dest = page
            elif path.startswith("/"):
                dest = root / path.lstrip("/")
            else:
                dest = page.parent / path
            where = f"{page.relative_to(root)}:{line}: {target}"
            if not dest.exists():
                problems.append(f"{where}: {path} does not exist")
            elif anchor and dest.is_file() and dest.suffix == ".md" and unquote(anchor) not in anchors_of(dest):
                shown = os.path.relpath(dest, root)
                problems.append(f"{where}: no heading of {shown} has the anchor #{anchor}")
    return problems


def test_every_relative_link_resolves() -> None:
    assert len(pages(ROOT)) > 3
    problems = broken_links(ROOT)
    assert not problems, "broken links:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("## llama.cpp's sampler chain, on the CPU", "llamacpps-sampler-chain-on-the-cpu"),
        ("### Quick budget, CPU (V = 32,000; seed 20261130)", "quick-budget-cpu-v--32000-seed-20261130"),
        (
            "## FlashInfer 0.7.2.post1's cake sampler (`flashinfer.cake_sampling`), on the H200",
            "flashinfer-072post1s-cake-sampler-flashinfercake_sampling-on-the-h200",
        ),
        ("## Shipped code: [vLLM](https://vllm.ai) *and* **SGLang**", "shipped-code-vllm-and-sglang"),
        ("### `__init__` and _emphasis_", "__init__-and-emphasis"),
    ],
)
def test_anchors_follow_github(heading: str, anchor: str) -> None:
    assert anchors(heading + "\n") == {anchor}


def test_repeated_headings_and_code_blocks() -> None:
    page = "# A\n\n## Tests\n\n```sh\n# not a heading\n```\n\n## Tests\n\nTitle\n-----\n\n### Tests\n"
    assert anchors(page) == {"a", "tests", "tests-1", "title", "tests-2"}


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "README.md").write_text(
        "[ok](docs/a.md#one) [ok](docs/sub/) [web](https://example.com/x.md)\n"
        "`[in code](missing.md)`\n\n```\n[in a block](missing.md)\n```\n"
    )
    (tmp_path / "docs" / "a.md").write_text(
        "# One\n\n[ok](#one) [gone](#two) [ok](sub/b.md#three-1)\n\n[ref]: ../nowhere.md\n"
    )
    (tmp_path / "docs" / "sub" / "b.md").write_text("# Three\n\n## Three\n\n[gone](../c.md#one)\n")
    assert broken_links(tmp_path) == [
        "docs/a.md:3: #two: no heading of docs/a.md has the anchor #two",
        "docs/a.md:5: ../nowhere.md: ../nowhere.md does not exist",
        "docs/sub/b.md:5: ../c.md#one: ../c.md does not exist",
    ]
