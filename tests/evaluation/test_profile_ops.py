"""The op-by-op profile: every op of a step is timed in both directions, and the ops never claim more than
the whole step; PyTorch's backward nodes are matched to the op whose forward made them."""
import pytest

from mini_transformer.evaluation import bench, profile_ops


@pytest.mark.parametrize("kernel_set", ["fast", "reference"])
def test_every_op_is_timed_forward_and_backward_and_within_the_step(kernel_set):
    step = profile_ops.engine_stepper(bench.CONFIGS["workbook"], kernel_set)
    step()
    times = step()
    for name in profile_ops.OPS:
        assert times[(name, "forward")] > 0, name
        assert times[(name, "backward")] > 0, name
    claimed = sum(v for (n, _), v in times.items() if n != "whole step")
    assert claimed <= times[("whole step", "step")]


def test_the_wrapped_kernels_are_put_back_after_each_step():
    from mini_transformer.engine import kernels
    step = profile_ops.engine_stepper(bench.CONFIGS["workbook"], "fast")
    assert step.model.kernels is kernels.FAST
    times = step()
    assert step.model.kernels is kernels.FAST                 # the wrapped copy was in force only inside the step
    assert times[("linear (out, MLP, head)", "forward")] > 0  # ... and it was in force there


def test_torch_backward_is_attributed_to_the_ops_by_sequence_number():
    pytest.importorskip("torch")
    times = profile_ops.torch_stepper(bench.CONFIGS["workbook"])()
    for name in profile_ops.OPS:
        assert times[(name, "forward")] > 0, name
    for name in ("layer norm", "q, k, v projection", "attention", "linear (out, MLP, head)", "GELU",
                 "cross-entropy"):
        assert times[(name, "backward")] > 0, name
