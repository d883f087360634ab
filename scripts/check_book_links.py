#!/usr/bin/env python3
"""Checks the built guide (`mdbook build docs`, in target/book) for broken internal links.

Every `href` and `src` in every HTML page that is not an external URL (a scheme such as
`https:` or `mailto:`) must name a file of the built book, and a `#fragment` must name an
`id` in that page. A `{{#include ...}}` or `{{#rustdoc_include ...}}` left in a page (an
include mdbook could not resolve), and an empty code block (an include whose anchor is
missing: mdbook includes nothing), are errors too. No network: external links are not
fetched.

    python3 scripts/check_book_links.py [BOOK_DIR]     # default: target/book

Exits 1 and lists each broken link (page, link, why) when there is one, 2 when BOOK_DIR has
no HTML, 0 otherwise.
"""

import html.parser
import pathlib
import re
import sys
import urllib.parse

SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
LEFTOVER_INCLUDE = re.compile(r"\{\{#(?:include|rustdoc_include|playground)[^}]*\}\}")
# A code block with nothing in it: an include whose anchor is missing (mdbook includes nothing).
EMPTY_CODE = re.compile(r"<pre><code[^>]*>\s*</code></pre>")


class Page(html.parser.HTMLParser):
    """The links and the ids of one HTML page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links = []
        self.ids = set()
        self.base = None

    def handle_starttag(self, tag, attrs):
        if tag == "base":
            self.base = dict(attrs).get("href")
            return
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            elif name in ("href", "src"):
                self.links.append(value)


def parse(path):
    page = Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def main():
    book = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/book").resolve()
    pages = sorted(book.rglob("*.html"))
    if not pages:
        print(f"check_book_links: no HTML under {book}: run `mdbook build docs` first", file=sys.stderr)
        return 2
    parsed = {}

    def ids_of(path):
        if path not in parsed:
            parsed[path] = parse(path)
        return parsed[path].ids

    broken = []
    for page in pages:
        text = page.read_text(encoding="utf-8", errors="replace")
        for leftover in LEFTOVER_INCLUDE.findall(text):
            broken.append((page, leftover, "an include mdbook did not resolve"))
        for _ in EMPTY_CODE.findall(text):
            broken.append((page, "an empty code block", "an include whose anchor or lines are missing?"))
        info = parsed.setdefault(page, parse(page))
        for link in info.links:
            if SCHEME.match(link) or link.startswith("//"):
                continue
            target, _, fragment = link.partition("#")
            target = urllib.parse.unquote(target.split("?", 1)[0])
            if target:
                # A root-absolute link, or a relative one under `<base href="/">` (mdbook's
                # 404 page), starts at the book's root: the site serves the book at `/`.
                if target.startswith("/") or (info.base or "").startswith("/"):
                    start = book / (info.base or "/").lstrip("/")
                    path = (start / target.lstrip("/")).resolve()
                else:
                    path = (page.parent / target).resolve()
                if path.is_dir():
                    path = path / "index.html"
                if book not in path.parents and path != book:
                    broken.append((page, link, "points outside the book"))
                    continue
                if not path.is_file():
                    broken.append((page, link, "no such file in the book"))
                    continue
            else:
                path = page
            if fragment and path.suffix == ".html" and urllib.parse.unquote(fragment) not in ids_of(path):
                broken.append((page, link, f"no id {fragment!r} in {path.relative_to(book)}"))
    for page, link, why in broken:
        print(f"{page.relative_to(book)}: {link}: {why}", file=sys.stderr)
    if broken:
        print(f"check_book_links: {len(broken)} broken link(s) in {len(pages)} pages", file=sys.stderr)
        return 1
    print(f"check_book_links: {len(pages)} pages, every internal link resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
