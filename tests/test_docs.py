"""The documentation runs: every example script, every ```python block of the README and of the
docs pages (in order, one namespace per file), and the site builds with ``mkdocs build --strict``
(a warning is an error).  The tutorials include their code from ``examples/tutorial_*.py``
(pymdownx.snippets), so running the scripts tests the pages too; the scripts assert what the
pages claim."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DOCS = ROOT / "docs"

#: example scripts that another test runs (it imports the script and calls it with shorter settings)
RUN_ELSEWHERE = {"hybrid_wall.py": "test_control.py", "identify_arm.py": "test_regressor.py",
                 "mocap_walk.py": "test_mocap_outputs.py"}      # (it downloads its capture; the test gives it one)
#: command-line arguments of the scripts run here ({tmp}: the test's temporary folder)
ARGS = {"tutorial_dh.py": ["--plot", "{tmp}/ellipses.png"]}
#: the files each script must have written
OUTPUTS = {"tutorial_dh.py": ["ellipses.png"]}
SCRIPT_TIMEOUT = 900            # s; a hang guard: a cold kernel cache on a busy 2-core machine took 300 s+

SNIPPET = re.compile(r'--8<--\s+"([^"]+)"')
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)


def _env():
    env = dict(os.environ, MPLBACKEND="Agg", NO_MKDOCS_2_WARNING="1")
    # one BLAS thread: the scripts solve many small systems (scipy's lu_solve in the contact
    # layer), and OpenBLAS threads competing for two busy cores make each call milliseconds
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src")] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


# ----------------------------------------------------------------------------- example scripts
def _scripts():
    return [p for p in sorted(EXAMPLES.glob("*.py")) if p.name not in RUN_ELSEWHERE]


def test_the_scripts_run_elsewhere_are_run_there():
    """The scripts this file skips are imported by the test file that says it runs them."""
    for script, test_file in RUN_ELSEWHERE.items():
        assert (EXAMPLES / script).exists(), f"{script} no longer exists: update RUN_ELSEWHERE"
        text = (ROOT / "tests" / test_file).read_text()
        assert f"import {Path(script).stem}" in text, f"{test_file} does not run examples/{script}"


@pytest.mark.parametrize("script", _scripts(), ids=lambda p: p.name)
def test_example_script_runs(script, tmp_path):
    args = [a.format(tmp=tmp_path) for a in ARGS.get(script.name, [])]
    r = subprocess.run([sys.executable, str(script), *args], cwd=tmp_path, env=_env(), capture_output=True,
                       text=True, timeout=SCRIPT_TIMEOUT)
    assert r.returncode == 0, f"{script.name} failed:\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    for name in OUTPUTS.get(script.name, []):
        assert (tmp_path / name).is_file(), f"{script.name} did not write {name}"


def test_every_tutorial_script_is_on_a_page():
    """Each examples/tutorial_*.py is included by a docs page, and every snippet a page includes
    exists (a file, and the section ``file:name`` marked in it)."""
    included = set()
    for page in DOCS.rglob("*.md"):
        for ref in SNIPPET.findall(page.read_text()):
            path, _, section = ref.partition(":")
            assert (ROOT / path).is_file(), f"{page.relative_to(ROOT)} includes {path}, which does not exist"
            if section and not section.isdigit():
                text = (ROOT / path).read_text()
                for mark in ("start", "end"):
                    assert f"--8<-- [{mark}:{section}]" in text, \
                        f"{page.relative_to(ROOT)} includes section {section!r} of {path}, which has no {mark} mark"
            included.add(Path(path).name)
    missing = [p.name for p in EXAMPLES.glob("tutorial_*.py") if p.name not in included]
    assert not missing, f"tutorial scripts on no docs page: {missing}"


# ------------------------------------------------------------------ code blocks of the pages
def _blocks(path):
    """The ```python blocks of a Markdown file that are code (not snippet includes), with
    their line numbers."""
    text = path.read_text()
    out = []
    for m in FENCE.finditer(text):
        code = m.group(1)
        if SNIPPET.search(code):
            continue
        out.append((text[:m.start()].count("\n") + 2, code))
    return out


def _pages():
    return [ROOT / "README.md"] + sorted(p for p in DOCS.rglob("*.md") if _blocks(p))


#: runs the blocks of one page (argv[1]) in order, in one namespace, in the current folder
RUNNER = """
import re, sys
path, root = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
namespace = {"__name__": "__docs__"}
for m in re.finditer(%r, text, re.S | re.M):
    code = m.group(1)
    if re.search(%r, code):
        continue
    line = text[:m.start()].count("\\n") + 2
    exec(compile(code, path[len(root) + 1:] + ":" + str(line), "exec"), namespace)
""" % (FENCE.pattern, SNIPPET.pattern)


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_of_the_page_run(page, tmp_path):
    """Every ```python block, in order, in one namespace per file (a later block may use the
    names of an earlier one, as a reader would), in a fresh process in a temporary folder (the
    files the blocks write land there)."""
    if page.name == "README.md":
        import importlib.metadata
        try:
            importlib.metadata.distribution("example-robot-data")
        except importlib.metadata.PackageNotFoundError:
            pytest.skip("the README's first block loads a robot of example-robot-data (pip install -e '.[test]')")
    assert _blocks(page), f"{page.name} has no python blocks"
    r = subprocess.run([sys.executable, "-c", RUNNER, str(page), str(ROOT)], cwd=tmp_path, env=_env(),
                       capture_output=True, text=True, timeout=SCRIPT_TIMEOUT)
    assert r.returncode == 0, f"a python block of {page.name} failed:\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"


def test_references_match_the_readme():
    """docs/references.md lists the README's references, word for word."""
    readme = (ROOT / "README.md").read_text()
    refs = readme[readme.index("## References"):]
    items = [" ".join(item.split()) for item in re.split(r"\n- ", refs)[1:]]
    page = " ".join((DOCS / "references.md").read_text().split())
    missing = [item for item in items if item not in page]
    assert items and not missing, f"references of the README missing from docs/references.md: {missing}"


# ----------------------------------------------------------------------------------- the site
def test_site_builds_without_warnings(tmp_path):
    """``mkdocs build --strict``: a broken link, a missing snippet or a docstring mkdocstrings
    cannot render is an error."""
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        try:
            __import__(module)
        except ImportError:
            pytest.fail(f"{module} is not installed: pip install -e '.[docs]'")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                        "--site-dir", str(tmp_path / "site")], cwd=ROOT, env=_env(), capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, f"mkdocs build --strict failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}"
    assert "WARNING" not in r.stderr, r.stderr
    assert (tmp_path / "site" / "index.html").is_file()
