r"""The published model configurations (``positional/model_configs.py``): the entries chapter 11 reads, checked
against the sources' numbers and against arithmetic worked by hand.
"""
from mini_transformer.positional.model_configs import MODELS, describe_model


def test_new_published_entries():
    phi2 = describe_model("Phi-2")
    assert phi2["rotary_dim"] == 32 and phi2["critical_dimension"].pair == 11   # 2 pi 10^(i/4) >= 2048 at i = 11
    longcat = describe_model("LongCat-Flash")
    assert (longcat["rotary_dim"], longcat["qk_nope_head_dim"], longcat["rope_theta"]) == (64, 128, 1e7)
    kimi = describe_model("Kimi-K3")
    assert kimi["mechanism"] == "nope" and "inv_freq" not in kimi and "NoPE" in kimi["summary"]
    v3 = MODELS["DeepSeek-V3"]
    # MLA's cache per token and layer: the latent plus one shared rotary key, against every head's key and value
    assert v3["kv_lora_rank"] + v3["qk_rope_head_dim"] == 576
    assert v3["num_attention_heads"] * (v3["qk_nope_head_dim"] + v3["qk_rope_head_dim"] + v3["v_head_dim"]) == 40960


def _has_field(entry, dotted):
    """Whether ``entry`` holds ``dotted`` ('rope_scaling.rope_type' looks inside the rope_scaling dict)."""
    head, _, rest = dotted.partition(".")
    if head not in entry:
        return False
    return _has_field(entry[head], rest) if rest else True


def test_a_field_named_under_absent_is_not_stored():
    # the module's rule: a number that could not be checked is named under absent instead of guessed
    for name, entry in MODELS.items():
        stored = [f for f in entry.get("absent", ()) if _has_field(entry, f)]
        assert not stored, f"{name} names {stored} under absent but stores them"
    assert MODELS["Qwen3-VL-8B"]["absent"] == ["rope_scaling.rope_type"]
    assert "rope_type" not in MODELS["Qwen3-VL-8B"]["rope_scaling"]
