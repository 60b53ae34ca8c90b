"""The experiments' cost table, on hand-made result files."""
import json

from experiments import costs


def write(folder, name, payload):
    (folder / f"{name}.json").write_text(json.dumps(payload))


def test_rows_read_seeds_time_and_load(tmp_path):
    write(tmp_path, "a", {"seeds": [2, 0, 1], "environment": {"seconds": 90.0, "cores": 2, "backend": "numpy",
                                                                 "process": {"load_average": [4.5, 3.0, 2.0]}},
                          "command": "python -m x.a"})
    write(tmp_path, "b", {"claims": {"C1": {"seeds": [0, 1]}, "C2": {"seeds": [1, 2]}},
                          "environment": {"seconds": 30.0, "cores": 2, "backend": "numpy"}})
    write(tmp_path, "c", {"seed": 0, "environment": {}, "commands": ["python -m x.c --part 1", "python -m x.c --part 2"]})
    a, b, c = costs.cost_rows(str(tmp_path))
    assert (a["seeds"], a["per_seed"], a["load"], a["command"]) == ([0, 1, 2], 30.0, 4.5, "python -m x.a")
    assert (b["seeds"], b["per_seed"], b["load"]) == ([0, 1, 2], 10.0, None)
    assert (c["seeds"], c["seconds"], c["per_seed"]) == ([0], None, None)
    assert c["command"] == "python -m x.c --part 1 (and 1 more parts)"
    table = costs.cost_table([a, b, c]).splitlines()
    assert table[2] == "| a | 0, 1, 2 | 90 | 30 | 4.5 | 2, numpy | `python -m x.a` |"
    assert table[4].startswith("| c | 0 | not recorded | not recorded | not recorded |")


def test_the_command_writes_the_table(tmp_path):
    out = tmp_path / "costs.md"
    costs.main(["--out", str(out)])
    text = out.read_text()
    assert text.startswith("# What the experiments cost") and "| experiment | seeds |" in text
