"""Docstrings as Markdown, for the op gallery (``gallery.py``) and the API reference
(``griffe_augjax.py``).

augjax's docstrings are Google style with reST inline markup: roles (``:func:`x```,
``:class:`~augjax.Chain```), double-backtick literals, ``Params:`` / ``Deviation:`` lead-ins
inside paragraphs, ``Args:`` / ``Raises:`` sections and the odd ``::`` literal block.
:func:`inline` turns the inline markup into Markdown (code spans); :func:`to_markdown` turns a
whole docstring into Markdown paragraphs, lists and code blocks, every wrapped line joined
into its paragraph (nothing is cut, nothing shows as raw reST).
"""

from __future__ import annotations

import inspect
import re

#: ``:role:`target``` (Sphinx roles, with an optional domain: ``:py:func:``).
_ROLE = re.compile(r":(?:[a-z]+:)?[a-z]+:`([^`]+)`")
#: ````literal```` (reST) -> a Markdown code span.
_LITERAL = re.compile(r"``(.+?)``")
#: A Google section header alone on its line.
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Yields|Raises|Warns|Attributes|"
                      r"Examples?|Notes?|See Also|References?):\s*$")
_BULLET = re.compile(r"^([-*+]|\d+[.)])\s+")


def _role(match: re.Match) -> str:
    target = match.group(1)
    if "<" in target and target.endswith(">"):  # :func:`text <target>`
        target = target[:target.index("<")].strip()
    if target.startswith("~"):
        target = target[1:].rsplit(".", 1)[-1]
    return f"``{target}``"


def roles(text: str) -> str:
    """``text`` with each reST role as a double-backtick literal (which Markdown shows as code):
    what the API reference's docstrings need, the rest being Markdown already."""
    return _ROLE.sub(_role, text)


def _escape(text: str) -> str:
    """Markdown-escapes prose (outside code spans): emphasis stars, link brackets, HTML."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([*\[\]_])", r"\\\1", text)


def inline(text: str) -> str:
    """``text`` with reST roles and double-backtick literals as Markdown code spans; the prose
    around them escaped so that it renders as written."""
    text = roles(text)
    out, pos = [], 0
    for m in _LITERAL.finditer(text):
        out.append(_escape(text[pos:m.start()]))
        code = m.group(1)
        fence = "``" if "`" in code else "`"
        pad = " " if code.startswith("`") or code.endswith("`") else ""
        out.append(f"{fence}{pad}{code}{pad}{fence}")
        pos = m.end()
    rest = text[pos:]
    # a lone single-backtick span (Markdown-style in a docstring) stays code
    parts = rest.split("`")
    if len(parts) % 2 == 1 and len(parts) > 1:
        rest = "".join(_escape(p) if i % 2 == 0 else f"`{p}`" for i, p in enumerate(parts))
    else:
        rest = _escape(rest)
    out.append(rest)
    return "".join(out)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _items(lines: list[str]) -> list[str]:
    """The entries of a section body or a list: a new entry at the base indentation, deeper
    lines continue it."""
    base = min((_indent(ln) for ln in lines if ln.strip()), default=0)
    items: list[str] = []
    for ln in lines:
        if not ln.strip():
            continue
        if _indent(ln) <= base or not items:
            items.append(ln.strip())
        else:
            items[-1] += " " + ln.strip()
    return items


def _entry(item: str, section: str) -> str:
    """One section entry: ``name: text`` -> ``- `name`: text``."""
    m = re.match(r"^(\*{0,2}[\w.]+)(\s*\(([^)]*)\))?:\s+(.*)$", item)
    if m and section not in ("Returns", "Yields", "Examples", "Example", "Notes", "Note"):
        kind = f" ({inline(m.group(3))})" if m.group(3) else ""
        return f"- `{m.group(1)}`{kind}: {inline(m.group(4))}"
    return f"- {inline(item)}" if section not in ("Returns", "Yields") else inline(item)


def to_markdown(doc: str) -> str:
    """A docstring as Markdown: paragraphs joined onto one line each, lists as lists, Google
    sections as a bold title and a list, ``::`` and ``>>>`` blocks as code blocks."""
    lines = inspect.cleandoc(doc).splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        section = _SECTION.match(line.strip())
        if section and _indent(line) == 0:
            body = []
            i += 1
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > 0):
                body.append(lines[i])
                i += 1
            name = section.group(1)
            out.append(f"**{name}**")
            out.append("")
            if name.startswith("Example") and any(">>>" in b for b in body):
                out += ["```python", inspect.cleandoc("\n".join(body)), "```"]
            else:
                out += [_entry(item, name) for item in _items(body)]
            out.append("")
            continue
        if line.lstrip().startswith(">>>"):
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            out += ["```python", inspect.cleandoc("\n".join(block)), "```", ""]
            continue
        # a paragraph (or a list): up to a blank line, a section header or an indented block
        para = []
        while i < len(lines) and lines[i].strip() and not (
                _SECTION.match(lines[i].strip()) and _indent(lines[i]) == 0):
            para.append(lines[i])
            i += 1
        literal = para[-1].rstrip().endswith("::")
        if literal:
            para[-1] = para[-1].rstrip()[:-1]  # "text::" -> "text:"
        if _BULLET.match(para[0].strip()):
            out += [f"- {inline(_BULLET.sub('', item))}" for item in _items(para)]
        else:
            out.append(inline(" ".join(ln.strip() for ln in para)))
        out.append("")
        if literal:  # the indented block that follows, verbatim
            block = []
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > 0):
                block.append(lines[i])
                i += 1
            out += ["```text", inspect.cleandoc("\n".join(block)), "```", ""]
    return "\n".join(out).strip() + "\n"


def args_section(doc: str) -> dict[str, str]:
    """The ``Args:`` section of a Google-style docstring: parameter name -> its text, on one
    line (reST as written)."""
    lines = inspect.cleandoc(doc).splitlines()
    out: dict[str, str] = {}
    for i, line in enumerate(lines):
        if _indent(line) == 0 and line.strip() in ("Args:", "Arguments:", "Parameters:"):
            body = []
            for ln in lines[i + 1:]:
                if ln.strip() and _indent(ln) == 0:
                    break
                body.append(ln)
            for item in _items(body):
                m = re.match(r"^\*{0,2}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", item)
                if m:
                    out[m.group(1)] = m.group(2)
            break
    return out
