"""The operator documentation stays true to the code it describes.

Links between docs/*.md and the README must land on a file and heading
that exist (sections get renamed), and the operator guide's metric table
must name every metric the built-in monitors can report.
"""

import ast
import pathlib
import re
import subprocess

import pytest
from oslo_config import cfg

from compute_monitor import conf as monitor_conf
from compute_monitor import units
from compute_monitor.monitors import cpu
from compute_monitor.monitors import disk
from compute_monitor.monitors import libvirt_domains
from compute_monitor.monitors import memory
from compute_monitor.monitors import network
from scheduler.conf import metrics as metrics_conf
from scheduler.db import schema
from tests.unit.docs.fakes import _BLOCK
from tests.unit.docs.fakes import DOCS
from tests.unit.docs.fakes import PAGES
from tests.unit.docs.fakes import ROOT
from tests.unit.docs.fakes import client_examples
from tests.unit.docs.fakes import ini_blocks

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} +(.+?) *#*$")
_FENCE = re.compile(r"^(```|~~~)")


def headings(text: str) -> list[str]:
    """Heading lines outside fenced code blocks."""
    found, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (match := _HEADING.match(line)):
            found.append(match.group(1))
    return found


def anchors(text: str) -> set[str]:
    """GitHub's anchors of a page: lower case, punctuation dropped, spaces
    as hyphens, repeated headings numbered -1, -2, ..."""
    seen: dict[str, int] = {}
    result = set()
    for heading in headings(text):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def local_links(page: pathlib.Path) -> list[tuple[pathlib.Path, str]]:
    """(target file, anchor or '') of every link that is not a URL."""
    links = []
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        links.append((resolved, anchor))
    return links


def test_anchor_rules_follow_github():
    text = ("## Filters (`[filter_scheduler] enabled_filters`)\n"
            "### Operating the scheduler: `scheduler-manage`\n"
            "```\n# not a heading\n```\n"
            "## Notes\n## Notes\n")
    assert anchors(text) == {"filters-filter_scheduler-enabled_filters",
                             "operating-the-scheduler-scheduler-manage",
                             "notes", "notes-1"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_reach_existing_files_and_headings(page):
    broken = []
    for target, anchor in local_links(page):
        if not target.exists():
            broken.append(f"{target.relative_to(ROOT)}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in anchors(
                target.read_text(encoding="utf-8")):
            broken.append(f"{target.relative_to(ROOT)}#{anchor}: "
                          "no such heading")
    assert not broken, broken


def test_readme_links_every_docs_page():
    linked = {target for target, _ in local_links(ROOT / "README.md")}
    assert not [p.name for p in DOCS.glob("*.md") if p.resolve()
                not in linked]


def builtin_metric_names() -> set[str]:
    """Every metric the built-in monitors can report."""
    conf = cfg.ConfigOpts()
    monitor_conf.register_opts(conf)
    conf([])
    names = set()
    for monitor in (cpu.CpuMonitor, memory.MemoryMonitor,
                    network.NetworkMonitor, disk.DiskMonitor):
        names |= monitor(conf).get_metric_names()
    # Without constructing it: that needs libvirt-python.
    return names | libvirt_domains.LibvirtMonitor.METRIC_NAMES


def test_operator_guide_lists_every_builtin_metric():
    names = builtin_metric_names()
    guide = (DOCS / "operator-guide.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z0-9_.]+)` \| `", guide,
                                re.MULTILINE))
    assert names - documented == set()


def test_operator_guide_shows_the_newest_schema_revision():
    guide = (DOCS / "operator-guide.md").read_text(encoding="utf-8")
    shown = re.findall(r"schema at revision (\d{4})", guide)
    shown += re.findall(r" db version\n(\d{4})\n", guide)
    assert len(shown) >= 3
    assert set(shown) == {schema.head_version()}


# Configuration examples. A ```ini block may be preceded by one marker
# line saying how ``config check`` treats it (see
# tests/functional/test_docs_config.py):
#   <!-- config check: skip, REASON -->  not a scheduler config file
#   <!-- config check: with the example plugins -->
#   <!-- config check: PATH holds the next json block -->

#: ``key = value  # words``: oslo.config keeps the words in the value.
_INLINE_COMMENT = re.compile(r"^\s*[^#;\s\[][^=]*=.*\s[#;]")


def test_ini_blocks_are_found():
    assert len(ini_blocks()) >= 10


@pytest.mark.parametrize("block", ini_blocks(), ids=lambda b: b.name)
def test_ini_blocks_have_no_inline_comments(block):
    """oslo.config has no inline comments: pasted, ``required = true  #
    why`` is a malformed boolean."""
    assert [line for line in block.text.splitlines()
            if _INLINE_COMMENT.match(line)] == []


def test_gitignore_ignores_the_venv_file_tox_leaves(tmp_path):
    (tmp_path / ".gitignore").write_text(
        (ROOT / ".gitignore").read_text(encoding="utf-8"))
    (tmp_path / ".venv").write_text("/somewhere/.tox/py3\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    status = subprocess.run(["git", "status", "--porcelain",
                             "--untracked-files=all"], cwd=tmp_path,
                            capture_output=True, text=True, check=True)
    assert status.stdout.splitlines() == ["?? .gitignore"]


def test_guide_keeps_its_virtualenv_out_of_the_checkout():
    # tox's .venv file makes "python3 -m venv .venv" fail.
    for page in PAGES:
        for block in _BLOCK.finditer(page.read_text(encoding="utf-8")):
            if block["lang"] in ("sh", "console", "bash"):
                assert not re.search(r"-m venv (\./)?\.venv\b",
                                     block["text"]), page.name


def test_product_docs_stand_on_their_own():
    """The design notes are not shipped: no page or sample config may
    send the reader to them."""
    samples = sorted((ROOT / "etc").rglob("*.sample"))
    citing = [page.relative_to(ROOT) for page in PAGES + samples
              if re.search(r"\bDESIGN\b", page.read_text(encoding="utf-8"))]
    assert citing == []


def test_every_builtin_metric_has_a_unit():
    assert builtin_metric_names() == set(units.BUILTIN_UNITS)


def test_weight_setting_help_gives_units_and_the_guides_example():
    help_text = next(opt.help for opt in metrics_conf.metrics_opts
                     if opt.name == "weight_setting")
    for name, unit in units.BUILTIN_UNITS.items():
        assert name in help_text
        assert f"({unit})" in help_text
    example = re.search(r"(\S+=\S+, \S+=\S+), the operator guide's "
                        r"recommendation", help_text)[1]
    guide = (DOCS / "operator-guide.md").read_text(encoding="utf-8")
    assert f"weight_setting = {example}\n" in guide
    assert "scheduler-manage metrics list" in help_text


def _handled(node: ast.Try) -> set[str]:
    return {ast.unparse(handler.type) for handler in node.handlers
            if handler.type is not None}


@pytest.mark.parametrize("page, code", client_examples(),
                         ids=[page for page, _ in client_examples()])
def test_client_examples_can_be_copied(page, code):
    tree = ast.parse(code)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    # A real instance uuid, not a placeholder the service would refuse.
    assert "uuid.uuid4" in {ast.unparse(call.func) for call in calls}
    assert "..." not in {node.value for node in ast.walk(tree)
                         if isinstance(node, ast.Constant)}
    tries = [node for node in ast.walk(tree) if isinstance(node, ast.Try)]
    assert len(tries) == 1
    # release() only once a claim was made, and the transport's timeout
    # handled like the scheduler's own answers.
    inside = {id(node) for statement in tries[0].body
              for node in ast.walk(statement)}
    releases = [call for call in calls
                if ast.unparse(call.func).endswith(".release")]
    assert releases and all(id(call) in inside for call in releases)
    assert {"exception.NoValidHost", "exception.InvalidRequest",
            "MessagingTimeout"} <= _handled(tries[0])
