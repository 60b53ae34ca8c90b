r"""The drills in PyTorch: ``python -m exercises drill NAME --torch``.

The PyTorch blank has the NumPy blank's signatures and docstrings, with ``import torch``; grading it
runs the same checks and misconceptions, the graded process turning the cases' arrays into tensors
and the tensors it gets back into arrays. The tests that grade PyTorch code need PyTorch, which is
never a requirement of the workbook (CI does not install it): they are skipped without it. The blank's
text and the refusal without PyTorch are tested everywhere.
"""
import ast
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

from exercises.grading import generate as gen
from exercises.grading.drill import drills
from exercises.grading.grader import grade_file
from exercises.grading.modules.exercise_text import fill
from exercises.grading.paths import ROOT

DRILLS = drills()  # {name: Drill}, found in the module folders

needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="PyTorch is not installed (never a requirement of the workbook; CI runs without it): "
           "`pip install torch` to run the tests that grade PyTorch drills")

# ---------------------------------------------------------------------------
# Correct PyTorch answers, as an interviewee would type them
# ---------------------------------------------------------------------------

ROPE = '''
def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def apply_rotary(x, cos, sin):
    return (x * cos + rotate_half(x) * sin).to(x.dtype)


class RotaryEmbedding:
    def __init__(self, d_head, base=10000.0):
        self.d_head, self.base = d_head, base
        self.inv_freq = base ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)

    def __call__(self, T, offset=0):
        t = torch.arange(offset, offset + T, dtype=torch.float64)
        angles = torch.outer(t, self.inv_freq)
        angles = torch.cat([angles, angles], dim=-1)
        return angles.cos(), angles.sin()
'''

ROPE_BODIES = [  # (label, indent, body): ROPE's bodies, as the reader types them into the blank
    ("Exercise 6.1", "    ", "h = x.shape[-1] // 2\nreturn torch.cat([-x[..., h:], x[..., :h]], dim=-1)"),
    ("Exercise 6.2", "    ", "return (x * cos + rotate_half(x) * sin).to(x.dtype)"),
    ("Exercise 6.3", "        ", "self.d_head, self.base = d_head, base\n"
                                 "self.inv_freq = base ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)"),
    ("Exercise 6.3", "        ", "t = torch.arange(offset, offset + T, dtype=torch.float64)\n"
                                 "angles = torch.outer(t, self.inv_freq)\nangles = torch.cat([angles, angles], dim=-1)\n"
                                 "return angles.cos(), angles.sin()"),
]

SINUSOIDAL = '''
def sinusoidal_positional_encoding(T, d_model, base=10000.0):
    position = torch.arange(T, dtype=torch.float64)[:, None]
    omega = base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe = torch.zeros(T, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * omega)
    pe[:, 1::2] = torch.cos(position * omega)
    return pe
'''

ALIBI = '''
def alibi_slopes(n_heads):
    def geometric(n):
        return 2.0 ** (-8.0 * torch.arange(1, n + 1, dtype=torch.float64) / n)
    c = 2 ** math.floor(math.log2(n_heads))
    return torch.cat([geometric(c), geometric(2 * c)[0::2][:n_heads - c]])


def alibi_bias(n_heads, T_q, T_k):
    i = torch.arange(T_k - T_q, T_k)[:, None]
    j = torch.arange(T_k)[None, :]
    distance = (i - j).clamp(min=0).to(torch.float64)
    return -alibi_slopes(n_heads)[None, :, None, None] * distance
'''

T5 = '''
def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = -relative_position
    bucket = torch.zeros_like(n)
    if bidirectional:
        num_buckets //= 2
        bucket = bucket + (n < 0).long() * num_buckets
        n = n.abs()
    else:
        n = n.clamp(min=0)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    ratio = torch.log(n.clamp(min=1).double() / max_exact + 1e-6) / math.log(max_distance / max_exact)
    large = (max_exact + (ratio * (num_buckets - max_exact)).long()).clamp(max=num_buckets - 1)
    return bucket + torch.where(is_small, n, large)
'''

ANSWERS = {"rope": ROPE, "sinusoidal": SINUSOIDAL, "alibi": ALIBI, "t5": T5}


def _torch_file(folder, name, body):
    path = folder / f"{name}_torch.py"
    path.write_text(f"{gen.TORCH_MARKER}\nimport math\nimport torch\n\n{body}")
    return path


def _drill(args, env, prelude=""):
    r"""``python -m exercises drill ARGS`` in a fresh process; ``prelude`` runs first (to block an import)."""
    code = (f"import runpy, sys\n{prelude}\nsys.argv = ['exercises', 'drill', *{args!r}]\n"
            "try:\n    runpy.run_module('exercises', run_name='__main__')\n"
            "finally:\n    print('torch imported:', 'torch' in sys.modules and sys.modules['torch'] is not None)")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)


def _env(tmp_path, clock):
    return dict(os.environ, PE_DRILL_DIR=str(tmp_path / "attempts"), PE_DRILL_HISTORY=str(tmp_path / "h.json"),
                PE_DRILL_CLOCK=str(clock), MPLBACKEND="Agg")


# ---------------------------------------------------------------------------
# The blank, and the refusal without PyTorch: no PyTorch needed
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(DRILLS))
def test_the_pytorch_blank_has_the_numpy_blanks_signatures_and_docstrings_in_tensors(name):
    d = DRILLS[name]
    numpy_text = gen.drill_text(d.module, d.names, name, d.minutes)
    text = gen.torch_drill_text(d.module, d.names, name, d.minutes)
    compile(text, f"{name}_torch.py", "exec")
    assert re.search(rf"^{re.escape(gen.TORCH_MARKER)}$", text, re.M)
    assert re.search(r"^import torch$", text, re.M) and not re.search(r"\bxp\b|numpy|backend", text, re.I)
    assert f"drill {name} --grade --torch" in text

    def defs(t):  # {name: (signature, docstrings)} of every def and class, methods included
        out = {}
        for node in ast.walk(ast.parse(t)):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                sig = ast.dump(node.args) if isinstance(node, ast.FunctionDef) else ""
                out[node.name] = (sig, ast.get_docstring(node))
        return out
    numpy_defs, torch_defs = defs(numpy_text), defs(text)
    assert numpy_defs.keys() == torch_defs.keys() and set(d.names) <= set(torch_defs)
    for n, (sig, doc) in numpy_defs.items():
        assert torch_defs[n][0] == sig  # the same signature
        said = re.sub(r"\barray(s?)\b", r"tensor\1", doc).replace("an tensor", "a tensor")
        assert torch_defs[n][1] == said, n  # the same docstring, its arrays tensors
        assert not re.search(r"\barrays?\b", torch_defs[n][1]), n
    reference = (gen.SOLUTIONS / f"{d.module}.py").read_text()
    body_lines = {line.strip() for _, first, last, _ in gen.regions(reference)
                  for line in reference.splitlines()[first + 1:last] if line.strip()}
    assert not body_lines & {line.strip() for line in text.splitlines()}  # no line of any solution


@pytest.mark.slow
def test_without_pytorch_the_flag_says_how_to_install_it_and_exits_cleanly(tmp_path):
    block = "sys.modules['torch'] = None  # as if PyTorch were not installed: import torch fails"
    env = _env(tmp_path, 1000)
    attempts = tmp_path / "attempts"
    for args in (["rope", "--torch"], ["rope", "--grade", "--torch"]):
        out = _drill(args, env, block)
        assert out.returncode == 2, out.stdout + out.stderr
        assert "pip install torch" in out.stderr and "download.pytorch.org/whl/cpu" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr, out.stderr
        assert not attempts.exists() or not any(attempts.iterdir())  # no blank written, no clock started
    attempts.mkdir()  # a PyTorch blank graded without --torch: its marker asks for PyTorch
    (attempts / "rope.py").write_text(gen.torch_drill_text("rope", DRILLS["rope"].names, "rope", 15))
    out = _drill(["rope", "--grade"], env, block)
    assert out.returncode == 2 and "pip install torch" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "h.json").exists()
    out = _drill([], env, block)  # the listing needs no PyTorch
    assert out.returncode == 0 and "PyTorch" in out.stdout


# ---------------------------------------------------------------------------
# Grading PyTorch: needs PyTorch
# ---------------------------------------------------------------------------

@pytest.mark.slow
@needs_torch
def test_pytorch_drill_end_to_end_blank_then_a_correct_answer_timed_apart_from_numpy(tmp_path):
    started = _drill(["rope", "--torch"], _env(tmp_path, 1000))
    assert started.returncode == 0, started.stdout + started.stderr
    attempt = tmp_path / "attempts" / "rope_torch.py"
    assert attempt.exists() and "in PyTorch" in started.stdout and "--grade --torch" in started.stdout

    blank = _drill(["rope", "--grade", "--torch"], _env(tmp_path, 1300))
    assert blank.returncode == 1 and blank.stdout.count("not attempted") == 3, blank.stdout + blank.stderr

    text = attempt.read_text()  # the reader fills the blank in, body by body
    for label, indent, body in ROPE_BODIES:
        text = fill(text, label, body, indent)
    attempt.write_text(text)
    done = _drill(["rope", "--grade"], _env(tmp_path, 1000 + 11 * 60))  # the marker says PyTorch
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Drill 'rope' in PyTorch passes in 11:00, under the target by 4:00" in done.stdout
    assert "torch imported: False" in done.stdout  # the grader's process never imports torch

    attempts = json.loads((tmp_path / "h.json").read_text())["attempts"]
    assert [(a["language"], a["passed"], a["elapsed_s"]) for a in attempts] == [("torch", False, 300.0),
                                                                                 ("torch", True, 660.0)]
    listing = _drill([], _env(tmp_path, 0)).stdout.splitlines()
    assert re.match(r"rope\s+15:00\s+-\s+11:00\s", next(line for line in listing if line.startswith("rope ")))
    plotted = _drill(["--history", "rope", "--torch"], _env(tmp_path, 0))
    assert "rope_torch_history.png" in plotted.stdout, plotted.stdout + plotted.stderr
    numpy_plot = _drill(["--history", "rope"], _env(tmp_path, 0))
    assert numpy_plot.returncode == 1 and "No recorded attempts at 'rope'" in numpy_plot.stderr


@pytest.mark.slow
@needs_torch
@pytest.mark.parametrize("name", ["sinusoidal", "alibi", "t5"])
def test_a_correct_pytorch_answer_passes(tmp_path, name):
    d = DRILLS[name]
    results = grade_file(_torch_file(tmp_path, name, ANSWERS[name]), d.module, names=d.names, language="torch",
                         timeout=30)
    assert [r["status"] for r in results] == ["pass"] * len(d.names), [r["message"] for r in results]


# (module, target, the NumPy mistake's body in the exercise file, the same mistake in the PyTorch answer, key)
MISTAKES = [
    ("rope", "apply_rotary", "return (x * cos - rotate_half(x) * sin).astype(x.dtype)",
     ("(x * cos + rotate_half(x) * sin)", "(x * cos - rotate_half(x) * sin)"), "sign_error"),
    ("rope", "rotate_half", "return xp.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)",
     ("torch.cat([-x[..., h:], x[..., :h]], dim=-1)", "torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1)"
                                                        ".reshape(x.shape)"), "interleaved_pairing"),
    ("sinusoidal", "sinusoidal_positional_encoding",
     "position = xp.arange(T, dtype=xp.float64)[:, None]\n"
     "omega = base ** (-xp.arange(0, d_model, 2, dtype=xp.float64) / d_model)\n"
     "return xp.concatenate([xp.sin(position * omega), xp.cos(position * omega)], axis=-1)",
     ("pe[:, 0::2] = torch.sin(position * omega)\n    pe[:, 1::2] = torch.cos(position * omega)\n    return pe",
      "return torch.cat([torch.sin(position * omega), torch.cos(position * omega)], dim=-1)"), "halves_layout"),
    ("alibi", "alibi_bias",
     "i = xp.arange(T_k - T_q, T_k)[:, None]\nj = xp.arange(T_k)[None, :]\n"
     "return alibi_slopes(n_heads)[None, :, None, None] * xp.maximum(i - j, 0)",
     ("return -alibi_slopes", "return alibi_slopes"), "positive_sign"),
]


@pytest.mark.slow
@needs_torch
@pytest.mark.parametrize("module, target, numpy_body, torch_edit, key", MISTAKES, ids=[m[4] for m in MISTAKES])
def test_a_pytorch_mistake_is_named_by_the_same_misconception_as_the_numpy_one(tmp_path, module, target,
                                                                                numpy_body, torch_edit, key):
    label = gen.labels_of(module)[target]
    numpy_file = tmp_path / f"{module}.py"
    numpy_file.write_text(fill(gen.generated_text(module), label, numpy_body))
    old, new = torch_edit
    assert old in ANSWERS[module]
    torch_file = _torch_file(tmp_path, module, ANSWERS[module].replace(old, new))
    in_numpy, = grade_file(numpy_file, module, names=(target,))
    in_torch, = grade_file(torch_file, module, names=(target,), language="torch", timeout=30)
    assert (in_numpy["kind"], in_numpy["misconception"]) == ("misconception", key), in_numpy["message"]
    assert (in_torch["kind"], in_torch["misconception"]) == ("misconception", key), in_torch["message"]
    assert in_torch["message"] == in_numpy["message"]


@pytest.mark.slow
@needs_torch
def test_the_boundary_hides_nothing_a_numpy_array_a_write_into_x_and_float32_tables_are_caught(tmp_path):
    body = (ROPE.replace("return torch.cat([-x[..., h:], x[..., :h]], dim=-1)",
                         "return torch.cat([-x[..., h:], x[..., :h]], dim=-1).numpy()")  # not a tensor
            .replace("return (x * cos + rotate_half(x) * sin).to(x.dtype)",
                     "x[...] = x * cos + torch.cat([-x[..., x.shape[-1] // 2:], x[..., :x.shape[-1] // 2]], -1) * sin"
                     "\n    return x")  # writes into its input
            .replace("torch.arange(0, d_head, 2, dtype=torch.float64)", "torch.arange(0, d_head, 2)")
            .replace("torch.arange(offset, offset + T, dtype=torch.float64)", "torch.arange(offset, offset + T)"))
    results = {r["target"]: r for r in grade_file(_torch_file(tmp_path, "rope", body), "rope",
                                                  names=DRILLS["rope"].names, language="torch", timeout=30)}
    assert results["rope.rotate_half"]["kind"] == "type", results["rope.rotate_half"]["message"]
    assert "numpy.ndarray" in results["rope.rotate_half"]["message"]
    assert results["rope.apply_rotary"]["kind"] == "mutated", results["rope.apply_rotary"]["message"]
    embedding = results["rope.RotaryEmbedding"]
    assert embedding["kind"] == "dtype" and "float32" in embedding["message"], embedding["message"]


@pytest.mark.slow
@needs_torch
def test_the_feedback_of_a_pytorch_drill_names_pytorchs_idioms(tmp_path):
    from exercises.grading import drill
    env_dir, history = tmp_path / "attempts", tmp_path / "h.json"
    drill.start("rope", env_dir, history, language="torch")
    body = ROPE.replace("return (x * cos + rotate_half(x) * sin).to(x.dtype)",
                        "return x * cos + rotate_half(x) * sin")  # a float32 x comes back float64
    _torch_file(env_dir, "rope", body)
    passed, text = drill.grade("rope", env_dir, history, timeout=30, language="torch")
    assert not passed and ".to(x.dtype)" in text and ".astype" not in text, text
