"""Every relative link of the user's pages resolves: README.md, docs/**/*.md and
plugins/**/README.md. A link's file (or folder) exists, and an anchor into a Markdown page
(`page.md#anchor`, or `#anchor` within the page) names one of its headings as GitHub
renders it: the heading's text lowercased, every character but letters, digits, `_`,
hyphens and spaces dropped, spaces turned to hyphens, and a repeated heading suffixed -1,
-2, ... in page order. Links with a scheme (https:, mailto:) are not followed; code blocks
and code spans hold no links. The pages are parsed by markdown-it-py (Debian's
python3-markdown-it), CommonMark with GitHub's tables."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parents[2]

# CommonMark plus GitHub's tables, whose cells hold most of the docs' links.
_MARKDOWN = MarkdownIt("commonmark").enable("table")
_HTML_ANCHOR = re.compile(r"<a\s[^>]*\b(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def pages(root: Path) -> list[Path]:
    """The pages whose links are checked."""
    found = [root / "README.md", *root.glob("docs/**/*.md"), *root.glob("plugins/**/README.md")]
    return sorted({p for p in found if p.is_file()})


def slug(text: str) -> str:
    """GitHub's anchor of a heading's rendered text, before the suffix of a repeated one."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def _rendered_text(inline: Token) -> str:
    """An inline token's text as rendered: code spans and link texts kept, markup dropped."""
    return "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))


def anchors(text: str) -> set[str]:
    """Every anchor a page offers: its headings' (repeats suffixed -1, -2, ...) and the
    names of its HTML anchors."""
    tokens = _MARKDOWN.parse(text)
    found: set[str] = set()
    repeats: dict[str, int] = {}
    for i, token in enumerate(tokens):
        if token.type in ("html_block", "html_inline"):
            found.update(_HTML_ANCHOR.findall(token.content))
        if token.type != "heading_open":
            continue
        base = slug(_rendered_text(tokens[i + 1]))
        repeats[base] = repeats.get(base, -1) + 1
        found.add(f"{base}-{repeats[base]}" if repeats[base] else base)
    return found


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of each inline link, image and reference definition outside
    code; an inline link's line is its block's first."""
    env: dict[str, dict[str, dict[str, str]]] = {}
    found: list[tuple[int, str]] = []
    for token in _MARKDOWN.parse(text, env):
        line = token.map[0] + 1 if token.map else 0
        for child in token.children or []:
            target = child.attrs.get("href") or child.attrs.get("src")
            if child.type in ("link_open", "image") and isinstance(target, str):
                found.append((line, target))
    lines = text.split("\n")
    for label, reference in env.get("references", {}).items():
        pattern = re.compile(rf"^ {{0,3}}\[{re.escape(label)}\]:", re.IGNORECASE)
        line = next((n + 1 for n, t in enumerate(lines) if pattern.match(t)), 0)
        found.append((line, reference["href"]))
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
