"""A griffe extension for the API reference: the Sphinx roles of linkdyn's docstrings
(``:func:`name```, ``:class:`~linkdyn.Model```, ...) become cross-references.

A role whose target is an object the reference renders becomes a link (``[`name`][path]``,
resolved by mkdocs-autorefs); any other role (a private object, one on no page, a name that
does not resolve) becomes plain code, so the strict build never sees a dangling reference.
"""
from __future__ import annotations

import re
from pathlib import Path

import griffe

ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|exc|obj):`(~?)([^`<>]+)`")
API = Path(__file__).resolve().parent / "api"
DIRECTIVE = re.compile(r"^::: ([\w.]+)((?:\n {4}.*)*)", re.M)


def _rendered():
    """(whole, listed): the modules rendered with all their public members, and the objects
    named one by one (``members: [...]``), from the ``:::`` directives of docs/api/*.md."""
    whole, listed = set(), set()
    for page in API.glob("*.md"):
        for path, options in DIRECTIVE.findall(page.read_text()):
            m = re.search(r"members:\s*(.*)", options)
            if m is None:
                whole.add(path)
            elif m.group(1).strip().startswith("["):
                listed.update(f"{path}.{n.strip()}" for n in m.group(1).strip(" []").split(","))
            listed.add(path)
    return whole, listed


class SphinxRoles(griffe.Extension):
    def __init__(self):
        super().__init__()
        self.whole, self.listed = _rendered()

    def on_package(self, *, pkg, **kwargs):
        if pkg.name != "linkdyn":
            return
        self.pkg = pkg
        self._walk(pkg, set())

    def _walk(self, obj, seen):
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(lambda m: self._replace(obj, m), obj.docstring.value)
        for member in obj.members.values():
            if not member.is_alias:
                self._walk(member, seen)

    def _replace(self, obj, m):
        tilde, name = m.group(1), m.group(2).strip()
        text = name.rsplit(".", 1)[-1] if tilde else name
        target = self._resolve(obj, name)
        if target is None:
            return f"`{text}`"
        return f"[`{text}`][{target}]"

    def _lookup(self, path):
        if path == "linkdyn":
            return self.pkg
        if not path.startswith("linkdyn."):
            return None
        try:
            found = self.pkg[path[len("linkdyn."):]]
            if found.is_alias:
                found = found.final_target
        except Exception:
            return None
        return found

    def _resolve(self, obj, name):
        """The path of a rendered object that ``name`` names from ``obj``'s scope, or None."""
        scopes = []
        scope = obj
        while scope is not None:
            scopes.append(scope.path)
            scope = scope.parent
        candidates = [name] + [f"{s}.{name}" for s in scopes]
        for path in candidates:
            found = self._lookup(path)
            if found is not None and self._is_rendered(found):
                return found.path
        return None

    def _is_rendered(self, obj):
        path = obj.path
        if any(part.startswith("_") for part in path.split(".")):
            return False
        if not obj.is_module and obj.docstring is None:
            return False            # show_if_no_docstring: false
        if path in self.listed or path in self.whole:
            return True
        parent = obj.parent
        while parent is not None:   # a member (or a member's member) of a module rendered whole
            if parent.path in self.whole:
                return all(p.is_module or p.docstring is not None for p in _chain(obj.parent, parent))
            parent = parent.parent
        return False


def _chain(start, stop):
    obj = start
    while obj is not None and obj is not stop:
        yield obj
        obj = obj.parent
