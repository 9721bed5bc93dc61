"""Reading MJCF XML safely (defusedxml, bounded file reads) and expanding ``<include>``."""
from __future__ import annotations

from pathlib import Path

from .._files import asset_roots, confine, read_model_file
from ..safexml import parse_xml
from .common import MAX_FILE_BYTES, MAX_INCLUDE_DEPTH, MAX_INCLUDES, MJCFError


# --------------------------------------------------------------------------------------------
# reading the XML safely, with <include>
def _read_limited(path: Path, shown: str) -> bytes:
    """A regular file's bytes, read with a bound (``linkdyn.model.io._files``)."""
    return read_model_file(path, MJCFError, MAX_FILE_BYTES, "MJCF file")


def _parse_xml(text, source):
    return parse_xml(text, source, MJCFError, "MJCF")


class _Reader:
    """Parses the main text and expands <include> elements; remembers each element's file."""

    def __init__(self, base_dir, asset_dirs=None):
        self.base = base_dir
        self.roots = asset_roots(base_dir, asset_dirs)     # where included files (and meshes) may be
        self.count = 0
        self.bytes = 0              # read from included files
        self.file_of = {}           # element -> file name, for error messages

    def read(self, text, shown, chain):
        root = _parse_xml(text, shown)
        for el in root.iter():
            self.file_of[el] = shown
        if root.tag != "mujoco":
            where = f"the root element is <{root.tag}>, expected <mujoco>"
            raise MJCFError(f"{shown}: {where}")
        self._expand(root, shown, chain)
        return root

    def _expand(self, root, shown, chain):
        for parent in list(root.iter()):
            kids = list(parent)
            if not any(k.tag == "include" for k in kids):
                continue
            new = []
            for k in kids:
                if k.tag != "include":
                    new.append(k)
                    continue
                new.extend(self._include(k, shown, chain))
            for k in kids:
                parent.remove(k)
            parent.extend(new)

    def _include(self, el, shown, chain):
        name = el.get("file")
        where = f"{shown}: <include file={name!r}>" if name is not None else f"{shown}: <include>"
        if not name:
            raise MJCFError(f"{where}: needs a 'file' attribute")
        if len(list(el)) or el.attrib.keys() - {"file"}:
            raise MJCFError(f"{where}: takes only the 'file' attribute and no children")
        if self.base is None:
            raise MJCFError(f"{where}: the model was given as text without base_dir, so included files "
                            "cannot be looked up (use load_mjcf(path) or parse_mjcf(text, base_dir=...))")
        rel = Path(name)
        if rel.is_absolute() or rel.drive or rel.anchor:
            raise MJCFError(f"{where}: refused: an absolute path; included files must lie in the model's "
                            f"folder {str(self.base)!r}")
        try:
            target = confine(self.base / rel, self.roots, MJCFError, "included file", where)
        except FileNotFoundError:
            raise MJCFError(f"{where}: no such file {str((self.base / rel).resolve())!r}") from None
        if target in chain:
            names = [p.name for p in chain[chain.index(target):]] + [target.name]
            raise MJCFError(f"{where}: include loop: " + " -> ".join(names))
        if len(chain) > MAX_INCLUDE_DEPTH:
            raise MJCFError(f"{where}: includes are nested more than {MAX_INCLUDE_DEPTH} deep")
        self.count += 1
        if self.count > MAX_INCLUDES:
            raise MJCFError(f"{where}: more than {MAX_INCLUDES} <include> elements in one model")
        data = _read_limited(target, str(target))
        self.bytes += len(data)
        if self.bytes > MAX_FILE_BYTES:
            raise MJCFError(f"{where}: the included files add up to more than {MAX_FILE_BYTES} bytes")
        sub = self.read(data, str(target), chain + [target])
        return list(sub)

