"""README.md and the user guide in docs/: links resolve, code compiles and runs, commands parse.

Every ```python block of docs/*.md runs, one namespace per page, in a temporary folder, except
blocks marked ``<!-- compile only: why -->`` on the line before (long trainings), which are only
compiled. README's blocks are compiled (its quick start trains for a minute; the notebooks and
examples run the same steps). Every ``tsrsa ...`` line of a bash block parses with the CLI's parser.
"""
from __future__ import annotations

import ast
import importlib
import re
import shlex
from pathlib import Path

import pytest
import torch

from tsrsa.benchmarking.cli import parser as harness_parser
from tsrsa.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"(?P<before>[^\n]*)\n```(?P<lang>\w*)\n(?P<code>.*?)```", re.S)
LINK = re.compile(r"\]\((?!https?://|#)(?P<target>[^)#\s]+)")


def blocks(page: Path, lang: str) -> list[tuple[str, str]]:
    """(the line before the fence, the code) of each block in ``lang``."""
    return [(m["before"], m["code"]) for m in FENCE.finditer("\n" + page.read_text()) if m["lang"] == lang]


def _id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_the_guide_has_its_pages():
    names = {p.name for p in PAGES}
    assert {"data.md", "rem.md", "init.md", "tuning.md", "interop.md", "gpu.md", "cli.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_relative_links_resolve(page):
    for match in LINK.finditer(page.read_text()):
        assert (page.parent / match["target"]).exists(), f"{_id(page)} links to missing {match['target']}"


ANCHOR_LINK = re.compile(r"\]\((?!https?://)(?P<target>[^)#\s]*\.md)#(?P<anchor>[^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@pytest.mark.parametrize("page", [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))], ids=_id)
def test_links_into_a_section_name_one_that_exists(page):
    for match in ANCHOR_LINK.finditer(page.read_text()):
        target = (page.parent / match["target"]) if match["target"] else page
        headings = {slug(line.lstrip("#")) for line in target.read_text().splitlines() if line.startswith("#")}
        assert match["anchor"] in headings, f"{_id(page)} links to a missing section {match['target']}#{match['anchor']}"


def test_slug_follows_githubs_rule():
    assert slug(" Streaming: update cost and memory against the history's length") == \
        "streaming-update-cost-and-memory-against-the-historys-length"
    assert slug("Long-horizon benchmark (LTSF)") == "long-horizon-benchmark-ltsf"


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_python_blocks_compile_and_their_tsrsa_imports_exist(page):
    for _, code in blocks(page, "python"):
        tree = ast.parse(code)  # a SyntaxError names the page through the test id
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tsrsa"):
                for extra in ("pytorch_forecasting", "sktime"):  # optional dependencies
                    if node.module.endswith(f".{extra}"):
                        pytest.importorskip(extra)
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name) or importlib.util.find_spec(f"{node.module}.{alias.name}"), \
                        f"{_id(page)}: {node.module} has no {alias.name}"


def test_tsrsa_commands_parse():
    parsers = {"benchmark": harness_parser(Path("benchmarks"))}
    checked, failures = set(), []
    for page in PAGES:
        for _, code in blocks(page, "bash"):
            for line in code.replace("\\\n", " ").splitlines():
                words = shlex.split(line, comments=True)
                words = words[:next((i for i, w in enumerate(words) if w in (">", "|", "&&")), len(words))]
                if words[:1] != ["tsrsa"] or len(words) < 2:
                    continue
                command = words[1]
                parser, args = (parsers[command], words[2:]) if command in parsers else (build_parser(), words[1:])
                try:
                    parser.parse_args(args)
                except SystemExit:  # argparse has printed why
                    failures.append(f"{_id(page)}: {line.strip()}")
                checked.add(command)
    assert not failures, failures
    assert {"fit", "predict", "benchmark"} <= checked  # the guide shows every command


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("page", sorted((ROOT / "docs").glob("*.md")), ids=_id)
def test_guide_examples_run(page, tmp_path, monkeypatch, one_thread):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "guide"}
    for before, code in blocks(page, "python"):
        if "<!-- compile only" in before:
            continue
        exec(compile(code, f"{page.name}", "exec"), namespace)  # noqa: S102 - our own documentation
    assert not list(tmp_path.iterdir()), "a guide example wrote files"


def test_readme_quick_start_is_ten_lines_and_sections_are_there():
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1]
    code = blocks_in(quick)[0]
    assert len([line for line in code.splitlines() if line.strip()]) <= 10
    for section in ("## Install", "## Quick start", "## Command line", "## Models", "## Results", "## Citing"):
        assert section in readme
    assert "benchmarks/RESULTS.md" in readme and "@inproceedings{huang2023encoding" in readme


def blocks_in(text: str) -> list[str]:
    return [m["code"] for m in FENCE.finditer("\n" + text) if m["lang"] == "python"]


def test_readme_quick_start_and_its_interval_example_run(tmp_path, monkeypatch, one_thread):
    """The README's quick start as a user runs it (a smaller step target of the automatic budget keeps it to
    seconds: the same code path), then its interval line, on the quick start's ``train``."""
    from tsrsa.training import budget

    for name, value in (("TARGET_STEPS", 4), ("MIN_EPOCHS", 1), ("MAX_EPOCHS", 2), ("EPOCH_STEPS", 2)):
        monkeypatch.setattr(budget, name, value)
    monkeypatch.chdir(tmp_path)
    readme = (ROOT / "README.md").read_text()
    namespace: dict = {"__name__": "readme"}
    exec(compile(blocks_in(readme.split("## Quick start", 1)[1])[0], "README.md", "exec"), namespace)  # noqa: S102
    assert namespace["same"].predict().equals(namespace["forecast"])
    interval = [line for line in blocks_in(readme.split("## Evaluate, tune, quantiles", 1)[1])[0].splitlines()
                if "predict(level=" in line]
    assert len(interval) == 1
    frame = eval(interval[0].split("#")[0], namespace)  # noqa: S307 - our own README
    assert {"yhat_lo_80", "yhat_hi_80"} <= set(frame.columns) and frame.filter(like="yhat_").notna().all().all()
