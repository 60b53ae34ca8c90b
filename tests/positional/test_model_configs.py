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
