"""Strict code-style checking on the real APIBench gold answers and on mutations of them."""
from __future__ import annotations

import pytest

from checker import check_code
from tests.checker.conftest import HUBS, gold_rows

# APIBench eval answers whose api_call is in no form in the hub's own API database (the
# eval file and the database disagree), so they are correct against the gold call but
# cannot name a catalog record. Each was checked by hand against huggingface_api.jsonl.
NOT_IN_CATALOG = {
    # database has the truncated id 'ismail-lucifer011/autotr'
    "AutoModelForTokenClassification.from_pretrained('ismail-lucifer011/autotrain-job_all-903929564', use_auth_token=True)",
    # database has DQN.load('araffin/dqn-LunarLander-v2')
    "DQN.load(load_from_hub('araffin/dqn-LunarLander-v2', 'dqn-LunarLander-v2.zip'), **kwargs)",
    # database has PPO.load_from_hub('araffin/ppo-LunarLander-v2') (no file name)
    "PPO.load_from_hub('araffin/ppo-LunarLander-v2', 'ppo-LunarLander-v2.zip')",
    # database has the literal runwayml/stable-diffusion-v1-5, the eval a variable model_id
    "StableDiffusionPipeline.from_pretrained(model_id, torch_dtype=torch.float16)",
    # database has skops.io.load(...), the eval a bare load(...)
    "load('path_to_folder/example.pkl')",
}


@pytest.mark.parametrize("hub", list(HUBS))
def test_every_gold_answer_is_correct_against_its_own_catalog(hub, hub_index):
    index = hub_index[hub]
    wrong, unresolved = [], set()
    for row in gold_rows(hub):
        answer = (f"<<<domain>>>: {row['api_data']['domain']}, <<<api_call>>>: {row['api_call']}, "
                  f"<<<api_provider>>>: {row['provider']}")
        v = check_code(answer, index, gold=row["api_call"])
        if v.verdict != "correct":
            wrong.append((row["api_call"], v.verdict))
        if v.api is None:
            unresolved.add(row["api_call"])
        else:
            assert v.api.startswith(hub + "/")
    assert wrong == []
    assert unresolved <= NOT_IN_CATALOG, sorted(unresolved - NOT_IN_CATALOG)


def test_gold_records_are_valid_without_gold(hub_records, hub_index):
    """Every catalog call, checked with no gold, is valid and names its own record."""
    for hub, records in hub_records.items():
        for rec in records:
            v = check_code(rec.call, hub_index[hub])
            assert v.verdict == "valid", (rec.id, rec.call, v.to_dict())


def test_swapped_model_id_is_hallucinated_with_nearest(hub_index):
    index = hub_index["huggingface"]
    v = check_code("<<<api_call>>>: pipeline('summarization', model='facebook/bart-large-cnn-v9')", index,
                   gold="pipeline('summarization', model='facebook/bart-large-cnn')")
    assert v.verdict == "hallucinated" and not v.ok
    assert "facebook/bart-large-cnn" in v.details["differs"] and "-v9" in v.details["differs"]
    assert v.nearest and v.suggestions == ("pipeline('summarization', model='facebook/bart-large-cnn')",)
    ok = check_code("pipeline('summarization', model='facebook/bart-large-cnn')", index)
    assert ok.verdict == "valid" and ok.api == v.nearest


def test_positional_equals_keyword_and_extra_args_do_not_change_identity(hub_index):
    index = hub_index["torchhub"]
    gold = "torch.hub.load(repo_or_dir='pytorch/vision', model='resnet50', pretrained=True)"
    for answer in ("torch.hub.load('pytorch/vision', 'resnet50')",
                   'torch.hub.load("pytorch/vision", model="resnet50", pretrained=True, force_reload=True)',
                   "model = torch.hub.load(model='resnet50', repo_or_dir='pytorch/vision', verbose=False)"):
        assert check_code(answer, index, gold=gold).verdict == "correct", answer


def test_other_real_api_is_wrong_api(hub_index):
    v = check_code("torch.hub.load('pytorch/vision', 'resnet101', pretrained=True)", hub_index["torchhub"],
                   gold="torch.hub.load(repo_or_dir='pytorch/vision', model='resnet50', pretrained=True)")
    assert v.verdict == "wrong_api" and v.api and "resnet" in v.api.lower()
    assert v.defects[0].kind == "wrong_api" and "resnet50" in v.defects[0].message


def test_substring_is_not_identity(hub_index):
    """Upstream's substring rule would credit these; strict mode does not."""
    index = hub_index["tensorflowhub"]
    url = "https://tfhub.dev/google/imagenet/mobilenet_v2_100_224/feature_vector/4"
    assert check_code(f"hub.KerasLayer('{url}')", index).verdict == "valid"
    assert check_code(f"hub.KerasLayer('{url}/extra')", index).verdict == "hallucinated"


def test_torchhub_dict_answer_and_gorilla_format_and_fences(hub_index):
    th = hub_index["torchhub"]
    gold = "torch.hub.load(repo_or_dir='facebookresearch/pytorchvideo', model='slow_r50', pretrained=True)"
    dict_answer = ("{'domain': 'Video Classification', 'api_call': \"model = torch.hub.load("
                   "'facebookresearch/pytorchvideo', 'slow_r50', pretrained=True)\", 'api_provider': 'PyTorch'}")
    assert check_code(dict_answer, th, gold=gold).verdict == "correct"
    fenced = "Here you go:\n```python\nimport torch\nmodel = torch.hub.load('facebookresearch/pytorchvideo', 'slow_r50')\n```\nEnjoy."
    assert check_code(fenced, th, gold=gold).verdict == "correct"


def test_nested_and_several_calls(hub_index):
    tf = hub_index["tensorflowhub"]
    url = "https://tfhub.dev/google/imagenet/mobilenet_v2_100_224/feature_vector/4"
    nested = f"model = tf.keras.Sequential([hub.KerasLayer('{url}', input_shape=[224, 224, 3]), tf.keras.layers.Dense(3)])"
    assert check_code(nested, tf, gold=f"hub.KerasLayer('{url}')").verdict == "correct"
    hf = hub_index["huggingface"]
    several = ("tokenizer = AutoTokenizer.from_pretrained('nope/nothing')\n"
               "summarizer = pipeline('summarization', model='facebook/bart-large-cnn')")
    v = check_code(several, hf, gold="pipeline('summarization', model='facebook/bart-large-cnn')")
    assert v.verdict == "correct"


def test_broken_python_is_repaired(hub_index):
    hf = hub_index["huggingface"]
    unquoted = "<<<api_call>>>: pipeline('text-to-image', model=SG161222/Realistic_Vision_V1.4), <<<api_provider>>>: HF"
    assert check_code(unquoted, hf, gold="pipeline('text-to-image', model='SG161222/Realistic_Vision_V1.4')").verdict == "correct"
    unbalanced = "summarizer = pipeline('summarization', model='facebook/bart-large-cnn'\nprint(summarizer(text)"
    assert check_code(unbalanced, hf).verdict == "valid"
    prose = "Use pipeline('summarization', model='facebook/bart-large-cnn' and then call it on your text."
    assert check_code(prose, hf).verdict == "valid"
    assigned = "model_id = 'runwayml/stable-diffusion-v1-5'\npipe = StableDiffusionPipeline.from_pretrained(model_id)"
    assert check_code(assigned, hf).verdict in ("valid", "hallucinated")  # resolved, never an error


def test_no_call_is_unparsable_and_namespace_restricts(hub_index, gorilla_db):
    from apidb.catalog import Catalog

    assert check_code("I cannot help with that.", hub_index["huggingface"]).verdict == "unparsable"
    tf_call = "hub.load('https://tfhub.dev/google/universal-sentence-encoder/4')"
    with Catalog(gorilla_db) as cat:
        assert check_code(tf_call, cat).verdict == "valid"
        assert check_code(tf_call, cat, namespace="tensorflowhub").api.startswith("tensorflowhub/")
        assert check_code(tf_call, cat, namespace="huggingface").verdict == "hallucinated"


def test_gorilla_mode_credits_domain_and_substrings(hub_index):
    """The documented differences: domain-level credit and substring matching."""
    tf = hub_index["tensorflowhub"]
    gold = {"api_call": "hub.KerasLayer('https://tfhub.dev/google/imagenet/mobilenet_v2_100_224/feature_vector/4')",
            "domain": "Image feature vector"}
    other_same_domain = ("<<<api_call>>>: hub.KerasLayer('https://tfhub.dev/google/imagenet/"
                         "mobilenet_v2_140_224/feature_vector/4'), <<<api_provider>>>: TensorFlow Hub")
    strict = check_code(other_same_domain, tf, gold=gold)
    gorilla = check_code(other_same_domain, tf, gold=gold, mode="gorilla")
    assert gorilla.verdict == "correct" and gorilla.details["domain"] == "Image feature vector"
    assert strict.verdict in ("wrong_api", "hallucinated")
