"""The positional-scheme protocol: declared settings, checked configs, and signatures that name every setting."""
from dataclasses import fields

import pytest

from mini_transformer.model import GPTConfig, TinyEncoder, TinyGPT
from mini_transformer.positional import SCHEMES
from mini_transformer.positional.base import PositionalScheme

# a value of the right type, different from the default, for every declared setting
OTHER_VALUE = {"shaw_k": 3, "shaw_values": False, "mem_len": 5, "num_buckets": 8, "max_distance": 64,
               "bidirectional": True, "rope_interleaved": True, "partial_rotary_factor": 0.5, "window_size": 4,
               "d_rope": 2, "floor_scale": 16, "attn_scale": 0.5, "mrope_section_t": 0, "mrope_section_h": 0,
               "mrope_interleaved": True, "fire_width": 16, "fire_L": 4.0}


def config(positional, **extra):
    return GPTConfig(vocab_size=16, d_model=16, n_layers=1, n_heads=2, max_len=9, positional=positional, extra=extra)


def test_every_scheme_is_a_class_that_declares_its_settings():
    for name, cls in SCHEMES.items():
        assert issubclass(cls, PositionalScheme)
        for s in fields(cls.Settings):
            key = s.name
            assert s.type in (bool, int, float) and s.metadata["doc"], (name, key)
            assert key in OTHER_VALUE, f"add a test value for {name}'s setting {key!r}"


@pytest.mark.parametrize("positional,key,value,message", [
    ("shaw", "shawk", 4, r"extra has the key 'shawk', which the 'shaw' scheme does not read; its keys are: "
                         r"'shaw_k', 'shaw_values'"),
    ("rope", "rope_interleave", True, r"'rope_interleave'.*'rope_interleaved', 'partial_rotary_factor'"),
    ("alibi", "slopes", [1.0], r"the 'alibi' scheme does not read; its keys are: none"),
    ("shaw", "shaw_k", 4.0, r"extra\['shaw_k'\]=4.0 for the 'shaw' scheme must be a int"),
    ("shaw", "shaw_k", True, r"extra\['shaw_k'\]=True for the 'shaw' scheme must be a int"),
    ("t5", "bidirectional", 1, r"extra\['bidirectional'\]=1 for the 't5' scheme must be a bool"),
    ("rope", "partial_rotary_factor", "half", r"'partial_rotary_factor'\]='half' for the 'rope' scheme must be a float"),
])
def test_an_unknown_or_mistyped_setting_is_refused_when_the_config_is_made(positional, key, value, message):
    with pytest.raises(ValueError, match=message):
        config(positional, **{key: value})


def test_rope_scaling_on_a_scheme_that_does_not_rotate_is_refused():
    with pytest.raises(ValueError, match=r"rope_scaling=.*is set, but the 'alibi' scheme does not rotate"):
        GPTConfig(positional="alibi", rope_scaling={"rope_type": "linear", "factor": 2.0})
    GPTConfig(positional="decoupled_rope", rope_scaling={"rope_type": "linear", "factor": 2.0})   # it does rotate


def test_an_unknown_kernel_set_is_refused_when_the_config_is_made():
    with pytest.raises(ValueError, match=r"kernels='flash' is not a kernel set"):
        GPTConfig(kernels="flash")


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_the_signature_names_every_setting_and_follows_each_change(name):
    base = TinyGPT(config(name)).positional.signature()
    assert set(SCHEMES[name].declared()) <= set(base)
    for key in [s.name for s in fields(SCHEMES[name].Settings)]:
        changed = TinyGPT(config(name, **{key: OTHER_VALUE[key]})).positional.signature()
        assert changed[key] == OTHER_VALUE[key] != base[key], (name, key)


@pytest.mark.parametrize("name", ["t5", "alibi", "transformer_xl"])
def test_the_signature_tells_a_causal_model_from_an_encoder(name):
    # these schemes take another form without a causal mask, and a checkpoint must not cross over silently
    assert TinyGPT(config(name)).positional.signature() != TinyEncoder(config(name)).positional.signature()


def test_defaults_that_depend_on_the_model_are_resolved_from_it():
    assert TinyGPT(config("t5")).positional.bidirectional is False
    assert TinyEncoder(config("t5")).positional.bidirectional is True
    assert TinyGPT(config("transformer_xl")).positional.mem_len == 9                 # max_len
    assert TinyGPT(config("relative_2d")).positional.window_size == 3                # the smallest w with w^2 >= 9
    assert TinyGPT(config("decoupled_rope")).positional.d_rope == 4                  # d_head 8: half, even


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_a_float32_model_stays_float32_whatever_its_scheme(name):
    # a scheme that built its tables in float64 and mixed them in would turn the scores, and the logits, to float64
    from mini_transformer.engine import backend
    cfg = GPTConfig(vocab_size=16, d_model=16, n_layers=1, n_heads=2, max_len=16, positional=name)
    ids = backend.asarray([[3, 1, 4, 1, 5, 9, 2, 6, 5]])
    assert TinyGPT(cfg)(ids).data.dtype == "float32"


def test_refusals_name_the_positions_asked_for_and_the_ones_there_are():
    # hand-worked: a table of 8 rows asked for 3 rows from offset 6 (positions 6, 7, 8); a 3 x 3 window holds 0..8
    from mini_transformer.positional.learned import LearnedPositionalEmbedding
    from mini_transformer.positional.relative_2d import RelativePositionBias2D
    with pytest.raises(ValueError, match=r"^LearnedPositionalEmbedding has T_max=8 positions, but positions 6\.\.8 were "
                                         r"asked for \(position 8 is at or past T_max=8\)\.$"):
        LearnedPositionalEmbedding(8, 4).rows(3, offset=6)
    with pytest.raises(ValueError, match=r"^RelativePositionBias2D: position 9 lies outside a window of window_size=3, "
                                         r"which holds positions 0\.\.8 in raster order\.$"):
        RelativePositionBias2D(2, 3).check_positions(9)


def test_the_defaults_are_the_papers():
    # hand-worked: with base 10000 and d_model 4 the second pair turns at 10000^(-2/4) = 1/100 rad per position,
    # so position 50 has sin(0.5) and cos(0.5) there; a table asked for rows without an offset starts at row 0
    import math
    from mini_transformer.engine.backend import asarray, to_numpy
    from mini_transformer.positional.learned import LearnedPositionalEmbedding
    from mini_transformer.positional.sinusoidal import sinusoidal_table
    row = to_numpy(sinusoidal_table(asarray([50]), 4))[0]
    assert abs(row[2] - math.sin(0.5)) < 1e-15 and abs(row[3] - math.cos(0.5)) < 1e-15
    table = LearnedPositionalEmbedding(8, 4)
    assert (to_numpy(table.rows(3).data) == to_numpy(table.weight.data)[None, :3]).all()
