"""Every measured figure of README.md and docs/ is written from a result file
(``benchmarks/figures.py``, run by ``benchmarks/report.py``): the pages are what the files
give, each figure names its file, date and machine, and a number edited by hand, a missing
file or a file without a date fails."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import figures  # noqa: E402

#: A number that reads as measured: a ratio (``1.09x``), a thousands-separated count, a time or
#: a size (``3.2 ms``, ``20 s``, ``16 MB``).
MEASURED = re.compile(r"(?<![\w.])\d+(?:\.\d+)?x\b|\b\d{1,3}(?:,\d{3})+\b"
                      r"|(?<![\w.])\d+(?:\.\d+)? ?(?:ms|s|us|µs|MB|KB|GB|GiB)\b")


def test_the_pages_figures_are_what_their_result_files_give():
    stale = figures.update(check=True)
    assert not stale, (f"{[str(p.relative_to(ROOT)) for p in stale]} differ from their result "
                       "files: run python benchmarks/report.py")


def test_every_figure_names_an_existing_file_with_date_and_machine():
    used = figures.referenced()
    assert "docs/PERFORMANCE.md" in used  # the parser finds the markers it should
    for page, names in used.items():
        for name in names:
            date, machine, _ = figures.provenance(name, figures.load(name))
            assert re.fullmatch(r"20\d\d-\d\d-\d\d", date) and machine, (page, name)
    for path in figures.pages():
        text = path.read_text(encoding="utf-8")
        for m in figures._BLOCK.finditer(text):
            assert m.group(3).lstrip().startswith("*Measured "), (path, m.group(2))
        # every marker is one the generator reads (a number right before it, an end after it)
        assert text.count("<!-- value:") == len(figures._VALUE.findall(text)), path
        assert text.count("<!-- figure: end -->") == len(figures._BLOCK.findall(text)), path


def _page(tmp_path, text):
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    return page


@pytest.fixture
def results(tmp_path, monkeypatch):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "toy-cpu-2026-01-02.json").write_text(json.dumps({
        "date": "2026-01-02", "machine": {"cpu_count": 2}, "versions": {"jax": "0.10.2"},
        "median_images_per_s": {"augjax": 1234.5, "peer": 617.25},
        "rows": [{"case": "flip", "ms": 0.25}, {"case": "rotate", "ms": 1.5}]}))
    (folder / "nodate.json").write_text(json.dumps({"rows": []}))
    monkeypatch.setattr(figures, "RESULTS", folder)
    return folder


def test_a_hand_edited_number_is_found_and_rewritten(results, tmp_path):
    marker = '<!-- value: toy-cpu-2026-01-02.json "median_images_per_s/augjax" ,.0f -->'
    page = _page(tmp_path, f"augjax did 1,300{marker} images/s\n")
    assert figures.update(check=True, paths=[page]) == [page]
    figures.update(paths=[page])
    assert page.read_text() == f"augjax did 1,234{marker} images/s\n"  # NumPy rounds half to even
    assert figures.update(check=True, paths=[page]) == []


def test_a_table_is_written_with_its_file_date_and_machine(results, tmp_path):
    page = _page(tmp_path, "<!-- figure: toy-cpu-2026-01-02.json table rows=median_images_per_s"
                           ' ratio_to=peer header="loader|images/s" -->\nold\n'
                           "<!-- figure: end -->\n")
    figures.update(paths=[page])
    text = page.read_text()
    assert ("*Measured 2026-01-02 on a 2-core CPU machine (JAX 0.10.2): "
            "`benchmarks/results/toy-cpu-2026-01-02.json`.*") in text
    assert "| augjax | 1,234 (2.00x) |" in text and "| peer | 617 |" in text
    assert "old" not in text
    rows = figures.render('toy-cpu-2026-01-02.json table rows=rows suffix=" ms"')
    assert "| flip | 0.25 ms |" in rows and "| rotate | 1.5 ms |" in rows


def test_a_missing_file_path_or_date_is_an_error(results):
    with pytest.raises(figures.FigureError, match="no result file"):
        figures.render("gone-cpu-2026-01-01.json source")
    with pytest.raises(figures.FigureError, match="no 'nope'"):
        figures.value('toy-cpu-2026-01-02.json "median_images_per_s/nope"')
    with pytest.raises(figures.FigureError, match="no date or machine"):
        figures.render("nodate.json source")


def _outside_figures(text: str) -> str:
    text = figures._BLOCK.sub("", text)
    text = figures._VALUE.sub("", text)
    # report.py's own sections (the targets summary) are generated too
    text = re.sub(r"<!-- ([\w-]+): start \(written by benchmarks/report\.py.*?<!-- \1: end -->", "",
                  text, flags=re.DOTALL)
    return re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)


#: Numbers of that form outside the markers, each a setting, a bound, a test's input or a
#: package's size, not a measurement: nothing else of that form may be typed into a page (a
#: measurement goes in through a marker), and each listed one must still be there.
NOT_MEASURED = {
    "README.md": {"5.5 GB"},  # the developer install's size (pip's download)
    "docs/GRAIN.md": {"500 MB"},  # what grain's issues report per worker
    "docs/PERFORMANCE.md": {"1 ms", "1.5x"},  # the diagnosis callbacks' sleep; the per-op target
    "docs/RELIABILITY.md": {  # soak lengths and bounds, cache settings, the fuzzers' inputs,
        "10,000", "2,000", "16 MB", "1 s", "2 GiB", "3,000", "65,530", "100,000", "60 s",
        "1 MB", "24 MB", "64 KB",  # Linux's vm.max_map_count, the import timeout
        "3 s"},  # the partial-batch benchmark's seconds per process
    "docs/getting-started/install.md": {"140 MB"},  # DALI's bundled libraries
    "docs/guide/scaling.md": {"20 s", "120 s", "600 s"},  # the example's timeouts
}


def test_no_measured_number_is_typed_into_a_page():
    typed, gone = {}, {}
    for path in figures.pages():
        page = str(path.relative_to(ROOT))
        hits = set(MEASURED.findall(_outside_figures(path.read_text(encoding="utf-8"))))
        allowed = NOT_MEASURED.get(page, set())
        if hits - allowed:
            typed[page] = sorted(hits - allowed)
        if allowed - hits:
            gone[page] = sorted(allowed - hits)
    assert not typed, f"numbers typed by hand (put them in through a marker): {typed}"
    assert not gone, f"NOT_MEASURED lists numbers the pages no longer hold: {gone}"


def test_every_result_file_is_named_where_it_is_read():
    """``benchmarks/results/`` keeps only files a page, a report, a benchmark, a test or another
    result file names (history is git's), each named for its machine and date."""
    results = ROOT / "benchmarks" / "results"
    readers = [ROOT / "README.md", ROOT / "CHANGELOG.md"]
    for folder, patterns in ((ROOT / "docs", ("*.md",)), (ROOT / "benchmarks", ("*.md", "*.py")),
                             (ROOT / "tests", ("*.py",)), (results, ("*.md", "*.json"))):
        readers += [p for pattern in patterns for p in folder.rglob(pattern)]
    text = {p: p.read_text(encoding="utf-8", errors="replace") for p in readers}
    unnamed, unscheme = [], []
    for path in sorted(results.iterdir()):
        if not any(path.name in body for reader, body in text.items() if reader != path):
            unnamed.append(path.name)
        if not (figures._DATE.search(path.name) and re.search(
                r"(^|-)(cpu|gpu|tpu|h100|h200)", path.name)):
            unscheme.append(path.name)
    assert not unnamed, f"result files nothing names (remove them: git keeps them): {unnamed}"
    assert not unscheme, f"result files without their machine and date in the name: {unscheme}"
