r"""Chapter 11's reader test, written the ways a reader writes it, and what the grader says.

Chapter 11 asks for ``test_port(port_qk_weights)``, scored against the wrong ports of
``mutants.py`` beside this file. Each test below is one a reader might write.
"""
from exercises.grading.generate import labels_of
from exercises.grading.modules import reader_tests
from exercises.grading.modules.exercise_text import got_away

MODULE, TEST = "checkpoints", "test_port"
LABEL = labels_of(MODULE)[TEST]

PORT_SETUP = """
from mini_transformer.engine.autograd import no_grad
from mini_transformer.model import GPTConfig, TinyGPT

def same_after_port(n_heads, d_head, random_biases=True, factor=1.0, compare="logits"):
    g = xp.random.default_rng(0)
    cfg = dict(vocab_size=16, d_model=n_heads * d_head, n_layers=1, n_heads=n_heads, max_len=16, positional="rope")
    old = TinyGPT(GPTConfig(**cfg, extra={"rope_interleaved": True, "partial_rotary_factor": factor}))
    state = old.state_dict()
    state = {k: (g.normal(0, 0.5, size=v.shape) if (random_biases or not k.endswith("bias")) else v)
             for k, v in state.items()}
    old.to_dtype("float64").load_state_dict(state)
    new = TinyGPT(GPTConfig(**cfg, extra={"partial_rotary_factor": factor})).to_dtype("float64")
    new.load_state_dict({k: port_qk_weights(v, n_heads, d_head, int(d_head * factor)) if "W_qkv" in k else v
                         for k, v in state.items()})
    ids = g.integers(0, 16, (2, 10))
    for m in (old, new):
        m.blocks[0].attn.record_attention = True
    with no_grad():
        a, b = old(ids).data, new(ids).data
    if compare == "attention":
        return xp.allclose(old.blocks[0].attn.last_attention, new.blocks[0].attn.last_attention, atol=1e-9)
    return xp.allclose(a, b, atol=1e-9)
"""

READER_TESTS = {
    # one head of 8, every channel turns, random weights: a fair first try
    "one_head": PORT_SETUP + """
assert same_after_port(1, 8)
""",
    # several heads of 4, a fresh model's zero biases, and only the attention maps compared
    "attention_maps_of_small_heads": PORT_SETUP + """
assert same_after_port(4, 4, random_biases=False, compare="attention")
""",
    # several heads of 8, every channel turns, logits compared, but a fresh model's zero biases
    "zero_biases": PORT_SETUP + """
assert same_after_port(4, 8, random_biases=False)
""",
    # several heads of 8, random biases, partial rotary too: every multi-head mistake shows, but no
    # checkpoint with fewer key-value heads than query heads
    "multi_head_only": PORT_SETUP + """
assert same_after_port(4, 8)
assert same_after_port(2, 16, factor=0.5)
""",
    "reference_body": None,
}



def test_the_reference_port_test_catches_every_wrong_port(graded):
    r = graded["reference_body"]
    n = len(reader_tests(MODULE)["test_port"].mutants)
    assert (r["status"], r["caught"]) == ("pass", [n, n]) and n >= 7, r["message"]


def test_one_head_lets_the_cross_head_mistakes_through(graded):
    r = graded["one_head"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    # with one head a port across heads, or of the first head only, is right; with every channel turning,
    # ignoring rotary_dim is right too; with a key-value head per query head, so is the query head count
    assert got_away(r) == {"whole_width", "first_head_only", "rotary_dim_ignored", "keys_by_query_heads"}, r["message"]
    assert "What catches it: port a model with several heads" in r["message"]


def test_a_fresh_model_hides_the_forgotten_bias(graded):
    r = graded["zero_biases"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    assert got_away(r) == {"bias_forgotten", "rotary_dim_ignored", "keys_by_query_heads"}, r["message"]


def test_attention_maps_of_small_heads_miss_four(graded):
    r = graded["attention_maps_of_small_heads"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    # heads of 4: P is its own inverse; attention maps never see the values; zero biases hide the bias;
    # full rotary hides rotary_dim; one key-value head per query head hides the head count of the keys
    assert got_away(r) == {"inverse", "values_too", "bias_forgotten", "rotary_dim_ignored", "keys_by_query_heads"}, \
        r["message"]


def test_multi_head_models_only_let_the_grouped_query_keys_through(graded):
    r = graded["multi_head_only"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    # every model has one key-value head per query head: the key block's head count is never tested
    assert got_away(r) == {"keys_by_query_heads"}, r["message"]
    assert "What catches it: port a grouped-query checkpoint" in r["message"]
