"""Output parsers: pytest's summary (read off real pytest runs), JUnit XML (pytest's own
report, and hostile ones), a JSON last line; none of them raises on anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dreamrsi.engine.outputs import (
    MAX_JSON_FIELDS,
    MAX_XML_BYTES,
    junit_passed,
    parse_json_tail,
    parse_junit,
    parse_outputs,
    parse_pytest,
)

# Data, never collected here: a generated suite whose fixed outcomes (a pass, a failure, a
# skip, an error, ...) pytest prints in a subprocess for the parsers to read.
SUITE = '''\
import warnings
import pytest


def test_ok():
    pass


def test_ok_too():
    warnings.warn("a warning")


def test_fails():
    print("=== 99 passed in 0.01s ===")  # a fake summary, shown before the real one
    assert 1 == 2


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@pytest.fixture
def broken():
    raise RuntimeError("setup breaks")


def test_errors(broken):
    pass


@pytest.mark.xfail
def test_xfails():
    assert False


@pytest.mark.xfail
def test_xpasses():
    pass
'''


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "--rootdir", str(folder), *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("suite")
    (folder / "test_suite.py").write_text(SUITE)
    return folder


EXPECTED = {"passed": 2, "failed": 1, "errors": 1, "skipped": 1, "xfailed": 1, "xpassed": 1,
            "warnings": 1, "deselected": 0}


@pytest.mark.parametrize("args", [(), ("-q",), ("-rA", "-v")])
def test_a_real_pytest_summary_is_read(suite: Path, args: tuple[str, ...]) -> None:
    proc = _pytest(suite, *args)
    assert proc.returncode == 1
    assert "99 passed" in proc.stdout  # the fake summary was printed, before the real one
    found = parse_pytest(proc.stdout)
    assert found is not None
    assert {k: found[k] for k in EXPECTED} == EXPECTED
    assert found["format"] == "pytest" and 0 <= found["duration_s"] < 120


def test_the_junit_report_of_the_same_run_is_read(suite: Path, tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    _pytest(suite, "-q", f"--junitxml={report}")
    found = parse_junit(report.read_bytes())
    assert found is not None
    assert {k: found[k] for k in ("format", "tests", "failures", "errors", "skipped")} == {
        "format": "junit", "tests": 7, "failures": 1, "errors": 1, "skipped": 2}
    assert junit_passed(found) == 3  # ok, ok_too and the xpass; the xfail counts as skipped
    assert found["time_s"] >= 0


def test_real_runs_without_tests(tmp_path: Path, suite: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    found = parse_pytest(_pytest(empty, "-q").stdout)
    assert found is not None and found["passed"] == found["failed"] == 0
    found = parse_pytest(_pytest(suite, "-q", "-k", "no_such_test").stdout)
    assert found is not None and found["deselected"] == 7 and found["passed"] == 0


@pytest.mark.parametrize(("line", "counts"), [
    ("=== 3 failed, 10 passed, 1 skipped in 0.12s ===",
     {"failed": 3, "passed": 10, "skipped": 1}),
    ("3 failed, 10 passed in 0.12s", {"failed": 3, "passed": 10}),
    ("1 error in 0.05s", {"errors": 1}),
    ("2 errors, 1 warning in 0.05s", {"errors": 2, "warnings": 1}),
    ("= no tests ran in 0.01s =", {}),
    ("== 4 passed, 2 deselected, 3 warnings in 1.00s ==",
     {"passed": 4, "deselected": 2, "warnings": 3}),
    ("==== 1 passed in 75.23s (0:01:15) ====", {"passed": 1}),
    ("=== 1 passed in 3700.00s (1:01:40) ===", {"passed": 1}),
    ("===== 5 passed in 0.30 seconds =====", {"passed": 5}),  # pytest before 5.x
    ("\x1b[32m==== \x1b[32m\x1b[1m2 passed\x1b[0m, \x1b[33m1 xfailed\x1b[0m\x1b[32m in 0.02s"
     "\x1b[0m\x1b[32m ====\x1b[0m", {"passed": 2, "xfailed": 1}),
    ("=== 1 failed, 2 passed, 2 rerun in 0.40s ===", {"failed": 1, "passed": 2}),
    ("1 passed in 0.01s\r", {"passed": 1}),
])
def test_summary_forms(line: str, counts: dict[str, int]) -> None:
    found = parse_pytest(f"collected things\n\n{line}\n")
    assert found is not None
    for key in ("passed", "failed", "errors", "skipped", "xfailed", "xpassed", "warnings",
                "deselected"):
        assert found[key] == counts.get(key, 0), key


@pytest.mark.parametrize("text", [
    "", "\n\n", "all good\n", "3 apples in 2s", "3 tests collected in 0.01s",
    "passed in 0.1s", "1 passed", "=== 1 passed in ===", "1 passed in 0.1s and more",
    "9" * 20 + " passed in 0.1s", "1 passed in " + "1" * 40 + "s",
])
def test_no_summary_is_none(text: str) -> None:
    assert parse_pytest(text) is None


def test_the_last_summary_counts() -> None:
    text = "=== 99 passed in 0.01s ===\nmore output\n=== 1 failed in 0.02s ===\ntrailer\n"
    found = parse_pytest(text)
    assert found is not None and (found["passed"], found["failed"]) == (0, 1)


def test_huge_output_is_read_in_linear_time() -> None:
    noise = ("x" * 50 + " in " + "1, " * 20 + "\n") * 200_000  # ~16 MB of near misses
    start = time.monotonic()
    assert parse_pytest(noise) is None
    found = parse_pytest(noise + "=== 3 passed in 0.1s ===")
    assert found is not None and found["passed"] == 3
    assert parse_pytest("y" * 20_000_000) is None  # one line, no newline at all
    blank = "\n" * 20_000_000
    assert parse_pytest(blank) is None and parse_json_tail(blank) is None
    near = "=== 1 apples in 1s ===\n" * 500_000  # lines of the summary's shape, no count
    assert parse_pytest(near) is None
    assert parse_pytest("=== 2 passed in 1s ===\n" + near)["passed"] == 2  # type: ignore[index]
    assert time.monotonic() - start < 30


def test_text_decoded_from_bad_bytes_is_read() -> None:
    raw = b"\xff\xfe garbage \x80\n=== 2 passed in 0.1s ===\n\xc3"
    for text in (raw.decode("utf-8", "replace"), raw.decode("utf-8", "surrogateescape")):
        found = parse_pytest(text)
        assert found is not None and found["passed"] == 2


# -- JUnit ------------------------------------------------------------------------------------

def test_junit_sums_the_innermost_suites() -> None:
    data = b"""<?xml version="1.0"?>
<testsuites tests="999" failures="999">
  <testsuite name="a" tests="3" failures="1" errors="0" skipped="1" time="1.5"/>
  <testsuite name="outer" tests="100" time="9">
    <testsuite name="b" tests="2" failures="0" errors="1" time="0.5"/>
  </testsuite>
</testsuites>"""
    assert parse_junit(data) == {"format": "junit", "tests": 5, "failures": 1, "errors": 1,
                                 "skipped": 1, "time_s": 2.0}


def test_junit_without_counts_counts_its_cases() -> None:
    data = b"""<testsuite name="s">
  <testcase name="a"/><testcase name="b"><failure message="x"/></testcase>
  <testcase name="c"><error/></testcase><testcase name="d"><skipped/></testcase>
</testsuite>"""
    found = parse_junit(data)
    assert found is not None
    assert (found["tests"], found["failures"], found["errors"], found["skipped"]) == (4, 1, 1, 1)
    assert junit_passed(found) == 1


def test_junit_testsuites_alone_and_utf16() -> None:
    assert parse_junit(b'<testsuites tests="4" failures="2"/>') == {
        "format": "junit", "tests": 4, "failures": 2, "errors": 0, "skipped": 0, "time_s": 0.0}
    utf16 = '<?xml version="1.0" encoding="UTF-16"?><testsuite tests="2" failures="1"/>'
    found = parse_junit(utf16.encode("utf-16"))
    assert found is not None and found["tests"] == 2
    odd_time = parse_junit(b'<testsuite tests="1" time="NaN"/>')
    assert odd_time is not None and odd_time["time_s"] == 0.0


LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<testsuite name="&lol9;" tests="1"/>"""


@pytest.mark.parametrize("data", [
    LAUGHS,
    b'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    b'<testsuite name="&x;" tests="1"/>',
    b'<!DOCTYPE testsuite SYSTEM "http://127.0.0.1:9/evil.dtd"><testsuite tests="1"/>',
    b'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>'
    b'<testsuite tests="1"/>',
    b'<!DOCTYPE testsuite><testsuite tests="1"/>',
    b'<testsuite name="&undefined;" tests="1"/>',
    b"", b"not xml at all", b"<testsuite tests='1'>", b"\xff\xfe\x00<\x80\x81",
    b'<testsuite tests="1">\xff\xfe</testsuite>',
    b'<html><testsuite tests="1"/></html>', b'<testsuite tests="-1"/>',
    b'<testsuite tests="1.5"/>', b'<testsuite tests="' + b"9" * 5000 + b'"/>',
    b'<testsuite tests="\xd9\xa3"/>',  # an Arabic-Indic digit three: isdigit, not ASCII
])
def test_hostile_or_malformed_junit_is_none(data: bytes) -> None:
    assert parse_junit(data) is None


def test_an_empty_suite_counts_no_tests() -> None:
    assert parse_junit(b'<testsuite name="x"/>') == {
        "format": "junit", "tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time_s": 0.0}


@pytest.mark.parametrize("encoding", ["x-bogus", "rot13", "base64", "zlib", "hex", "uu",
                                      "bz2", "mbcs", "utf-7", "utf-32", "punycode", "idna",
                                      "undefined"])
def test_an_odd_declared_encoding_is_none(encoding: str) -> None:
    data = f'<?xml version="1.0" encoding="{encoding}"?><testsuite tests="1"/>'.encode()
    assert parse_junit(data) is None


def test_junit_size_is_capped_and_deep_nesting_is_harmless() -> None:
    big = b'<testsuite tests="1">' + b" " * MAX_XML_BYTES + b"</testsuite>"
    assert parse_junit(big) is None
    depth = 100_000
    deep = b"<testsuites>" + b'<testsuite tests="1">' * depth + b"</testsuite>" * depth \
        + b"</testsuites>"
    assert len(deep) < MAX_XML_BYTES
    found = parse_junit(deep)
    assert found is not None and found["tests"] == 1  # only the innermost suite counts
    deep_cases = parse_junit(b"<testsuite>" + b"<a>" * 300_000 + b"<testcase/>"
                             + b"</a>" * 300_000 + b"</testsuite>")
    assert deep_cases is not None and deep_cases["tests"] == 1


def test_junit_never_raises_on_any_type() -> None:
    assert parse_junit("<testsuite tests='1'/>") is None  # type: ignore[arg-type]


# -- JSON last line ---------------------------------------------------------------------------

def test_json_tail_keeps_finite_top_level_numbers() -> None:
    text = ('running\n{"p95_ms": 12.5, "n": 3, "ok": true, "name": "r", "nested": {"a": 1}, '
            '"nan": NaN, "inf": Infinity, "ninf": -Infinity, "big": 1e999, '
            f'"huge": {2 ** 70}, "neg": -{2 ** 63}' + '}\n\n  \n')
    assert parse_json_tail(text) == {"format": "json",
                                     "values": {"p95_ms": 12.5, "n": 3, "neg": -(2 ** 63)}}


def test_json_tail_is_bounded() -> None:
    many = {f"f{i}": i for i in range(500)}
    many_found = parse_json_tail(json.dumps(many))
    assert many_found is not None
    assert list(many_found["values"]) == [f"f{i}" for i in range(MAX_JSON_FIELDS)]
    long_name = parse_json_tail(json.dumps({"x" * 101: 1, "y" * 100: 2}))
    assert long_name == {"format": "json", "values": {"y" * 100: 2}}
    surrogate = parse_json_tail('{"\\ud800": 1, "ok": 2}')
    assert surrogate == {"format": "json", "values": {"ok": 2}}


@pytest.mark.parametrize("text", [
    "", "\n", "no json", "[1, 2]", '"a string"', "3.5", '{"a": 1}\nafter', '{"a": 1',
    "{" + '"a":' * 1 + "[" * 200_000 + "]" * 200_000 + "}",  # nested too deep to read
    '{"a": ' + "9" * 5000 + "}",  # past Python's integer-digits limit
    "{" + " " * (2 << 20) + "}",  # a last line over the cap
    '\xff{"a": 1}',
])
def test_json_tail_non_objects_are_none(text: str) -> None:
    assert parse_json_tail(text) is None


def test_json_tail_of_an_empty_object_has_no_values() -> None:
    assert parse_json_tail("{}") == {"format": "json", "values": {}}


# -- parse_outputs ----------------------------------------------------------------------------

JUNIT = b'<testsuite tests="3" failures="1"/>'


def test_parse_outputs_takes_the_first_format_found() -> None:
    both = parse_outputs('2 passed in 0.1s\n{"a": 1}', {"r.xml": JUNIT})
    assert both is not None and both["format"] == "pytest"
    junit = parse_outputs('{"a": 1}', {"r.xml": JUNIT, "s.xml": JUNIT, "notes.txt": b"x",
                                       "bad.xml": LAUGHS})
    assert junit == {"format": "junit", "tests": 6, "failures": 2, "errors": 0, "skipped": 0,
                     "time_s": 0.0}
    assert parse_outputs('{"a": 1}', {"r.txt": JUNIT}) == {"format": "json",
                                                            "values": {"a": 1}}
    assert parse_outputs("nothing known") is None
    assert parse_outputs("", {"bad.xml": LAUGHS}) is None


def test_parse_outputs_of_a_real_run(suite: Path, tmp_path: Path) -> None:
    report = tmp_path / "out.xml"
    proc = _pytest(suite, "-q", "--junitxml", str(report))
    files = {"out.xml": report.read_bytes()}
    printed = parse_outputs(proc.stdout, files)
    assert printed is not None and printed["format"] == "pytest" and printed["failed"] == 1
    silent = parse_outputs("", files)  # the command sent its output elsewhere
    assert silent is not None and silent["format"] == "junit" and silent["tests"] == 7


_PIECES = st.sampled_from([
    "\n", " in ", "0.1s", "=== ", " ===", "1 passed", ", ", "2 failed", "no tests ran", "{",
    "}", '"a": ', "1", "NaN", "[", "]", "\x1b[31m", "\r", "seconds", " (0:01:15)", "\udcff",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=5)), max_size=40).map("".join),
       st.binary(max_size=300))
def test_no_input_makes_a_parser_raise(text: str, data: bytes) -> None:
    for found in (parse_pytest(text), parse_json_tail(text), parse_junit(data),
                  parse_junit(b"<testsuite " + data), parse_outputs(text, {"r.xml": data})):
        assert found is None or found["format"] in ("pytest", "junit", "json")
