r"""Written answers (``written.py``) and the points table (``points.py``), on hand-worked cases."""
import csv
import json

import pytest

from exercises.grading import points, written
from exercises.grading.errors import CommandError
from exercises.grading.handed_in import Problem

CHAPTER = '''# %% [markdown]
# ## The claim ledger
#
# | # | claim (source) | your prediction | settled in |
# | --- | --- | --- | --- |
# | C1 | Sines need cosines (book §1) | | §2 |
# | C2 | A shift is a rotation (book §2) | | §3 |

# %% [markdown]
# ## 5. Check yourself on this chapter
#
# **1.** Why a pair?

# %% [markdown] tags=["answer"]
# <details><summary>Answer</summary>
#
# Because a shift must be linear.
# </details>

# %% [markdown]
# **2.** Which row is position 0?

# %% [markdown] tags=["answer"]
# Row 0.

# %% [markdown]
# ## 6. The ledger, settled
#
# **9.** Not a question: after the section.
'''


def test_items_are_the_ledger_claims_and_the_check_yourself_questions(monkeypatch):
    from exercises.grading import notebooks
    real = notebooks.read_chapter
    monkeypatch.setattr(notebooks, "read_chapter", lambda name, text=None: real(name, CHAPTER))
    found = written.items("02")
    assert [(i["id"], i["kind"], i["out_of"]) for i in found] == [
        ("C1", "prediction", 1), ("C2", "prediction", 1), ("Q1", "question", 2), ("Q2", "question", 2)]
    assert found[0]["text"] == "Sines need cosines (book §1)" and found[2]["text"] == "Why a pair?"
    assert "Because a shift must be linear." in found[2]["answers"][0] and found[3]["answers"] == ["Row 0."]
    rubric = written.rubric("02")
    assert "Out of 6 points." in rubric and "Because a shift must be linear." in rubric
    template = written.template("02")
    assert "### C1" in template and "### Q2" in template and "linear" not in template  # no model answer in it
    filled = template.replace("### Q1\n", "### Q1\n\nA shift must be a linear map.\n")
    assert written.parse(filled)["Q1"] == "A shift must be a linear map." and written.parse(filled)["C1"] == ""


def test_the_ward_is_graded_against_the_planted_bugs():
    key = written.ward_key()
    assert sorted(key.values()) == sorted(written.ward_bugs())  # the healthy patient and every bug, once
    right = "\n".join(f"{letter}: {d}" for letter, d in key.items())
    assert written.grade_ward(right)[:2] == (7, 7)
    first, second = list(key)[:2]
    swapped = right.replace(f"{first}: {key[first]}", f"{first}: {key[second]}")
    pts, of, comment = written.grade_ward(swapped)
    assert (pts, of) == (6, 7) and f"wrong: {first}" in comment
    assert written.grade_ward("")[0] == 0 and "not answered: A" in written.grade_ward("")[2]
    # the template's own ward section, filled in, parses back to the same grade
    template = written.template("12")
    filled = template
    for letter, d in key.items():
        filled = filled.replace(f"\n{letter}: \n", f"\n{letter}: {d}\n", 1)
    assert written.grade_ward(written.parse(filled)["ward"])[0] == 7


def test_a_bad_manual_sheet_is_refused_with_a_sentence(tmp_path):
    sheet = tmp_path / "s.csv"
    sheet.write_text("student,chapter,item,points,out_of\nalice,02,Q1,three,2\n")
    with pytest.raises(CommandError, match=r"line 2: points 'three' is not a number"):
        written.read_manual(sheet)
    sheet.write_text("student,chapter,item,points,out_of\nalice,02,Q1,5,2\n")
    with pytest.raises(CommandError, match=r"points 5 is outside 0 to 2 \(alice, 02 Q1\)"):
        written.read_manual(sheet)
    sheet.write_text("student,item,points\nalice,Q1,1\n")
    with pytest.raises(CommandError, match="no column chapter"):
        written.read_manual(sheet)
    sheet.write_text("student,chapter,item,points,out_of\nalice,2,Q1,1.5,2\nbob,02,Q1,,2\n")
    assert written.read_manual(sheet) == {("alice", "02", "Q1"): (1.5, ""), ("bob", "02", "Q1"): (None, "")}


def test_the_default_points_are_one_a_star_and_the_file_overrides_them(tmp_path):
    # chapter 2's headings: 2.1 ★, 2.2 ★★, 2.3 ★★★
    assert points.default_table(["sinusoidal"]) == {"sinusoidal": {"2.1": 1, "2.2": 2, "2.3": 3}}
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"sinusoidal": {"2.3": 6}, "rope": {"6.1": 9}}))  # another session's module: kept aside
    assert points.load(path, ["sinusoidal"]) == {"sinusoidal": {"2.1": 1, "2.2": 2, "2.3": 6}}
    result = {"target": "sinusoidal.test_sinusoidal_properties", "label": "Exercise 2.3", "status": "fail",
              "kind": "weak_test", "caught": [6, 9]}
    assert points.worth(points.load(path, ["sinusoidal"]), result) == (4.0, 6)  # 6 points * 6/9
    for bad, phrase in (({"sinusoidal": {"2.9": 1}}, "no exercise '2.9'"),
                        ({"sinusoidal": {"2.1": -1}}, "worth -1; give a number from 0 to 1000"),
                        ({"sinusoidal": {"2.1": "two"}}, "worth 'two'"), ([1, 2], "expected an object")):
        path.write_text(json.dumps(bad))
        with pytest.raises(CommandError, match=phrase):
            points.load(path, ["sinusoidal"])


@pytest.mark.parametrize("value", [0, 1000, 0.25, 2.5])
def test_the_points_file_takes_every_value_from_0_to_1000_with_two_decimals(tmp_path, value):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"sinusoidal": {"2.1": value}}))
    assert points.load(path, ["sinusoidal"])["sinusoidal"]["2.1"] == value  # 0: an ungraded exercise, allowed


@pytest.mark.parametrize("value, phrase", [
    (-1, "worth -1; give a number from 0 to 1000."),
    (1001, "worth 1001; give a number from 0 to 1000."),
    (-0.01, "worth -0.01; give a number from 0 to 1000."),
    (1000.01, "worth 1000.01; give a number from 0 to 1000."),
    (0.125, "worth 0.125; give at most two decimal places (points are kept to 0.01)."),
    (True, "worth True; give a number from 0 to 1000."),
    (None, "worth None; give a number from 0 to 1000.")])
def test_the_points_file_refuses_a_value_outside_0_to_1000_naming_exercise_value_and_range(tmp_path, value, phrase):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"sinusoidal": {"2.1": value}}))
    with pytest.raises(CommandError) as e:
        points.load(path, ["sinusoidal"])
    assert str(e.value) == f"--points {path}: sinusoidal exercise 2.1 is {phrase}"  # the exercise, the value, the range


@pytest.mark.parametrize("x, printed", [(6.0, "6"), (6, "6"), (0, "0"), (0.5, "0.5"), (2.67, "2.67"),
                                        (4 * 2 / 3, "2.67"), (14 / 3, "4.67"), (100, "100"), (1000.1, "1000.1"),
                                        (12345.67, "12345.67"), (123456.78, "123456.78"), (0.004, "0")])
def test_points_print_to_two_decimals_and_never_fewer_digits(x, printed):
    assert points.fmt(x) == printed  # two decimals, worked by hand; :g would print 12345.7


def test_every_chapter_gives_its_questions_with_model_answers_and_its_claims():
    import re
    from exercises.grading import notebooks
    for name in notebooks.chapter_names():
        text = notebooks.chapter_path(name).read_text()
        questions = re.findall(r"^# \*\*(\d+)\.\*\*", text, re.M)  # counted by a pattern, not by the parser
        found = written.items(name.split("_")[0])
        asked = [i for i in found if i["kind"] == "question"]
        assert [i["id"] for i in asked] == [f"Q{q}" for q in questions], name
        assert all(i["answers"] for i in asked), name  # the rubric has a model answer for every question
        if questions:
            assert any(i["kind"] == "prediction" for i in found), name


def test_collect_grades_the_shallowest_answers_file_and_the_sheet_lists_what_is_graded_by_hand(monkeypatch, tmp_path):
    from exercises.grading import notebooks
    real = notebooks.read_chapter
    monkeypatch.setattr(notebooks, "read_chapter", lambda name, text=None: real(name, CHAPTER))
    alice = tmp_path / "alice"
    (alice / "answers").mkdir(parents=True)
    (alice / "old" / "answers").mkdir(parents=True)
    (alice / "answers" / "02.md").write_text("### C1\n\nYes: a pair turns.\n\n### C2\n\n### Q1\n\n"
                                             "A shift is linear.\n\n### Q2\n")
    (alice / "old" / "answers" / "02.md").write_text("### C2\n\nDeeper: never read.\n")
    assert written.answers_file(alice, "02") == (alice / "answers" / "02.md", None)  # links: the tests below
    manual = {("alice", "02", "C1"): (1.0, "a reason given"), ("bob", "02", "Q1"): (2.0, "bob's")}
    work = written.collect(alice, ["02"], manual, "alice")
    assert [(i["item"], i["points"], i["out_of"], i["comment"], i["auto"], i["answer"]) for i in work["02"]["items"]] == [
        ("C1", 1.0, 1, "a reason given", False, "Yes: a pair turns."),
        ("C2", 0, 1, "not answered", False, ""),
        ("Q1", None, 2, "", False, "A shift is linear."),  # answered, not graded yet
        ("Q2", 0, 2, "not answered", False, "")]
    assert {k: v for k, v in work["02"].items() if k != "items"} == {
        "points": 1.0, "out_of": 6, "ungraded": 1, "file": str(alice / "answers" / "02.md")}
    nobody = written.collect(tmp_path / "empty", ["2"], manual, "nobody")  # no file: every item 0, not answered
    assert (nobody["02"]["points"], nobody["02"]["ungraded"], nobody["02"]["file"]) == (0, 0, None)
    assert written.answers_file(tmp_path / "empty", "02") == (
        None, Problem("no 02.md in this student's folder", link=False))
    book = {"students": [{"student": "alice", "written": work}, {"student": "zed"}]}
    assert written.sheet(book).splitlines() == [
        "student,chapter,item,points,out_of,comment,answer",
        "alice,02,C1,1.0,1,a reason given,Yes: a pair turns.", "alice,02,C2,0,1,not answered,",
        "alice,02,Q1,,2,,A shift is linear.", "alice,02,Q2,0,2,not answered,"]


def test_the_ward_is_graded_when_collected_and_left_off_the_sheet(tmp_path):
    key = written.ward_key()
    (tmp_path / "12.md").write_text("### ward\n\n" + "\n".join(f"{k}: {d}" for k, d in key.items()) + "\n")
    work = written.collect(tmp_path, ["12"], {}, "alice")
    ward = [i for i in work["12"]["items"] if i["item"] == "ward"]
    assert [(i["points"], i["out_of"], i["auto"]) for i in ward] == [(7, 7, True)]
    assert ",ward," not in written.sheet({"students": [{"student": "alice", "written": work}]})


def test_write_gives_the_default_table_to_edit(tmp_path):
    path = points.write(tmp_path / "points.json", ["sinusoidal", "learned"])
    assert path == tmp_path / "points.json"
    assert path.read_text() == ('{\n "sinusoidal": {\n  "2.1": 1,\n  "2.2": 2,\n  "2.3": 3\n },\n'
                                ' "learned": {\n  "3.1": 1,\n  "3.2": 2,\n  "3.3": 3\n }\n}\n')


def test_an_exercise_the_table_leaves_out_is_worth_one_point():
    passed = {"target": "rope.decode", "label": "Exercise 6.10", "status": "pass", "kind": "pass"}
    assert points.worth({}, passed) == (1, 1)  # no table for the module
    assert points.worth({"rope": {"6.2": 3}}, passed) == (1, 1)  # a table without the exercise
    assert points.worth({"rope": {"6.10": 2.5}}, passed) == (2.5, 2.5)
    assert points.worth({"rope": {"6.10": 2.5}}, dict(passed, status="fail", kind="numbers")) == (0, 2.5)


def test_a_weak_tests_share_is_rounded_to_two_decimals():
    weak = {"target": "sinusoidal.test_sinusoidal_properties", "label": "Exercise 2.3", "status": "fail",
            "kind": "weak_test", "caught": [2, 3]}
    assert points.worth({"sinusoidal": {"2.3": 4}}, weak) == (2.67, 4)  # 4 * 2/3 = 2.666.. -> 2.67
    assert points.worth({"sinusoidal": {"2.3": 3}}, weak) == (2, 3)  # 3 * 2/3 = 2


def test_points_are_rounded_once_to_two_decimals_not_first_to_three():
    assert points.fmt(0.0046) == "0"  # 0.0046 -> 0.00; rounding to 0.005 first would print 0.01
    assert points.fmt(1.2349) == "1.23"  # not 1.235 -> 1.24


def test_an_exercise_no_chapter_heading_names_is_worth_one_point_by_default(monkeypatch):
    monkeypatch.setattr(points, "stars_by_number", lambda: {})  # no chapters: a drill's exercises
    assert points.default_table(["t5"]) == {"t5": {"5.1": 1, "5.2": 1, "5.3": 1}}


def test_a_points_file_naming_another_module_first_still_sets_the_modules_after_it(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"rope": {"6.1": 9}, "sinusoidal": {"2.3": 6}}))  # rope: not this session's
    assert points.load(path, ["sinusoidal"]) == {"sinusoidal": {"2.1": 1, "2.2": 2, "2.3": 6}}


@pytest.mark.parametrize("text, sentence", [
    ("{", "cannot read it as JSON (JSONDecodeError: Expecting property name enclosed in double quotes: line 1 "
          "column 2 (char 1))."),
    ("[1, 2]", "expected an object of modules, got list."),
    ('{"t5": 3}', "'t5' must map exercise numbers to points, got 3."),
    ('{"t5": {"5.9": 1}}', "t5 has no exercise '5.9'; its exercises are 5.1, 5.2, 5.3."),
])
def test_a_bad_points_file_is_refused_with_a_sentence_naming_the_file_and_what_is_wrong(tmp_path, text, sentence):
    path = tmp_path / "p.json"
    path.write_text(text)
    with pytest.raises(CommandError) as refused:
        points.load(path, ["t5"])
    assert str(refused.value) == f"--points {path}: {sentence}"


def test_a_points_file_that_cannot_be_read_names_the_error(tmp_path):
    with pytest.raises(CommandError) as refused:
        points.load(tmp_path / "absent.json", ["t5"])
    assert str(refused.value).startswith(f"--points {tmp_path / 'absent.json'}: cannot read it as JSON "
                                         "(FileNotFoundError: ")


# chapter 12's written parts on CHAPTER, with a ward of two patients: the template and the rubric by hand
WARD = {"A": "healthy", "B": "position_reset"}


@pytest.fixture
def chapter_12(monkeypatch, tmp_path):
    from exercises.grading import notebooks
    real = notebooks.read_chapter
    monkeypatch.setattr(notebooks, "read_chapter", lambda name, text=None: real(name, CHAPTER))
    monkeypatch.setattr(written, "ward_key", lambda: dict(WARD))
    monkeypatch.setattr(written, "ward_bugs", lambda: ("healthy", "position_reset", "mask_off"))
    monkeypatch.setattr(written, "INSTRUCTOR_ONLY", tmp_path / "instructor_only")
    return tmp_path / "instructor_only"


TEMPLATE_12 = """# Answers, chapter 12_choosing_and_clinic

Write each answer under its heading; keep the headings (`### C1`, `### Q1`, ...) as they are.

## Ledger: your predictions (before you run the chapter: yes or no, and one sentence why)

### C1

> Sines need cosines (book §1)


### C2

> A shift is a rotation (book §2)


## Check yourself

### Q1

> Why a pair?


### Q2

> Which row is position 0?


## The ward: your diagnosis

### ward

> For each patient A to G of clinic.ward(), write healthy or the key of its bug.

A: 
B: 

(one of: healthy, position_reset, mask_off)
"""

RUBRIC_12 = """# Rubric, chapter 12_choosing_and_clinic

Out of 8 points.

## The ledger's predictions

Criteria: 1 point: a yes or a no, with one sentence of reasoning that uses the chapter's ideas. Graded for the \
reasoning, not for being right (the settled ledger gives the outcome); 0: blank, or no reason.

### C1 (1 point)

> Sines need cosines (book §1)

### C2 (1 point)

> A shift is a rotation (book §2)

## Check yourself

Criteria: 2 points: the model answer's mechanism and the number the chapter measured (to its rounding); 1: the \
mechanism without the number, or the number without the why; 0: blank or wrong.

### Q1 (2 points)

> Why a pair?

Model answer:

Because a shift must be linear.

### Q2 (2 points)

> Which row is position 0?

Model answer:

Row 0.

## The ward

Criteria: 1 point per patient whose diagnosis matches the key; graded automatically.

### ward (2 points)

> For each patient A to G of clinic.ward(), write healthy or the key of its bug.

Key: A: healthy, B: position_reset

## The instructor's notes

Ask for the number.
"""


def test_chapter_12s_template_by_hand(chapter_12):
    assert written.template("12") == TEMPLATE_12


def test_chapter_12s_rubric_by_hand_with_the_instructors_notes(chapter_12):
    # 1 + 1 (claims) + 2 + 2 (questions) + 2 (one point a patient) = 8 points
    (chapter_12 / "rubrics").mkdir(parents=True)
    (chapter_12 / "rubrics" / "12.md").write_text("\nAsk for the number.\n\n")
    assert written.rubric("12") == RUBRIC_12
    (chapter_12 / "rubrics" / "12.md").unlink()
    assert written.rubric("12") == RUBRIC_12.split("\n## The instructor's notes")[0]  # no notes: no section


def test_a_rubric_refuses_a_student_copy_but_a_ledger_alone_needs_no_model_answer(monkeypatch):
    from exercises.grading import notebooks
    real = notebooks.read_chapter
    student_copy = "\n\n# %%".join(c for c in CHAPTER.split("\n\n# %%") if 'tags=["answer"]' not in c)
    monkeypatch.setattr(notebooks, "read_chapter", lambda name, text=None: real(name, student_copy))
    with pytest.raises(CommandError) as refused:
        written.rubric("02")
    assert str(refused.value) == ("chapters/02_sinusoidal.py has no answer cells here (a student copy): the rubric's "
                                  "model answers are in the instructor's copy of the workbook.")
    ledger_only = CHAPTER.split("\n\n# %% [markdown]\n# ## 5.")[0]
    monkeypatch.setattr(notebooks, "read_chapter", lambda name, text=None: real(name, ledger_only))
    assert "### C2 (1 point)" in written.rubric("02")


def test_a_chapter_is_named_by_its_number_or_its_whole_name_and_anything_else_is_refused():
    from exercises.grading import notebooks
    assert written.chapter_name("12_choosing_and_clinic") == written.chapter_name(12) == "12_choosing_and_clinic"
    with pytest.raises(CommandError) as refused:
        written.chapter_name("99")
    assert str(refused.value) == (f"no chapter '99'; give its number, e.g. 12 (the chapters are "
                                  f"{', '.join(notebooks.chapter_names())}).")


ODD_CHAPTER = '''# %%
x = 1  # a code cell before the ledger

# %% [markdown]
# **1.** Before any heading: not a question.

# %% [markdown]
# | # | claim |
# | --- | --- |
# | C1 | Two columns are enough |
# | note | a row that is not a claim |

# %% [markdown]
# ## Check yourself

# %% [markdown] tags=["answer"]
# An answer before any question: nobody's.

# %% [markdown]
# **1.** First?

# %% tags=["answer"]
print(1)

# %%
# the answer's check, a code cell that is not an answer
y = 2

# %% [markdown]
# **2.** Second?
'''


def test_items_read_a_two_column_ledger_and_only_the_check_yourself_sections_questions_and_code_answers(
        monkeypatch):
    from exercises.grading import notebooks
    real = notebooks.read_chapter
    monkeypatch.setattr(notebooks, "read_chapter", lambda name, text=None: real(name, ODD_CHAPTER))
    assert [(i["id"], i["text"], i["answers"]) for i in written.items("02")] == [
        ("C1", "Two columns are enough", []),
        ("Q1", "First?", ["```python\nprint(1)\n```"]),  # a code answer, fenced as Python
        ("Q2", "Second?", [])]


def test_a_split_claim_of_the_ledger_is_an_item_of_its_own(monkeypatch):
    from exercises.grading import notebooks
    real = notebooks.read_chapter
    split = CHAPTER.replace("# | C2 | A shift is a rotation (book §2) | | §3 |",
                            "# | C2a | A shift is a rotation (book §2) | | §3 |\n"
                            "# | C2b | ... of every pair | | §3 |")
    monkeypatch.setattr(notebooks, "read_chapter", lambda name, text=None: real(name, split))
    assert [i["id"] for i in written.items("02") if i["kind"] == "prediction"] == ["C1", "C2a", "C2b"]


def test_the_ward_comment_lists_the_wrong_and_the_blank_patients(monkeypatch):
    monkeypatch.setattr(written, "ward_key", lambda: {"A": "healthy", "B": "mask_off", "C": "healthy",
                                                      "D": "healthy", "E": "mask_off"})
    assert written.grade_ward("A: healthy\nB: healthy\nC: mask_off\n") == (
        1, 5, "1 of 5 patients diagnosed right; wrong: B, C; not answered: D, E.")
    assert written.grade_ward(None) == (0, 5, "0 of 5 patients diagnosed right; not answered: A, B, C, D, E.")


def test_the_answers_file_is_the_shallowest_then_the_first_by_name_and_never_a_link(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "z").mkdir()
    (tmp_path / "y").mkdir()
    (tmp_path / "a" / "b" / "02.md").write_text("deep")
    (tmp_path / "z" / "02.md").write_text("shallow")
    (tmp_path / "y" / "02.md").write_text("shallow, first by name")
    assert written.answers_file(tmp_path, "02") == (tmp_path / "y" / "02.md", None)
    only_link = tmp_path / "linked"
    only_link.mkdir()
    (only_link / "mine.md").write_text("### Q1\n\nx\n")
    (only_link / "02.md").symlink_to(only_link / "mine.md")  # a link, even to a file inside the folder
    assert written.answers_file(only_link, "02") == (None, Problem("linked/02.md is a link; hand in the file itself.",
                                                                   link=True))


def test_collect_reads_a_file_with_bad_bytes_and_gives_every_item_its_fields(monkeypatch, tmp_path):
    monkeypatch.setattr(written, "ward_key", lambda: dict(WARD))
    (tmp_path / "12.md").write_bytes(b"### ward\n\nA: healthy\nB: healthy \xff\n")
    ward = [i for i in written.collect(tmp_path, ["12"], {}, "alice")["12"]["items"] if i["item"] == "ward"]
    assert ward == [{"item": "ward", "points": 1, "out_of": 2, "comment": "1 of 2 patients diagnosed right; wrong: B.",
                     "auto": True, "answer": "A: healthy\nB: healthy \ufffd"}]
    q1 = [i for i in written.collect(tmp_path, ["12"], {}, "alice")["12"]["items"] if i["item"] == "Q1"]
    assert q1 == [{"item": "Q1", "points": 0, "out_of": 2, "comment": "not answered", "auto": False, "answer": ""}]


def test_the_manual_sheet_takes_0_and_out_of_keeps_the_comment_and_a_named_chapter(tmp_path):
    sheet = tmp_path / "s.csv"
    sheet.write_text("student,chapter,item,points,out_of,comment\nalice,02,Q1,0,2,blank\nbob,2,Q1,2,2,full marks\n"
                     "carol,ward_extra,Q9,1000,,\n")
    assert written.read_manual(sheet) == {("alice", "02", "Q1"): (0.0, "blank"),
                                          ("bob", "02", "Q1"): (2.0, "full marks"),
                                          ("carol", "ward_extra", "Q9"): (1000.0, "")}  # no out_of: up to 1000
    sheet.write_text("student,chapter,item,points,out_of\ncarol,02,Q1,1000.5,\n")
    with pytest.raises(CommandError, match=r"line 2: points 1000.5 is outside 0 to 1000 \(carol, 02 Q1\)\.$"):
        written.read_manual(sheet)
    sheet.write_text("student,chapter\nalice,02\n")
    with pytest.raises(CommandError) as refused:
        written.read_manual(sheet)
    assert str(refused.value) == (f"--manual {sheet}: no column item, points; the sheet's columns are student, "
                                  "chapter, item, points, out_of, comment, answer.")
    with pytest.raises(CommandError) as refused:
        written.read_manual(tmp_path / "absent.csv")
    assert str(refused.value) == f"--manual {tmp_path / 'absent.csv'}: cannot read it (No such file or directory)."


# ---------------------------------------------------------------------------
# Links: what a grader reads from a student's folder stays inside it (instructor.student_file's rule)
# ---------------------------------------------------------------------------

ALICES = "### C1\n\nALICE'S OWN ANSWER\n\n### Q1\n\nALICE'S OWN ANSWER\n"


def link_class(tmp_path):
    r"""alice (her own answers/02.md), dave (a link to alice's folder), erin (answers/ a link to alice's),
    fay (answers/02.md a link to alice's file)."""
    s = tmp_path / "class"
    (s / "alice" / "answers").mkdir(parents=True)
    (s / "alice" / "answers" / "02.md").write_text(ALICES)
    (s / "dave").symlink_to(s / "alice", target_is_directory=True)
    (s / "erin").mkdir()
    (s / "erin" / "answers").symlink_to(s / "alice" / "answers", target_is_directory=True)
    (s / "fay" / "answers").mkdir(parents=True)
    (s / "fay" / "answers" / "02.md").symlink_to(s / "alice" / "answers" / "02.md")
    return s


@pytest.mark.parametrize("student, sentence", [
    ("dave", "dave is a link, not a folder; hand in the folder itself."),
    ("erin", "no 02.md in this student's folder; erin/answers is a link, which the grader does not follow: "
             "hand in the folder itself."),
    ("fay", "fay/answers/02.md is a link; hand in the file itself.")])
def test_a_link_to_another_students_answers_is_refused_in_a_sentence_and_never_read(monkeypatch, tmp_path,
                                                                                     student, sentence):
    from exercises.grading import notebooks
    real = notebooks.read_chapter
    monkeypatch.setattr(notebooks, "read_chapter", lambda name, text=None: real(name, CHAPTER))
    s = link_class(tmp_path)
    work = written.collect(s / student, ["02"], {}, student)
    assert [(i["item"], i["points"], i["comment"], i["answer"]) for i in work["02"]["items"]] == [
        (item, 0, sentence, "") for item in ("C1", "C2", "Q1", "Q2")]
    assert (work["02"]["points"], work["02"]["file"]) == (0, None)
    sheet = written.sheet({"students": [{"student": student, "written": work}]})
    assert next(csv.reader(sheet.splitlines()[1:])) == [student, "02", "C1", "0", "1", sentence, ""]
    assert "ALICE" not in sheet
    assert written.answers_file(s / student, "02") == (None, Problem(sentence, link=True))
    assert written.collect(s / "alice", ["02"], {}, "alice")["02"]["items"][0]["answer"] == "ALICE'S OWN ANSWER"


def test_answers_behind_several_linked_folders_are_refused_on_every_item_like_behind_one(monkeypatch, tmp_path):
    from exercises.grading import notebooks
    real = notebooks.read_chapter
    monkeypatch.setattr(notebooks, "read_chapter", lambda name, text=None: real(name, CHAPTER))
    s = link_class(tmp_path)
    (s / "erin" / "old").symlink_to(s / "alice", target_is_directory=True)  # a second link beside erin/answers
    sentence = ("no 02.md in this student's folder; erin/answers, erin/old are links, which the grader does not "
                "follow: hand in the folders themselves.")
    assert written.answers_file(s / "erin", "02") == (None, Problem(sentence, link=True))
    work = written.collect(s / "erin", ["02"], {}, "erin")
    assert [(i["item"], i["points"], i["comment"]) for i in work["02"]["items"]] == [
        (item, 0, sentence) for item in ("C1", "C2", "Q1", "Q2")]  # not "not answered": the file may be behind them


def test_a_linked_students_ward_is_not_graded_on_the_other_students_answers(monkeypatch, tmp_path):
    monkeypatch.setattr(written, "ward_key", lambda: dict(WARD))
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "12.md").write_text("### ward\n\nA: healthy\nB: position_reset\n")
    (tmp_path / "dave").symlink_to(tmp_path / "alice", target_is_directory=True)
    ward = [i for i in written.collect(tmp_path / "dave", ["12"], {}, "dave")["12"]["items"] if i["item"] == "ward"]
    assert ward == [{"item": "ward", "points": 0, "out_of": 2, "auto": True, "answer": "",
                     "comment": "dave is a link, not a folder; hand in the folder itself."}]
    alice = written.collect(tmp_path / "alice", ["12"], {}, "alice")["12"]["items"]
    assert [i["points"] for i in alice if i["item"] == "ward"] == [2]  # the positive control: alice's own file
