r"""Every settled ledger agrees with the evidence it cites, under the verdict rule of ``chapters/README.md``.

For each row of a chapter's settled ledger (the five-column table after the "settled" heading):

* the evidence cell is ``result NAME/KEY`` (a claim record in ``experiments/results/NAME.json``) or
  ``exact §N`` (a computation without sampling, asserted in section N);
* for a cited record, the interval and the verdict are recomputed from its raw values
  (``stats.recompute``) and must equal the stored ones; the row's verdict must be that verdict, and the row
  must quote the interval as ``stats.format_interval`` prints it;
* a record with a ``positive_control`` names a claim in the same file whose verdict is "reproduces".

Chapters in ``NOT_YET`` have not been moved to this form; the test fails if one of them already has (so the
list only shrinks).
"""
import json
import re
from pathlib import Path

import pytest

from exercises.grading import notebooks
from mini_transformer.evaluation import stats
from mini_transformer.evaluation.experiments.common import RESULTS

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = [c for c in notebooks.chapter_names() if not c.startswith("13_")]  # 13 is the cards' appendix
NOT_YET = set()  # every chapter's ledger is in the five-column form now
HEADER = ["#", "claim (source)", "what this model did", "evidence", "verdict"]
RESULT = re.compile(r"^result ([a-z0-9_]+)/([A-Za-z0-9_.\-]+)$")
EXACT = re.compile(r"^exact §\d+(\.\d+)?$")


def split_row(line):
    cells = line.strip()[1:].strip()
    assert cells.startswith("|") and cells.endswith("|"), line
    return [c.strip() for c in re.split(r"(?<!\\)\|", cells[1:-1])]


def settled_ledger(text, heading=r"# #+ .*settled"):
    """The rows of the settled ledger: the first table with an 'evidence' column after a 'settled' heading.

    Chapters are percent-format, so their Markdown lines start with ``# ``; the README's are taken the same
    way after a ``# `` is put before each line.
    """
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if re.match(heading, l)), None)
    if start is None:
        return None, None
    for i in range(start, len(lines)):
        if lines[i].startswith("# |") and "evidence" in lines[i]:
            header = split_row(lines[i])
            rows = []
            for line in lines[i + 2:]:
                if not line.startswith("# |"):
                    break
                rows.append(split_row(line))
            return header, rows
    return None, None


_CLAIMS = {}  # result name -> its "claims", read once


def load_claims(name):
    if name not in _CLAIMS:
        path = Path(RESULTS) / f"{name}.json"
        assert path.exists(), f"the ledger cites {path.name}, which is not in {RESULTS}"
        _CLAIMS[name] = json.loads(path.read_text()).get("claims", {})
    return _CLAIMS[name]


def quoted(record, text):
    lo, hi = record["interval"]
    return any(stats.format_interval(record["mean"], lo, hi, d) in text for d in (1, 2, 3, 4))


def check_row(row):
    """The problems with one ledger row, as sentences (empty when the row agrees with its evidence)."""
    label, _, did, evidence, verdict_cell = row
    said = next((v for v in ("does not reproduce", "not established", "reproduces") if verdict_cell.startswith(v)), None)
    if said is None:
        return [f"{label}: the verdict {verdict_cell!r} does not start with one of {stats.VERDICTS}"]
    if EXACT.match(evidence):
        return [] if said != "not established" else [f"{label}: an exact claim cannot be 'not established'"]
    m = RESULT.match(evidence)
    if not m:
        return [f"{label}: the evidence {evidence!r} is neither 'result NAME/KEY' nor 'exact §N'"]
    claims = load_claims(m.group(1))
    if m.group(2) not in claims:
        return [f"{label}: {m.group(1)}.json has no claim {m.group(2)!r}"]
    rec = claims[m.group(2)]
    again = stats.recompute(rec)
    problems = []
    if again["interval"] != pytest.approx(rec["interval"], rel=1e-9, abs=1e-12) or again["verdict"] != rec["verdict"]:
        problems.append(f"{label}: the stored interval or verdict of {evidence} is not what its values give "
                        f"({again['interval']}, {again['verdict']})")
    if said != again["verdict"]:
        problems.append(f"{label}: the row says {said!r}, the interval {again['interval']} says {again['verdict']!r}")
    if not quoted(again, did):
        problems.append(f"{label}: the row does not quote the interval {stats.format_record(again)!r}")
    control = rec.get("positive_control")
    if control is not None and claims.get(control, {}).get("verdict") != "reproduces":
        problems.append(f"{label}: its positive control {control!r} does not reproduce")
    return problems


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_ledger_verdicts_follow_their_intervals(chapter):
    text = (ROOT / "chapters" / f"{chapter}.py").read_text()
    header, rows = settled_ledger(text)
    if chapter in NOT_YET:
        assert header is None, f"{chapter} has an evidence column now: take it out of NOT_YET"
        pytest.skip(f"{chapter}'s ledger is not yet in the five-column form of the verdict rule")
    assert header == HEADER, f"{chapter}: the settled ledger's header is {header}, expected {HEADER}"
    assert rows, f"{chapter}: the settled ledger has no rows"
    problems = [p for row in rows for p in check_row(row)]
    assert not problems, "\n".join(problems)


def test_the_readme_summary_follows_its_intervals():
    text = "\n".join("# " + line for line in (ROOT / "README.md").read_text().splitlines())
    header, rows = settled_ledger(text, heading=r"# ## What we measured")
    assert header == HEADER and len(rows) >= 10, header
    problems = [p for row in rows for p in check_row(row)]
    assert not problems, "\n".join(problems)


def test_the_checker_catches_a_wrong_verdict(monkeypatch):
    # positive control of the test itself: a record whose interval contains 0, cited as "reproduces"
    rec = stats.claim_record("rise (nats)", "above", 0.0, values=[0.1, -0.05, 0.02])
    monkeypatch.setitem(_CLAIMS, "fake", {"K": rec, "C": dict(rec)})
    lo, hi = rec["interval"]
    did = f"{stats.format_interval(rec['mean'], lo, hi)} over 3 seeds"
    assert check_row(["C1", "claim", did, "result fake/K", "not established"]) == []
    assert any("says 'reproduces'" in p for p in check_row(["C1", "claim", did, "result fake/K", "reproduces"]))
    assert any("does not quote" in p for p in check_row(["C1", "claim", "0.02", "result fake/K", "not established"]))
    assert any("neither" in p for p in check_row(["C1", "claim", did, "chapter §3", "not established"]))
    assert any("partly" in p for p in check_row(["C1", "claim", did, "result fake/K", "partly"]))
    tampered = dict(rec, verdict="reproduces", positive_control="C")
    _CLAIMS["fake"]["T"] = tampered
    problems = check_row(["C1", "claim", did, "result fake/T", "not established"])
    assert any("not what its values give" in p for p in problems)
    assert any("positive control" in p for p in problems)
